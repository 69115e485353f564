"""What some models cost: their share of a whole `profpipe analyse` (by default the GPU-trace marts of issue 20).

Runs `profpipe analyse` on the input in a child process (the CLI's own command, `--repeat` rounds, each into a
fresh output folder) that times, inside that same run, each model as the run builds it (models.py run_models), each
advisor rule and each report query; reports the chosen ones' seconds against the round's whole analyse (the child's
wall time, interpreter start included, as a `profpipe analyse` command pays it; the median of the rounds' shares).
Measured within one run, a drifting load on this shared machine moves the part and the whole alike. The target
(issue 20): under 20 % of an analyse of a 50 MB trace. The trace defaults to the 50 MB one run_kineto.py generates; any input profpipe reads
will do (`--models` names other models, e.g. the scope timeline's on an Ascend job).

`--issue 35` reports the analyses of issue 35 one by one instead (critical path, kernel sequences, CUPTI counters,
memory bandwidth, roofline), each with the models, the advisor rule and the report queries it added, and together
(target: under 10 % of the analyse).

Usage: python benchmarks/run_gpu_marts.py [--trace benchmarks/work/kineto_50mb] [--repeat 3] [--models M ... | --issue 35]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import profpipe.report.pages as report_pages
from profpipe import advisor, run
from profpipe.cli import app

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


@contextmanager
def timed_in_run(seconds: dict[str, float]) -> Iterator[None]:
    """While inside, add to `seconds` each model's time as a run builds it (by model name), each advisor rule's
    (by rule id) and each report query's (by query name)."""
    run_models, check, rows = run.run_models, advisor._check, report_pages.rows

    def timed_models(*args: Any, **kwargs: Any) -> Any:
        done = run_models(*args, **kwargs)
        seconds.update(done.seconds)
        return done

    def timed_check(con: Any, rule: advisor.Rule) -> Any:
        started = time.perf_counter()
        try:
            return check(con, rule)
        finally:
            seconds[rule.id] = time.perf_counter() - started

    def timed_rows(con: Any, name: str, **params: Any) -> list[dict]:
        started = time.perf_counter()
        try:
            return rows(con, name, **params)
        finally:
            seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - started

    run.run_models, advisor._check, report_pages.rows = timed_models, timed_check, timed_rows
    try:
        yield
    finally:
        run.run_models, advisor._check, report_pages.rows = run_models, check, rows


def analyse_timed(timings: Path, trace: Path, out: Path) -> None:
    """The child: `profpipe analyse TRACE -o OUT --json -q`, each model's, rule's and report query's seconds written
    to `timings` (JSON); exits with the command's status."""
    seconds: dict[str, float] = {}
    code = 0
    with timed_in_run(seconds):
        try:
            app(["analyse", str(trace), "-o", str(out), "--json", "-q"], standalone_mode=False)
        except SystemExit as done:
            code = done.code or 0
    timings.write_text(json.dumps(seconds))
    sys.exit(code)


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        analyse_timed(*map(Path, sys.argv[2:5]))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=HERE / "work" / "kineto_50mb")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--models", nargs="+", default=list(GPU_MARTS), help="the models to sum (default: issue 20's)")
    parser.add_argument("--issue", choices=["35"], help="report the analyses of this issue one by one")
    args = parser.parse_args()
    if not args.trace.exists():
        sys.exit(f"{args.trace} is missing: python benchmarks/run_kineto.py --skip-hta --mb 50 makes it")
    groups = ({name: [*chosen, *ISSUE_35_RULES.get(name, ()), *ISSUE_35_QUERIES[name]]
               for name, chosen in ISSUE_35.items()} if args.issue else {"chosen models": args.models})
    walls: list[float] = []
    models: list[float] = []
    per_group: dict[str, list[float]] = {name: [] for name in groups}
    together: list[float] = []
    with tempfile.TemporaryDirectory() as scratch:
        for round_number in range(args.repeat):
            out, timings = Path(scratch) / f"out-{round_number}", Path(scratch) / f"seconds-{round_number}.json"
            started = time.perf_counter()
            done = subprocess.run([sys.executable, __file__, "--child", str(timings), str(args.trace), str(out)],
                                  stdout=subprocess.DEVNULL, check=False)
            walls.append(time.perf_counter() - started)
            if done.returncode not in (0, 3):  # 3: complete with some input counted in trace_health
                sys.exit(f"profpipe analyse failed with exit status {done.returncode}")
            seconds = json.loads(timings.read_text())
            models.append(sum(seconds.get(model.name, 0.0) for model in run.load_models()))
            for name, chosen in groups.items():
                per_group[name].append(sum(seconds.get(item, 0.0) for item in chosen))
            together.append(sum(per_group[name][-1] for name in groups))
    print(f"input: {args.trace} ({sum(f.stat().st_size for f in args.trace.rglob('*') if f.is_file()) / 2**20:.1f} MiB)")
    print(f"profpipe analyse, whole run: {statistics.median(walls):.2f} s (median of {args.repeat}: "
          f"{', '.join(f'{w:.2f}' for w in walls)}); its models: {statistics.median(models):.2f} s")
    for name, values in per_group.items():
        print(f"  {name}: {statistics.median(values):.3f} s = {share(values, walls)} of the run ({', '.join(groups[name])})")
    target = "issue 35's target: under 10 %" if args.issue else "issue 20's target for its GPU marts: under 20 %"
    print(f"together: {statistics.median(together):.3f} s = {share(together, walls)} of the run ({target}); "
          f"round by round: {', '.join(f'{100 * t / w:.1f} %' for t, w in zip(together, walls))}")


def share(costs: list[float], walls: list[float]) -> str:
    """The median of the rounds' cost / wall, as a percentage."""
    return f"{100 * statistics.median(c / w for c, w in zip(costs, walls)):.1f} %"


if __name__ == "__main__":
    main()
