SELECT
    rank,
    capture,
    side,
    tid,
    op_name,
    op_short_name(op_name) AS short_name,
    op_type_of(op_name) AS op_type,
    op_subgraph(op_name) AS subgraph,
    start_ns,
    dur_ns,
    start_ns + dur_ns AS end_ns,
    category,
    external_id,
    flops,
    flops_dtype,
    op_index,
    parent_index
FROM {{ source('host_op') }}
