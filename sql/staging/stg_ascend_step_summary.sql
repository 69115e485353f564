SELECT
    rank,
    capture,
    device_id,
    step,
    origin,
    computing_ns,
    communication_not_overlapped_ns,
    overlapped_ns,
    communication_ns,
    free_ns,
    stage_ns,
    bubble_ns,
    communication_not_overlapped_exclude_receive_ns,
    preparing_ns
FROM {{ source('ascend_step_summary') }}
