"""Benchmark: the visual report of a 1,000-rank run (issue 22's target: it opens in under 2 s and is typically
under 10 MB).

The run is synthetic: the output of a two-rank fixture (fixtures/mindspore_gpu/two_ranks by default) whose tables
and marts are copied RANKS / 2 times with the ranks renumbered, so every page has 1,000 ranks of data. The script
times `write_report`, then opens the file in headless Chromium (the system browser, as the tests do) and times
the load until the Overview is drawn, against the floor: a report with one empty page, which loads the same
plotly.js (inflating the gzipped bundle) and draws nothing.
Each open is the best of --repeat. Usage:

    python benchmarks/run_report.py [--ranks 1000] [--repeat 3] [--fixture mindspore_gpu/two_ranks]
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

from browser import CHROMIUM_ARGS, chromium_path  # noqa: E402
from profpipe.options import Options  # noqa: E402
from profpipe.report import document, write_report  # noqa: E402
from profpipe.run import analyse  # noqa: E402


def many_ranks(source: Path, target: Path, ranks: int) -> None:
    """Copy the output `source` to `target` with every table that has a rank column repeated for `ranks` ranks."""
    shutil.copytree(source, target)
    with duckdb.connect(str(target / "profile.duckdb")) as con:
        have = con.execute("SELECT count(DISTINCT rank) FROM rank_info").fetchone()[0]
        copies = max(1, ranks // have)
        tables = con.execute("SELECT table_name FROM duckdb_columns() WHERE column_name = 'rank' AND "
                             "NOT internal AND database_name = current_database() GROUP BY table_name").fetchall()
        for (name,) in tables:
            kind = con.execute("SELECT table_type FROM information_schema.tables WHERE table_name = ?", [name]).fetchone()
            if kind is None or kind[0] != "BASE TABLE":
                continue
            con.execute(f'CREATE TABLE "_{name}" AS SELECT * REPLACE (rank + {have} * copy AS rank) '
                        f'FROM "{name}", (SELECT range AS copy FROM range({copies}))')
            con.execute(f'DELETE FROM "{name}"')
            con.execute(f'INSERT INTO "{name}" SELECT * EXCLUDE (copy) FROM "_{name}"')
            con.execute(f'DROP TABLE "_{name}"')


def open_seconds(path: Path, repeat: int, drawn: str) -> float:
    """Best time from navigation until the CSS selector `drawn` matches, in seconds."""
    from playwright.sync_api import sync_playwright

    best = float("inf")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        for _ in range(repeat):
            page = browser.new_page()
            started = time.perf_counter()
            page.goto(path.resolve().as_uri())
            page.wait_for_selector(drawn)
            best = min(best, time.perf_counter() - started)
            page.close()
        browser.close()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--fixture", default="mindspore_gpu/two_ranks")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        base, big = Path(scratch) / "base", Path(scratch) / "big"
        analyse(REPO / "fixtures" / args.fixture, base, Options(visual_report=False))
        many_ranks(base, big, args.ranks)
        started = time.perf_counter()
        report = write_report(big)
        write_s = time.perf_counter() - started
        floor = Path(scratch) / "floor.html"
        document.write(floor, document.render("floor", "", [{"id": "floor", "title": "floor", "sections": []}], ""))
        report_s = open_seconds(report, args.repeat, ".chart[data-rendered]")
        floor_s = open_seconds(floor, args.repeat, "nav a")
        with duckdb.connect(str(big / "profile.duckdb"), read_only=True) as con:
            ranks = con.execute("SELECT count(DISTINCT rank) FROM step_phases").fetchone()[0]
        print(f"ranks with steps          {ranks}")
        print(f"write_report              {write_s:.2f} s")
        print(f"report.html               {report.stat().st_size / 1048576:.2f} MiB "
              f"(plotly.js, gzipped and base64, {len(document._plotly()) / 1048576:.2f} MiB of it)")
        print(f"open to Overview drawn    {report_s:.2f} s (best of {args.repeat})")
        print(f"open plotly.js alone      {floor_s:.2f} s (the floor)")
        print(f"ratio report / floor      {report_s / floor_s:.2f}")


if __name__ == "__main__":
    main()
