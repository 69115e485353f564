-- Warehouse report, trends (profpipe/trends.py): one row per run of a warehouse (batch_runs), oldest analysis
-- first (analysed_at, then run id), with its cached aggregates (trend_runs: step time average and median in ms,
-- phases, input wait share and data verdict) and the trace-health counts of the ledger; generation names the
-- version of its tables (profpipe/trends.py caches its per-step summary by it); selection is the run's --select (NULL:
-- every model built) and steps_not_built whether it left step_phases out (its step time is then not built, not absent).
SELECT b.run, b.generation, b.status, b.error, b.analysed_at, b.ranks, b.health_events, b.health_lossy_rows, b.sources_failed,
       b.selection, coalesce(list_contains(b.tables_not_built, 'step_phases'), false) AS steps_not_built,
       coalesce(t.rank_steps, 0) AS rank_steps, t.step_avg_ms, t.step_median_ms, t.iteration_interval_ms,
       t.fp_and_bp_ms, t.tail_ms, t.input_wait_share, t.highly_input_bound_steps, t.data_verdict
FROM batch_runs b LEFT JOIN trend_runs t USING (run)
ORDER BY b.analysed_at, b.run
