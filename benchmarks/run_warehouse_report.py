"""Benchmark: the warehouse report of a 1,000-run warehouse (issue 36's target: it opens in under 2 s).

The warehouse is synthetic. Analysing 1,000 runs would take about two hours on a 2-core machine (about 7 s a
run), so the script analyses two runs of fixtures/mindspore_gpu/graph_2x with `profpipe batch` (one as is, one
with the op type Conv2DBackpropFilter three times slower) and then writes the other runs directly: each run's
Parquet files are hard links to the first run's (run PLANTED: the slowed run's), its manifest entry a copy with
its own run id and analysis time, one run in 50 marked failed; the catalog is then written as `batch` writes it.
Every run's tables are real (about 45 tables a run), so the report's aggregate queries read 1,000 runs' files.

The script times `write_warehouse_report` (and, inside it, the trend aggregates and outlier test,
`profpipe.trends.trends`), then opens the file in headless Chromium (the system browser, as the tests do) and
times the load until the page's first screen is drawn (its script ran and every chart in view is drawn: the
report draws its charts when they are scrolled near), best of --repeat, against the floor (a page with the same
plotly.js and one chart of one point: the machine is shared, so the ratio says more than the seconds), and then
the time to scroll to each other chart in turn until it is drawn; and checks that the planted run and op type are
the outliers found. Usage:

    python benchmarks/run_warehouse_report.py [--runs 1000] [--repeat 3] [--keep DIR]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

from browser import CHROMIUM_ARGS, chromium_path

from profpipe.batch import BatchOptions, batch
from profpipe.options import Options
from profpipe.report import document, write_warehouse_report
from profpipe.trends import connect, trends
from profpipe.warehouse import RunRecord, Warehouse

FIXTURE = REPO / "fixtures" / "mindspore_gpu" / "graph_2x"
OPS = Path("profiler") / "gpu_op_execute_timestamp_0.txt"
SLOWED = "Conv2DBackpropFilter"


def slowed_copy(target: Path) -> None:
    shutil.copytree(FIXTURE, target)
    lines = []
    for line in (FIXTURE / OPS).read_text().splitlines():
        name, kind, samples = line.split(";", 2)
        pairs = [pair.split(",") for pair in samples.split()]
        if name.rsplit("/", 1)[-1].rsplit("-op", 1)[0] == SLOWED:
            pairs = [(start, str(Decimal(dur) * 3)) for start, dur in pairs]
        lines.append(";".join((name, kind, " ".join(",".join(pair) for pair in pairs) + " ")))
    (target / OPS).write_text("\n".join(lines) + "\n")


def synthetic_warehouse(scratch: Path, runs: int, planted: int) -> Path:
    """A warehouse of `runs` runs, run number `planted` the slowed one (see the module docstring)."""
    roots = scratch / "inputs"
    shutil.copytree(FIXTURE, roots / "base")
    slowed_copy(roots / "slow")
    warehouse = scratch / "wh"
    batch(BatchOptions(roots=(roots,), warehouse=warehouse, workers=2, analysis=Options(visual_report=False)))
    store = Warehouse(warehouse)
    seeds = {"base": store.runs["base"], "slow": store.runs["slow"]}
    start = datetime(2026, 1, 1)
    for i in range(runs):
        seed = seeds["slow" if i == planted else "base"]
        run = f"night-{i:04d}"
        generation = seed.generation
        for table in seed.files:
            source = warehouse / "tables" / table / f"run={seed.run}" / generation
            shutil.copytree(source, warehouse / "tables" / table / f"run={run}" / generation, copy_function=os.link)
        row = dict(seed.row, run=run, path=str(roots / run), analysed_at=int((start + timedelta(hours=i)).timestamp()))
        if i % 50 == 49:
            row.update(status="failed", error="synthetic: every source unreadable")
        store.put(RunRecord(row, dict(seed.files)))
    store.drop("base")
    store.drop("slow")
    store.commit(store.schema_version or "benchmark")
    started = time.perf_counter()
    store.write_catalog()
    print(f"catalog.duckdb written   {time.perf_counter() - started:.1f} s (views over every run's files, and the "
          f"trend cache computed for all {runs} runs)")
    return warehouse


#: The page is open when its script has built the page (the nav) and every chart in the first screen is drawn.
FIRST_SCREEN = ("() => { if (!document.querySelector('nav')) return false;"
                " return [...document.querySelectorAll('.chart')].filter(e => { const r = e.getBoundingClientRect();"
                " return r.bottom > 0 && r.top < innerHeight; }).every(e => e.dataset.rendered === 'true'); }")


def open_seconds(path: Path, repeat: int) -> tuple[float, float, int, int]:
    """Best time from navigation until the page's first screen is drawn (its charts in view: the warehouse report
    draws the others when they are scrolled near), in seconds; best time after that to scroll to each other chart
    in turn until it is drawn; the charts drawn at open, and in all."""
    from playwright.sync_api import sync_playwright

    best, rest, first, charts = float("inf"), float("inf"), 0, 0
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        for _ in range(repeat):
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            started = time.perf_counter()
            page.goto(path.resolve().as_uri())
            page.wait_for_function(FIRST_SCREEN)
            best = min(best, time.perf_counter() - started)
            first = page.eval_on_selector_all(".chart", "els => els.filter(e => e.dataset.rendered === 'true').length")
            started = time.perf_counter()
            for index in range(page.eval_on_selector_all(".chart", "els => els.length")):
                page.eval_on_selector_all(".chart", f"els => els[{index}].scrollIntoView()")
                page.wait_for_function(f"() => document.querySelectorAll('.chart')[{index}].dataset.rendered === 'true'")
            rest = min(rest, time.perf_counter() - started)
            charts = page.eval_on_selector_all(".chart", "els => els.length")
            page.close()
        browser.close()
    return best, rest, first, charts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="build the warehouse in this folder and keep it; reuse it when there")
    args = parser.parse_args()
    planted = args.runs * 7 // 10
    with tempfile.TemporaryDirectory() as scratch:
        started = time.perf_counter()
        if args.keep is not None and (args.keep / "wh" / "catalog.duckdb").is_file():
            warehouse = args.keep / "wh"
        else:
            warehouse = synthetic_warehouse(args.keep or Path(scratch), args.runs, planted)
        build_s = time.perf_counter() - started
        files = sum(1 for _ in (warehouse / "tables").rglob("*.parquet"))
        started = time.perf_counter()
        with connect(warehouse) as con:
            found = trends(con)
        trends_s = time.perf_counter() - started
        started = time.perf_counter()
        report = write_warehouse_report(warehouse, warehouse / "report.html")
        write_s = time.perf_counter() - started
        open_s, rest_s, first, charts = open_seconds(report, args.repeat)
        floor = Path(scratch) / "floor.html"  # the same plotly.js, one chart of one point
        document.write(floor, document.render("floor", "", [{"id": "floor", "title": "floor", "sections": [
            {"kind": "chart", "id": "floor", "title": "floor", "figure": {"data": [{"type": "scatter", "x": [0], "y": [0]}],
                                                                         "layout": {}}}]}], ""))
        floor_s, *_ = open_seconds(floor, args.repeat)
        marked = sorted({(o["run"], o["key"]) for o in found.outliers})
        print(f"runs                      {len(found.runs)} ({sum(r['status'] == 'failed' for r in found.runs)} failed), "
              f"{files} Parquet files; synthetic warehouse built in {build_s:.1f} s")
        print(f"trend aggregates + test   {trends_s:.2f} s ({len(found.series)} series)")
        print(f"write_warehouse_report    {write_s:.2f} s (aggregates, the test, and diff of the latest run against the run "
              "before and its median runs)")
        print(f"report.html               {report.stat().st_size / 1048576:.2f} MiB")
        print(f"open, first screen drawn  {open_s:.2f} s (best of {args.repeat}; {first} of {charts} charts drawn)")
        print(f"then every other chart    {rest_s:.2f} s (best of {args.repeat}: scrolled to in turn, each until drawn)")
        print(f"open the floor            {floor_s:.2f} s (plotly.js and one chart of one point)")
        print(f"outliers marked           {marked}")
        assert marked == [(f"night-{planted:04d}", SLOWED)], marked


if __name__ == "__main__":
    main()
