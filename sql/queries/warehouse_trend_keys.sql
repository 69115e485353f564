-- Warehouse trends, cached (profpipe/trends.py `materialize`, catalog.duckdb's table trend_keys): per run of the
-- temp table _trend_todo (run, generation) and key, its summed time (total_ns). kind 'op_type': op_type_stats
-- summed over the run's ranks (key the op type, side Device or Host); 'kernel': kernel_stats by name summed over
-- ranks and streams (side Device); 'step_phase': step_phases (total, iteration_interval, fp_and_bp, tail).
-- $runs lists the runs of _trend_todo, so that only their files are read.
WITH keyed AS (
    SELECT run, 'op_type' AS kind, op_type AS key, side, sum(total_ns)::DOUBLE AS total_ns
    FROM op_type_stats WHERE list_contains($runs, run) AND op_type IS NOT NULL GROUP BY run, op_type, side
    UNION ALL
    SELECT run, 'kernel', name, 'Device', sum(total_ns)::DOUBLE
    FROM kernel_stats WHERE list_contains($runs, run) AND name IS NOT NULL GROUP BY run, name
    UNION ALL
    SELECT run, 'step_phase', phase.key, NULL, sum(phase.ns)::DOUBLE
    FROM step_phases, unnest([{'key': 'total', 'ns': total_ns}, {'key': 'iteration_interval', 'ns': iteration_interval_ns},
                              {'key': 'fp_and_bp', 'ns': fp_and_bp_ns}, {'key': 'tail', 'ns': tail_ns}]) AS t(phase)
    WHERE list_contains($runs, run) AND phase.ns IS NOT NULL
    GROUP BY run, phase.key
)
SELECT k.run, t.generation, k.kind, k.key, k.side, k.total_ns
FROM keyed k JOIN _trend_todo t USING (run)
