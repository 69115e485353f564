-- Report, operators page: the $top kernels by total device time (kernel_stats).
SELECT rank, name, stream_id, op_name, instances, total_ns / 1e6 AS total_ms, avg_ns / 1e6 AS avg_ms,
       median_ns / 1e6 AS median_ms, max_ns / 1e6 AS max_ms, share
FROM kernel_stats
ORDER BY total_ns DESC, rank, name
LIMIT $top
