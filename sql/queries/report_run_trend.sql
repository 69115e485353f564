-- Report, batch page: every run of a warehouse (batch_runs), oldest analysis first, with its average step and its
-- phases (ms) over all its ranks' steps (step_phases; NULL for a run without a step trace).
SELECT b.run, b.status, b.analysed_at, b.ranks, b.health_events,
       avg(p.total_ns) / 1e6 AS total_ms, avg(p.iteration_interval_ns) / 1e6 AS iteration_interval_ms,
       avg(p.fp_and_bp_ns) / 1e6 AS fp_and_bp_ms, avg(p.tail_ns) / 1e6 AS tail_ms, count(p.step) AS rank_steps
FROM batch_runs b LEFT JOIN step_phases p ON p.run = b.run
GROUP BY b.run, b.status, b.analysed_at, b.ranks, b.health_events
ORDER BY b.analysed_at, b.run
