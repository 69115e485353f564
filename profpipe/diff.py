"""`profpipe diff`: compare two analysed runs, after the models (it reads two finished profile.duckdb files, or
two runs of a warehouse, never raw input).

Each run gives its per-step samples with sql/queries/diff_samples.sql: per (kind, key, rank, capture, step)
the time, the number of executions and the sum of the executions' squared times of a kernel (device execution
by name), an op type (framework op executions) or a step phase. For each key present in either run this module
computes the counts, totals, the time per step, their changes B - A, and Welch's t test of the samples; rows are
ordered by impact, the absolute change of the per-step time, largest first. What a sample is (the column
`samples`, the same on every row):

* 'steps', where every cycle (rank, capture) of both runs has steps: a sample unit is one (rank, capture, step);
  the time per step is the total / the run's steps (a step where the key did not run counts as 0) and the test
  compares the keys' per-step times.
* 'executions', where a cycle of either run has no step markers (a MindSpore CPU dump, a trace without
  ProfilerStep#N: one sample unit per cycle, too few for a test): the samples are the key's executions
  themselves, as many as the run ran (an op instance run once per step gives as many samples as steps). The
  "per step" time is then the time per cycle (the total / the run's cycles), and the test compares the time of
  one execution: a key only one run executed, or a change in the number of executions alone, has no test there
  (count_change shows it).

The two-sided p-value is Student's t with Welch-Satterthwaite's degrees of freedom, computed exactly with
the regularized incomplete beta function (p = I_{df / (df + t^2)}(df / 2, 1 / 2), by Lentz's continued
fraction): no normal approximation, so a handful of steps gives honest, large p-values. A row is
`significant` when p < alpha (0.05) and the per-step time changed by at least `min_relative_change` (1 %)
of run A's (any change when A's is 0), so that noise is not reported as a regression.

Columns of the table `diff_runs` returns (and `profpipe diff -o` writes):

| column | type | unit | meaning |
|---|---|---|---|
| kind | VARCHAR | | 'kernel' (device execution name), 'op_type' (framework op type) or 'step_phase' (total, iteration_interval, fp_and_bp, tail) |
| key | VARCHAR | | the kernel name, op type or phase |
| status | VARCHAR | | 'both', 'only_a' (the key is not in run B) or 'only_b' (not in run A) |
| count_a, count_b | BIGINT | count | executions of the key in the steps of run A / B (step phases: steps that have the phase) |
| count_change | BIGINT | count | count_b - count_a |
| steps_a, steps_b | BIGINT | count | units the per-step time divides by: steps (rank, capture, step) of run A / B; with samples 'executions', cycles (rank, capture) |
| total_a_ns, total_b_ns | BIGINT | ns | summed time of the key in the steps of run A / B |
| total_change_ns | BIGINT | ns | total_b_ns - total_a_ns |
| per_step_a_ns, per_step_b_ns | DOUBLE | ns | total / steps_a (steps_b): the mean per-step sample; the time per cycle with samples 'executions' (NULL when a run has no unit) |
| per_step_change_ns | DOUBLE | ns | per_step_b_ns - per_step_a_ns: the impact rows are ordered by |
| relative_change | DOUBLE | share | per_step_change_ns / per_step_a_ns (NULL when per_step_a_ns is 0) |
| samples | VARCHAR | | what the test compares: 'steps' (per-step samples) or 'executions' (one sample per execution; a run without step markers) |
| t_statistic | DOUBLE | | Welch's t of the samples, B against A (+-inf when neither run varies but the means differ; NULL with fewer than 2 samples on a side) |
| p_value | DOUBLE | share | two-sided p-value of t (Student's t, Welch-Satterthwaite df); NULL as t_statistic |
| significant | BOOLEAN | | p_value < alpha and abs(relative_change) >= min_relative_change (or per_step_a_ns = 0 and a change) |
"""
from __future__ import annotations

import math
from typing import NamedTuple

import duckdb
import polars as pl
import pyarrow as pa

from .models import query

#: Significance level of the two-sided Welch test.
ALPHA = 0.05
#: Smallest relative change of the per-step time that can be significant (1 %).
MIN_RELATIVE_CHANGE = 0.01

