"""Warehouse trends (profpipe/trends.py) and the warehouse report's trend page: twelve copies of the MindSpore GPU
fixture graph_2x, one (run-08) with the op type Conv2DBackpropFilter three times slower, batched into one
warehouse; the outlier test must mark that run and that op type, in `batch --json` and, in headless Chromium, in
the report. A thirteenth run, slowed the same way, is then the latest: its regressions against the run before
and against the recent median name the op type."""
from __future__ import annotations

import json
import math
import re
import shutil
import statistics
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest
from browser import ARTIFACTS, browser, open_report
from conftest import FIXTURES
from op_timestamps import LENET_OPS, edited_copy
from typer.testing import CliRunner

from profpipe.cli import app
from profpipe.diff import diff_runs, summarise_samples
from profpipe.trends import (
    MAD_FLOOR,
    MIN_HISTORY,
    THRESHOLD,
    WINDOW,
    Series,
    Trends,
    median_regressions,
    median_run,
    previous_pair,
    robust_z,
)
from profpipe.warehouse import open_run

GPU = FIXTURES / "mindspore_gpu" / "graph_2x"
OPS = Path("profiler") / "gpu_op_execute_timestamp_0.txt"
SLOWED = "Conv2DBackpropFilter"
PLANTED = "run-08"


def _copy(target: Path, factor: int = 1) -> None:
    """A copy of graph_2x with every execution of SLOWED `factor` times as long."""
    shutil.copytree(GPU, target)
    if factor == 1:
        return
    lines = []
    for line in (GPU / OPS).read_text().splitlines():
        name, kind, samples = line.split(";", 2)
        pairs = [pair.split(",") for pair in samples.split()]
        if name.rsplit("/", 1)[-1].rsplit("-op", 1)[0] == SLOWED:
            pairs = [(start, str(Decimal(dur) * factor)) for start, dur in pairs]
        lines.append(";".join((name, kind, " ".join(",".join(pair) for pair in pairs) + " ")))
    (target / OPS).write_text("\n".join(lines) + "\n")


