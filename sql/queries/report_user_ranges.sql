-- Report, operators page: the $top user ranges (MSTX markers, NVTX ranges, record_function annotations) by total
-- time (user_range_stats).
SELECT rank, side, category, name, instances, marks, total_ns / 1e6 AS total_ms, avg_ns / 1e6 AS avg_ms,
       median_ns / 1e6 AS median_ms, max_ns / 1e6 AS max_ms, share
FROM user_range_stats
ORDER BY total_ns DESC, rank, side, name
LIMIT $top
