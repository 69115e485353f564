-- Warehouse report, trends (profpipe/trends.py): per run and key, the time the trend charts, the outlier test
-- and the regressions against the recent median read. kind 'op_type': op_type_stats summed over the run's ranks
-- (key the op type, side Device or Host); 'kernel': kernel_stats by name summed over ranks and streams (side Device);
-- 'step_phase': step_phases (total, iteration_interval, fp_and_bp, tail). value_ns is the time per step, the
-- run's total over its rank-steps (as profpipe diff's per-step time), where the run has a step trace, else the
-- run's total (per = 'run'). Only the $top op types and kernels with the most time over all runs are kept.
WITH steps AS (
    SELECT run, count(*) AS rank_steps FROM step_phases GROUP BY run
), op_types AS (
    SELECT run, 'op_type' AS kind, op_type AS key, side, sum(total_ns)::DOUBLE AS total_ns
    FROM op_type_stats WHERE op_type IS NOT NULL GROUP BY run, op_type, side
), kernels AS (
    SELECT run, 'kernel' AS kind, name AS key, 'Device' AS side, sum(total_ns)::DOUBLE AS total_ns
    FROM kernel_stats WHERE name IS NOT NULL GROUP BY run, name
), keyed AS (
    SELECT * FROM op_types UNION ALL SELECT * FROM kernels
), ranked AS (
    SELECT kind, key, side, dense_rank() OVER (PARTITION BY kind ORDER BY sum(total_ns) DESC, key, side) AS place
    FROM keyed GROUP BY kind, key, side
), phases AS (
    SELECT run, 'step_phase' AS kind, phase.key, NULL::VARCHAR AS side, sum(phase.ns)::DOUBLE AS total_ns
    FROM step_phases, unnest([{'key': 'total', 'ns': total_ns}, {'key': 'iteration_interval', 'ns': iteration_interval_ns},
                              {'key': 'fp_and_bp', 'ns': fp_and_bp_ns}, {'key': 'tail', 'ns': tail_ns}]) AS t(phase)
    WHERE phase.ns IS NOT NULL
    GROUP BY run, phase.key
)
SELECT t.run, t.kind, t.key, t.side, t.total_ns,
       CASE WHEN s.rank_steps > 0 THEN t.total_ns / s.rank_steps ELSE t.total_ns END AS value_ns,
       CASE WHEN s.rank_steps > 0 THEN 'step' ELSE 'run' END AS per
FROM (SELECT k.* FROM keyed k JOIN ranked r USING (kind, key, side) WHERE r.place <= $top
      UNION ALL SELECT * FROM phases) t
LEFT JOIN steps s USING (run)
ORDER BY t.kind, t.key, t.side, t.run