def _batch(root: Path, warehouse: Path) -> dict:
    result = CliRunner().invoke(app, ["batch", str(root), "-w", str(warehouse), "--workers", "2", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def batched(tmp_path_factory) -> dict:
    """The report and `batch --json` of the twelve runs, then of the thirteen."""
    tmp = tmp_path_factory.mktemp("trends")
    root, warehouse = tmp / "runs", tmp / "wh"
    root.mkdir()
    for i in range(1, 13):
        _copy(root / f"run-{i:02d}", 3 if f"run-{i:02d}" == PLANTED else 1)
    twelve = _batch(root, warehouse)
    shutil.copy(warehouse / "report.html", tmp / "report-12.html")
    _copy(root / "run-13", 3)
    thirteen = _batch(root, warehouse)
    return {"warehouse": warehouse, "report": tmp / "report-12.html", "json": twelve,
            "report_13": warehouse / "report.html", "json_13": thirteen}


def payload(report: Path) -> dict:
    text = report.read_text(encoding="utf-8")
    return json.loads(re.search(r'<script type="application/json" id="report-data">(.*?)</script>', text, re.DOTALL).group(1))


def test_robust_z_is_the_modified_z_score_over_the_history():
    history = [10.0, 11.0, 9.0, 10.0, 12.0, 10.0]  # median 10, MAD 0.5
    median, z = robust_z(history, 20.0)
    assert median == 10.0 and z == pytest.approx(10 / (1.4826 * 0.5))
    assert robust_z(history[:MIN_HISTORY - 1], 20.0)[1] is None  # too little history: not tested
    flat = [5.0] * 8  # MAD 0: the scale is MAD_FLOOR of the median
    assert robust_z(flat, 5.1)[1] == pytest.approx(0.1 / (MAD_FLOOR * 5))
    assert abs(robust_z(flat, 5.1)[1]) < THRESHOLD < abs(robust_z(flat, 6.0)[1])
    series = Series("step", "s", "s", "ms", [1.0] * 15 + [None, 9.0] + [1.0] * 3)
    series.score()
    assert [i for i in range(20) if series.outlier(i)] == [16]  # a gap has no value and is skipped
    assert series.medians[16] == 1.0 and len([v for v in series.values[:16] if v is not None][-WINDOW:]) == WINDOW


def _samples(per_step: dict[str, list[float]]) -> pl.DataFrame:
    """Per-step samples (ms) of op types as sql/queries/diff_samples.sql returns them: one rank and capture, step i
    the i-th value of each key, and the step times (step_phase 'total', which makes the units)."""
    steps = len(next(iter(per_step.values())))
    rows = [("step_phase", "total", 0, 0, i, round(sum(v[i] for v in per_step.values()) * 1e6), 1) for i in range(steps)]
    rows += [("op_type", key, 0, 0, i, round(v[i] * 1e6), 1) for key, v in per_step.items() for i in range(steps)]
    return pl.DataFrame([(*row, float(row[5]) ** 2) for row in rows], orient="row",
                        schema=[("kind", pl.String), ("key", pl.String), ("rank", pl.Int64), ("capture", pl.Int64),
                                ("step", pl.Int64), ("time_ns", pl.Int64), ("count", pl.Int64),
                                ("time_squares", pl.Float64)])


def _welch_by_hand(a: list[float], b: list[float]) -> tuple[float, float]:
    """Welch's t of b against a and its two-sided p, from statistics' mean and variance and Student's t density
    integrated by Simpson's rule (no incomplete beta function, as profpipe/diff.py uses)."""
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    t = (statistics.mean(b) - statistics.mean(a)) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    scale = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)

    def density(x: float) -> float:
        return scale * (1 + x * x / df) ** (-(df + 1) / 2)

    n, h = 4000, abs(t) / 4000
    area = h / 3 * sum((1 if i in (0, n) else 4 if i % 2 else 2) * density(i * h) for i in range(n + 1))
    return t, 1 - 2 * area


def test_the_median_run_of_equal_values_is_the_most_recent_despite_last_bit_noise():
    """Copies of one run give one value, but DuckDB's parallel sums differ in their last bits from run to run: values
    equal to 9 significant digits are equal, and the median run is the lower median of the ten equal values taken
    most recent first (r05, as if they were exactly equal; compared exactly, r07-r09's extra ulp would sort them last
    and make it r02)."""
    values = [10.0] * 7 + [10.0 + 1.8e-15] * 3 + [12.0]
    series = Series("op_type", "k", "k", "ms", values, side="Device")
    runs = [{"run": f"r{i:02d}", "status": "ok", "step_avg_ms": 1.0, "generation": "g"} for i in range(11)]
    assert median_run(Trends(runs, [series], []), series, 10) == 5


def test_regressions_against_the_median_use_diffs_welch_test_not_the_robust_z():
    """The latest run (r10) against its median runs. 'noisy' is 5 % slower than a flat history (the old rule, the
    robust z-score, flagged it: z = 5) but within its steps' noise (Welch: p about 0.7); 'steady' is 4 % slower than
    a noisy history (z 0.3: the old rule missed it) with a small step-to-step spread (Welch: p about 0.02)."""
    runs = [{"run": f"r{i:02d}", "status": "ok", "step_avg_ms": 1.0, "generation": "g"} for i in range(11)]
    noisy = Series("op_type", "noisy", "noisy", "ms", [10.0] * 10 + [10.5], side="Device")
    steady = Series("op_type", "steady", "steady", "ms", [10.0, 12.0, 8.0, 11.0, 9.0, 12.0, 10.0, 8.0, 11.0, 9.0, 10.4],
                    side="Device")
    for s in (noisy, steady):
        s.score()
    assert noisy.z[10] > THRESHOLD and (10.5 - 10.0) / 10.0 >= 0.01  # flagged by the old rule
    assert abs(steady.z[10]) < THRESHOLD  # missed by the old rule
    # per-step samples (20 steps): 'noisy' alternates 5 and 15 ms (10.5 +- 5 in r10); 'steady' 9.5 and 10.5 ms
    # (9.9 and 10.9 in r10); the median runs: of equal values the most recent, r05 for noisy (ten runs of 10.0),
    # r06 for steady (the lower median of its history, 10.0: r06 and r00, r06 the most recent)
    alternating = lambda low, high: [low, high] * 10
    per_step = {"r05": {"noisy": alternating(5, 15), "steady": alternating(9.6, 10.6)},
                "r06": {"noisy": alternating(5.2, 15.2), "steady": alternating(9.5, 10.5)},
                "r10": {"noisy": alternating(5.5, 15.5), "steady": alternating(9.9, 10.9)}}
    read = []

    def summary(run: str):
        read.append(run)
        return summarise_samples(_samples(per_step[run]))

    found = median_regressions(Trends(runs, [noisy, steady], []), summary)
    assert sorted(read) == ["r05", "r06", "r10"]  # only the latest run and the median runs are read
    assert [(r["key"], r["median_run"]) for r in found] == [("steady", "r06")]
    row = found[0]
    t, p = _welch_by_hand([v * 1e6 for v in per_step["r06"]["steady"]], [v * 1e6 for v in per_step["r10"]["steady"]])
    assert row["t_statistic"] == pytest.approx(t, rel=1e-9) and row["p_value"] == pytest.approx(p, rel=1e-6)
    assert 0.01 < row["p_value"] < 0.05
    assert (row["median_ms"], row["latest_ms"]) == (pytest.approx(10.0), pytest.approx(10.4))
    assert row["relative_change"] == pytest.approx(0.04) and row["change_ms"] == pytest.approx(0.4)
    _, p_noisy = _welch_by_hand(per_step["r05"]["noisy"], per_step["r10"]["noisy"])
    assert p_noisy > 0.5  # not significant: not a regression, whatever its z


def test_batch_json_marks_the_planted_run_and_op_type(batched):
    trends = batched["json"]["trends"]
    assert trends["window"] == WINDOW and "1.4826 * MAD" in trends["test"] and trends["runs"] == 12
    assert [(o["run"], o["kind"], o["key"], o["direction"]) for o in trends["outliers"]] == \
        [(PLANTED, "op_type", SLOWED, "slower")]
    outlier = trends["outliers"][0]
    assert outlier["value"] == pytest.approx(3 * outlier["median"], rel=1e-6)
    assert trends["latest"] == "run-12"
    assert trends["regressions"]["previous"] == {"a": "run-11", "b": "run-12", "regressions": []}
    assert trends["regressions"]["median"] == []


def test_the_latest_slowed_run_regresses_against_the_previous_run_and_the_median(batched):
    trends = batched["json_13"]["trends"]
    assert trends["latest"] == "run-13"
    assert {(o["run"], o["key"]) for o in trends["outliers"]} == {(PLANTED, SLOWED), ("run-13", SLOWED)}
    previous = trends["regressions"]["previous"]
    assert (previous["a"], previous["b"]) == ("run-12", "run-13")
    assert [(r["kind"], r["key"]) for r in previous["regressions"]] == [("op_type", SLOWED)]
    assert previous["regressions"][0]["p_value"] < 0.05
    median = trends["regressions"]["median"]
    assert [(r["kind"], r["key"]) for r in median] == [("op_type", SLOWED)]
    assert median[0]["relative_change"] == pytest.approx(2.0, rel=1e-6)
    # against its median run (of run-03 .. run-12 without run-08, all equal: the most recent at the lower median)
    # by profpipe diff's own comparison of the two runs
    assert median[0]["median_run"] == "run-07" and median[0]["run"] == "run-13"
    con_a, con_b = open_run(batched["warehouse"], "run-07"), open_run(batched["warehouse"], "run-13")
    try:
        diffed = next(r for r in diff_runs(con_a, con_b).to_pylist() if (r["kind"], r["key"]) == ("op_type", SLOWED))
    finally:
        con_a.close()
        con_b.close()
    assert diffed["significant"] and median[0]["p_value"] == diffed["p_value"] < 0.05
    assert median[0]["latest_ms"] == pytest.approx(diffed["per_step_b_ns"] / 1e6)
    assert median[0]["median_ms"] == pytest.approx(diffed["per_step_a_ns"] / 1e6)
    sections = {s.get("id") or s["title"]: s for s in payload(batched["report_13"])["pages"][0]["sections"]}
    assert [r[1] for r in sections["median-regressions"]["rows"]] == [SLOWED]
    assert [r[1] for r in sections["diff-table"]["rows"]] == [SLOWED]


def test_the_report_marks_the_planted_run_and_op_type_in_chromium(batched):
    with browser() as chromium:
        visit = open_report(chromium, batched["report"])
        page = visit.page
        page.click('nav a[data-page="batch"]')
        # the trend charts are drawn when scrolled near (the page opens with its first screen drawn)
        assert page.eval_on_selector('[data-chart="trend-health"]', "gd => [gd.dataset.lazy, gd.dataset.rendered]") == \
            ["waiting", None]
        for name in page.eval_on_selector_all('.page[data-page="batch"] .chart', "els => els.map(e => e.dataset.chart)"):
            page.locator(f'[data-chart="{name}"]').scroll_into_view_if_needed()
            page.wait_for_selector(f'[data-chart="{name}"][data-rendered="true"]')
        charts = page.eval_on_selector_all('.page[data-page="batch"] .chart',
                                           "els => els.map(e => [e.dataset.chart, e.dataset.rendered, Number(e.dataset.points)])")
        assert {c[0] for c in charts} >= {"trend-step", "trend-op_type", "trend-kernel", "trend-health"}
        assert all(rendered == "true" and points > 0 for _, rendered, points in charts), charts
        marked = page.eval_on_selector('[data-chart="trend-op_type"]',
                                       "gd => gd.data.filter(t => t.name === 'outlier').map(t => [t.x, t.text])")
        assert len(marked) == 1 and marked[0][0] == [PLANTED] and SLOWED in marked[0][1][0]
        lines = page.eval_on_selector('[data-chart="trend-op_type"]', "gd => gd.data.map(t => t.name)")
        assert f"{SLOWED} (device)" in lines
        for other in ("trend-step", "trend-kernel"):  # nothing else moved
            assert page.eval_on_selector(f'[data-chart="{other}"]', "gd => gd.data.filter(t => t.name === 'outlier').length") == 0
        assert page.eval_on_selector('[data-chart="trend-op_type"]', "gd => gd.dataset.link") == "report-{run}.html"
        rows = page.eval_on_selector_all('[data-table="outliers"] tbody tr', "rs => rs.map(r => [r.cells[0].textContent, r.cells[2].textContent])")
        assert rows == [[PLANTED, f"{SLOWED} (device)"]]
        runs = page.eval_on_selector_all('[data-table="runs"] tbody tr',
                                         "rs => rs.map(r => [r.cells[0].textContent, r.cells[9].textContent, "
                                         "r.cells[10].querySelector('a').getAttribute('href')])")
        assert [r[0] for r in runs if r[1]] == [PLANTED] and SLOWED in next(r[1] for r in runs if r[1])
        assert all(href == f"report-{run}.html" for run, _, href in runs) and len(runs) == 12
        shots = ARTIFACTS / "report" / "warehouse_trends"
        shots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shots / "batch.png"), full_page=True)
        assert visit.errors == [] and visit.requests == []
        page.close()


