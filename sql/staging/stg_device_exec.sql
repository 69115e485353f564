SELECT
    rank,
    capture,
    stream_id,
    kind,
    name,
    correlation,
    task_id,
    op_name,
    start_ns,
    dur_ns,
    external_id,
    device_id,
    op_index,
    bytes,
    grid,
    block
FROM {{ source('device_exec') }}
