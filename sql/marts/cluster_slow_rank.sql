-- msprof-analyze's slow-rank analysis (advisor/analyzer/cluster/slow_rank_analyzer.py) over cluster_step_trace: for
-- each of computing, communication (not overlapped) and free, the gap between the largest and the smallest value over
-- all (step, rank) rows of a capture, as a share of the mean total (computing + communication + free) of those rows.
WITH phases AS (
    UNPIVOT (SELECT rank, capture, step, total_ns, computing_ns AS computing,
                    communication_not_overlapped_ns AS communication_not_overlapped, free_ns AS free
             FROM {{ ref('cluster_step_trace') }})
    ON computing, communication_not_overlapped, free INTO NAME phase VALUE value_ns
)
SELECT capture, phase,
       count(*) AS rows, count(DISTINCT rank) AS ranks,
       max(value_ns) AS max_ns, min(value_ns) AS min_ns, avg(total_ns) AS mean_total_ns,
       arg_max(rank, (value_ns, -rank)) AS max_rank, arg_max(step, (value_ns, -rank)) AS max_step,
       arg_min(rank, (value_ns, rank)) AS min_rank, arg_min(step, (value_ns, rank)) AS min_step,
       CASE WHEN avg(total_ns) > 0 THEN (max(value_ns) - min(value_ns)) / avg(total_ns) ELSE 0 END AS gap_ratio,
       -- the rank the others wait for: most computing or free time; least communication (it arrives last, waits least)
       CASE WHEN phase = 'communication_not_overlapped' THEN arg_min(rank, (value_ns, rank))
            ELSE arg_max(rank, (value_ns, -rank)) END AS slow_rank,
       count(DISTINCT rank) > 1
           AND CASE WHEN avg(total_ns) > 0 THEN (max(value_ns) - min(value_ns)) / avg(total_ns) ELSE 0 END > 0.05
           AS is_slow
FROM phases
GROUP BY capture, phase
