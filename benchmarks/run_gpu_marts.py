"""What some models cost: their share of a whole `profpipe analyse` (by default the GPU-trace marts of issue 20).

Runs `profpipe analyse` on the input (wall time, --repeat times, the median counts), then rebuilds the model
library over that output's normalized tables in this process `--repeat` times, timing each model (models.py
run_models), and reports the chosen models' median seconds against the whole analyse. The target (issue 20):
under 20 % of an analyse of a 50 MB trace. The trace defaults to the 50 MB one run_kineto.py generates; any input
profpipe reads will do (`--models` names other models, e.g. the scope timeline's on an Ascend job).

Usage: python benchmarks/run_gpu_marts.py [--trace benchmarks/work/kineto_50mb] [--repeat 3] [--models M ...]
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

from profpipe.models import create_macros, load_models, run_models, set_run_options
from profpipe.tables import catalog

HERE = Path(__file__).resolve().parent
#: The marts and intermediates issue 20 added (GPU analyses beside HTA and Nsight Systems).
GPU_MARTS = ("int_hta_gpu_event", "gpu_time_breakdown", "int_gpu_idle_gap", "gpu_idle_breakdown", "step_gpu_idle",
             "kernel_launch", "gpu_queue_length", "kernel_launch_stats", "cuda_api_stats", "gpu_memory_op_stats", "stg_collective_event", "collective_exec",
             "collective_size_stats", "comm_comp_overlap", "collective_straggler", "op_flops")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=HERE / "work" / "kineto_50mb")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--models", nargs="+", default=list(GPU_MARTS), help="the models to sum (default: issue 20's)")
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
        marts, everything = [], []
        for _ in range(args.repeat):
            con = duckdb.connect()
            con.execute(f"ATTACH '{out / 'profile.duckdb'}' AS saved (READ_ONLY)")
            for name in catalog():  # the normalized tables the run saved
                con.execute(f"CREATE TABLE {name} AS FROM saved.{name}")
            create_macros(con)
            set_run_options(con, {})
            seconds = run_models(con, models)
            con.close()
            marts.append(sum(seconds.get(name, 0.0) for name in args.models))
            everything.append(sum(seconds.values()))
    wall, mart, total = statistics.median(walls), statistics.median(marts), statistics.median(everything)
    print(f"input: {args.trace} ({sum(f.stat().st_size for f in args.trace.rglob('*') if f.is_file()) / 2**20:.1f} MiB)")
    print(f"profpipe analyse, whole run: {wall:.2f} s (median of {args.repeat})")
    print(f"all models: {total:.2f} s; {len(args.models)} chosen models: {mart:.3f} s = {100 * mart / wall:.1f} % "
          f"of the run (issue 20's target for its GPU marts: under 20 %)")


if __name__ == "__main__":
    main()
