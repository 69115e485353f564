WITH tensors AS (
    SELECT rank, capture, graph_id, count(*) AS tensors, count(first_node) AS located_tensors
    FROM {{ ref('stg_memory_tensor') }}
    GROUP BY ALL
), curves AS (
    SELECT rank, capture, graph_id, count(*) AS nodes, max(bytes) AS peak_bytes,
           arg_min(node_index, (-bytes, node_index)) AS peak_node_index,
           arg_min(node_name, (-bytes, node_index)) AS peak_node_name
    FROM {{ ref('memory_node_curve') }}
    GROUP BY ALL
)
SELECT
    g.rank,
    g.capture,
    g.graph_id,
    coalesce(c.nodes, 0)::BIGINT AS nodes,
    coalesce(t.tensors, 0)::BIGINT AS tensors,
    coalesce(t.located_tensors, 0)::BIGINT AS located_tensors,
    g.static_bytes,
    c.peak_bytes,
    c.peak_node_index,
    c.peak_node_name,
    t.tensors IS NOT NULL AS in_mindspore_summary
FROM {{ ref('stg_memory_graph') }} g
LEFT JOIN tensors t USING (rank, capture, graph_id)
LEFT JOIN curves c USING (rank, capture, graph_id)
