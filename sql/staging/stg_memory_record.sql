SELECT
    rank,
    capture,
    seq,
    component,
    device,
    ts_ns,
    allocated_bytes,
    reserved_bytes,
    active_bytes
FROM {{ source('memory_record') }}
