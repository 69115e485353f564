SELECT
    rank,
    capture,
    seq,
    graph_id,
    node_index,
    node_id,
    node_name
FROM {{ source('memory_node') }}
