-- Report, operators page: the $top (kernel, launch shape) pairs by total device time (kernel_shape_stats).
SELECT rank, name, grid, block, instances, total_ns / 1e6 AS total_ms, avg_ns / 1e6 AS avg_ms, share
FROM kernel_shape_stats
ORDER BY total_ns DESC, rank, name, grid
LIMIT $top
