"""Scale a real MindSpore CPU profiler folder to a target size of op-timestamp text.

Takes an `*_ascend_ms` folder (e.g. fixtures/mindspore_cpu/lenet_graph/*_ascend_ms) and writes a
copy whose FRAMEWORK/cpu_op_execute_timestamp_0.txt repeats the recorded training steps until
the file reaches the target size: each repeat shifts every start by the run's span, so the
result looks like a longer run of the same network (one line per op, all its executions on
that line, as MindSpore writes it). The other FRAMEWORK files are copied as they are.

Usage: python benchmarks/scale_mindspore_cpu.py SRC_ASCEND_MS DEST_ASCEND_MS --mb 1024
"""
from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import numpy as np


def scale(source: Path, dest: Path, target_mb: float) -> int:
    """Write the scaled copy; return the size in bytes of the timestamp file."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("ASCEND_PROFILER_OUTPUT", "logs"))
    timestamp = dest / "FRAMEWORK" / "cpu_op_execute_timestamp_0.txt"
    ops = []
    for line in timestamp.read_text().splitlines():
        name, kind, executions = line.split(";", 2)
        triples = [e.split(",") for e in executions.split()]
        starts = np.array([int(t[0]) for t in triples], dtype=np.int64)
        ops.append((f"{name};{kind};", starts, [t[1] for t in triples], [t[2] for t in triples]))
    first = min(int(o[1].min()) for o in ops)
    span = max(int(o[1].max()) for o in ops) - first + 1_000_000
    one_repeat = sum(len(o[0]) for o in ops) + sum(
        sum(len(str(s)) + len(d) + len(t) + 3 for s, d, t in zip(o[1], o[2], o[3])) for o in ops)
    repeats = max(1, int(target_mb * 1024 * 1024 // one_repeat))
    with open(timestamp, "w") as out:
        for prefix, starts, durations, tids in ops:
            out.write(prefix)
            tails = [f",{d},{t} " for d, t in zip(durations, tids)]
            for repeat in range(repeats):
                shifted = (starts + repeat * span).tolist()
                out.write("".join(f"{s}{tail}" for s, tail in zip(shifted, tails)))
            out.write("\n")
    return timestamp.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("dest", type=Path)
    parser.add_argument("--mb", type=float, default=1024.0, help="target size of the timestamp file in MiB")
    args = parser.parse_args()
    size = scale(args.source, args.dest, args.mb)
    print(f"{args.dest}: cpu_op_execute_timestamp_0.txt {size / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
