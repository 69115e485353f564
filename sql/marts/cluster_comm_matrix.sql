-- The Ascend tools' own communication matrix (ascend_comm_link_summary, the "-total" entry of each collective type and
-- link: every op of that type) in global ranks, one row per link of a group, step and collective type.
WITH totals AS (
    SELECT rank, capture, step, comm_kind, group_id, collective_type, src_rank, dst_rank, transport, bytes, time_ns
    FROM {{ ref('stg_ascend_comm_link_summary') }}
    WHERE stat = 'total'
), members AS (  -- group-local -> global: parallel_group_info first, then rank R's own link i-i (local i is R)
    SELECT group_id, local_rank, global_rank, 0 AS priority FROM {{ ref('stg_ascend_comm_group') }}
    UNION ALL
    SELECT group_id, src_rank, rank, 1 FROM {{ ref('stg_ascend_comm_link_summary') }}
    WHERE src_rank = dst_rank AND group_id IS NOT NULL
), mapping AS (
    SELECT group_id, local_rank, arg_min(global_rank, (priority, global_rank)) AS global_rank,
           count(DISTINCT global_rank) FILTER (WHERE priority = 0) > 1 AS ambiguous
    FROM members GROUP BY group_id, local_rank
), placed AS (
    SELECT t.*, s.global_rank AS src_global, d.global_rank AS dst_global
    FROM totals t
    LEFT JOIN mapping s ON s.group_id = t.group_id AND s.local_rank = t.src_rank
    LEFT JOIN mapping d ON d.group_id = t.group_id AND d.local_rank = t.dst_rank
)
-- a link that several ranks report (each writes its own links; a copy may repeat them) is taken from its sender
SELECT capture, step, group_id, comm_kind, collective_type,
       src_rank AS src_local_rank, dst_rank AS dst_local_rank,
       any_value(src_global) AS src_rank, any_value(dst_global) AS dst_rank,
       arg_max(transport, (rank IS NOT DISTINCT FROM src_global, -rank)) AS transport,
       arg_max(bytes, (rank IS NOT DISTINCT FROM src_global, -rank)) AS bytes,
       arg_max(time_ns, (rank IS NOT DISTINCT FROM src_global, -rank)) AS time_ns,
       arg_max(bytes, (rank IS NOT DISTINCT FROM src_global, -rank))
           / nullif(arg_max(time_ns, (rank IS NOT DISTINCT FROM src_global, -rank)) / 1e9, 0)
           AS bandwidth_bytes_per_second,
       list(DISTINCT rank ORDER BY rank) AS reported_by
FROM placed
GROUP BY capture, step, group_id, comm_kind, collective_type, src_rank, dst_rank
