"""What some models cost: their share of a whole `profpipe analyse` (by default the GPU-trace marts of issue 20).

Runs `profpipe analyse` on the input and then the model library again over that output's normalized tables in
this process, as the analyse runs it (profile_db's prepared template: views are not created again, models whose
inputs are empty are skipped), timing each model (models.py run_models), `--repeat` rounds; reports the chosen models' seconds
against the round's whole analyse (the median of the rounds' shares). The target (issue 20):
under 20 % of an analyse of a 50 MB trace. The trace defaults to the 50 MB one run_kineto.py generates; any input
profpipe reads will do (`--models` names other models, e.g. the scope timeline's on an Ascend job).

`--issue 35` reports the analyses of issue 35 one by one instead (critical path, kernel sequences, CUPTI counters,
memory bandwidth, roofline), each with the models, the advisor rules and the report queries it added (the report
built over the rebuilt models, each query timed), and together (target: under 10 % of the analyse).

Usage: python benchmarks/run_gpu_marts.py [--trace benchmarks/work/kineto_50mb] [--repeat 3] [--models M ... | --issue 35]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

import profpipe.report.pages as report_pages
from profpipe.advisor import advise, load_rules
from profpipe.database import transaction
from profpipe.models import load_models, query_rows, run_models, set_run_options
from profpipe.profile_db import open_profile
from profpipe.tables import catalog
from profpipe.version import VERSION

HERE = Path(__file__).resolve().parent
#: The marts and intermediates issue 20 added (GPU analyses beside HTA and Nsight Systems).
GPU_MARTS = ("int_hta_gpu_event", "gpu_time_breakdown", "int_gpu_idle_gap", "gpu_idle_breakdown", "step_gpu_idle",
             "kernel_launch", "gpu_queue_length", "kernel_launch_stats", "cuda_api_stats", "gpu_memory_op_stats", "stg_collective_event", "collective_exec",
             "collective_size_stats", "comm_comp_overlap", "collective_straggler", "op_flops")
#: The analyses issue 35 added, each with the models it added.
ISSUE_35 = {
    "critical path": ("int_critical_path_event", "int_critical_path_graph", "int_critical_path", "critical_path_edge",
                      "critical_path_summary"),
    "kernel sequences": ("kernel_sequence_stats",),
    "CUPTI counters": ("stg_kernel_counter", "kernel_counter_op", "kernel_counter_stats"),
    "memory bandwidth": ("stg_memory_bandwidth", "memory_bandwidth_series", "memory_bandwidth_stats"),
    "roofline": ("op_roofline",),
}
#: The advisor rules and report queries each analysis of issue 35 added.
ISSUE_35_RULES = {"critical path": ("critical_path_overhead",), "kernel sequences": ("kernel_fusion_candidate",),
                  "roofline": ("below_roofline",)}
ISSUE_35_QUERIES = {
    "critical path": ("report_critical_path_windows", "report_critical_path_events"),
    "kernel sequences": ("report_kernel_sequences",),
    "CUPTI counters": ("report_kernel_counters",),
    "memory bandwidth": ("report_memory_bandwidth", "report_memory_bandwidth_stats"),
    "roofline": ("report_roofline", "report_roof_shares"),
}


def time_rules_and_report(con: duckdb.DuckDBPyConnection, seconds: dict[str, float]) -> None:
    """Add to `seconds` each issue-35 advisor rule's time (by rule name) and each report query's (by query name),
    the report's pages built as `profpipe analyse` builds them."""
    rules = {rule.id: rule for rule in load_rules()}
    for name in (name for chosen in ISSUE_35_RULES.values() for name in chosen):
        started = time.perf_counter()
        advise(con, [rules[name]])
        seconds[name] = time.perf_counter() - started

    def timed_rows(connection: duckdb.DuckDBPyConnection, name: str, **params: object) -> list[dict]:
        started = time.perf_counter()
        found = query_rows(connection, name, **params)
        seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - started
        return found

    report_pages.rows = timed_rows
    try:
        report_pages.run_pages(con, report_pages.RunContext(input="benchmark", profpipe_version=VERSION))
    finally:
        report_pages.rows = query_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=HERE / "work" / "kineto_50mb")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--models", nargs="+", default=list(GPU_MARTS), help="the models to sum (default: issue 20's)")
    parser.add_argument("--issue", choices=["35"], help="report the analyses of this issue one by one")
    args = parser.parse_args()
    if not args.trace.exists():
        sys.exit(f"{args.trace} is missing: python benchmarks/run_kineto.py --skip-hta --mb 50 makes it")
    models = load_models()
    groups = ({name: [*chosen, *ISSUE_35_RULES.get(name, ()), *ISSUE_35_QUERIES[name]]
               for name, chosen in ISSUE_35.items()} if args.issue else {"chosen models": args.models})
    walls: list[float] = []
    everything: list[float] = []
    per_group: dict[str, list[float]] = {name: [] for name in groups}
    together: list[float] = []
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "out"
        for _ in range(args.repeat):  # each round: an analyse, then the models rebuilt over its tables (a drifting
            started = time.perf_counter()  # load on a shared machine then moves both alike)
            done = subprocess.run([sys.executable, "-m", "profpipe", "analyse", str(args.trace), "-o", str(out), "--json"],
                                  stdout=subprocess.DEVNULL, check=False)
            if done.returncode not in (0, 3):  # 3: complete with some input counted in trace_health
                sys.exit(f"profpipe analyse failed with exit status {done.returncode}")
            walls.append(time.perf_counter() - started)
            seconds = rebuilt_seconds(out, models, issue=bool(args.issue))
            everything.append(sum(seconds.values()))
            for name, chosen in groups.items():
                per_group[name].append(sum(seconds.get(model, 0.0) for model in chosen))
            together.append(sum(seconds.get(model, 0.0) for chosen in groups.values() for model in chosen))
    wall = statistics.median(walls)
    print(f"input: {args.trace} ({sum(f.stat().st_size for f in args.trace.rglob('*') if f.is_file()) / 2**20:.1f} MiB)")
    print(f"profpipe analyse, whole run: {wall:.2f} s (median of {args.repeat}: {', '.join(f'{w:.2f}' for w in walls)})")
    print(f"all models: {statistics.median(everything):.2f} s")
    for name, values in per_group.items():
        print(f"  {name}: {statistics.median(values):.3f} s = {share(values, walls)} of the run ({', '.join(groups[name])})")
    target = "issue 35's target: under 10 %" if args.issue else "issue 20's target for its GPU marts: under 20 %"
    print(f"together: {statistics.median(together):.3f} s = {share(together, walls)} of the run ({target}); "
          f"round by round: {', '.join(f'{100 * t / w:.1f} %' for t, w in zip(together, walls))}")


def rebuilt_seconds(out: Path, models: list, *, issue: bool) -> dict[str, float]:
    """Each model's seconds when the model library runs again as the analyse runs it (a copy of the prepared
    profile template, filled with the normalized tables the run in `out` saved, in one transaction), with issue 35's
    advisor rules and report queries, by name, where `issue`."""
    scratch = out.parent / "rebuilt.duckdb"
    scratch.unlink(missing_ok=True)
    con = open_profile(scratch)
    try:
        con.execute(f"ATTACH '{out / 'profile.duckdb'}' AS saved (READ_ONLY)")
        row_counts = {name: con.execute(f"SELECT count(*) FROM saved.{name}").fetchall()[0][0] for name in catalog()}
        with transaction(con):
            for name, rows in row_counts.items():
                if rows:
                    con.execute(f"INSERT INTO {name} SELECT * FROM saved.{name}")
            set_run_options(con, {})
            seconds = run_models(con, models, row_counts, prepared=True).seconds
        if issue:  # the report reads the committed models, as the analyse's export does
            time_rules_and_report(con, seconds)
    finally:
        con.close()
        scratch.unlink(missing_ok=True)
    return seconds


def share(costs: list[float], walls: list[float]) -> str:
    """The median of the rounds' cost / wall, as a percentage."""
    return f"{100 * statistics.median(c / w for c, w in zip(costs, walls)):.1f} %"


if __name__ == "__main__":
    main()
