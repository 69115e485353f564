"""Cost ledger: profpipe's time and memory per stage on a fixed set of inputs, this tree beside an older commit.

The other benchmarks here set profpipe against peers; this one sets profpipe against itself, so that the
next regression shows up in one run. The older commit (`--before`) is extracted with `git archive` into
benchmarks/work/ledger/ (git-ignored); both trees run with this Python (the same venv), each selected
by PYTHONPATH (with `python -P`, so the working folder never shadows it). Each analyse is a child
process measured by run_mindspore_cpu.measure: wall time including the interpreter's start, and peak
RSS (ru_maxrss of the children: the largest single process, the main one or a worker). The per-stage
seconds come from the output's manifest.json (`timings_s`; `peak_rss_bytes` is kept in the JSON where a
tree writes it), so both trees are measured the same way. The trees run interleaved (now, before, now,
before, ...) `--repeat` times per input and the fastest run of each counts, since this machine is shared
and drifts. A tree that fails on an input is reported and the ledger goes on.

Inputs (generated ones are cached under benchmarks/work/ledger/, keyed by their parameters):

* lenet_cpu: fixtures/mindspore_cpu/lenet_graph, a tiny MindSpore CPU dump;
* kineto_tiny: fixtures/kineto/current, two tiny Kineto ranks;
* kineto_57mb: scale_python_frames.py's training-loop trace of 75,000 Python frames (57 MB);
* msprof_50mb: scale_msprof.py, one rank of about 50 MiB of msprof timelines;
* ascend_150mb: scale_ascend_job.py, a raw Ascend job of about 150 MiB of HWTS and training-trace records;
* minddata: fixtures/minddata_mindspore/cpu_bound_map, a MindData pipeline profile;
* batch_4runs: `profpipe batch` of four small runs (lenet_cpu, kineto_tiny, minddata and the msprof
  fixture) into a fresh warehouse: the cost per run of a batch (trees without `batch` fail here).

CI runs it on the two small inputs against a pinned commit (.ci/run, `--fail-above 1.5`): a regression of a
small run's wall time fails the build.

Usage:
    python benchmarks/ledger.py --before 3e91066 --repeat 3 [--json ledger.json]
    python benchmarks/ledger.py --before a1835e3 --only lenet_cpu,kineto_tiny --fail-above 1.5
    python benchmarks/ledger.py --before main --quick --only lenet_cpu,kineto_tiny
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import scale_ascend_job  # noqa: E402
import scale_msprof  # noqa: E402
from run_mindspore_cpu import WORK, measure  # noqa: E402
from scale_python_frames import generate as python_frames_trace  # noqa: E402

NOW_ROOT = HERE.parent
FIXTURES = NOW_ROOT / "fixtures"
LEDGER = WORK / "ledger"
STAGES = ("discover", "ingest", "merge", "models", "checks", "export")


@dataclass(frozen=True)
class Tree:
    """A profpipe source tree and how to start its CLI (the package was `pipeline` before 2026-11-24)."""

    label: str
    root: Path
    commit: str

    @property
    def package(self) -> str:
        return "profpipe" if (self.root / "profpipe").is_dir() else "pipeline"

    def python(self, *args: str) -> list[str]:
        """This venv's Python with only this tree's package importable ahead of the installed one."""
        return ["env", f"PYTHONPATH={self.root}", sys.executable, "-P", *args]

    def cli(self, *args: str) -> list[str]:
        """The CLI with `args`, quiet where the tree has --quiet (its summary tables cost a little)."""
        entry = (["-m", self.package] if (self.root / self.package / "__main__.py").is_file()
                 else ["-c", f"from {self.package}.cli import app; app()"])
        quiet = ["-q"] if '"--quiet"' in (self.root / self.package / "cli.py").read_text() else []
        return self.python(*entry, *args, *quiet)


@dataclass(frozen=True)
class Input:
    """One input of the ledger: `make` returns its folder (made and cached on first use)."""

    name: str
    big: bool
    make: Callable[[], Path]
    command: str = "analyse"


def _cached(folder: Path, write: Callable[[Path], None]) -> Path:
    """`folder`, written by `write` into a scratch folder beside it and renamed, unless it is there already."""
    if not folder.is_dir():
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        write(partial)
        partial.rename(folder)
    return folder


def _python_frames(folder: Path, frames: int) -> None:
    trace = folder / "rank-0.pt.trace.json"
    python_frames_trace(trace, frames)
    Path(f"{trace}.truth.json").unlink()  # the generator's ground truth, not part of a profiler's output


def _batch_runs(folder: Path) -> None:
    runs = {"lenet_cpu": FIXTURES / "mindspore_cpu" / "lenet_graph", "kineto_tiny": FIXTURES / "kineto" / "current",
            "minddata": FIXTURES / "minddata_mindspore" / "cpu_bound_map", "msprof": FIXTURES / "msprof_timeline"}
    for name, source in runs.items():
        shutil.copytree(source, folder / name)


INPUTS = [
    Input("lenet_cpu", False, lambda: FIXTURES / "mindspore_cpu" / "lenet_graph"),
    Input("kineto_tiny", False, lambda: FIXTURES / "kineto" / "current"),
    Input("kineto_57mb", True, lambda: _cached(LEDGER / "kineto_frames75000", lambda f: _python_frames(f, 75_000))),
    Input("msprof_50mb", True, lambda: _cached(LEDGER / "msprof_1x50mb",
                                               lambda f: scale_msprof.scale(scale_msprof.default_source(), f, 1, 50))),
    Input("ascend_150mb", True, lambda: _cached(LEDGER / "ascend_150mb", lambda f: scale_ascend_job.scale(
        scale_ascend_job.default_source(), f / "JOB", 150))),
    Input("minddata", False, lambda: FIXTURES / "minddata_mindspore" / "cpu_bound_map"),
    Input("batch_4runs", False, lambda: _cached(LEDGER / "batch_4runs", _batch_runs), command="batch"),
]


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(NOW_ROOT), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def extract(commit: str) -> Tree:
    """The tree of `commit`, `git archive`d once into LEDGER/tree-<sha>."""
    sha = git("rev-parse", "--verify", f"{commit}^{{commit}}")
    root = LEDGER / f"tree-{sha[:12]}"

    def write(folder: Path) -> None:
        folder.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(NOW_ROOT), "archive", sha], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)

    return Tree("before", _cached(root, write), sha[:12])


def check_import(tree: Tree) -> None:
    """Stop unless the tree's own package is the one its children import."""
    imported = subprocess.run(tree.python("-c", f"import {tree.package}; print({tree.package}.__file__)"),
                              capture_output=True, text=True, check=True).stdout.strip()
    if not Path(imported).is_relative_to(tree.root):
        sys.exit(f"ledger: the {tree.label} tree imports {imported}, not its own {tree.root}")


