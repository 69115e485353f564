-- Report, communication page: per rank, how often it arrived last at a collective and was flagged slow
-- (collective_straggler), and how long the others waited for it (ms).
SELECT rank, count(*) AS collectives, count(*) FILTER (WHERE is_last_arrival) AS last_arrivals,
       count(*) FILTER (WHERE is_slow) AS flagged_slow, sum(wait_ns) / 1e6 AS wait_ms
FROM collective_straggler
GROUP BY rank
ORDER BY rank
