"""Warehouse trends: each run of a warehouse against its recent history, for the warehouse report's trend charts
and `profpipe batch --json` (`trends`).

Where it sits: after `profpipe batch` (profpipe/batch.py). The aggregates are cached: when the batch writes
catalog.duckdb (profpipe/warehouse.py `write_catalog`) `materialize` adds the tables trend_runs (one row per run
and generation: step time average and median, phases, data verdict; sql/queries/warehouse_trend_runs.sql) and
trend_keys (per run and generation, the summed time of every op type, kernel and step phase;
sql/queries/warehouse_trend_keys.sql), reading the marts of the runs analysed since the last catalog only and
copying the other runs' rows from it. The report reads those two tables and batch_runs
(sql/queries/warehouse_run_trend.sql, sql/queries/warehouse_key_trend.sql) for the trends and the outliers, so
they cost the same for any number of runs' rows; only the regressions of the latest run read runs' rows (its own,
the run before it and its median runs: at most WINDOW + 2 runs, see below). profpipe/report/compare_pages.py
draws what this module returns.

Runs are in analysis order (batch_runs.analysed_at, then run id: runs of one batch share its start, so name
runs so that they sort). A series is one number per run: the step time, an op type's or a kernel's time per step
(a run without a step trace: its total), the input-wait share, the health events. Runs that failed, are empty or
missing have no value (a failed run's tables hold its last good version, which is not its own number).

**The outlier test** (TEST): a run's value x is an outlier when its robust z-score against the previous
WINDOW (10) runs with a value, z = (x - median) / (1.4826 * MAD), has |z| > THRESHOLD (3.5, Iglewicz and
Hoaglin's cut-off for the modified z-score); MAD is the median absolute deviation of those runs from their
median, 1.4826 * MAD estimates the standard deviation of normal data. A run needs MIN_HISTORY (5) earlier
values to be tested. The scale is floored at MAD_FLOOR (1 %) of the median, so a flat history (identical
runs: MAD = 0) marks only changes of more than 3.5 % rather than every rounding difference.

**Regressions against the recent median** (MEDIAN_TEST): the latest run's op types, kernels and step phases
(the series above) each against its **median run**: of the previous WINDOW runs with a value, the run whose
value is the lower median (of equal values the most recent; at least MIN_HISTORY of them). The two runs are
compared by `profpipe diff`'s test, the one used against the previous run (profpipe/diff.py `diff_summaries`):
Welch's t test of the key's per-step samples in the two runs, a regression when p < 0.05 and the time per step
grew by at least MIN_RELATIVE_CHANGE (1 %). The per-step samples are not in the cached aggregates (trend_keys
holds each run's totals): each run compared is summarised from its own tables (diff's `summarise`: per key the
count, total and sum of squares of its per-step samples, sql/queries/diff_samples.sql), once per process and
run generation (`summaries`), so the report and `batch --json` read at most WINDOW + 2 runs' rows (these, and
the run before the latest) whatever the size of the warehouse. (Before, the latest value was tested against the
median of the previous runs' values by the robust z-score, which knows the spread between runs but not within a
run: a change inside a run's step-to-step noise was flagged when the history was flat, a real change was missed
when the history was noisy.)
The regressions' numbers are diff's: the per-step time of the median run and of the latest run (diff counts an
op type's executions in the steps, so they may differ a little from the trend values, which are the run's
totals over its rank-steps). diff's op types have no side: an op type with Device and Host series is tested
once. Against the previous run the warehouse report and `batch --json` use `profpipe diff` likewise (the newest
two measured runs, `previous_pair`). Runs without step markers (a MindSpore CPU dump, a trace without
ProfilerStep#N) are compared by their executions: diff's samples 'executions', each execution of a key one sample
(the rows' `samples` says which).
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from .database import connect as duckdb_connect
from .models import query, query_rows
from .warehouse import OWN_NUMBERS

if TYPE_CHECKING:
    from .diff import Summary

#: Runs of recent history an outlier is judged against.
WINDOW = 10
#: |robust z| above this marks an outlier (Iglewicz and Hoaglin's 3.5 for the modified z-score).
THRESHOLD = 3.5
#: Earlier values a run needs before it is tested.
MIN_HISTORY = 5
#: The scale 1.4826 * MAD is at least this share of the median (a flat history).
MAD_FLOOR = 0.01
#: Smallest relative slow-down against the median that is a regression.
MIN_RELATIVE_CHANGE = 0.01
#: Op types and kernels (each) whose series are kept: those with the most time over all runs.
TOP_KEYS = 20
#: Of those, the charts draw this many lines (and every key with an outlier).
CHART_KEYS = 8
#: The test, as the report and `batch --json` state it.
TEST = (f"robust z-score: |x - median| / (1.4826 * MAD) > {THRESHOLD} over the previous {WINDOW} runs with a value "
        f"(at least {MIN_HISTORY}; 1.4826 * MAD floored at {MAD_FLOOR:.0%} of the median)")
#: The test of the latest run against its recent median, as the report and `batch --json` state it.
MEDIAN_TEST = (f"profpipe diff's test against the median run (of the previous {WINDOW} runs with a value, the one whose "
               f"value is the lower median): Welch's t test of the per-step samples, p < 0.05 and slower by at least "
               f"{MIN_RELATIVE_CHANGE:.0%} per step")
#: JSON has no infinity: a z-score beyond this is written as this.
_Z_CAP = 1e9


#: The tables `materialize` writes, and the queries that fill them.
CACHE = {"trend_runs": "warehouse_trend_runs", "trend_keys": "warehouse_trend_keys"}
#: The public tables those queries read.
SOURCES = ("step_phases", "step_input_wait", "op_type_stats", "kernel_stats")


def materialize(con: duckdb.DuckDBPyConnection, runs: dict[str, Any], previous: Path | None = None) -> None:
    """Create trend_runs and trend_keys in `con` (which has the warehouse's views over `runs`, RunRecords by id):
    the rows of runs whose generation `previous` (the last catalog.duckdb) already holds are copied from it, the
    others computed from their tables."""
    live = pa.table({"run": [r.run for r in runs.values() if r.generation],
                     "generation": [r.generation for r in runs.values() if r.generation]},
                    schema=pa.schema([("run", pa.string()), ("generation", pa.string())]))
    con.register("_trend_live", live)
    _empty_sources(con)
    reused = False
    if previous is not None and previous.is_file():
        con.execute(f"ATTACH '{str(previous).replace(chr(39), chr(39) * 2)}' AS _previous (READ_ONLY)")
        try:
            held = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = '_previous'").fetchall()}
            if set(CACHE) <= held:
                for table in CACHE:
                    con.execute(f"CREATE TABLE {table} AS SELECT p.* FROM _previous.{table} p SEMI JOIN _trend_live l USING (run, generation)")
                reused = True
        finally:
            con.execute("DETACH _previous")
    done = {run for (run,) in con.execute("SELECT DISTINCT run FROM trend_runs").fetchall()} if reused else set()
    todo = live.filter(pa.array([run not in done for run in live.column("run").to_pylist()], pa.bool_()))
    con.register("_trend_todo", todo)
    names = todo.column("run").to_pylist()
    for table, name in CACHE.items():
        if reused:
            con.execute(f"INSERT INTO {table} BY NAME {query(name)}", {"runs": names})
        else:
            con.execute(f"CREATE TABLE {table} AS {query(name)}", {"runs": names})
    con.unregister("_trend_todo")
    con.unregister("_trend_live")


def _empty_sources(con: duckdb.DuckDBPyConnection) -> None:
    """Empty views (typed from the models' YAML) of the SOURCES a warehouse has no columns for yet (no run has
    published tables), so that the cache's queries bind."""
    from .models import load_models

    views = {v for (v,) in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
    views |= {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    for model in load_models():
        if model.name in SOURCES and model.name not in views:
            typed = ", ".join(f'CAST(NULL AS {c.type}) AS "{c.name}"' for c in model.columns)
            con.execute(f"CREATE TEMP VIEW {model.name} AS SELECT CAST(NULL AS VARCHAR) AS run, {typed} WHERE false")


def connect(warehouse: Path) -> duckdb.DuckDBPyConnection:
    """A connection with batch_runs and the cached trend tables: catalog.duckdb, read-only, when it describes the
    manifest (the batch writes both), else (a moved warehouse, a catalog from before the cache) an in-memory
    connection over the tables the cache reads, with the cache computed in it."""
    from .errors import UsageError
    from .warehouse import CATALOG, Warehouse, is_warehouse
    from .warehouse import connect as connect_warehouse

    warehouse = warehouse.resolve()
    if not is_warehouse(warehouse):
        raise UsageError(f"{warehouse}: not a profpipe warehouse (`profpipe batch -w` makes one)")
    manifest = Warehouse(warehouse)
    catalog = warehouse / CATALOG
    if catalog.is_file():
        con = duckdb_connect(catalog, read_only=True)
        try:
            tables = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
            serial = con.execute("SELECT serial FROM warehouse_info").fetchone()[0] if "warehouse_info" in tables else None
            if set(CACHE) <= tables and serial == manifest.serial:
                return con
        except duckdb.Error:
            pass
        con.close()
    con = connect_warehouse(warehouse, tables=SOURCES)
    materialize(con, manifest.runs)
    return con


def robust_z(history: list[float], value: float | None) -> tuple[float | None, float | None]:
    """(median of `history`, robust z of `value` against it); (median, None) with fewer than MIN_HISTORY values."""
    if not history:
        return None, None
    median = statistics.median(history)
    if value is None or len(history) < MIN_HISTORY:
        return median, None
    mad = statistics.median(abs(v - median) for v in history)
    scale = max(1.4826 * mad, MAD_FLOOR * abs(median))
    if scale == 0:
        return median, 0.0 if value == median else math.copysign(_Z_CAP, value - median)
    return median, max(-_Z_CAP, min(_Z_CAP, (value - median) / scale))


@dataclass
class Series:
    """One number per run (None: no value) with each run's history median and robust z-score."""

    kind: str  # step, op_type, kernel, step_phase, data, health
    key: str
    label: str
    unit: str
    values: list[float | None]
    side: str | None = None
    medians: list[float | None] = field(default_factory=list)
    z: list[float | None] = field(default_factory=list)

    def score(self) -> None:
        self.medians, self.z = [], []
        seen: list[float] = []
        for value in self.values:
            median, z = robust_z(seen[-WINDOW:], value)
            self.medians.append(median)
            self.z.append(z)
            if value is not None:
                seen.append(value)

    def outlier(self, index: int) -> bool:
        z = self.z[index]
        return z is not None and abs(z) > THRESHOLD


@dataclass
class Trends:
    runs: list[dict[str, Any]]
    series: list[Series]
    outliers: list[dict[str, Any]]

    @property
    def run_ids(self) -> list[str]:
        return [r["run"] for r in self.runs]


def trends(con: duckdb.DuckDBPyConnection) -> Trends:
    """The series of the warehouse `con` opens (its catalog), scored, and the outliers found (one row per run and
    series marked: run, kind, key, side, label, unit, value, median, z, direction)."""
    runs = query_rows(con, "warehouse_run_trend")
    keyed = query_rows(con, "warehouse_key_trend", top=TOP_KEYS)
    index = {r["run"]: i for i, r in enumerate(runs)}
    valid = [r["status"] in OWN_NUMBERS for r in runs]

    def run_series(kind: str, key: str, label: str, unit: str, column: str) -> Series:
        return Series(kind, key, label, unit, [r[column] if ok else None for r, ok in zip(runs, valid)])

    series = [run_series("step", "step time", "step time (average)", "ms", "step_avg_ms"),
              run_series("data", "input wait", "input wait share of the step", "share", "input_wait_share"),
              run_series("health", "health events", "trace-health events", "events", "health_events")]
    by_key: dict[tuple[str, str, str | None], list[float | None]] = {}
    has_kind: dict[str, set[str]] = {}
    for row in keyed:
        if row["run"] not in index:
            continue
        values = by_key.setdefault((row["kind"], row["key"], row["side"]), [None] * len(runs))
        values[index[row["run"]]] = row["value_ns"] / 1e6
        has_kind.setdefault(row["kind"], set()).add(row["run"])
    for (kind, key, side), values in by_key.items():
        # a top key absent from a run that has others of its kind took no time there
        values = [(0.0 if v is None and r["run"] in has_kind[kind] else v) if ok else None
                  for v, r, ok in zip(values, runs, valid)]
        label = f"{key} ({side.lower()})" if kind == "op_type" and side else key
        series.append(Series(kind, key, label, "ms", values, side=side))
    outliers = []
    for s in series:
        s.score()
        for i, value in enumerate(s.values):
            if s.outlier(i):
                outliers.append({"run": runs[i]["run"], "kind": s.kind, "key": s.key, "side": s.side, "label": s.label,
                                 "unit": s.unit, "value": value, "median": s.medians[i], "z": s.z[i],
                                 "direction": "slower" if s.z[i] > 0 else "faster"})
    outliers.sort(key=lambda o: (index[o["run"]], -abs(o["z"])))
    return Trends(runs, series, outliers)


def latest(t: Trends) -> int | None:
    """The index of the latest run whose numbers are its own (status ok or partial), or None."""
    for i in range(len(t.runs) - 1, -1, -1):
        if t.runs[i]["status"] in OWN_NUMBERS:
            return i
    return None


def median_run(t: Trends, series: Series, index: int) -> int | None:
    """The index of the median run of `series` for the run at `index`: of the previous WINDOW runs with a value,
    the one whose value is the lower median (statistics.median_low; of equal values the most recent run: values
    equal to 9 significant digits are equal, as DuckDB's parallel sums of one run's rows differ in their last bits
    from run to run); None with fewer than MIN_HISTORY of them."""
    history = [(v, j) for j, v in enumerate(series.values[:index]) if v is not None][-WINDOW:]
    if len(history) < MIN_HISTORY:
        return None
    ordered = sorted(history, key=lambda h: (float(f"{h[0]:.9g}"), -h[1]))
    return ordered[(len(ordered) - 1) // 2][1]


def median_regressions(t: Trends, summary: Callable[[str], Summary]) -> list[dict[str, Any]]:
    """The latest run's op types, kernels and step phases that are significant slow-downs against their median run
    (`median_run`) by `profpipe diff`'s test: Welch's t test of the two runs' per-step samples, p < ALPHA and
    slower by at least MIN_RELATIVE_CHANGE per step (profpipe/diff.py `diff_summaries`). `summary(run)` is the
    run's diff summary (`summaries`). Largest slow-down first (ms per step)."""
    from .diff import diff_summaries

    i = latest(t)
    if i is None:
        return []
    wanted: dict[str, dict[tuple[str, str], Series]] = {}  # median run -> (kind, key) -> series
    done: set[tuple[str, str]] = set()
    for s in t.series:
        if s.kind not in ("op_type", "kernel", "step_phase") or s.values[i] is None or (s.kind, s.key) in done:
            continue
        j = median_run(t, s, i)
        if j is not None:  # diff's op types have no side: an op type's first series (Device before Host) is tested
            done.add((s.kind, s.key))
            wanted.setdefault(t.runs[j]["run"], {})[(s.kind, s.key)] = s
    found: list[dict[str, Any]] = []
    if not wanted:
        return found
    run = t.runs[i]["run"]
    latest_summary = summary(run)
    for median, keys in wanted.items():
        for row in diff_summaries(summary(median), latest_summary, min_relative_change=MIN_RELATIVE_CHANGE).to_pylist():
            s = keys.get((row["kind"], row["key"]))
            if s is None or not row["significant"] or not (row["per_step_change_ns"] or 0) > 0:
                continue
            found.append({"run": run, "kind": s.kind, "key": s.key, "side": s.side, "median_run": median,
                          "median_ms": row["per_step_a_ns"] / 1e6, "latest_ms": row["per_step_b_ns"] / 1e6,
                          "change_ms": row["per_step_change_ns"] / 1e6, "relative_change": row["relative_change"],
                          "samples": row["samples"], "t_statistic": row["t_statistic"], "p_value": row["p_value"]})
    found.sort(key=lambda r: (-r["change_ms"], r["kind"], r["key"]))
    return found


def previous_pair(t: Trends) -> tuple[str, str] | None:
    """(the run before, the latest run) among the measured runs with numbers of their own (not failed): runs with
    a step trace, and runs without step markers that have op type or kernel times (diff compares those by their
    executions); the pair `profpipe diff` compares."""
    timed = [r["run"] for i, r in enumerate(t.runs) if r["status"] in OWN_NUMBERS and (
        r["step_avg_ms"] is not None
        or any(s.values[i] is not None for s in t.series if s.kind in ("op_type", "kernel")))]
    return (timed[-2], timed[-1]) if len(timed) >= 2 else None


def summaries(warehouse: Path, t: Trends) -> Callable[[str], Summary]:
    """`summary(run)`: the diff summary (profpipe/diff.py `summarise`: per key the count, total and squares of its
    per-step samples) of a run of `t`, read from the run's tables once per process and generation (the report and
    `batch --json` compare the same runs)."""
    root = str(warehouse.resolve())
    generations = {r["run"]: r["generation"] for r in t.runs}
    return lambda run: _summary(root, run, generations[run])


@lru_cache(maxsize=2 * WINDOW + 4)
def _summary(warehouse: str, run: str, generation: str | None) -> Summary:
    from .diff import summarise
    from .warehouse import open_run

    con = open_run(Path(warehouse), run)
    try:
        return summarise(con)
    finally:
        con.close()


def previous_changes(summary: Callable[[str], Summary], pair: tuple[str, str]):
    """`profpipe diff` of the pair's two runs (a pyarrow table, profpipe/diff.py's columns); `summary` as
    `summaries` returns."""
    from .diff import diff_summaries

    return diff_summaries(summary(pair[0]), summary(pair[1]))


def significant_slowdowns(changes) -> list[dict[str, Any]]:
    """The rows of a diff table that are significant slow-downs (the report's Regressions)."""
    keep = ("kind", "key", "status", "per_step_a_ns", "per_step_b_ns", "per_step_change_ns", "relative_change", "samples",
            "p_value")
    return [{k: r[k] for k in keep} for r in changes.to_pylist() if r["significant"] and (r["per_step_change_ns"] or 0) > 0]


def summary(warehouse: Path) -> dict[str, Any]:
    """`profpipe batch --json`'s `trends`: the test, the outliers, and the latest run's regressions against the
    previous run and against its median runs (both diff's test)."""
    with connect(warehouse) as con:
        t = trends(con)
    per_run = summaries(warehouse, t)
    pair = previous_pair(t)
    previous = None
    if pair is not None:
        previous = {"a": pair[0], "b": pair[1], "regressions": significant_slowdowns(previous_changes(per_run, pair))}
    i = latest(t)
    return {"test": TEST, "window": WINDOW, "threshold": THRESHOLD, "median_test": MEDIAN_TEST, "runs": len(t.runs),
            "latest": None if i is None else t.runs[i]["run"], "outliers": t.outliers,
            "regressions": {"previous": previous, "median": median_regressions(t, per_run)}}
