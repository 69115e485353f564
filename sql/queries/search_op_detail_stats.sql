-- profpipe search: MindSpore's CPU/GPU ops (and every host op the framework readers give) with their type
SELECT 'op' AS kind, op_name AS name, op_type AS type, rank, occurrences AS calls, total_ns,
       CASE WHEN side = 'Device' THEN total_ns ELSE device_exec_total_ns END AS device_ns,
       'op_detail_stats' AS source, side, 1 AS priority, {run} AS run
FROM op_detail_stats
