-- Report, operators page: Ascend device tasks per rank, op type and core type (task_desc's task_type: AI_CORE,
-- AI_VECTOR_CORE, AI_CPU, MIX_AIC...), as msprof's op_statistic.csv: count, total, min, avg, max and the share of the
-- rank's task time; the $top largest.
SELECT e.rank, t.op_type, t.task_type AS core_type, count(*) AS executions, sum(e.dur_ns) / 1e6 AS total_ms,
       min(e.dur_ns) / 1e6 AS min_ms, avg(e.dur_ns) / 1e6 AS avg_ms, max(e.dur_ns) / 1e6 AS max_ms,
       sum(e.dur_ns) / nullif(sum(sum(e.dur_ns)) OVER (PARTITION BY e.rank), 0) AS share
FROM device_exec e
JOIN task_desc t ON t.rank = e.rank AND t.op_name = e.name AND t.task_id = e.task_id AND t.stream_id = e.stream_id
WHERE e.kind = 'task'
GROUP BY e.rank, t.op_type, t.task_type
QUALIFY row_number() OVER (ORDER BY sum(e.dur_ns) DESC, e.rank, t.op_type, t.task_type) <= $top
ORDER BY total_ms DESC, e.rank, t.op_type, core_type
