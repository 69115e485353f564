SELECT
    rank,
    seq,
    op_name,
    task_id,
    stream_id,
    block_dim,
    graph_id,
    op_type,
    task_type
FROM {{ source('task_desc') }}
