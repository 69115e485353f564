-- Warehouse report, trends (profpipe/trends.py): one row per run of a warehouse (batch_runs), oldest analysis
-- first (analysed_at, then run id), with the aggregates its trend charts and outlier test read: the step time
-- over all its ranks' steps (step_phases: average and median, ms; NULL without a step trace), the phases'
-- averages, the data-pipeline verdict (step_input_wait: the average share of a step spent waiting for input,
-- 'highly' above 20 %, 'moderately' from 5 %, else 'no'; NULL where the wait was not measured) and the
-- trace-health counts of the ledger.
WITH steps AS (
    SELECT run, count(*) AS rank_steps, avg(total_ns) / 1e6 AS step_avg_ms, median(total_ns) / 1e6 AS step_median_ms,
           avg(iteration_interval_ns) / 1e6 AS iteration_interval_ms, avg(fp_and_bp_ns) / 1e6 AS fp_and_bp_ms,
           avg(tail_ns) / 1e6 AS tail_ms
    FROM step_phases GROUP BY run
), waits AS (
    SELECT run, avg(wait_share) AS input_wait_share, count(*) FILTER (WHERE input_bound = 'highly') AS highly_input_bound_steps
    FROM step_input_wait GROUP BY run
)
SELECT b.run, b.status, b.error, b.analysed_at, b.ranks, b.health_events, b.health_lossy_rows, b.sources_failed,
       coalesce(s.rank_steps, 0) AS rank_steps, s.step_avg_ms, s.step_median_ms, s.iteration_interval_ms,
       s.fp_and_bp_ms, s.tail_ms, w.input_wait_share, w.highly_input_bound_steps,
       CASE WHEN w.input_wait_share IS NULL THEN NULL WHEN w.input_wait_share > 0.2 THEN 'highly'
            WHEN w.input_wait_share >= 0.05 THEN 'moderately' ELSE 'no' END AS data_verdict
FROM batch_runs b LEFT JOIN steps s USING (run) LEFT JOIN waits w USING (run)
ORDER BY b.analysed_at, b.run
