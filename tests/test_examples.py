"""examples/: each script runs as a user would run it (a fresh interpreter, from another folder) and writes what it
says it writes, under its output folder only; its numbers are checked against the analyses it made."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb

from conftest import REPO

FIRST_HOUR = REPO / "examples" / "first_hour.py"


def _repo_files() -> set[str]:
    """The checkout's files that git sees (tracked, and untracked ones not ignored)."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=REPO,
                            capture_output=True, check=True)
    return set(listed.stdout.decode().split("\0")) - {""}


def test_first_hour_analyses_queries_charts_and_diffs(tmp_path: Path) -> None:
    out = tmp_path / "tour"
    before = _repo_files()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, str(FIRST_HOUR), "--out", str(out)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _repo_files() == before, "the example wrote into the repository"
    for name in ("run_a/profile.duckdb", "run_a/report.html", "run_b/profile.duckdb", "kernel_time_sql.csv",
                 "kernel_time_mart.csv", "op_type_time.svg", "diff.csv", "diff.html", "summary.json"):
        assert (out / name).is_file(), name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["exit_codes"] == [0, 0]

    # The SQL result equals the mart's numbers, read here from the analysis itself.
    con = duckdb.connect(str(out / "run_a" / "profile.duckdb"), read_only=True)
    mart = con.execute("SELECT rank, name, stream_id, instances, total_ns FROM kernel_stats "
                       "ORDER BY total_ns DESC, name").fetchall()
    with (out / "kernel_time_sql.csv").open() as handle:
        ours = [(int(r["rank"]), r["name"], int(r["stream_id"]), int(r["instances"]), int(r["total_ns"]))
                for r in csv.DictReader(handle)]
    assert ours == mart and len(mart) == 2 and sum(r[4] for r in mart) > 0
    assert [tuple(r.values()) for r in summary["kernel_time_sql"]] == [tuple(r) for r in mart]

    # The chart has one bar per op type the script read from op_type_stats.
    bars = con.execute("SELECT op_type, total_ns FROM op_type_stats WHERE side = 'Host' AND op_type NOT LIKE "
                       "'ProfilerStep#%' ORDER BY total_ns DESC, op_type LIMIT 10").fetchall()
    assert [(b["op_type"], b["total_ns"]) for b in summary["chart_bars"]] == bars and bars
    svg = (out / "op_type_time.svg").read_text()
    assert svg.count("<rect") == len(bars) and "aten::relu" in svg

    # The diff finds the one kernel made slower (2.5x 100 us: +150 us a step), launched by aten::relu, and nothing else.
    changed = summary["significant_changes"]
    assert [(c["kind"], c["key"], c["launched_by"]) for c in changed] == [
        ("kernel", "void at::native::vectorized_elementwise_kernel", "aten::relu")]
    assert abs(changed[0]["per_step_change_ns"] - 150_000) < 1
    with (out / "diff.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert rows[0]["key"] == "void at::native::vectorized_elementwise_kernel" and rows[0]["significant"] == "True"
    assert "vectorized_elementwise_kernel" in done.stdout and "SQL and mart agree" in done.stdout
