SELECT
    *,
    coalesce(total_allocated, sum(bytes) OVER (PARTITION BY rank, capture, device_type, device_id
                                               ORDER BY ts_ns, seq ROWS UNBOUNDED PRECEDING)) AS in_use_bytes
FROM {{ ref('stg_memory_event') }}
