SELECT
    rank,
    capture,
    seq,
    memory,
    metric,
    read_bytes_per_second,
    write_bytes_per_second
FROM {{ source('memory_bandwidth') }}
