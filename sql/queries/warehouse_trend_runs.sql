-- Warehouse trends, cached (profpipe/trends.py `materialize`, catalog.duckdb's table trend_runs): one row per run of
-- the temp table _trend_todo (run, generation) with the aggregates of its own tables the trend charts read: its
-- rank-steps and step time (step_phases: average and median in ms, the phases' averages; NULL without a step
-- trace) and the data-pipeline verdict (step_input_wait: the average share of a step spent waiting for input,
-- 'highly' above 20 %, 'moderately' from 5 %, else 'no'; NULL where the wait was not measured). $runs lists the
-- runs of _trend_todo, so that only their files are read.
WITH steps AS (
    SELECT run, count(*) AS rank_steps, avg(total_ns) / 1e6 AS step_avg_ms, median(total_ns) / 1e6 AS step_median_ms,
           avg(iteration_interval_ns) / 1e6 AS iteration_interval_ms, avg(fp_and_bp_ns) / 1e6 AS fp_and_bp_ms,
           avg(tail_ns) / 1e6 AS tail_ms
    FROM step_phases WHERE list_contains($runs, run) GROUP BY run
), waits AS (
    SELECT run, avg(wait_share) AS input_wait_share, count(*) FILTER (WHERE input_bound = 'highly') AS highly_input_bound_steps
    FROM step_input_wait WHERE list_contains($runs, run) GROUP BY run
)
SELECT t.run, t.generation, coalesce(s.rank_steps, 0) AS rank_steps, s.step_avg_ms, s.step_median_ms,
       s.iteration_interval_ms, s.fp_and_bp_ms, s.tail_ms, w.input_wait_share, w.highly_input_bound_steps,
       CASE WHEN w.input_wait_share IS NULL THEN NULL WHEN w.input_wait_share > 0.2 THEN 'highly'
            WHEN w.input_wait_share >= 0.05 THEN 'moderately' ELSE 'no' END AS data_verdict
FROM _trend_todo t LEFT JOIN steps s USING (run) LEFT JOIN waits w USING (run)
