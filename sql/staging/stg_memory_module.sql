SELECT
    rank,
    capture,
    seq,
    component,
    device,
    ts_ns,
    reserved_bytes
FROM {{ source('memory_module') }}
