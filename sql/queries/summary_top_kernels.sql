-- reports/summary.json (profpipe/export/summary.py): rank $rank's top kernels (kernel_stats), at most $limit, by
-- their total device time.
SELECT name, stream_id, instances, total_ns / 1e6 AS total_ms, share, op_name
FROM kernel_stats
WHERE rank = $rank
ORDER BY total_ns DESC, name
LIMIT $limit
