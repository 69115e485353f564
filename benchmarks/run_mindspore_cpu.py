"""profpipe against MindSpore's own analysis on the same scaled CPU dump, side by side in one run.

For each size: scale the real LeNet dump (scale_mindspore_cpu.py), run `profpipe analyse` on it
and MindSpore's FRAMEWORK parser + timeline writer (peer_mindspore_cpu.py, in a Python that has
MindSpore) on a copy of it, and report wall time and peak memory (max RSS of the process tree,
from wait4) of each and their ratios. The machine is shared, so only the ratios mean much.

Usage:
    python benchmarks/run_mindspore_cpu.py --mindspore-python /tmp/ms/bin/python --mb 100 300 1024
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = next((HERE.parent / "fixtures" / "mindspore_cpu" / "lenet_graph").glob("*_ascend_ms"))
WORK = HERE / "work"

sys.path.insert(0, str(HERE))
from scale_mindspore_cpu import scale  # noqa: E402


MIN_AVAILABLE_MIB = 2048


def _available_mib() -> float:
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    return float("inf")


def measure(command: list[str], timeout_s: float) -> dict:
    """Wall seconds and peak RSS (MiB) of `command` and the children it waited for.

    The command is stopped when it runs past `timeout_s` or when the machine is about to run
    out of memory (less than MIN_AVAILABLE_MIB left), and the result says so.
    """
    log = tempfile.TemporaryFile()
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    deadline = started + timeout_s
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline or _available_mib() < MIN_AVAILABLE_MIB:
            reason = (f"timed out after {timeout_s:.0f} s" if time.perf_counter() > deadline else
                      f"stopped after {time.perf_counter() - started:.0f} s: machine out of memory")
            os.killpg(process.pid, 9)
            os.wait4(process.pid, 0)
            return {"ok": False, "error": reason}
        time.sleep(0.05)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    result = {"ok": code == 0, "wall_s": round(wall, 2), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1)}
    if code != 0:
        log.seek(0)
        result["error"] = f"exit {code}: {log.read().decode(errors='replace')[-300:]}"
    return result


def run_size(size_mb: float, mindspore_python: str, timeout_s: float) -> dict:
    folder = WORK / f"cpu_{int(size_mb)}mb" / SOURCE.name
    if not (folder / "FRAMEWORK" / "cpu_op_execute_timestamp_0.txt").exists():
        scale(SOURCE, folder, size_mb)
    bytes_in = (folder / "FRAMEWORK" / "cpu_op_execute_timestamp_0.txt").stat().st_size
    out = WORK / "out"
    ours = measure([sys.executable, "-c", "from profpipe.cli import app; app()", "analyse", str(folder),
                    "-o", str(out)], timeout_s)
    executions = json.loads((out / "manifest.json").read_text())["row_counts"]["host_op"] if ours["ok"] else None
    peer_dir = WORK / "peer" / folder.name
    shutil.rmtree(peer_dir.parent, ignore_errors=True)
    shutil.copytree(folder, peer_dir)
    peer = measure([mindspore_python, str(HERE / "peer_mindspore_cpu.py"), str(peer_dir)], timeout_s)
    shutil.rmtree(peer_dir.parent, ignore_errors=True)
    row = {"timestamp_mib": round(bytes_in / 2**20, 1), "executions": executions, "profpipe": ours,
           "mindspore": peer}
    if ours["ok"] and peer["ok"]:
        row["speedup"] = round(peer["wall_s"] / ours["wall_s"], 1)
        row["memory_ratio"] = round(ours["peak_rss_mib"] / peer["peak_rss_mib"], 2)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mindspore-python", required=True, help="a Python with MindSpore installed")
    parser.add_argument("--mb", type=float, nargs="+", default=[100.0, 1024.0])
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per tool and size")
    args = parser.parse_args()
    rows = [run_size(mb, args.mindspore_python, args.timeout) for mb in args.mb]
    print(json.dumps(rows, indent=1))
    print("\n| timestamp text | executions | profpipe wall / peak | MindSpore wall / peak | speedup | memory |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        p, m = r["profpipe"], r["mindspore"]
        show = lambda x: f"{x['wall_s']} s / {x['peak_rss_mib']} MiB" if x["ok"] else x["error"]  # noqa: E731
        print(f"| {r['timestamp_mib']} MiB | {r['executions']} | {show(p)} | {show(m)} | "
              f"{r.get('speedup', '-')}x | {r.get('memory_ratio', '-')}x |")


if __name__ == "__main__":
    main()
