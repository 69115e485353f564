-- Report, operators page: the $top ops of the run by total time (op_detail_stats), with their device time.
SELECT rank, side, op_name, op_type, occurrences, total_ns / 1e6 AS total_ms, avg_ns / 1e6 AS avg_ms,
       max_ns / 1e6 AS max_ms, share, device_exec_count, device_exec_total_ns / 1e6 AS device_ms
FROM op_detail_stats
ORDER BY total_ns DESC, rank, op_name
LIMIT $top
