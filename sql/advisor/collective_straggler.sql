-- Ranks that msprof-analyze's slow-rank test flags on collective instances (collective_straggler.is_slow: the rank
-- whose collective is the shortest outlier arrived last and waited least), counted per rank and capture, with the
-- time the other ranks spent waiting for it.
SELECT rank, capture, NULL::BIGINT AS step, count(*) FILTER (WHERE is_slow) AS value,
       count(*) FILTER (WHERE slow_test IN ('dixon', 'three_sigma')) AS instances_tested,
       count(*) FILTER (WHERE is_last_arrival) AS last_arrivals, max(ranks) AS ranks
FROM {{ ref('collective_straggler') }}
GROUP BY rank, capture
HAVING count(*) FILTER (WHERE is_slow) > {{ threshold }}
