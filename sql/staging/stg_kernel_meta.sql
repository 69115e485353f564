SELECT
    rank,
    capture,
    name,
    launch_api,
    op_name,
    stream_id,
    block_dim,
    grid_dim
FROM {{ source('kernel_meta') }}
