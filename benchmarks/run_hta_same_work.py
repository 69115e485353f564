"""profpipe against HolisticTraceAnalysis (HTA) doing the same work on the same Kineto trace, in one run (issue 45).

For each real Kineto trace (`--trace`, default the two ResNet-50 samples of ../shared/realdata: 30.8 and 35.2 MB
of JSON), each in a temp folder of its own (a link to it: HTA reads a folder of traces), these two commands run as
child processes, alternating, `--rounds` times, and the fastest round of each counts:

* HTA (in a Python that has it, `--hta-python`, default /work/peers/hta/bin/python; HTA 0.5 with pandas 2.x):
  `TraceAnalysis(trace_dir=..., include_last_profiler_step=True)` (the parse; every step kept, as profpipe keeps
  them), then the analyses profpipe also builds: get_gpu_kernel_breakdown, get_temporal_breakdown,
  get_idle_time_breakdown(show_idle_interval_stats=True), get_comm_comp_overlap, get_queue_length_summary,
  get_cuda_kernel_launch_stats, get_memory_bw_summary, get_frequent_cuda_kernel_sequences (from `aten::conv2d`, the
  ResNet's most frequent op that launches kernels, output into a temp folder) and critical_path_analysis (rank 0,
  'ProfilerStep', instance_id 0: HTA counts the position among the trace's ProfilerSteps, so the first step), every
  plot off. Each analysis runs in its own try/except; the child writes which ran and which failed (with the error)
  to a JSON file. An analysis that fails is not HTA's work done, and the table says how many were; the time it
  spent before failing stays in HTA's wall time;
* `profpipe analyse TRACE_DIR -o OUT -q` (the whole analyse: every model, the report, the timeline, the CSVs), in
  this Python (run the script with the worktree's venv).

Each is measured by run_mindspore_cpu.measure: wall time of the command from its start (its interpreter's start
included) to its exit, and peak RSS as the largest ru_maxrss of any one process of its tree (RUSAGE_CHILDREN of a
small launcher), not a sum over processes running at once. Ratios: speedup = HTA wall / profpipe wall, memory =
profpipe peak / HTA peak. The machine is shared: the load average before and after is printed with the commit.

Usage:
    .venv/bin/python benchmarks/run_hta_same_work.py --rounds 3 [--hta-python /work/peers/hta/bin/python]
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run_kineto import REALDATA  # noqa: E402
from run_mindspore_cpu import measure  # noqa: E402

#: The real ResNet-50 Kineto traces of 30-65 MB (issue 45): one rank each, CUDA kernels, ProfilerStep#5..10.
TRACES = ["kineto/tb_plugin/samples/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz",
          "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"]

#: The HTA child: argv[1] the trace folder, argv[2] a temp folder for its outputs, argv[3] the JSON report file.
_HTA = """
import json, sys, traceback
from hta.trace_analysis import TraceAnalysis
trace_dir, out_dir, report = sys.argv[1:4]
ran, failed = [], {}
def attempt(name, call):
    try:
        call()
        ran.append(name)
    except Exception as error:
        failed[name] = f"{type(error).__name__}: {error}"[:300]
analyzer = TraceAnalysis(trace_dir=trace_dir, include_last_profiler_step=True)
def critical_path():
    _, ok = analyzer.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=0)
    if not ok:
        raise RuntimeError("critical_path_analysis returned success=False")
attempt("gpu_kernel_breakdown", lambda: analyzer.get_gpu_kernel_breakdown(visualize=False))
attempt("temporal_breakdown", lambda: analyzer.get_temporal_breakdown(visualize=False))
attempt("idle_time_breakdown", lambda: analyzer.get_idle_time_breakdown(visualize=False, show_idle_interval_stats=True))
attempt("comm_comp_overlap", lambda: analyzer.get_comm_comp_overlap(visualize=False))
attempt("queue_length_summary", lambda: analyzer.get_queue_length_summary())
attempt("cuda_kernel_launch_stats", lambda: analyzer.get_cuda_kernel_launch_stats(visualize=False))
attempt("memory_bw_summary", lambda: analyzer.get_memory_bw_summary())
attempt("frequent_cuda_kernel_sequences",
        lambda: analyzer.get_frequent_cuda_kernel_sequences(operator_name="aten::conv2d", output_dir=out_dir))
