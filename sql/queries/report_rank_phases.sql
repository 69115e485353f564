-- Report, overview page: each rank's average step (ms) split into iteration gap, FP+BP and tail, with the average
-- communication not overlapped by computation (cluster_step_phases) and the share of input-bound steps.
SELECT r.rank, r.device_type, r.steps,
       r.avg_total_ns / 1e6 AS total_ms, r.avg_iteration_interval_ns / 1e6 AS iteration_interval_ms,
       r.avg_fp_and_bp_ns / 1e6 AS fp_and_bp_ms, r.avg_tail_ns / 1e6 AS tail_ms,
       (SELECT avg(c.pure_communication_ns) / 1e6 FROM cluster_step_phases c WHERE c.rank = r.rank) AS communication_ms,
       r.avg_input_wait_share AS input_wait_share
FROM rank_summary r
ORDER BY r.rank
