WITH deltas AS (  -- each located tensor adds its bytes at its first node and takes them off after its last
    SELECT rank, capture, graph_id, first_node AS node_index, bytes AS delta_bytes, 1 AS delta_tensors
    FROM {{ ref('stg_memory_tensor') }}
    WHERE first_node IS NOT NULL
    UNION ALL
    SELECT rank, capture, graph_id, last_node + 1, -bytes, -1
    FROM {{ ref('stg_memory_tensor') }}
    WHERE first_node IS NOT NULL
), steps AS (
    SELECT rank, capture, graph_id, node_index, sum(delta_bytes) AS delta_bytes, sum(delta_tensors) AS delta_tensors
    FROM deltas
    GROUP BY ALL
), allocated AS (  -- MindSpore's node size: the distinct tensors the node outputs or uses as workspace
    SELECT r.rank, r.capture, r.graph_id, r.node_index, count(*) AS tensors, sum(t.bytes) AS bytes
    FROM (SELECT DISTINCT rank, capture, graph_id, node_index, tensor_id
          FROM {{ ref('stg_memory_node_tensor') }}
          WHERE role IN ('output', 'workspace')) r
    JOIN {{ ref('stg_memory_tensor') }} t USING (rank, capture, graph_id, tensor_id)
    GROUP BY ALL
), graphs AS (
    SELECT g.rank, g.capture, g.graph_id, g.static_bytes,
           (SELECT count(*) FROM {{ ref('stg_memory_node') }} n
            WHERE (n.rank, n.capture, n.graph_id) = (g.rank, g.capture, g.graph_id)) AS nodes,
           EXISTS (SELECT 1 FROM {{ ref('stg_memory_tensor') }} t
                   WHERE (t.rank, t.capture, t.graph_id) = (g.rank, g.capture, g.graph_id)) AS has_tensors
    FROM {{ ref('stg_memory_graph') }} g
)
SELECT
    n.rank,
    n.capture,
    n.graph_id,
    n.node_index,
    n.node_id,
    n.node_name,
    (g.static_bytes + sum(coalesce(s.delta_bytes, 0)) OVER w)::BIGINT AS bytes,
    coalesce(s.delta_bytes, 0)::BIGINT AS change_bytes,
    sum(coalesce(s.delta_tensors, 0)) OVER w::BIGINT AS live_tensors,
    coalesce(a.tensors, 0)::BIGINT AS allocated_tensors,
    coalesce(a.bytes, 0)::BIGINT AS allocated_bytes,
    g.has_tensors AND n.node_index % greatest(g.nodes // 2000, 1) = 0 AS in_mindspore_lines  -- N <= 2000: all
FROM {{ ref('stg_memory_node') }} n
JOIN graphs g USING (rank, capture, graph_id)
LEFT JOIN steps s USING (rank, capture, graph_id, node_index)
LEFT JOIN allocated a USING (rank, capture, graph_id, node_index)
WINDOW w AS (PARTITION BY n.rank, n.capture, n.graph_id ORDER BY n.node_index ROWS UNBOUNDED PRECEDING)
