SELECT
    rank,
    seq,
    op_name,
    task_id,
    stream_id,
    block_dim,
    graph_id,
    op_type,
    task_type,
    input_shapes,
    input_types,
    input_formats,
    output_shapes,
    output_types,
    output_formats
FROM {{ source('task_desc') }}