_KEY = ["kind", "key"]
_UNIT = ["rank", "capture", "step"]
SCHEMA = pa.schema([
    ("kind", pa.string()), ("key", pa.string()), ("status", pa.string()),
    ("count_a", pa.int64()), ("count_b", pa.int64()), ("count_change", pa.int64()),
    ("steps_a", pa.int64()), ("steps_b", pa.int64()),
    ("total_a_ns", pa.int64()), ("total_b_ns", pa.int64()), ("total_change_ns", pa.int64()),
    ("per_step_a_ns", pa.float64()), ("per_step_b_ns", pa.float64()), ("per_step_change_ns", pa.float64()),
    ("relative_change", pa.float64()), ("samples", pa.string()), ("t_statistic", pa.float64()),
    ("p_value", pa.float64()),
    ("significant", pa.bool_()),
])


#: What a sample is: a step's time, or one execution's (a run without step markers).
STEPS, EXECUTIONS = "steps", "executions"


class Summary(NamedTuple):
    """One run's per-key sums (`summarise`)."""

    #: per (kind, key): count (executions), total (ns), squares (summed squared deviations of the per-step samples
    #: from their mean) and execution_squares (of the executions' times from their mean)
    keys: pl.DataFrame
    #: sample units: the steps, and each cycle without steps
    steps: int
    #: cycles (rank, capture)
    cycles: int
    #: every cycle has steps
    stepped: bool


def diff_runs(a: duckdb.DuckDBPyConnection, b: duckdb.DuckDBPyConnection, *, alpha: float = ALPHA,
              min_relative_change: float = MIN_RELATIVE_CHANGE) -> pa.Table:
    """Compare run B with run A (connections over each run's public tables); one row per (kind, key) of
    either run, ordered by impact (abs(per_step_change_ns) descending); columns in the module docstring."""
    return diff_summaries(summarise(a), summarise(b), alpha=alpha, min_relative_change=min_relative_change)


def diff_summaries(a: Summary, b: Summary, *, alpha: float = ALPHA,
                   min_relative_change: float = MIN_RELATIVE_CHANGE) -> pa.Table:
    """`diff_runs` of two runs' summaries (`summarise`): the warehouse trends (profpipe/trends.py) summarise a
    run once and compare it with several."""
    samples = STEPS if a.stepped and b.stepped else EXECUTIONS
    units_a, units_b = (a.steps, b.steps) if samples == STEPS else (a.cycles, b.cycles)
    joined = a.keys.join(b.keys, on=_KEY, how="full", coalesce=True, suffix="_b").rename(
        {"count": "count_a", "total": "total_a_ns", "squares": "squares_a", "execution_squares": "execution_squares_a"})
    joined = joined.with_columns(
        pl.when(pl.col("count_a").is_null()).then(pl.lit("only_b"))
        .when(pl.col("count_b").is_null()).then(pl.lit("only_a")).otherwise(pl.lit("both")).alias("status"),
        *(pl.col(c).fill_null(0) for c in ("count_a", "count_b", "total_a_ns", "total_b", "squares_a", "squares_b",
                                           "execution_squares_a", "execution_squares_b")),
    ).rename({"total_b": "total_b_ns"})
    rows = []
    for row in joined.iter_rows(named=True):
        rows.append(_compare(row, samples, units_a, units_b, alpha, min_relative_change))
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    order = pl.from_arrow(table).with_columns(pl.col("per_step_change_ns").abs().alias("impact")) \
        .sort(["impact", "kind", "key"], descending=[True, False, False], nulls_last=True).drop("impact")
    return order.to_arrow().cast(SCHEMA)


def summarise(con: duckdb.DuckDBPyConnection) -> Summary:
    """One run's summary: its per-step samples (sql/queries/diff_samples.sql) summed by `summarise_samples`."""
    return summarise_samples(pl.from_arrow(con.sql(query("diff_samples")).to_arrow_table()))


