WITH per_op AS (
    SELECT rank, side, op_name,
           any_value(short_name) AS short_name,
           any_value(op_type) AS op_type,
           any_value(subgraph) AS subgraph,
           count(*) AS occurrences,
           sum(dur_ns)::BIGINT AS total_ns,
           min(dur_ns) AS min_ns,
           max(dur_ns) AS max_ns
    FROM {{ ref('stg_host_op') }}
    WHERE category IS DISTINCT FROM 'marker'  -- MSTX markers are user ranges (user_range_stats), not ops
    GROUP BY rank, side, op_name
), device AS (
    SELECT rank, op_name, count(*) AS device_exec_count, sum(dur_ns)::BIGINT AS device_exec_total_ns
    FROM {{ ref('int_device_exec') }}
    WHERE op_name IS NOT NULL
    GROUP BY rank, op_name
)
SELECT
    p.rank, p.side, p.op_name, p.short_name, p.op_type, p.subgraph,
    p.occurrences,
    p.total_ns,
    p.total_ns / p.occurrences AS avg_ns,
    p.min_ns,
    p.max_ns,
    p.total_ns / nullif(sum(p.total_ns) OVER (PARTITION BY p.rank, p.side), 0) AS share,
    coalesce(d.device_exec_count, 0) AS device_exec_count,
    coalesce(d.device_exec_total_ns, 0) AS device_exec_total_ns
FROM per_op p
LEFT JOIN device d ON p.side = 'Device' AND d.rank = p.rank AND d.op_name = p.op_name
