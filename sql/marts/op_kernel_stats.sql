SELECT
    rank,
    op_name,
    name,
    count(*) AS instances,
    sum(dur_ns)::BIGINT AS total_ns,
    avg(dur_ns) AS avg_ns,
    min(dur_ns) AS min_ns,
    max(dur_ns) AS max_ns,
    sum(dur_ns) / nullif(sum(sum(dur_ns)) OVER (PARTITION BY rank, op_name), 0) AS share_of_op
FROM {{ ref('int_device_exec') }}
WHERE kind = 'kernel'
GROUP BY rank, op_name, name
