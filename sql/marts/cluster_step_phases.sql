-- cluster_step_phases: one row per (rank, capture, step): the rank's step phases beside the other ranks' for the same step (of the same capture).
-- Columns:
--   rank, capture, step, total_ns, iteration_interval_ns, fp_and_bp_ns, tail_ns (step_phases).
--   pure_communication_ns: communication not hidden by computation (step_overlap); NULL without device data.
--   receive_alone_ns, collective_alone_ns, stage_ns: the pipeline-parallel split of step_overlap (stage time =
--     step - time waiting alone on Receive ops); NULL without device data.
--   stage: pipeline stage (1-based) = rank // (rank_size / stage_num) + 1 when the rank's profiler_info gives
--     rank_size and stage_num (MindInsight's rule); NULL otherwise.
--   ranks: ranks that have the step.  fastest_total_ns, slowest_total_ns: over those ranks.
--   slowest_rank: the rank with the longest step (lowest rank on ties).
--   spread: (slowest - fastest) / fastest.  slowdown: total / fastest - 1.
--   is_slow: slowdown > 0.05 (the rank is more than 5 % slower than the fastest rank of the step).
WITH phases AS (
    SELECT p.rank, p.capture, p.step, p.total_ns, p.iteration_interval_ns, p.fp_and_bp_ns, p.tail_ns,
           o.pure_communication_ns, o.receive_alone_ns, o.collective_alone_ns, o.stage_ns,
           (p.rank // (try_cast(json_extract(r.metadata_json, '$.rank_size') AS BIGINT)
                       // nullif(try_cast(json_extract(r.metadata_json, '$.stage_num') AS BIGINT), 0)) + 1) AS stage
    FROM step_phases p
    LEFT JOIN step_overlap o USING (rank, capture, step)
    LEFT JOIN (SELECT rank, capture, arg_max(metadata_json, (json_extract(metadata_json, '$.rank_size') IS NOT NULL, layout)) AS metadata_json
               FROM run_info GROUP BY rank, capture) r USING (rank, capture)
), per_step AS (
    SELECT capture, step, count(*) AS ranks, min(total_ns) AS fastest_total_ns, max(total_ns) AS slowest_total_ns,
           arg_max(rank, (total_ns, -rank)) AS slowest_rank
    FROM phases GROUP BY capture, step
)
SELECT
    p.rank, p.capture, p.step, p.total_ns, p.iteration_interval_ns, p.fp_and_bp_ns, p.tail_ns, p.pure_communication_ns,
    p.receive_alone_ns, p.collective_alone_ns, p.stage_ns, p.stage,
    s.ranks, s.fastest_total_ns, s.slowest_total_ns, s.slowest_rank,
    (s.slowest_total_ns - s.fastest_total_ns) / nullif(s.fastest_total_ns, 0) AS spread,
    p.total_ns / nullif(s.fastest_total_ns, 0) - 1 AS slowdown,
    coalesce(p.total_ns / nullif(s.fastest_total_ns, 0) - 1 > 0.05, false) AS is_slow
FROM phases p JOIN per_step s USING (capture, step)
