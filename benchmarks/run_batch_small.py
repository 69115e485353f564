"""`profpipe batch` over many small runs: the fixed cost a nightly batch pays per run, this tree beside an older commit.

A nightly batch over 1,000 small runs pays whatever profpipe costs per run regardless of the input (startup of the
workers aside, once): the model library, empty tables, the warehouse's manifest. This benchmark makes `--runs` run
folders, each a hard-linked copy of one small fixture (default: fixtures/mindspore_cpu/lenet_graph, a 0.4 MB
MindSpore CPU dump), under benchmarks/work/batch_small/ (git-ignored), and runs `profpipe batch ROOT -w WAREHOUSE
--no-report` on them with each tree (this one and `--before`, extracted by ledger.py; same venv, PYTHONPATH), each in a
child process measured by run_mindspore_cpu.measure (wall time including the interpreter's start; peak RSS of the
largest single process). It prints the wall time, the cost per run (wall / runs) and the ratio now / before, and
batch_runs' mean wall_s and models_s per run (the time a run spent in its worker, as the ledger records it).

Usage:
    python benchmarks/run_batch_small.py --runs 1000 --before 3e91066 [--workers 2]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from ledger import LEDGER, NOW_ROOT, Tree, check_import, extract, git  # noqa: E402
from run_mindspore_cpu import measure  # noqa: E402

WORK = LEDGER.parent / "batch_small"


def make_runs(fixture: Path, runs: int) -> Path:
    """WORK/<fixture name>-<runs>: `runs` folders run-<i>, each a hard-linked copy of `fixture` (made once)."""
    root = WORK / f"{fixture.name}-{runs}"
    if not root.is_dir():
        partial = root.with_name(root.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        for index in range(runs):
            shutil.copytree(fixture, partial / f"run-{index:04d}" / fixture.name, copy_function=os.link)
        partial.rename(root)
    return root


def batch(tree: Tree, root: Path, workers: int, timeout_s: float) -> dict:
    """One measured `profpipe batch` of `tree` over `root` into a fresh warehouse, with batch_runs' means."""
    warehouse = WORK / f"warehouse-{tree.label}"
    shutil.rmtree(warehouse, ignore_errors=True)
    result = measure(tree.cli("batch", str(root), "-w", str(warehouse), "--no-report", "--workers", str(workers)),
                     timeout_s)
    if result["ok"]:
        with duckdb.connect(str(warehouse / "catalog.duckdb"), read_only=True) as con:
            result["runs_ok"], result["mean_wall_s"], result["mean_models_s"] = con.execute(
                "SELECT count(*) FILTER (WHERE status IN ('ok', 'partial')), avg(wall_s), avg(models_s) "
                "FROM batch_runs").fetchall()[0]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--before", required=True, help="the older commit to compare with (any git revision)")
    parser.add_argument("--fixture", type=Path, default=NOW_ROOT / "fixtures" / "mindspore_cpu" / "lenet_graph")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=7200)
    args = parser.parse_args()
    root = make_runs(args.fixture.resolve(), args.runs)
    dirty = "+changes" if git("status", "--porcelain", "--untracked-files=no") else ""
    trees = [Tree("now", NOW_ROOT, git("rev-parse", "--short=12", "HEAD") + dirty), extract(args.before)]
    print(f"profpipe batch of {args.runs} runs of {args.fixture.name}, --workers {args.workers}: "
          f"now {trees[0].commit} vs before {trees[1].commit}")
    walls = {}
    for tree in trees:
        check_import(tree)
        result = batch(tree, root, args.workers, args.timeout)
        if not result["ok"]:
            print(f"  {tree.label}: failed: {result['error'].strip().splitlines()[-1][:200]}")
            continue
        walls[tree.label] = result["wall_s"]
        print(f"  {tree.label:<6} wall {result['wall_s']:8.1f} s, {result['wall_s'] / args.runs:6.3f} s per run, "
              f"peak {result['peak_rss_mib']:7.1f} MiB; {result['runs_ok']} runs analysed, batch_runs mean wall_s "
              f"{result['mean_wall_s']:.3f}, models_s {result['mean_models_s']:.3f}")
    if len(walls) == 2:
        print(f"  ratio now / before: {walls['now'] / walls['before']:.2f}")


if __name__ == "__main__":
    main()