def summarise_samples(samples: pl.DataFrame) -> Summary:
    """Per (kind, key) of one run's per-step samples (diff_samples.sql's columns kind, key, rank, capture, step,
    time_ns, count, time_squares): executions, total time, the sum of squared deviations of its per-step samples
    from their mean (steps without the key count as 0) and of its executions' times from their mean; the run's
    number of sample units (the steps of step_phase 'total', and the cycles without steps), of cycles, and
    whether every cycle has steps."""
    stepless = samples.filter(pl.col("step").is_null()).select("rank", "capture").unique().height
    units = samples.filter(((pl.col("kind") == "step_phase") & (pl.col("key") == "total")) | pl.col("step").is_null()) \
        .select(_UNIT).unique().height
    cycles = samples.select("rank", "capture").unique().height
    per_key = samples.group_by(_KEY).agg(pl.col("count").sum().cast(pl.Int64), pl.col("time_ns").sum().alias("total"),
                                         pl.len().alias("present"), pl.col("time_squares").sum().alias("raw_squares"))
    # the executions' squared deviations from their mean: sum(x^2) - total^2 / count (never below 0 in floating point)
    per_key = per_key.with_columns(
        (pl.col("raw_squares") - pl.col("total").cast(pl.Float64) ** 2 / pl.col("count")).clip(lower_bound=0)
        .fill_nan(0).fill_null(0).alias("execution_squares")).drop("raw_squares")
    mean = (pl.col("total").cast(pl.Float64) / units) if units else pl.lit(0.0)
    squares = samples.join(per_key.with_columns(mean.alias("mean")), on=_KEY) \
        .group_by(_KEY).agg(((pl.col("time_ns") - pl.col("mean")) ** 2).sum().alias("present_squares"),
                            pl.col("mean").first(), pl.col("present").first())
    # the steps in which the key did not run are samples of 0
    squares = squares.with_columns((pl.col("present_squares") + (units - pl.col("present")) * pl.col("mean") ** 2)
                                   .alias("squares")).select(*_KEY, "squares")
    keys = per_key.drop("present").join(squares, on=_KEY).with_columns(pl.col("total").cast(pl.Int64))
    return Summary(keys, units, cycles, stepless == 0)


def _compare(row: dict, samples: str, steps_a: int, steps_b: int, alpha: float, min_relative_change: float) -> dict:
    """One output row from a key's sums in both runs; `samples` what a sample is (STEPS or EXECUTIONS), steps_a
    and steps_b the units of the per-step time."""
    mean_a = row["total_a_ns"] / steps_a if steps_a else None
    mean_b = row["total_b_ns"] / steps_b if steps_b else None
    change = mean_b - mean_a if mean_a is not None and mean_b is not None else None
    relative = change / mean_a if change is not None and mean_a else None
    t = p = None
    if samples == STEPS and steps_a >= 2 and steps_b >= 2:
        t, p = welch(mean_a, row["squares_a"] / (steps_a - 1), steps_a,
                     mean_b, row["squares_b"] / (steps_b - 1), steps_b)
    n_a, n_b = row["count_a"], row["count_b"]
    if samples == EXECUTIONS and n_a >= 2 and n_b >= 2:
        t, p = welch(row["total_a_ns"] / n_a, row["execution_squares_a"] / (n_a - 1), n_a,
                     row["total_b_ns"] / n_b, row["execution_squares_b"] / (n_b - 1), n_b)
    large = change is not None and (abs(relative) >= min_relative_change if relative is not None else change != 0)
    return {
        "kind": row["kind"], "key": row["key"], "status": row["status"],
        "count_a": row["count_a"], "count_b": row["count_b"], "count_change": row["count_b"] - row["count_a"],
        "steps_a": steps_a, "steps_b": steps_b,
        "total_a_ns": row["total_a_ns"], "total_b_ns": row["total_b_ns"],
        "total_change_ns": row["total_b_ns"] - row["total_a_ns"],
        "per_step_a_ns": mean_a, "per_step_b_ns": mean_b, "per_step_change_ns": change, "relative_change": relative,
        "samples": samples, "t_statistic": t, "p_value": p, "significant": bool(p is not None and p < alpha and large),
    }


