SELECT d.rank, 'Host' AS op_side, d.op_type, d.short_name AS op_name, d.op_name AS full_op_name,
       d.occurrences AS op_occurrences,
       printf('%.6g', d.total_ns / 1e6) AS "op_total_time(ms)",
       printf('%.6g', d.total_ns / 1e6 / d.occurrences) AS "op_avg_time(ms)",
       printf('%.6g', d.share) AS total_proportion,
       d.subgraph, r.pid,
       d.total_ns
FROM {{ ref('op_detail_stats') }} d
LEFT JOIN (SELECT rank, min(pid) AS pid FROM {{ ref('rank_info') }} GROUP BY rank) r ON r.rank = d.rank
WHERE d.side = 'Host'
