SELECT
    rank,
    capture,
    ts_ns,
    seq,
    tid,
    device_type,
    device_id,
    addr,
    bytes,
    total_allocated,
    total_reserved
FROM {{ source('memory_event') }}
