SELECT
    rank,
    capture,
    stream_id,
    task_id,
    start_ns,
    core,
    metric,
    value,
    unit
FROM {{ source('device_exec_metric') }}
