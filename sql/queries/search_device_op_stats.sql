-- profpipe search: Ascend ops timed by their device tasks
SELECT 'op' AS kind, op_name AS name, op_type AS type, rank, executions AS calls, total_ns, total_ns AS device_ns,
       'device_op_stats' AS source, 'Device' AS side, 0 AS priority, {run} AS run
FROM device_op_stats
