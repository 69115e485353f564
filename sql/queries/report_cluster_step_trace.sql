-- Report, step trace page: each rank's step in the Ascend tools' own step trace (cluster_step_trace: every rank
-- folder's step_trace_time.csv or analysis.db StepTraceTime, trimmed ranks included), ms, with the step's slowest rank
-- and this rank's slowdown against the step's fastest; the first $max_steps steps of each rank.
SELECT rank, step, device_id, origin, computing_ns / 1e6 AS computing_ms,
       communication_not_overlapped_ns / 1e6 AS not_overlapped_ms, overlapped_ns / 1e6 AS overlapped_ms,
       communication_ns / 1e6 AS communication_ms, free_ns / 1e6 AS free_ms, stage_ns / 1e6 AS stage_ms,
       bubble_ns / 1e6 AS bubble_ms, preparing_ns / 1e6 AS preparing_ms, total_ns / 1e6 AS total_ms, slowest_rank,
       slowdown
FROM cluster_step_trace
QUALIFY row_number() OVER (PARTITION BY rank, capture ORDER BY step) <= $max_steps
ORDER BY capture, step, rank
