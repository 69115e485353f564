"""Warehouse trends (profpipe/trends.py) and the warehouse report's trend page: twelve copies of the MindSpore GPU
fixture graph_2x, one (run-08) with the op type Conv2DBackpropFilter three times slower, batched into one
warehouse; the outlier test must mark that run and that op type, in `batch --json` and, in headless Chromium, in
the report. A thirteenth run, slowed the same way, is then the latest: its regressions against the run before
and against the recent median name the op type."""
from __future__ import annotations

import json
import re
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
from browser import ARTIFACTS, browser, open_report
from conftest import FIXTURES
from typer.testing import CliRunner

from profpipe.cli import app
from profpipe.trends import MAD_FLOOR, MIN_HISTORY, THRESHOLD, WINDOW, Series, robust_z

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
