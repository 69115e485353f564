SELECT
    rank,
    capture,
    seq,
    stream_id,
    task_id,
    op_name,
    hit_rate,
    victim_rate
FROM {{ source('l2_cache_task') }}
