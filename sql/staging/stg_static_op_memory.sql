SELECT
    rank,
    capture,
    seq,
    device_id,
    op_name,
    model_name,
    graph_id,
    node_index_start,
    node_index_end,
    bytes
FROM {{ source('static_op_memory') }}
