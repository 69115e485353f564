-- Warehouse report, trends (profpipe/trends.py): per run and key of the cached trend_keys, the time the trend
-- charts, the outlier test and the regressions against the recent median read: value_ns is the time per step, the
-- run's total over its rank-steps (as profpipe diff's per-step time), where the run has a step trace, else the
-- run's total (per = 'run'). Of the op types and kernels only the $top (each) with the most time over all runs.
WITH ranked AS (
    SELECT kind, key, side, row_number() OVER (PARTITION BY kind ORDER BY sum(total_ns) DESC, key, side) AS place
    FROM trend_keys WHERE kind IN ('op_type', 'kernel') GROUP BY kind, key, side
)
SELECT k.run, k.kind, k.key, k.side, k.total_ns,
       CASE WHEN r.rank_steps > 0 THEN k.total_ns / r.rank_steps ELSE k.total_ns END AS value_ns,
       CASE WHEN r.rank_steps > 0 THEN 'step' ELSE 'run' END AS per
FROM trend_keys k LEFT JOIN trend_runs r USING (run)
WHERE k.kind = 'step_phase' OR EXISTS (SELECT 1 FROM ranked p WHERE p.kind = k.kind AND p.key = k.key AND p.side = k.side
                                                  AND p.place <= $top)
ORDER BY k.kind, k.key, k.side, k.run
