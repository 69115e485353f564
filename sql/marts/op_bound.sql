WITH pipes AS (  -- the six pipe ratios of PipeUtilization (a fraction of the task's time each pipe was busy)
    SELECT rank, capture, stream_id, task_id, start_ns, op_name, dur_ns, core, metric, value
    FROM {{ ref('int_exec_metric') }}
    WHERE unit = 'share'
      AND metric IN ('mac_ratio', 'vec_ratio', 'scalar_ratio', 'mte1_ratio', 'mte2_ratio', 'mte3_ratio')
), msprof_lookup AS (  -- msprof-analyze's column lookup: prefixes '', aic_, aiv_ in that order; mac never on aiv, vec never on aic
    SELECT rank, capture, stream_id, task_id, start_ns, op_name, any_value(dur_ns) AS dur_ns, metric,
           arg_min(value, CASE WHEN core IS NULL THEN 0 WHEN core = 'aic' THEN 1 ELSE 2 END) AS value
    FROM pipes
    WHERE NOT (metric = 'mac_ratio' AND core = 'aiv') AND NOT (metric = 'vec_ratio' AND core = 'aic')
    GROUP BY ALL
), executions AS (  -- msprof-analyze's "operator no bound": a task over 20 us with no pipe ratio above 0.8
    SELECT rank, op_name, dur_ns, max(value) <= 0.8 AND dur_ns > 20000 AS no_bound
    FROM msprof_lookup GROUP BY rank, capture, stream_id, task_id, start_ns, op_name, dur_ns
), per_op AS (
    SELECT rank, op_name, count(*) AS executions, avg(dur_ns) AS avg_dur_ns,
           count(*) FILTER (WHERE no_bound) AS no_bound_executions
    FROM executions GROUP BY rank, op_name
), core_means AS (  -- each pipe's mean over the op's executions, per core
    SELECT rank, op_name, core, metric, avg(value) AS mean FROM pipes GROUP BY ALL
), op_pipes AS (  -- a pipe measured on both cores: the busier core's mean
    SELECT rank, op_name,
           max(mean) FILTER (WHERE metric = 'mac_ratio') AS mac_share,
           max(mean) FILTER (WHERE metric = 'vec_ratio') AS vec_share,
           max(mean) FILTER (WHERE metric = 'scalar_ratio') AS scalar_share,
           max(mean) FILTER (WHERE metric = 'mte1_ratio') AS mte1_share,
           max(mean) FILTER (WHERE metric = 'mte2_ratio') AS mte2_share,
           max(mean) FILTER (WHERE metric = 'mte3_ratio') AS mte3_share
    FROM core_means GROUP BY rank, op_name
), busiest AS (  -- ties go to the first pipe in the order mac, vec, scalar, mte1, mte2, mte3
    SELECT rank, op_name,
           arg_max(pipe, (share, -position)) AS busiest_pipe, max(share) AS busiest_share
    FROM (
        SELECT rank, op_name, unnest(['mac', 'vec', 'scalar', 'mte1', 'mte2', 'mte3']) AS pipe,
               unnest([1, 2, 3, 4, 5, 6]) AS position,
               unnest([mac_share, vec_share, scalar_share, mte1_share, mte2_share, mte3_share]) AS share
        FROM op_pipes
    ) WHERE share IS NOT NULL
    GROUP BY rank, op_name
), types AS (
    SELECT rank, op_name, op_type FROM {{ ref('device_op_stats') }}
)
SELECT
    p.rank,
    p.op_name,
    coalesce(t.op_type, op_type_of(p.op_name)) AS op_type,
    p.executions,
    p.avg_dur_ns,
    o.mac_share,
    o.vec_share,
    o.scalar_share,
    o.mte1_share,
    o.mte2_share,
    o.mte3_share,
    b.busiest_pipe,
    b.busiest_share,
    CASE WHEN b.busiest_pipe IN ('mac', 'vec', 'scalar') THEN 'compute' ELSE 'memory' END AS roof_bound,
    greatest(o.mac_share, o.vec_share, o.scalar_share) AS compute_share,
    greatest(o.mte1_share, o.mte2_share, o.mte3_share) AS memory_share,
    1 - b.busiest_share AS roof_distance,
    CASE WHEN b.busiest_share <= 0.8 THEN 'none'
         WHEN b.busiest_pipe = 'mac' THEN 'cube'
         WHEN b.busiest_pipe = 'vec' THEN 'vector'
         WHEN b.busiest_pipe = 'scalar' THEN 'scalar'
         ELSE 'memory' END AS bound,
    p.no_bound_executions,
    p.no_bound_executions > 0 AS msprof_no_bound
FROM per_op p
JOIN op_pipes o USING (rank, op_name)
JOIN busiest b USING (rank, op_name)
LEFT JOIN types t USING (rank, op_name)
