"""What some models cost: their share of a whole `profpipe analyse` (by default the GPU-trace marts of issue 20).

Runs `profpipe analyse` on the input (wall time, --repeat times, the median counts), then rebuilds the model
library over that output's normalized tables in this process `--repeat` times, timing each model (models.py
run_models), and reports the chosen models' median seconds against the whole analyse. The target (issue 20):
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
from profpipe.models import create_macros, load_models, query_rows, run_models, set_run_options
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
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "out"
        walls = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "profpipe", "analyse", str(args.trace), "-o", str(out), "--json"],
                                  stdout=subprocess.DEVNULL)
            if done.returncode not in (0, 3):  # 3: complete with some input counted in trace_health
                sys.exit(f"profpipe analyse failed with exit status {done.returncode}")
            walls.append(time.perf_counter() - started)
        models = load_models()
        groups = ({name: [*chosen, *ISSUE_35_RULES.get(name, ()), *ISSUE_35_QUERIES[name]]
                   for name, chosen in ISSUE_35.items()} if args.issue else {"chosen models": args.models})
        per_group: dict[str, list[float]] = {name: [] for name in groups}
        marts, everything = [], []
        for _ in range(args.repeat):
            con = duckdb.connect()
            con.execute(f"ATTACH '{out / 'profile.duckdb'}' AS saved (READ_ONLY)")
            for name in catalog():  # the normalized tables the run saved
                con.execute(f"CREATE TABLE {name} AS FROM saved.{name}")
            create_macros(con)
            set_run_options(con, {})
            seconds = run_models(con, models).seconds
            everything.append(sum(seconds.values()))
            if args.issue:
                time_rules_and_report(con, seconds)
            con.close()
            for name, chosen in groups.items():
                per_group[name].append(sum(seconds.get(model, 0.0) for model in chosen))
            marts.append(sum(seconds.get(model, 0.0) for chosen in groups.values() for model in chosen))
    wall, mart, total = statistics.median(walls), statistics.median(marts), statistics.median(everything)
    print(f"input: {args.trace} ({sum(f.stat().st_size for f in args.trace.rglob('*') if f.is_file()) / 2**20:.1f} MiB)")
    print(f"profpipe analyse, whole run: {wall:.2f} s (median of {args.repeat})")
    print(f"all models: {total:.2f} s")
    for name, values in per_group.items():
        cost = statistics.median(values)
        print(f"  {name}: {cost:.3f} s = {100 * cost / wall:.1f} % of the run ({', '.join(groups[name])})")
    target = "issue 35's target: under 10 %" if args.issue else "issue 20's target for its GPU marts: under 20 %"
    print(f"together: {mart:.3f} s = {100 * mart / wall:.1f} % of the run ({target})")


if __name__ == "__main__":
    main()
