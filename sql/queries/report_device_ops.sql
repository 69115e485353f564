-- Report, operators page: the $top Ascend device ops of the run by total time (device_op_stats: each op instance
-- timed by its device tasks, the ops torch_npu's kernel_details.csv and msprof's op_summary list), with its share of
-- the rank's device op time.
SELECT rank, op_name, op_type, stream_id, executions, tasks, total_ns / 1e6 AS total_ms, avg_ns / 1e6 AS avg_ms,
       max_ns / 1e6 AS max_ms, share
FROM device_op_stats
ORDER BY total_ns DESC, rank, op_name
LIMIT $top
