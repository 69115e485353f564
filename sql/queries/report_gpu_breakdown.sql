-- Report, utilisation page: each rank's GPU time in its analysed window (gpu_time_breakdown, both definitions),
-- ms, with the idle share.
SELECT rank, capture, definition, window_ns / 1e6 AS window_ms, compute_ns / 1e6 AS compute_ms,
       communication_ns / 1e6 AS communication_ms, memory_ns / 1e6 AS memory_ms, other_ns / 1e6 AS other_ms,
       idle_ns / 1e6 AS idle_ms, idle_share
FROM gpu_time_breakdown
ORDER BY rank, capture, definition
