SELECT
    rank,
    capture,
    queue,
    op_id,
    sample,
    batch,
    ts_ns,
    size,
    capacity
FROM {{ source('queue_sample') }}
