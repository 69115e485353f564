-- stg_step: one row per (rank, step) with its four base points, pivoted from step_point.
-- Columns:
--   rank, step.
--   start_ns: step start (MindSpore: where the previous step's iteration-end op starts; the first step at its FP start).
--   fp_ns: FP start (first forward op starts).  bp_ns: BP end (last backward op ends).  end_ns: step end.
--   fp_op, bp_op, end_op: ops that carry those points.
SELECT
    rank,
    step,
    max(ts_ns) FILTER (WHERE kind = 'step_start') AS start_ns,
    max(ts_ns) FILTER (WHERE kind = 'fp_start') AS fp_ns,
    max(ts_ns) FILTER (WHERE kind = 'bp_end') AS bp_ns,
    max(ts_ns) FILTER (WHERE kind = 'step_end') AS end_ns,
    max(op_name) FILTER (WHERE kind = 'fp_start') AS fp_op,
    max(op_name) FILTER (WHERE kind = 'bp_end') AS bp_op,
    max(op_name) FILTER (WHERE kind = 'step_end') AS end_op
FROM step_point
GROUP BY rank, step
