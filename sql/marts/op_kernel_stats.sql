-- op_kernel_stats: one row per (rank, owning op, kernel name): the kernels each framework op launched.
-- Columns:
--   rank, op_name (full scoped name; NULL when unattributed), name (kernel signature).
--   instances, total_ns, avg_ns, min_ns, max_ns [ns].
--   share_of_op: total_ns / all kernel time of the same op (fraction 0-1).
SELECT
    rank,
    op_name,
    name,
    count(*) AS instances,
    sum(dur_ns)::BIGINT AS total_ns,
    avg(dur_ns) AS avg_ns,
    min(dur_ns) AS min_ns,
    max(dur_ns) AS max_ns,
    sum(dur_ns) / nullif(sum(sum(dur_ns)) OVER (PARTITION BY rank, op_name), 0) AS share_of_op
FROM stg_device_exec
WHERE kind = 'kernel'
GROUP BY rank, op_name, name
