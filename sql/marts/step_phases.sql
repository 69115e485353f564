-- step_phases: one row per step (rank, capture, step) split into iteration gap, forward+backward and tail.
-- Columns:
--   rank, capture (profiling cycle), step, start_ns, fp_ns, bp_ns, end_ns (rank clock) and fp_op, bp_op (ops at the FP start and BP end).
--   total_ns = end - start; iteration_interval_ns = fp - start (waiting for data and launch);
--   fp_and_bp_ns = bp - fp; tail_ns = end - bp. Inference runs (no BP point): fp_and_bp_ns = end - fp, tail_ns NULL.
SELECT
    rank,
    capture,
    step,
    start_ns,
    fp_ns,
    bp_ns,
    end_ns,
    fp_op,
    bp_op,
    end_ns - start_ns AS total_ns,
    fp_ns - start_ns AS iteration_interval_ns,
    coalesce(bp_ns, end_ns) - fp_ns AS fp_and_bp_ns,
    end_ns - bp_ns AS tail_ns
FROM stg_step
WHERE start_ns IS NOT NULL AND fp_ns IS NOT NULL AND end_ns IS NOT NULL
