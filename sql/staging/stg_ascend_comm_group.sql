SELECT
    rank,
    capture,
    group_id,
    group_key,
    group_label,
    local_rank,
    global_rank
FROM {{ source('ascend_comm_group') }}
