-- kernel_stats: one row per CUDA kernel name and stream (rank, name, stream_id), with Nsight Systems' summary columns.
-- Columns:
--   rank, name (kernel signature), stream_id.
--   instances: executions.  total_ns, avg_ns, median_ns, min_ns, max_ns, stddev_ns (sample) [ns].
--   share: total_ns / the summed total_ns of all kernels of the rank (fraction 0-1; Nsight's "Time %").
--   op_name: the op most of its executions belong to (see stg_device_exec); on a tie the one with more
--     kernel time, then the first by name.
WITH kernels AS (
    SELECT * FROM stg_device_exec WHERE kind = 'kernel'
), main_op AS (
    SELECT rank, name, stream_id, first(op_name ORDER BY executions DESC, total_ns DESC, op_name) AS op_name
    FROM (SELECT rank, name, stream_id, op_name, count(*) AS executions, sum(dur_ns) AS total_ns
          FROM kernels WHERE op_name IS NOT NULL GROUP BY ALL)
    GROUP BY ALL
)
SELECT
    k.rank,
    k.name,
    k.stream_id,
    unnest(duration_stats(k.dur_ns)),
    sum(k.dur_ns) / nullif(sum(sum(k.dur_ns)) OVER (PARTITION BY k.rank), 0) AS share,
    any_value(m.op_name) AS op_name
FROM kernels k
LEFT JOIN main_op m ON m.rank = k.rank AND m.name = k.name AND m.stream_id IS NOT DISTINCT FROM k.stream_id
GROUP BY k.rank, k.name, k.stream_id
