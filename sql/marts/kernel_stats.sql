-- kernel_stats: one row per CUDA kernel name and stream (rank, name, stream_id), with Nsight Systems' summary columns.
-- Columns:
--   rank, name (kernel signature), stream_id.
--   instances: executions.  total_ns, avg_ns, median_ns, min_ns, max_ns, stddev_ns (sample) [ns].
--   share: total_ns / the summed total_ns of all kernels of the rank (fraction 0-1; Nsight's "Time %").
--   op_name: the op most of its executions belong to (see stg_device_exec).
SELECT
    rank,
    name,
    stream_id,
    unnest(duration_stats(dur_ns)),
    sum(dur_ns) / nullif(sum(sum(dur_ns)) OVER (PARTITION BY rank), 0) AS share,
    mode(op_name) AS op_name
FROM stg_device_exec
WHERE kind = 'kernel'
GROUP BY rank, name, stream_id