def test_a_runs_own_report_is_built_on_request(batched, tmp_path):
    result = CliRunner().invoke(app, ["report", str(batched["warehouse"]), "--run", PLANTED, "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    assert PLANTED in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_without_a_current_catalog_the_report_computes_the_trends_in_memory(batched, tmp_path):
    """A catalog that does not describe the manifest (a moved warehouse, one from before the cache) is not read."""
    catalog = batched["warehouse"] / "catalog.duckdb"
    aside = tmp_path / "catalog.duckdb"
    shutil.move(catalog, aside)
    try:
        result = CliRunner().invoke(app, ["report", str(batched["warehouse"]), "-o", str(tmp_path / "w.html")])
        assert result.exit_code == 0, result.output
    finally:
        shutil.move(aside, catalog)
    sections = {s.get("id") or s["title"]: s for s in payload(tmp_path / "w.html")["pages"][0]["sections"]}
    assert sorted((r[0], r[2]) for r in sections["outliers"]["rows"]) == \
        [(PLANTED, f"{SLOWED} (device)"), ("run-13", f"{SLOWED} (device)")]


def test_the_previous_run_comparison_skips_a_failed_latest_run():
    """A failed run's tables hold its last good version, not its own numbers: the latest run compared with the one
    before it is the newest run with its own step trace."""
    runs = [{"run": "a", "status": "ok", "step_avg_ms": 1.0}, {"run": "b", "status": "partial", "step_avg_ms": 1.1},
            {"run": "c", "status": "failed", "step_avg_ms": 1.1}, {"run": "d", "status": "ok", "step_avg_ms": None}]
    assert previous_pair(Trends(runs, [], [])) == ("a", "b")
    assert previous_pair(Trends(runs[1:], [], [])) is None


# Runs without step markers: seven copies of the LeNet MindSpore CPU fixture (no step trace in the dump), each with
# its own noise of +-0.2 % on every op; the latest (run-07) has Conv2D 1.5 times as long. The trend, the run before
# and the median runs find it by the executions.
LENET = FIXTURES / "mindspore_cpu" / "lenet_graph"


@pytest.fixture(scope="module")
def lenet_batched(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("lenet_trends")
    root, warehouse = tmp / "runs", tmp / "wh"
    root.mkdir()
    for i in range(1, 8):
        edited_copy(LENET, root / f"run-{i:02d}", LENET_OPS, noise_seed=i,
                    **({"slower": "Conv2D", "factor": "1.5"} if i == 7 else {}))
    return {"warehouse": warehouse, "root": root, "json": _batch(root, warehouse)}


def test_without_step_markers_the_trend_and_the_regressions_find_the_slower_op_type(lenet_batched):
    trends = lenet_batched["json"]["trends"]
    assert trends["latest"] == "run-07"
    outlier = next(o for o in trends["outliers"] if (o["kind"], o["key"]) == ("op_type", "Conv2D"))
    assert (outlier["run"], outlier["direction"]) == ("run-07", "slower")
    assert outlier["value"] == pytest.approx(1.5 * outlier["median"], rel=0.01)
    previous = trends["regressions"]["previous"]
    assert (previous["a"], previous["b"]) == ("run-06", "run-07")
    assert [(r["kind"], r["key"], r["samples"]) for r in previous["regressions"]] == [("op_type", "Conv2D", "executions")]
    assert previous["regressions"][0]["relative_change"] == pytest.approx(0.5, abs=0.01)
    median = trends["regressions"]["median"]
    assert [(r["kind"], r["key"], r["samples"]) for r in median] == [("op_type", "Conv2D", "executions")]
    sections = {s.get("id") or s["title"]: s for s in payload(lenet_batched["warehouse"] / "report.html")["pages"][0]["sections"]}
    assert [r[1] for r in sections["diff-table"]["rows"]] == ["Conv2D"]
    assert "Samples: executions" in sections["diff-table"]["note"]
    assert [r[1] for r in sections["median-regressions"]["rows"]] == ["Conv2D"]


def test_without_step_markers_the_batch_gate_fails_on_the_slower_run(lenet_batched):
    result = CliRunner().invoke(app, ["batch", str(lenet_batched["root"]), "-w", str(lenet_batched["warehouse"]),
                                      "--workers", "1", "--no-report", "--fail-above", "5"])
    assert result.exit_code == 4, result.output
    gate = result.stdout[result.stdout.index("profpipe batch --fail-above 5: 1 significant regression"):]
    assert "from run-06 to run-07 (samples: executions)" in gate and "op_type  Conv2D " in gate
