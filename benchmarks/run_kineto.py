"""profpipe against HolisticTraceAnalysis (HTA) and against DuckDB's plain parse, on the same Kineto traces, in one run.

For each input (one of the largest real traces of ../shared/realdata, or a trace generated to a size by
repeating a real one), three commands run as subprocesses, each measured for wall time and peak RSS
of its process tree:

* HTA: `TraceAnalysis(trace_dir=...)` then `get_gpu_kernel_breakdown()` with every kernel kept (parse
  plus kernel breakdown, what the issue compares), in a Python that has HTA (`--hta-python`);
* DuckDB's plain parse: DuckDB's JSON reader, the fastest parser available here, reading every event of
  the trace's event array (extracted beforehand, not timed) into a table, the columns profpipe reads;
* `profpipe analyse` (the whole analysis: tables, models, reports, timeline).

It also checks that profpipe's kernel totals per name equal HTA's, on the kernels HTA keeps: those
launched (runtime call, by correlation id) before the last ProfilerStep ends (HTA is asked to keep
the last step), and those without a correlation id (MTIA's DMA transfers). HTA floors ns-resolution times to µs, so those traces may differ by the rounding; its "MEMORY
kernels" are profpipe's memcpy and memset. One JSON line per input.

Usage: python benchmarks/run_kineto.py --hta-python /tmp/hta/bin/python [--mb 2048] [--real]
"""
from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run_ascend_raw import fastest  # noqa: E402
from run_mindspore_cpu import WORK  # noqa: E402

REALDATA = HERE.parent.parent / "shared" / "realdata"
#: The largest real Kineto traces (formats-gpu.md §G), each read alone from a folder of its own (a link to it).
REAL = ["HolisticTraceAnalysis/tests/data/mtia_trace_single_rank/mtia_rank_0.json.gz",  # 87 MB, MTIA
        "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",  # 35 MB, 2021
        "param/train/compute/python/test/data/resnet_kineto.json.gz",  # 26 MB, 2023
        "HolisticTraceAnalysis/tests/data/negative_queue_length_values_check/rank0.json.gz",  # 26 MB
        "HolisticTraceAnalysis/tests/data/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"]  # ns
SCALE_SOURCE = "HolisticTraceAnalysis/tests/data/negative_queue_length_values_check/rank0.json.gz"

_HTA = """
import json, sys
from hta.trace_analysis import TraceAnalysis
analyzer = TraceAnalysis(trace_dir=sys.argv[1], include_last_profiler_step=True)
_, kernels = analyzer.get_gpu_kernel_breakdown(visualize=False, duration_ratio=1.0, num_kernels=10**9)
totals = {f"{r}|{n}": float(s) for r, n, s in zip(kernels["rank"], kernels["name"], kernels["sum (us)"])}
json.dump(totals, open(sys.argv[2], "w"))
"""

_PARSE = """
import sys, duckdb
con = duckdb.connect()
con.execute("CREATE TABLE events AS SELECT * FROM read_json(?, format = 'array', columns = {'name': 'VARCHAR', "
            "'cat': 'VARCHAR', 'ph': 'VARCHAR', 'pid': 'VARCHAR', 'tid': 'VARCHAR', 'ts': 'VARCHAR', 'dur': 'VARCHAR', "
            "'args': 'JSON'})", [sys.argv[1]])
print(con.execute("SELECT count(*) FROM events").fetchall()[0][0])
"""


def scale(target: Path, size_mb: float) -> None:
    """A trace of about `size_mb` MiB: the real source's events repeated, each copy shifted past the last and
    its ids renumbered."""
    with gzip.open(REALDATA / SCALE_SOURCE) as handle:
        trace = json.load(handle)
    events = trace.pop("traceEvents")
    stamps = [e["ts"] + e.get("dur", 0) for e in events if "ts" in e]
    span = max(stamps) - min(e["ts"] for e in events if "ts" in e) + 1000
    ids = ("correlation", "External id")
    id_step = 1 + max([e.get("id", 0) for e in events if isinstance(e.get("id"), int)] +
                      [e["args"][k] for e in events for k in ids if isinstance((e.get("args") or {}).get(k), int)])
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "w") as out:
        out.write(json.dumps(trace)[:-1] + ', "traceEvents": [\n')
        copy, written = 0, 0
        while written < size_mb * 2**20:
            for index, event in enumerate(events):
                shifted = _shifted(event, copy * span, copy * id_step)
                line = ("" if copy == 0 and index == 0 else ",\n") + json.dumps(shifted)
                out.write(line)
                written += len(line)
            copy += 1
        out.write("\n]}\n")


def _shifted(event: dict, by_us: float, by_id: int) -> dict:
    """A copy of `event` later by `by_us`, its correlation / External / flow ids renumbered (unique, as a real trace's)."""
    copy = dict(event)
    if "ts" in copy:
        copy["ts"] = copy["ts"] + by_us
    if isinstance(copy.get("id"), int):
        copy["id"] += by_id
    args = copy.get("args")
    if isinstance(args, dict) and any(isinstance(args.get(k), int) for k in ("correlation", "External id")):
        copy["args"] = {k: v + by_id if k in ("correlation", "External id") and isinstance(v, int) else v
                        for k, v in args.items()}
    return copy


