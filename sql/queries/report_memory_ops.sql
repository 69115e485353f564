-- Report, memory page: the $top owners (ops, tensors) by bytes allocated (memory_op_stats).
SELECT rank, capture, component, owner, blocks, total_bytes / 1048576 AS total_mib, max_bytes / 1048576 AS max_mib,
       avg_lifetime_ns / 1e6 AS avg_lifetime_ms
FROM memory_op_stats
ORDER BY total_bytes DESC, rank, owner
LIMIT $top
