"""Optional stage between ingest and models: keep only the rows of selected steps (`step_list`).

A step is the window of its step-trace points; steps are numbered per profiling cycle (rank, capture),
so every window, check and filter is per (rank, capture). MindSpore's windows overlap (a step starts
where the previous step's iteration-end op starts), so a row belongs to the selected steps
when it starts after the end of the step before them (at or after the first step's start
when that is step 1) and at or before the end of the last one. Rows outside are dropped from
tables/ before the models run. A
rank without a step trace keeps everything, and the runner says so in the warnings.
"""
from __future__ import annotations

from pathlib import Path

import duckdb

from .errors import UsageError
from .ingest.scratch import memory_database

_TIMED_TABLES = ("host_op", "device_exec")


def keep_steps(tables_dir: Path, steps: list[int]) -> list[str]:
    """Rewrite the timed tables of tables_dir to the selected steps; return warnings."""
    first, last = steps[0], steps[-1]
    with memory_database() as con:
        con.execute(f"SET file_search_path = '{tables_dir}'")
        con.execute(f"""CREATE TEMP TABLE windows AS
            SELECT rank, capture,
                   min(ts_ns) FILTER (WHERE step = {first} AND kind = 'step_start') AS start_ns,
                   max(ts_ns) FILTER (WHERE step = {first - 1} AND kind = 'step_end') AS previous_end_ns,
                   max(ts_ns) FILTER (WHERE step = {last} AND kind = 'step_end') AS end_ns
            FROM read_parquet('step_point.parquet')
            GROUP BY rank, capture""")
        ranks_with_steps = con.execute(
            "SELECT DISTINCT rank FROM read_parquet('step_point.parquet')").fetchall()
        _check_in_range(con, first, last)
        all_ranks = con.execute("SELECT rank FROM read_parquet('run_info.parquet')").fetchall()
        warnings = [f"rank {r}: no step trace, step_list ignored"
                    for (r,) in sorted(set(all_ranks) - set(ranks_with_steps))]
        for name in _TIMED_TABLES:
            _rewrite(con, tables_dir, name, """
                SELECT t.* FROM read_parquet('{name}.parquet') t LEFT JOIN windows w USING (rank, capture)
                WHERE w.rank IS NULL
                   OR (t.start_ns <= w.end_ns AND (t.start_ns > w.previous_end_ns
                       OR (w.previous_end_ns IS NULL AND t.start_ns >= w.start_ns)))""")
        _rewrite(con, tables_dir, "step_point",
                 f"SELECT * FROM read_parquet('{{name}}.parquet') WHERE step BETWEEN {first} AND {last}")
    return warnings


def _check_in_range(con: duckdb.DuckDBPyConnection, first: int, last: int) -> None:
    """A step_list reaching outside the steps of a profiling cycle's step trace is an error naming the steps
    it has (as MindSpore refuses one), never a silently empty result."""
    outside = con.execute(f"""
        SELECT rank, capture, min(step), max(step) FROM read_parquet('step_point.parquet')
        WHERE kind = 'step_end' GROUP BY rank, capture HAVING min(step) > {first} OR max(step) < {last}
        ORDER BY rank, capture""").fetchall()
    if outside:
        have = "; ".join(f"rank {rank}{f' capture {capture}' if capture else ''} has steps {low}-{high}"
                         for rank, capture, low, high in outside)
        raise UsageError(f"step_list {first}-{last} is outside the data: {have}")


def _rewrite(con: duckdb.DuckDBPyConnection, tables_dir: Path, name: str, select: str) -> None:
    target = tables_dir / f"{name}.parquet"
    staged = tables_dir / f"{name}.filtered.parquet"
    con.execute(f"COPY ({select.format(name=name)}) TO '{staged}' (FORMAT PARQUET, COMPRESSION ZSTD)")
    staged.replace(target)
