SELECT
    rank,
    side,
    op_type,
    short_name,
    graph_id,
    input_shapes,
    launches
FROM {{ source('op_meta') }}
