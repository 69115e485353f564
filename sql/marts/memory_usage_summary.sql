WITH capacity AS (
    SELECT rank, capture, max(capacity_bytes) AS capacity_bytes
    FROM {{ ref('stg_memory_graph') }}
    GROUP BY ALL
), counted AS (  -- MindSpore's summary leaves out graphs without tensors
    SELECT * FROM {{ ref('memory_graph_stats') }} WHERE in_mindspore_summary
)
SELECT
    c.rank,
    c.capture,
    c.capacity_bytes,
    count(s.graph_id)::BIGINT AS graphs,
    coalesce(max(s.peak_bytes), 0)::BIGINT AS peak_bytes,
    arg_min(s.graph_id, (-s.peak_bytes, s.graph_id)) FILTER (WHERE s.peak_bytes IS NOT NULL) AS peak_graph_id,
    coalesce(sum(s.static_bytes), 0)::BIGINT AS static_bytes,
    coalesce(sum(s.tensors), 0)::BIGINT AS allocations,
    coalesce(sum(s.tensors), 0)::BIGINT AS deallocations
FROM capacity c
LEFT JOIN counted s USING (rank, capture)
GROUP BY c.rank, c.capture, c.capacity_bytes
