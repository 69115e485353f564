SELECT
    rank,
    capture,
    seq,
    graph_id,
    node_index,
    role,
    tensor_id
FROM {{ source('memory_node_tensor') }}
