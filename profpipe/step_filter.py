"""Optional stage between ingest and models: keep only the rows of selected steps (`step_list`).

A step is the window of its step-trace points; steps are numbered per profiling cycle (rank, capture),
so every window, check and filter is per (rank, capture). The queries are in sql/queries
(step_windows.sql, steps_outside_list.sql, rows_in_steps.sql). Rows outside are dropped from tables/
before the models run. A rank without a step trace keeps everything, and the runner says so in the
warnings.
"""
from __future__ import annotations

from pathlib import Path

import duckdb

from .errors import UsageError
from .ingest.scratch import memory_database
from .models import query

_TIMED_TABLES = ("host_op", "device_exec")


def keep_steps(tables_dir: Path, steps: list[int]) -> list[str]:
    """Rewrite the timed tables of tables_dir to the selected steps; return warnings."""
    step_points = str(tables_dir / "step_point.parquet")
    window = {"first": steps[0], "last": steps[-1], "step_points": step_points}
    with memory_database() as con:
        con.sql(query("step_windows"), params=window).create("step_windows")
        _check_in_range(con, window)
        ranks_with_steps = {r for (r,) in con.execute("SELECT DISTINCT rank FROM step_windows").fetchall()}
        all_ranks = {r for (r,) in con.execute("SELECT rank FROM read_parquet(?)",
                                               [str(tables_dir / "run_info.parquet")]).fetchall()}
        warnings = [f"rank {r}: no step trace, step_list ignored" for r in sorted(all_ranks - ranks_with_steps)]
        for name in _TIMED_TABLES:
            _rewrite(con, tables_dir, name, query("rows_in_steps"), {"rows": str(tables_dir / f"{name}.parquet")})
        _rewrite(con, tables_dir, "step_point", "SELECT * FROM read_parquet($rows) WHERE step BETWEEN $first AND $last",
                 {"rows": step_points, "first": steps[0], "last": steps[-1]})
    return warnings


def _check_in_range(con: duckdb.DuckDBPyConnection, window: dict[str, object]) -> None:
    """A step_list reaching outside the steps of a profiling cycle's step trace is an error naming the steps
    it has (as MindSpore refuses one), never a silently empty result."""
    outside = con.sql(query("steps_outside_list"), params=window).fetchall()
    if outside:
        have = "; ".join(f"rank {rank}{f' capture {capture}' if capture else ''} has steps {low}-{high}"
                         for rank, capture, low, high in outside)
        raise UsageError(f"step_list {window['first']}-{window['last']} is outside the data: {have}")


def _rewrite(con: duckdb.DuckDBPyConnection, tables_dir: Path, name: str, select: str,
             params: dict[str, object]) -> None:
    staged = tables_dir / f"{name}.filtered.parquet"
    con.sql(select, params=params).write_parquet(str(staged), compression="zstd")
    staged.replace(tables_dir / f"{name}.parquet")