def welch(mean_a: float, var_a: float, n_a: int, mean_b: float, var_b: float, n_b: int) -> tuple[float, float]:
    """Welch's t of B against A and its two-sided p-value (Student's t with Welch-Satterthwaite df). Without
    variance on either side: t = 0, p = 1 for equal means, else t = +-inf, p = 0."""
    se_a, se_b = var_a / n_a, var_b / n_b
    spread = se_a + se_b
    if spread <= 0:
        if mean_a == mean_b:
            return 0.0, 1.0
        return math.copysign(math.inf, mean_b - mean_a), 0.0
    t = (mean_b - mean_a) / math.sqrt(spread)
    df = spread ** 2 / (se_a ** 2 / (n_a - 1) + se_b ** 2 / (n_b - 1))
    return t, min(1.0, incomplete_beta(df / (df + t * t), df / 2, 0.5))


def incomplete_beta(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function I_x(a, b) for 0 <= x <= 1, a, b > 0 (continued fraction by
    the modified Lentz method, on the side of x where it converges fast)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    if x > (a + 1) / (a + b + 2):
        return 1.0 - incomplete_beta(1.0 - x, b, a)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)) / a
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 500):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            fraction *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return front * fraction


#: `--fail-above`: a kernel or op type is gated when its per-step time in run A or run B is at least this
#: share of run A's per-step step time (step_phase 'total'; without one, of the larger of A's summed kernel
#: and summed op type time per step).
GATE_TOP_SHARE = 0.01
#: The kinds `--fail-above` gates: the step time (step_phase 'total') and the top kernels and op types.
GATED_KINDS = ("step_phase", "kernel", "op_type")


def regressions(table: pa.Table, fail_above_pct: float, *, top_share: float = GATE_TOP_SHARE) -> list[dict]:
    """The rows of a `diff_runs` table that fail the CI gate `--fail-above fail_above_pct`: significant rows
    whose per-step time grew by more than fail_above_pct % of run A's (a key new in B: any growth), that are
    the step time (step_phase 'total') or a top kernel or op type (per-step time in A or B at least `top_share`
    of A's step time, see GATE_TOP_SHARE). Improvements never fail. Ordered as the table (impact first)."""
    rows = table.to_pylist()
    step = next((r["per_step_a_ns"] for r in rows if r["kind"] == "step_phase" and r["key"] == "total"), None)
    if not step:
        step = max([sum(r["per_step_a_ns"] or 0 for r in rows if r["kind"] == kind) for kind in ("kernel", "op_type")])
    floor = top_share * step
    failed = []
    for row in rows:
        if not row["significant"] or not (row["per_step_change_ns"] or 0) > 0:
            continue
        if row["kind"] == "step_phase":
            if row["key"] != "total":
                continue
        elif row["kind"] not in GATED_KINDS or max(row["per_step_a_ns"] or 0, row["per_step_b_ns"] or 0) < floor:
            continue
        relative = row["relative_change"]
        if relative is not None and relative * 100 <= fail_above_pct:
            continue
        failed.append({"kind": row["kind"], "key": row["key"], "status": row["status"],
                       "per_step_a_ns": row["per_step_a_ns"], "per_step_b_ns": row["per_step_b_ns"],
                       "per_step_change_ns": row["per_step_change_ns"], "relative_change": relative,
                       "samples": row["samples"], "p_value": row["p_value"]})
    return failed


def latest_regressions(warehouse, fail_above_pct: float) -> tuple[str, str, list[dict]] | None:
    """`profpipe batch --fail-above`: the warehouse has no notion of a series of runs, so its newest measured run
    (not failed: a failed run's tables hold its last good version; by analysis time, batch_runs.analysed_at, then
    run id; a run with a step trace or, without step markers, with op type or kernel times) is compared with the
    one before it, the pair the warehouse report's Regressions section shows (profpipe/trends.py
    `previous_pair`). (previous run, newest run, `regressions`); None when fewer than two runs are measured."""
    from .trends import connect, previous_pair, trends
    from .warehouse import open_run

    con = connect(warehouse)
    try:
        pair = previous_pair(trends(con))
    finally:
        con.close()
    if pair is None:
        return None
    before, latest = pair
    con_a, con_b = open_run(warehouse, before), open_run(warehouse, latest)
    try:
        table = diff_runs(con_a, con_b)
    finally:
        con_a.close()
        con_b.close()
    return before, latest, regressions(table, fail_above_pct)
