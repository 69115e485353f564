"""How long profpipe takes to start: `import profpipe`, `profpipe --help`, `profpipe analyse --help`, `import
profpipe.run` and `analyse` of a small dump, beside a bare Python's start; on this checkout and, with --before
COMMIT, on an older commit.

Each command runs as a child process (`python -m profpipe`, PYTHONPATH the checkout) and its wall time and CPU time
(user + system) are taken; the two checkouts take turns, run by run, so that a change of load on the shared machine
hits both, and the median counts. Then `python -X importtime` of each command says which heavy libraries it loaded,
and which imports of `profpipe --help` took longest here. The target (issue 32): `profpipe --help` and every
`--help` within 0.15 s, the heavy libraries loaded only by the commands that use them.

Usage: python benchmarks/run_startup.py [--repeat 15] [--analyse-repeat 5] [--before COMMIT] [--dump FOLDER]
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DUMP = REPO / "fixtures" / "mindspore_cpu" / "lenet_graph"
#: The libraries that cost tens of milliseconds or more to import (typer converts a running command's arguments
#: with pydantic).
HEAVY = ("duckdb", "pyarrow", "numpy", "polars", "plotly", "dask", "distributed", "jsonschema", "pydantic", "rich")


def environment(checkout: Path) -> dict[str, str]:
    """The children's environment: profpipe from `checkout`, its compiled bytecode kept (under PYTHONPYCACHEPREFIX,
    so that the checkout stays clean) as an installed package has it, even where
    PYTHONDONTWRITEBYTECODE is set: compiling cli.py alone costs more than the rest of `profpipe --help`."""
    variables = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    return {**variables, "PYTHONPATH": str(checkout),
            "PYTHONPYCACHEPREFIX": str(Path(tempfile.gettempdir()) / "profpipe-startup-pyc")}


def timed_run(args: list[str], checkout: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of `python ARGS` run in `checkout` with its profpipe, output discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=checkout, env=environment(checkout), stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def import_times(args: list[str], checkout: Path) -> list[tuple[int, int, str]]:
    """(cumulative µs, depth, module) of every import `python ARGS` makes, from `python -X importtime`."""
    report = subprocess.run([sys.executable, "-X", "importtime", *args], cwd=checkout, capture_output=True, text=True,
                            env=environment(checkout), check=True).stderr
    rows = []
    for line in report.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            name = parts[2].rstrip()
            rows.append((int(parts[1]), (len(name) - len(name.lstrip())) // 2, name.strip()))
    return rows


def heavy_loaded(rows: list[tuple[int, int, str]]) -> str:
    """The HEAVY libraries among the imports `rows`, or "none"."""
    names = {name for _, _, name in rows}
    return ", ".join(library for library in HEAVY if library in names) or "none"


def checkout_of(commit: str, folder: Path) -> Path:
    """The package and its data (profpipe/, sql/, schemas/) at `commit`, extracted under `folder`."""
    archive = subprocess.run(["git", "archive", commit, "profpipe", "sql", "schemas"], cwd=REPO, capture_output=True,
                             check=True).stdout
    folder.mkdir()
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="runs of each start-up command per checkout")
    parser.add_argument("--analyse-repeat", type=int, default=5, help="runs of `analyse DUMP` per checkout")
    parser.add_argument("--before", metavar="COMMIT", help="also measure this commit, taking turns with this checkout")
    parser.add_argument("--dump", type=Path, default=DUMP, help="the folder `analyse` reads (default: %(default)s)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="profpipe-startup-") as scratch:
        checkouts = {"this checkout": REPO}
        if args.before:
            label = f"before ({args.before})"
            checkouts = {label: checkout_of(args.before, Path(scratch) / "before"), **checkouts}
        dump = args.dump.resolve()
        commands = {  # "{out}": an output folder of the checkout's own
            "import profpipe": (["-c", "import profpipe"], args.repeat),
            "profpipe --help": (["-m", "profpipe", "--help"], args.repeat),
            "profpipe analyse --help": (["-m", "profpipe", "analyse", "--help"], args.repeat),
            "import profpipe.run": (["-c", "import profpipe.run"], args.repeat),  # what a reading worker imports
            f"profpipe analyse {dump.name} -q": (["-m", "profpipe", "analyse", str(dump), "-o", "{out}", "--force",
                                                   "-q"], args.analyse_repeat),
        }

        def command_line(command: str, label: str) -> list[str]:
            out = str(Path(scratch) / f"out-{list(checkouts).index(label)}")
            return [arg.replace("{out}", out) for arg in commands[command][0]]

        load = os.getloadavg()[0]
        bare = [timed_run(["-c", "pass"], REPO) for _ in range(args.repeat)]
        for command in commands:  # compiles the bytecode, not timed
            for label, checkout in checkouts.items():
                timed_run(command_line(command, label), checkout)
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for command, (_, repeat) in commands.items():
            for _ in range(repeat):
                for label, checkout in checkouts.items():
                    times.setdefault((command, label), []).append(timed_run(command_line(command, label), checkout))
        loaded = {(command, label): import_times(command_line(command, label), checkout)
                  for command in commands for label, checkout in checkouts.items()}
        help_imports = loaded[("profpipe --help", "this checkout")]

    def figures(runs: list[tuple[float, float]]) -> str:
        walls = [wall for wall, _ in runs]
        return (f"{statistics.median(walls):.3f} / {statistics.median(cpu for _, cpu in runs):.3f} / "
                f"{min(walls):.3f}")

    print(f"Python {platform.python_version()}, {os.cpu_count()} cores, load average {load:.1f} at the start and "
          f"{os.getloadavg()[0]:.1f} at the end; seconds: median wall / median CPU (user + system) / fastest wall of "
          f"{args.repeat} runs ({args.analyse_repeat} for analyse); a bare `python -c pass`: {figures(bare)}\n")
    print("| command | " + " | ".join(checkouts) + " | heavy libraries loaded (" + " -> ".join(checkouts) + ") |")
    print("|---|" + "---:|" * len(checkouts) + "---|")
    for command in commands:
        cells = [figures(times[(command, label)]) for label in checkouts]
        libraries = " -> ".join(heavy_loaded(loaded[(command, label)]) for label in checkouts)
        print(f"| `{command}` | " + " | ".join(cells) + f" | {libraries} |")
    print("\nslowest imports of `profpipe --help`, this checkout (cumulative ms, from -X importtime):")
    for micros, depth, name in sorted(help_imports, reverse=True)[:8]:
        print(f"  {micros / 1000:7.1f}  {'  ' * depth}{name}")


if __name__ == "__main__":
    main()
