"""profpipe against msprof-analyze (its `cluster` analysis) on the real torch_npu results, side by side in one run.

The inputs are ../shared/realdata/Ascend-msinsight's Level 1 pair (2 ranks, text export and db export) and a
4-rank folder of each, made by copying the 2 real ranks again under ranks 2 and 3 (profiler_info_<r>.json, the
db's file name and its RANK_DEVICE_MAP renamed; we have no real 4-rank sample). Each input is copied into a
scratch folder first (msprof-analyze is given `-o`, but the copy keeps realdata untouchable either way). Per
round, each tool runs once on the same copy, alternating (profpipe, peer, profpipe, peer, ...), each a child
process in a session of its own: wall time with the interpreter's start, and memory sampled every 50 ms from /proc
over every process of that session: the peak of their summed RSS (msprof-analyze runs its analyses in a pool of
spawned processes of about 110 MiB each, so the largest single process, run_mindspore_cpu.measure's ru_maxrss,
understates it) and of the largest one. The median (and the fastest) of `--rounds` count, since the machine is
shared. Ratios: speedup = peer wall / profpipe wall (target >= 5), memory = profpipe peak / peer peak, summed RSS
(target <= 1).

The peer is msprof-analyze in its own venv, never a dependency of profpipe:
    python3 -m venv /work/peers/msa && /work/peers/msa/bin/pip install msprof-analyze==26.2.0
The benchmark skips (exit 0, one line) when that venv or the real data is absent.

Usage:
    python benchmarks/run_ascend_today.py [--peer /work/peers/msa/bin/msprof-analyze] [--rounds 5]
        [--only text_2rank,db_2rank | --input FOLDER] [--mode all] [--json results.json]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

HERE = Path(__file__).resolve().parent
PAGE = os.sysconf("SC_PAGE_SIZE")

#: The real torch_npu samples: $PROFPIPE_REALDATA, else ../shared/realdata beside the checkout (or beside the folder
#: of worktrees that holds it).
_REALDATA = [Path(os.environ["PROFPIPE_REALDATA"])] if "PROFPIPE_REALDATA" in os.environ else [
    HERE.parent.parent / "shared" / "realdata", HERE.parent.parent.parent / "shared" / "realdata"]
REAL = next((p for p in _REALDATA if p.is_dir()), _REALDATA[0]) / "Ascend-msinsight" / "test" / "data" / "pytorch"
PEER = Path(os.environ.get("MSPROF_ANALYZE", "/work/peers/msa/bin/msprof-analyze"))


def copy_ranks(source: Path, target: Path, shift: int = 0) -> None:
    """The rank folders of `source` copied into `target`, rank r as rank r + `shift`: the folder name, the
    profiler_info_<r>.json name and its rank_id, the ascend_pytorch_profiler_<r>.db name and its RANK_DEVICE_MAP."""
    for folder in sorted(source.glob("rank*_ascend_pt")):
        rank = int(folder.name.removeprefix("rank").split("_", 1)[0])
        copy = target / f"rank{rank + shift}_ascend_pt"
        shutil.copytree(folder, copy)
        for path in copy.rglob("*"):
            path.chmod(path.stat().st_mode | 0o200)
        if not shift:
            continue
        info = copy / f"profiler_info_{rank}.json"
        content = json.loads(info.read_text(encoding="utf-8"))
        content["rank_id"] = rank + shift
        (copy / f"profiler_info_{rank + shift}.json").write_text(json.dumps(content), encoding="utf-8")
        info.unlink()
        for db in copy.glob(f"ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_{rank}.db"):
            renamed = db.with_name(f"ascend_pytorch_profiler_{rank + shift}.db")
            db.rename(renamed)
            with closing(sqlite3.connect(renamed)) as con, con:
                if con.execute("SELECT 1 FROM sqlite_master WHERE name = 'RANK_DEVICE_MAP'").fetchone():
                    con.execute("UPDATE RANK_DEVICE_MAP SET rankId = rankId + ? WHERE rankId >= 0", (shift,))


def _two_ranks(export: str) -> Callable[[Path], None]:
    return lambda target: copy_ranks(REAL / export / "level1", target)


def _four_ranks(export: str) -> Callable[[Path], None]:
    def make(target: Path) -> None:
        copy_ranks(REAL / export / "level1", target)
        copy_ranks(REAL / export / "level1", target, shift=2)
    return make


INPUTS: dict[str, Callable[[Path], None]] = {
    "text_2rank": _two_ranks("text"), "db_2rank": _two_ranks("db"),
    "text_4rank": _four_ranks("text"), "db_4rank": _four_ranks("db"),
}


def _session_rss(session: int) -> list[int]:
    """The RSS (bytes) of every process of `session`, from /proc/<pid>/stat (fields after the command: state, ppid,
    pgrp, session, ..., rss at index 21)."""
    sizes = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:  # the process ended meanwhile
            continue
        if int(fields[3]) == session:
            sizes.append(int(fields[21]) * PAGE)
    return sizes


def measure_tree(command: list[str], timeout_s: float) -> dict:
    """Wall seconds of `command` (a session of its own) and the peaks of its processes' summed and largest RSS (MiB),
    sampled every 50 ms; ok when it exits 0 (or 3 for profpipe: partial, said)."""
    log = tempfile.TemporaryFile()
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    tree = largest = 0
    while process.poll() is None:
        if time.perf_counter() - started > timeout_s:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return {"ok": False, "error": f"timed out after {timeout_s:.0f} s"}
        sizes = _session_rss(process.pid)
        tree, largest = max(tree, sum(sizes)), max(largest, max(sizes, default=0))
        time.sleep(0.05)
    wall = time.perf_counter() - started
    if process.returncode not in (0, 3):
        log.seek(0)
        return {"ok": False, "error": f"exit {process.returncode}: {log.read().decode(errors='replace')[-300:]}"}
    return {"ok": True, "wall_s": round(wall, 2), "tree_rss_mib": round(tree / 2**20, 1),
            "largest_rss_mib": round(largest / 2**20, 1)}


def _summary(runs: list[dict]) -> dict:
    """The fastest and the median wall time and the peak memory of the runs that succeeded."""
    ok = [r for r in runs if r["ok"]]
    if not ok:
        return {"ok": False, "error": runs[0].get("error", "failed")}
    walls = [r["wall_s"] for r in ok]
    return {"ok": True, "runs": len(ok), "wall_s_min": min(walls), "wall_s_median": round(statistics.median(walls), 2),
            "tree_rss_mib": max(r["tree_rss_mib"] for r in ok), "largest_rss_mib": max(r["largest_rss_mib"] for r in ok)}


def measure_input(name: str, peer: Path, mode: str, rounds: int, timeout_s: float, scratch: Path) -> dict:
    """`name` is one of INPUTS (copied into `scratch` first) or an existing folder of rank folders, read in place."""
    if name in INPUTS:
        folder = scratch / name / "input"
        INPUTS[name](folder)
    else:
        folder, name = Path(name).resolve(), Path(name).name
    ours, theirs = [], []
    for _ in range(rounds):
        out = scratch / name / "profpipe_out"
        shutil.rmtree(out, ignore_errors=True)
        ours.append(measure_tree([sys.executable, "-c", "from profpipe.cli import app; app()", "analyse", str(folder),
                             "-o", str(out), "--quiet"], timeout_s))
        peer_out = scratch / name / "peer_out"
        shutil.rmtree(peer_out, ignore_errors=True)
        theirs.append(measure_tree([str(peer), "cluster", "-d", str(folder), "-m", mode, "-o", str(peer_out)], timeout_s))
    written = sorted(p.relative_to(peer_out).as_posix() for p in peer_out.rglob("*") if p.is_file())
    rows = None
    if (out / "manifest.json").is_file():
        counts = json.loads((out / "manifest.json").read_text())["row_counts"]
        rows = {table: counts.get(table, 0) for table in ("device_exec", "host_op", "comm_task", "step_point")}
    row = {"input": name, "profpipe": _summary(ours), "msprof_analyze": _summary(theirs), "peer_files": written,
           "profpipe_rows": rows}
    if row["profpipe"]["ok"] and row["msprof_analyze"]["ok"]:
        row["speedup"] = round(row["msprof_analyze"]["wall_s_median"] / row["profpipe"]["wall_s_median"], 2)
        row["memory_ratio"] = round(row["profpipe"]["tree_rss_mib"] / row["msprof_analyze"]["tree_rss_mib"], 2)
    return row


def compile_profpipe() -> None:
    """Byte-compile profpipe as an install does (pip writes a wheel's .pyc; the peer's venv has them): where
    PYTHONDONTWRITEBYTECODE is set, as on the shared machine, an editable checkout would compile the modules a run
    imports on every run (0.1-0.3 s). The .pyc go to profpipe's __pycache__ folders (git-ignored)."""
    spec = importlib.util.find_spec("profpipe")
    if spec is None or spec.origin is None:
        return
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(spec.origin).parent)], env=env,
                   stdout=subprocess.DEVNULL, check=False)


