-- reports/summary.json (profpipe/export/summary.py): rank $rank's top op types (op_type_stats), at most $limit, by
-- their total time.
SELECT side, op_type, occurrences, total_ns / 1e6 AS total_ms, share
FROM op_type_stats
WHERE rank = $rank
ORDER BY total_ns DESC, op_type
LIMIT $limit
