-- MindSpore's per-op average: the op's task times in ms added one by one in time order (its float arithmetic),
-- divided by its executions
WITH ops AS (
    SELECT s.rank, s.op_name, s.short_name, s.op_type, s.subgraph, s.stream_id, s.executions, s.first_start_ns,
           list_reduce(list(e.dur_ns / 1e6 ORDER BY e.start_ns, e.task_id), lambda a, b: a + b) / s.executions
               AS avg_ms
    FROM {{ ref('device_op_stats') }} s
    JOIN {{ ref('ascend_task_exec') }} e ON e.rank = s.rank AND e.op_name = s.op_name
    GROUP BY s.rank, s.op_name, s.short_name, s.op_type, s.subgraph, s.stream_id, s.executions, s.first_start_ns
), task_types AS (
    SELECT rank, op_name, any_value(nullif(task_type, '')) AS task_type
    FROM {{ ref('ascend_framework_task') }} GROUP BY rank, op_name
)
SELECT o.rank, r.device_id,
       o.op_name AS full_op_name, o.avg_ms AS task_duration, o.executions AS execution_frequency,
       coalesce(t.task_type, 'AI_CORE') AS task_type,
       o.op_name AS full_op_time, o.avg_ms AS execution_time,
       o.short_name, o.op_type, o.subgraph, o.stream_id, o.first_start_ns
FROM ops o
JOIN {{ ref('ascend_rank') }} r USING (rank)
LEFT JOIN task_types t USING (rank, op_name)
