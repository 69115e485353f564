SELECT
    rank,
    capture,
    seq,
    graph_id,
    static_bytes,
    fp_start,
    bp_end,
    capacity_bytes
FROM {{ source('memory_graph') }}
