WITH tasks AS (
    SELECT rank, op_name, task_id, stream_id, start_ns, dur_ns
    FROM {{ ref('int_device_exec') }} WHERE kind = 'task' AND op_name IS NOT NULL
), per_op AS (
    SELECT rank, op_name,
           arg_min(task_id, (start_ns, task_id)) AS first_task_id,
           arg_min(stream_id, (start_ns, task_id)) AS stream_id,
           min(start_ns) AS first_start_ns
    FROM tasks GROUP BY rank, op_name
), types AS (
    SELECT rank, op_name, any_value(op_type) AS op_type FROM (
        SELECT rank, op_name, op_type FROM {{ ref('stg_op_desc') }}
        UNION ALL
        SELECT rank, op_name, op_type FROM {{ ref('stg_task_desc') }} WHERE op_type IS NOT NULL
    ) GROUP BY rank, op_name
)
SELECT
    t.rank,
    t.op_name,
    op_short_name(t.op_name) AS short_name,
    coalesce(ty.op_type, op_type_of(t.op_name)) AS op_type,
    op_subgraph(t.op_name) AS subgraph,
    p.stream_id,
    p.first_task_id,
    count(*) FILTER (WHERE t.task_id = p.first_task_id) AS executions,
    count(*) AS tasks,
    sum(t.dur_ns)::BIGINT AS total_ns,
    sum(t.dur_ns) / count(*) FILTER (WHERE t.task_id = p.first_task_id) AS avg_ns,
    min(t.dur_ns) AS min_ns,
    max(t.dur_ns) AS max_ns,
    p.first_start_ns,
    sum(t.dur_ns) / nullif(sum(sum(t.dur_ns)) OVER (PARTITION BY t.rank), 0) AS share
FROM tasks t
JOIN per_op p USING (rank, op_name)
LEFT JOIN types ty USING (rank, op_name)
GROUP BY t.rank, t.op_name, ty.op_type, p.stream_id, p.first_task_id, p.first_start_ns
