SELECT
    rank,
    capture,
    step,
    origin,
    comm_kind,
    matrix_key,
    collective_type,
    stat,
    group_id,
    src_rank,
    dst_rank,
    transport,
    bytes,
    time_ns,
    op_name
FROM {{ source('ascend_comm_link_summary') }}
