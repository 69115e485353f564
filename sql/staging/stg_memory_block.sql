SELECT
    rank,
    capture,
    seq,
    component,
    device,
    owner,
    bytes,
    alloc_ns,
    release_ns,
    alloc_allocated_bytes,
    alloc_reserved_bytes,
    alloc_active_bytes,
    release_allocated_bytes,
    release_reserved_bytes,
    release_active_bytes,
    stream
FROM {{ source('memory_block') }}
