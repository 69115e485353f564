SELECT
    rank,
    name,
    grid,
    block,
    unnest(duration_stats(dur_ns)),
    sum(dur_ns) / nullif(sum(sum(dur_ns)) OVER (PARTITION BY rank), 0) AS share
FROM {{ ref('stg_device_exec') }}
WHERE kind = 'kernel'
GROUP BY rank, name, grid, block
