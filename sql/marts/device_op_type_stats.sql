-- device_op_type_stats: one row per op type (rank, op_type) of the ops timed by device tasks (Ascend).
-- Columns:
--   rank, op_type.
--   instances: op instances (full names) of the type.  executions: their executions (device_op_stats).
--   total_ns: summed task time [ns].
--   per_step_ns: sum over the instances of their average time [ns] - MindSpore's era-A
--     "compute_time(ms, per-step)", the type's time in one step when every instance runs once a step.
--   share: total_ns / the rank's summed task time (fraction 0-1).
--   per_step_share: per_step_ns / the rank's summed per_step_ns (fraction 0-1; MindSpore's era-A percent / 100).
SELECT
    rank,
    op_type,
    count(*) AS instances,
    sum(executions)::BIGINT AS executions,
    sum(total_ns)::BIGINT AS total_ns,
    sum(avg_ns) AS per_step_ns,
    sum(total_ns) / sum(sum(total_ns)) OVER (PARTITION BY rank) AS share,
    sum(avg_ns) / sum(sum(avg_ns)) OVER (PARTITION BY rank) AS per_step_share
FROM device_op_stats
GROUP BY rank, op_type
