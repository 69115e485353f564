WITH timed AS (  -- device-timed instances; PyTorch's `wait` (Other) and Barrier are no transfers to compare
    SELECT rank, capture, family, group_name, name, collective_type, occurrence, start_ns, dur_ns
    FROM {{ ref('collective_exec') }}
    WHERE timed_by <> 'cpu_op' AND collective_type NOT IN ('Other', 'Barrier')
), instances AS (  -- one collective instance across ranks: (capture, family, group, name, occurrence)
    SELECT *,
           count(*) OVER i AS ranks, max(start_ns) OVER i AS last_start_ns,
           arg_max(rank, start_ns) OVER i AS last_rank,
           -- Dixon's statistic on the ascending durations x1..xn, testing the minimum (msprof-analyze slow_rank)
           list_sort(list(dur_ns) OVER i) AS x,
           count(DISTINCT dur_ns) OVER i AS distinct_values,
           avg(dur_ns) OVER i AS mean_ns, stddev_pop(dur_ns) OVER i AS std_ns,
           min(dur_ns) OVER i AS min_dur_ns, max(dur_ns) OVER i AS max_dur_ns,
           arg_min(rank, dur_ns) OVER i AS fastest_rank
    FROM timed
    WINDOW i AS (PARTITION BY capture, family, group_name, name, occurrence)
), per_name AS (  -- msprof-analyze drops a group in which some collective does not occur equally often on its ranks
    SELECT capture, family, group_name, name, min(n) <> max(n) OR count(*) <> any_value(group_ranks) AS unequal
    FROM (SELECT capture, family, group_name, name, rank, count(*) AS n,
                 count(DISTINCT rank) OVER (PARTITION BY capture, family, group_name) AS group_ranks
          FROM timed GROUP BY capture, family, group_name, name, rank)
    GROUP BY capture, family, group_name, name
), unequal_groups AS (
    SELECT DISTINCT capture, family, group_name FROM per_name WHERE unequal
), counted AS (
    SELECT i.*, u.capture IS NOT NULL AS unequal_counts
    FROM instances i
    LEFT JOIN unequal_groups u ON u.capture = i.capture AND u.family = i.family
                              AND u.group_name IS NOT DISTINCT FROM i.group_name
), tested AS (
    SELECT *,
           CASE WHEN collective_type = 'SendRecv' THEN 'send_recv'
                WHEN unequal_counts THEN 'unequal_counts'
                WHEN ranks > 100 THEN 'three_sigma'
                WHEN ranks <= 2 THEN 'too_few_ranks'
                WHEN distinct_values <= 3 THEN 'too_few_values'
                ELSE 'dixon' END AS slow_test,
           CASE WHEN ranks BETWEEN 3 AND 100 THEN
                CASE WHEN ranks <= 7 THEN (x[2] - x[1]) / nullif(x[ranks] - x[1], 0)
                     WHEN ranks <= 10 THEN (x[2] - x[1]) / nullif(x[ranks - 1] - x[1], 0)
                     WHEN ranks <= 13 THEN (x[3] - x[1]) / nullif(x[ranks - 1] - x[1], 0)
                     ELSE (x[3] - x[1]) / nullif(x[ranks - 2] - x[1], 0) END END AS q_value
    FROM counted
)
SELECT capture, family, group_name, name, collective_type, occurrence, rank, ranks, start_ns, dur_ns,
       last_start_ns, last_rank, rank = last_rank AS is_last_arrival, last_start_ns - start_ns AS wait_ns,
       slow_test,
       CASE WHEN slow_test = 'dixon' THEN q_value END AS q_value,
       CASE WHEN slow_test = 'dixon' THEN dixon_q_critical(ranks) END AS q_critical,
       CASE WHEN slow_test = 'dixon' THEN rank = fastest_rank AND q_value > dixon_q_critical(ranks)
            WHEN slow_test = 'three_sigma' THEN dur_ns < mean_ns - 3 * std_ns
                                                OR (rank = fastest_rank AND max_dur_ns > mean_ns + 3 * std_ns)
            ELSE false END AS is_slow
FROM tested
