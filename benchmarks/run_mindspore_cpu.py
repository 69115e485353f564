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


#: Runs argv[2:] as its child, then writes the child's wall seconds and peak RSS (KiB, of it and the children it
#: waited for) to file descriptor argv[1] and exits with its status. It stands between this process and the
#: command because Linux gives a process, when it execs, the peak RSS of the memory it was made from (a vfork
#: shares this process's): a command started from here would report at least this process's own peak (what
#: it read or generated before). This small process's peak is the floor instead, and its start-up is not timed.
_LAUNCHER = """
import os, resource, sys, time
os.set_inheritable(int(sys.argv[1]), False)  # the command's own children never hold the report open
started = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
status = os.waitpid(pid, 0)[1]
wall = time.perf_counter() - started
os.write(int(sys.argv[1]), f"{wall} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}".encode())
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def measure(command: list[str], timeout_s: float) -> dict:
    """Wall seconds and peak RSS (MiB) of `command` and the children it waited for (see _LAUNCHER).

    The command is stopped when it runs past `timeout_s` or when the machine is about to run
    out of memory (less than MIN_AVAILABLE_MIB left), and the result says so.
    """
    log = tempfile.TemporaryFile()
    report, report_end = os.pipe()
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", _LAUNCHER, str(report_end), *command], stdout=subprocess.DEVNULL,
                               stderr=log, start_new_session=True, pass_fds=(report_end,))
    os.close(report_end)
    deadline = started + timeout_s
    with os.fdopen(report, "rb") as report_file:
        while True:
            pid, status, _ = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline or _available_mib() < MIN_AVAILABLE_MIB:
                reason = (f"timed out after {timeout_s:.0f} s" if time.perf_counter() > deadline else
                          f"stopped after {time.perf_counter() - started:.0f} s: machine out of memory")
                os.killpg(process.pid, 9)
                os.wait4(process.pid, 0)
                return {"ok": False, "error": reason}
            time.sleep(0.05)
        reported = report_file.read().split()  # nothing when the launcher itself was killed
    code = os.waitstatus_to_exitcode(status)
    result: dict = {"ok": code in (0, 3) and len(reported) == 2}  # 3: partial (data dropped or repaired, said)
    if len(reported) == 2:
        result.update(wall_s=round(float(reported[0]), 2), peak_rss_mib=round(int(reported[1]) / 1024, 1))
    if not result["ok"]:
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
