SELECT
    rank,
    capture,
    seq,
    stream_id,
    task_id,
    op_name,
    hit_share,
    victim_ratio
FROM {{ source('l2_cache_task') }}
