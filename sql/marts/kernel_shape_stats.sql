-- kernel_shape_stats: one row per CUDA kernel name and launch shape (rank, name, grid, block): kernel_stats split by grid and block size.
-- Columns:
--   rank, name (kernel signature), grid, block ("x,y,z", as device_exec; NULL where the source does not record them).
--   instances, total_ns, avg_ns, median_ns, min_ns, max_ns, stddev_ns (sample) [ns].
--   share: total_ns / the summed total_ns of all kernels of the rank (fraction 0-1).
SELECT
    rank,
    name,
    grid,
    block,
    unnest(duration_stats(dur_ns)),
    sum(dur_ns) / nullif(sum(sum(dur_ns)) OVER (PARTITION BY rank), 0) AS share
FROM device_exec
WHERE kind = 'kernel'
GROUP BY rank, name, grid, block
