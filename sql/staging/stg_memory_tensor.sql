SELECT
    rank,
    capture,
    seq,
    graph_id,
    tensor_id,
    bytes,
    tensor_type,
    life_long,
    life_start,
    life_end,
    first_node,
    last_node
FROM {{ source('memory_tensor') }}
