-- Report, memory page: memcpy / memset bandwidth per rank and direction (memory_bandwidth_stats, profpipe rows),
-- in GB/s (1e9 bytes per second, as HTA and Kineto show it).
SELECT rank, capture, direction, copies, total_bytes, busy_ns / 1e6 AS busy_ms,
       busy_avg_bytes_per_second AS busy_avg_bps, median_bytes_per_second AS median_bps,
       max_bytes_per_second AS max_bps
FROM memory_bandwidth_stats
WHERE definition = 'profpipe'
ORDER BY total_bytes DESC, rank, capture, direction
