-- Report, utilisation page: each rank's GPU time in its analysed window (gpu_time_breakdown, both definitions),
-- ms, with the idle share: compute, the exposed parts of non-compute time and idle add up to the window.
SELECT rank, capture, definition, window_ns / 1e6 AS window_ms, compute_ns / 1e6 AS compute_ms,
       exposed_communication_ns / 1e6 AS exposed_communication_ms, exposed_memory_ns / 1e6 AS exposed_memory_ms,
       exposed_other_ns / 1e6 AS exposed_other_ms, idle_ns / 1e6 AS idle_ms, idle_share
FROM gpu_time_breakdown
ORDER BY rank, capture, definition
