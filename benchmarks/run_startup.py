"""How long `profpipe --help` takes to start, beside a bare Python's start, and which imports it pays for.

Runs each command `--repeat` times as a subprocess (the median counts: start-up times are small and the
machine is shared), then `python -X importtime` of the CLI module to list the slowest imports. The target
(issue 19): `profpipe --help` within 0.15 s; the package imports its readers, DuckDB, pyarrow and polars only
when a command needs them.

Usage: python benchmarks/run_startup.py [--repeat 15]
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time


def median_seconds(command: list[str], repeat: int) -> float:
    """The median wall time of `command` over `repeat` runs, output discarded."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def slowest_imports(module: str, count: int) -> list[tuple[int, str]]:
    """The `count` imports with the largest cumulative time (µs) when `module` is imported."""
    report = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], capture_output=True,
                            text=True, check=True).stderr
    rows = []
    for line in report.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    return sorted(rows, reverse=True)[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    profpipe = shutil.which("profpipe")
    help_command = [profpipe, "--help"] if profpipe else [sys.executable, "-m", "profpipe", "--help"]
    bare = median_seconds([sys.executable, "-c", "pass"], args.repeat)
    started = median_seconds(help_command, args.repeat)
    print(f"| command | median wall (of {args.repeat}) |\n|---|---|")
    print(f"| `python -c pass` | {bare:.3f} s |\n| `{' '.join(help_command[-2:])}` | {started:.3f} s |")
    print("\nslowest imports of profpipe.cli (cumulative µs):")
    for micros, name in slowest_imports("profpipe.cli", 8):
        print(f"  {micros:>8,}  {name.strip()}")


if __name__ == "__main__":
    main()