attempt("critical_path_analysis", critical_path)
json.dump({"ran": ran, "failed": failed}, open(report, "w"))
"""


def _load() -> str:
    """The 1, 5 and 15 minute load averages and the CPU count, as one line."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def run_trace(trace: Path, hta_python: str, rounds: int, timeout_s: float) -> dict:
    """Both tools on `trace`, alternating for `rounds` rounds: the fastest run of each, HTA's analyses, the ratios."""
    with tempfile.TemporaryDirectory(prefix="hta_same_work_") as work:
        folder = Path(work) / "trace"
        folder.mkdir()
        (folder / trace.name).symlink_to(trace)
        report = Path(work) / "hta.json"
        hta: dict | None = None
        ours: dict | None = None
        analyses: dict = {}
        for _ in range(rounds):
            with tempfile.TemporaryDirectory(dir=work) as hta_out:
                run = measure([hta_python, "-c", _HTA, str(folder), hta_out, str(report)], timeout_s)
            if run["ok"]:
                analyses = json.loads(report.read_text())
            if hta is None or (run["ok"] and (not hta["ok"] or run["wall_s"] < hta["wall_s"])):
                hta = run
            with tempfile.TemporaryDirectory(dir=work) as out:
                run = measure([sys.executable, "-c", "from profpipe.cli import app; app()", "analyse", str(folder),
                               "-o", out, "-q"], timeout_s)
            if ours is None or (run["ok"] and (not ours["ok"] or run["wall_s"] < ours["wall_s"])):
                ours = run
    with gzip.open(trace) if trace.suffix == ".gz" else trace.open("rb") as raw:
        json_mib = round(sum(len(chunk) for chunk in iter(lambda: raw.read(1 << 24), b"")) / 2**20, 1)
    row = {"trace": trace.name, "json_mib": json_mib, "hta": hta, "profpipe": ours,
           "hta_ran": analyses.get("ran", []), "hta_failed": analyses.get("failed", {})}
    if hta["ok"] and ours["ok"]:
        row["speedup"] = round(hta["wall_s"] / ours["wall_s"], 2)
        row["memory_ratio"] = round(ours["peak_rss_mib"] / hta["peak_rss_mib"], 2)
    return row


def table(rows: list[dict]) -> str:
    """The rows as a Markdown table, then per trace which HTA analyses ran and which failed."""
    def shown(result: dict) -> str:
        return f"{result['wall_s']} s / {result['peak_rss_mib']} MiB" if result["ok"] else result["error"]
    lines = ["| trace | JSON MiB | HTA wall / peak | profpipe wall / peak | speedup (HTA/profpipe) | "
             "memory (profpipe/HTA) | HTA analyses done |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        done = len(r["hta_ran"]), len(r["hta_ran"]) + len(r["hta_failed"])
        lines.append(f"| {r['trace']} | {r['json_mib']} | {shown(r['hta'])} | {shown(r['profpipe'])} | "
                     f"{r.get('speedup', '-')}x | {r.get('memory_ratio', '-')}x | {done[0]} of {done[1]} |")
    for r in rows:
        lines.append(f"\n{r['trace']}: HTA ran {', '.join(r['hta_ran']) or 'nothing'}")
        lines.extend(f"  failed {name}: {error}" for name, error in r["hta_failed"].items())
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, nargs="+", default=[REALDATA / t for t in TRACES])
    parser.add_argument("--hta-python", default="/work/peers/hta/bin/python", help="a Python with HTA 0.5")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; the fastest run of each counts")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per command")
    args = parser.parse_args()
    commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit {commit}, before: {_load()}", flush=True)
    rows = []
    for trace in args.trace:
        rows.append(run_trace(trace.resolve(), args.hta_python, args.rounds, args.timeout))
        print(json.dumps(rows[-1]), flush=True)
    print(f"after: {_load()}\n")
    print(table(rows))


if __name__ == "__main__":
    main()