def real_folder(trace: Path) -> Path:
    """A folder under WORK holding only a link to the real `trace` (its own folder may hold other runs)."""
    folder = WORK / "kineto_real" / trace.parent.name
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / trace.name
    if not link.exists():
        link.symlink_to(trace.resolve())
    return folder


def event_array(trace: Path, target: Path) -> None:
    """The trace's event array alone, as the plain parse reads it."""
    from profpipe.ingest.trace_object import event_array as copy_array
    with tempfile.TemporaryDirectory() as scratch, copy_array(trace, Path(scratch)) as array:
        shutil.copyfile(array.path, target)


def compare(totals_path: Path, out: Path) -> dict:
    """Largest difference between HTA's kernel totals and profpipe's, per kernel name and rank (µs)."""
    import duckdb
    hta = json.loads(totals_path.read_text())
    with duckdb.connect(str(out / "profile.duckdb"), read_only=True) as con:
        con.execute("SET file_search_path = ?", [str(out)])
        ours = {f"{r}|{n}": t / 1000 for r, n, t in con.execute("""
            SELECT d.rank, d.name, sum(d.dur_ns) FROM device_exec d
            LEFT JOIN host_api a ON a.rank = d.rank AND a.correlation = d.correlation
            WHERE d.kind IN ('kernel', 'memcpy', 'memset') AND (d.correlation IS NULL OR a.start_ns <= coalesce(
                (SELECT max(start_ns + dur_ns) FROM host_op h WHERE h.rank = d.rank AND h.op_name LIKE 'ProfilerStep#%'),
                a.start_ns))
            GROUP BY ALL""").fetchall()}
    names = set(hta) | set(ours)
    differences = [abs(hta.get(k, 0) - ours.get(k, 0)) for k in names]
    return {"kernels": len(names), "only_hta": len(set(hta) - set(ours)), "only_profpipe": len(set(ours) - set(hta)),
            "max_abs_diff_us": round(max(differences, default=0), 3),
            "total_hta_us": round(sum(hta.values()), 1), "total_profpipe_us": round(sum(ours.values()), 1)}


def run_input(folder: Path, args: argparse.Namespace) -> dict:
    traces = sorted(p for p in folder.iterdir() if p.name.endswith((".json", ".json.gz")))
    bytes_in = sum(p.stat().st_size for p in traces)
    for path in traces:
        path.read_bytes()
    arrays = [WORK / "kineto_arrays" / f"{i}.json" for i in range(len(traces))]
    for trace, array in zip(traces, arrays):
        array.parent.mkdir(parents=True, exist_ok=True)
        event_array(trace, array)
    totals = WORK / "kineto_hta_totals.json"
    out = WORK / "out_kineto"
    hta = fastest([args.hta_python, "-c", _HTA, str(folder), str(totals)], args)
    parse = {"wall_s": 0.0, "peak_rss_mib": 0.0, "ok": True}
    for array in arrays:  # one process per file, as HTA and profpipe read one file per rank
        one = fastest([sys.executable, "-c", _PARSE, str(array)], args)
        parse = {"ok": parse["ok"] and one["ok"], "wall_s": round(parse["wall_s"] + one.get("wall_s", 0), 2),
                 "peak_rss_mib": max(parse["peak_rss_mib"], one.get("peak_rss_mib", 0))}
    ours = fastest([sys.executable, "-c", "from profpipe.cli import app; app()", "analyse", str(folder), "-o", str(out)],
                   args)
    row = {"input": str(traces[0].resolve().relative_to(REALDATA.resolve())) if traces[0].is_symlink() else folder.name,
           "input_mib": round(bytes_in / 2**20, 1), "hta": hta, "duckdb_parse": parse, "profpipe": ours}
    if ours["ok"] and hta["ok"]:
        row["speedup_vs_hta"] = round(hta["wall_s"] / ours["wall_s"], 2)
        row["memory_vs_hta"] = round(ours["peak_rss_mib"] / hta["peak_rss_mib"], 2)
        row["kernel_totals"] = compare(totals, out)
    if ours["ok"] and parse["ok"]:
        row["wall_vs_parse"] = round(ours["wall_s"] / parse["wall_s"], 2)
    if ours["ok"]:
        row["stage_s"] = {k: round(v, 2) for k, v in json.loads((out / "manifest.json").read_text())["timings_s"].items()}
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hta-python", required=True, help="a Python with torch and HolisticTraceAnalysis")
    parser.add_argument("--mb", type=float, nargs="*", default=[], help="generated trace sizes (MiB)")
    parser.add_argument("--real", action="store_true", help="also the largest real traces of ../shared/realdata")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--repeat", type=int, default=1, help="runs per command; the fastest counts")
    args = parser.parse_args()
    inputs = [real_folder(REALDATA / r) for r in REAL] if args.real else []
    for size_mb in args.mb:
        folder = WORK / f"kineto_{int(size_mb)}mb"
        if not (folder / "rank-0.pt.trace.json").exists():
            scale(folder / "rank-0.pt.trace.json", size_mb)
        inputs.append(folder)
    for folder in inputs:
        print(json.dumps(run_input(folder, args)), flush=True)


if __name__ == "__main__":
    main()
