SELECT
    rank,
    capture,
    memory,
    metric,
    count(*) AS samples,
    avg(read_bytes_per_second) AS read_bytes_per_second,
    avg(write_bytes_per_second) AS write_bytes_per_second,
    avg(read_bytes_per_second + write_bytes_per_second) AS total_bytes_per_second
FROM {{ ref('stg_memory_bandwidth') }}
GROUP BY rank, capture, memory, metric
