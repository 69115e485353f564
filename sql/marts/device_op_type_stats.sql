SELECT
    rank,
    op_type,
    count(*) AS instances,
    sum(executions)::BIGINT AS executions,
    sum(total_ns)::BIGINT AS total_ns,
    sum(avg_ns) AS per_step_ns,
    sum(total_ns) / nullif(sum(sum(total_ns)) OVER (PARTITION BY rank), 0) AS share,
    sum(avg_ns) / nullif(sum(sum(avg_ns)) OVER (PARTITION BY rank), 0) AS per_step_share
FROM {{ ref('device_op_stats') }}
GROUP BY rank, op_type
