SELECT
    rank,
    capture,
    op_id,
    op_type,
    num_workers,
    parent_id,
    child_index,
    has_queue,
    queue_capacity,
    sampling_interval_ns,
    pipeline_order,
    pipeline_parent_id
FROM {{ source('data_op') }}