def compile_bytecode(tree: Tree) -> None:
    """Write the tree's bytecode once, as pip does when it installs a package: without it every run compiles the
    package's modules again (where PYTHONDONTWRITEBYTECODE is set, as in some shells), a cost no installed copy pays."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree.root / tree.package)], check=True)


def run_once(tree: Tree, item: Input, folder: Path, timeout_s: float) -> dict:
    """One measured run of `tree` on `item`, into a fresh output folder; the stages from its manifest."""
    out = LEDGER / f"out-{tree.label}"
    shutil.rmtree(out, ignore_errors=True)
    args = ("analyse", str(folder), "-o", str(out)) if item.command == "analyse" else ("batch", str(folder), "-w",
                                                                                        str(out))
    result = measure(tree.cli(*args), timeout_s)
    manifest = out / "manifest.json"
    if result["ok"] and manifest.is_file():
        written = json.loads(manifest.read_text())
        result["stage_s"] = {k: round(v, 3) for k, v in written.get("timings_s", {}).items()}
        if "peak_rss_bytes" in written:
            result["stage_peak_mib"] = {k: round(v / 2**20, 1) for k, v in written["peak_rss_bytes"].items()}
    return result


def ratio(now: float | None, before: float | None) -> float | None:
    return round(now / before, 2) if now is not None and before else None


def figures(result: dict) -> dict[str, float | None]:
    """The table's columns of one measured run: the stages' seconds, the wall seconds and the peak MiB."""
    if not result["ok"]:
        return {}
    return {**{s: result.get("stage_s", {}).get(s) for s in STAGES}, "wall": result["wall_s"],
            "peak MiB": result["peak_rss_mib"]}


def measure_input(item: Input, trees: list[Tree], repeat: int, timeout_s: float) -> dict:
    """`item` run by every tree in turn, `repeat` rounds; per tree its fastest run (or its first failure)."""
    folder = item.make()
    files = [p for p in folder.rglob("*") if p.is_file()]
    for path in files:  # in the page cache for every run
        path.read_bytes()
    best: dict[str, dict] = {}
    for _ in range(repeat):
        for tree in trees:
            if tree.label in best and not best[tree.label]["ok"]:
                continue  # failed once: not again
            result = run_once(tree, item, folder, timeout_s)
            if not result["ok"]:
                print(f"ledger: {item.name}, {tree.label} tree: {result['error']}", file=sys.stderr, flush=True)
            if tree.label not in best or not result["ok"] or result["wall_s"] < best[tree.label]["wall_s"]:
                best[tree.label] = result
    now, before = figures(best["now"]), figures(best["before"])
    return {"input": item.name, "mib": round(sum(p.stat().st_size for p in files) / 2**20, 2), **best,
            "ratio": {k: ratio(now.get(k), before.get(k)) for k in (*STAGES, "wall", "peak MiB")}}


def table(rows: list[dict]) -> str:
    """Rows now / before / ratio per input, a column per stage, then wall seconds and peak MiB."""
    columns = (*STAGES, "wall", "peak MiB")
    lines = [f"{'input':<13} {'MiB':>6}  {'tree':<7}" + "".join(f"{c:>10}" for c in columns)]
    for row in rows:
        for label in ("now", "before", "ratio"):
            head = f"{row['input'] if label == 'now' else '':<13} {row['mib'] if label == 'now' else '':>6}  {label:<7}"
            if label != "ratio" and not row[label]["ok"]:
                lines.append(head + f"  failed: {row[label]['error'].strip().splitlines()[-1][:80]}")
                continue
            values = row["ratio"] if label == "ratio" else figures(row[label])
            lines.append(head + "".join(f"{'-' if values.get(c) is None else values[c]:>10}" for c in columns))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="the older commit to compare with (any git revision)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds per input; the fastest run of each tree counts")
    parser.add_argument("--only", help="comma-separated input names: " + ", ".join(i.name for i in INPUTS))
    parser.add_argument("--quick", action="store_true", help="one round, the small inputs only")
    parser.add_argument("--json", type=Path, help="also write the measurements to this file")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per run")
    parser.add_argument("--fail-above", type=float, metavar="RATIO",
                        help="exit 1 when an input's wall time now is above RATIO times before's, or fails now (CI)")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else [i.name for i in INPUTS]
    unknown = set(names) - {i.name for i in INPUTS}
    if unknown:
        parser.error(f"unknown inputs {sorted(unknown)}")
    inputs = [i for i in INPUTS if i.name in names and not (args.quick and i.big)]
    repeat = 1 if args.quick else args.repeat
    dirty = "+changes" if git("status", "--porcelain", "--untracked-files=no") else ""
    trees = [Tree("now", NOW_ROOT, git("rev-parse", "--short=12", "HEAD") + dirty), extract(args.before)]
    for tree in trees:
        check_import(tree)
        compile_bytecode(tree)
    header = (f"profpipe cost ledger, {date.today()}: now {trees[0].commit} vs before {trees[1].commit}, "
              f"fastest of {repeat}, seconds (stages from manifest.json; wall incl. interpreter start), "
              "peak MiB (max RSS of any one process)")
    print(header, flush=True)
    rows = []
    for item in inputs:
        rows.append(measure_input(item, trees, repeat, args.timeout))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps({"date": str(date.today()), "now": trees[0].commit,
                                         "before": trees[1].commit, "repeat": repeat, "inputs": rows}, indent=1))
    if args.fail_above is not None:
        slower = regressions(rows, args.fail_above)
        for line in slower:
            print(f"ledger: {line}", file=sys.stderr)
        if slower:
            sys.exit(1)


def regressions(rows: list[dict], limit: float) -> list[str]:
    """The inputs this tree fails on, or runs more than `limit` times slower than the older tree (wall time)."""
    found = []
    for row in rows:
        wall = row["ratio"]["wall"]
        if not row["now"]["ok"]:
            found.append(f"{row['input']}: this tree fails: {row['now']['error'].strip().splitlines()[-1][:200]}")
        elif wall is not None and wall > limit:
            found.append(f"{row['input']}: wall time {wall}x the older tree's (limit {limit}x)")
    return found


if __name__ == "__main__":
    main()
