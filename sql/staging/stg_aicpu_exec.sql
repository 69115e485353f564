SELECT
    rank,
    seq,
    op_name,
    op_type,
    stream_id,
    task_id,
    run_start_us,
    run_end_us,
    total_us,
    dispatch_us
FROM {{ source('aicpu_exec') }}