def peer_version(peer: Path) -> str:
    pip = peer.parent / "pip"
    shown = subprocess.run([str(pip), "show", "msprof-analyze"], capture_output=True, text=True).stdout
    return next((line.split(":", 1)[1].strip() for line in shown.splitlines() if line.startswith("Version:")), "?")


def table(rows: list[dict]) -> str:
    def show(result: dict) -> str:
        if not result["ok"]:
            return result["error"].splitlines()[0][:80]
        return (f"{result['wall_s_median']} s (min {result['wall_s_min']}) / {result['tree_rss_mib']} MiB "
                f"({result['largest_rss_mib']})")

    lines = ["| input | profpipe: median wall (fastest) / peak RSS summed (largest process) | msprof-analyze: the same "
             "| speedup | memory |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['input']} | {show(r['profpipe'])} | {show(r['msprof_analyze'])} | "
                     f"{r.get('speedup', '-')}x | {r.get('memory_ratio', '-')}x |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", type=Path, default=PEER, help="the msprof-analyze command of the peer's venv")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", default=",".join(INPUTS), help="comma-separated inputs: " + ", ".join(INPUTS))
    parser.add_argument("--input", type=Path, action="append", default=[],
                        help="a folder of rank folders measured in place instead (benchmarks/scale_ascend_pt.py's)")
    parser.add_argument("--mode", default="all", help="msprof-analyze cluster -m (default all)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    parser.add_argument("--json", type=Path, help="write the results here too")
    args = parser.parse_args()
    if not args.peer.is_file():
        print(f"skipped: no msprof-analyze at {args.peer} (see the module docstring to install it)")
        return
    if not REAL.is_dir():
        print(f"skipped: no real data at {REAL}")
        return
    compile_profpipe()
    names = [str(path) for path in args.input] or [name for name in args.only.split(",") if name]
    with tempfile.TemporaryDirectory(prefix="profpipe-bench-ascend-") as scratch:
        rows = [measure_input(name, args.peer, args.mode, args.rounds, args.timeout, Path(scratch)) for name in names]
    result = {"msprof_analyze": peer_version(args.peer), "mode": args.mode, "rounds": args.rounds, "rows": rows}
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    print(f"\nmsprof-analyze {result['msprof_analyze']} cluster -m {args.mode}, {args.rounds} rounds, alternating")
    print(table(rows))


if __name__ == "__main__":
    main()
