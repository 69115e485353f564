"""profpipe against its anchors on the same Kineto traces, side by side in one run: HolisticTraceAnalysis (HTA),
DuckDB's plain parse and a typed msgspec parse (the "typed parse limit"), with the ratios.

Inputs: the largest real traces of ../shared/realdata (`--real`, each alone); traces generated to a size
by repeating a real one (`--mb`, one rank each; whole copies of the 21.6 MiB source, so a size is rounded
up to the next multiple); runs of N rank traces of `--rank-mb` MiB each (`--ranks`, each trace's
distributedInfo.rank set to its rank, files rank-<r>.pt.trace.json). For each input these
commands run as subprocesses, each measured for wall time and peak RSS (run_mindspore_cpu.measure: the
largest of any one process of its tree, not a sum over processes that run at once), `--repeat` times (the
fastest counts):

* HTA: `TraceAnalysis(trace_dir=...)` then `get_gpu_kernel_breakdown()` with every kernel kept (parse
  plus kernel breakdown, what issue 6 compares), in a Python that has HTA (`--hta-python`); left out with
  `--skip-hta` (its columns then say "-");
* DuckDB's plain parse: DuckDB's JSON reader reading every event of the trace's event array (extracted
  beforehand, not timed) into a table, the columns profpipe reads;
* the typed parse limit: the trace file read (inflated when .gz) and the whole JSON object decoded by
  msgspec into typed Structs: each event's ph, name, cat, pid, tid, ts, dur and the 23 keys of its args that
  profpipe's Kineto reader reads (ids, stream, device, grid, block, sizes, registers, shared memory, the allocator's
  fields, the Python frame ids and the Call stack), every other field skipped unparsed (Structs with gc=False, a msgspec performance tip, and Python's cyclic garbage
  collector off). The fastest compiled typed parse of what profpipe reads, nothing else: 4.6 s/GiB here (with
  args as a dict of every key it is 1.7x slower);
* `profpipe analyse` (the whole analysis: tables, models, reports, timeline; `--workers` is passed on,
  else profpipe picks). Its stage times and per-stage peak memory (of the main process, and of the
  largest ingest worker where workers read the ranks: the machine needs about the main process's plus
  that of each worker running at once) come from the output's manifest.json, of the last of the
  `--repeat` runs.

Both parses run one process per trace file, one after the other: on a run of several ranks their wall
times are summed and their peak is the largest one's (profpipe reads the ranks in parallel workers).
Ratios: profpipe vs HTA (speed, memory), profpipe wall / DuckDB parse, profpipe wall / typed parse and
profpipe ingest stage / typed parse. With HTA, it also checks that profpipe's kernel totals per name
equal HTA's, on the kernels HTA keeps: those launched (runtime call, by correlation id) before the last
ProfilerStep ends (HTA is asked to keep the last step), and those without a correlation id (MTIA's DMA
transfers). HTA floors ns-resolution times to µs, so those traces may differ by the rounding; its
"MEMORY kernels" are profpipe's memcpy and memset. Prints one JSON line per input as it is measured,
then a Markdown table of all inputs.

msgspec is not a dependency of profpipe: `pip install -e '.[bench]'` gives it.

Usage:
    python benchmarks/run_kineto.py --hta-python /tmp/hta/bin/python --real --repeat 2
    python benchmarks/run_kineto.py --skip-hta --mb 50 500 2048
    python benchmarks/run_kineto.py --skip-hta --ranks 1 2 8 --rank-mb 50
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
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

_TYPED_PARSE = """
import gc, gzip, sys
import msgspec

gc.disable()  # else the cyclic collector walks the new objects again and again

Id = int | str | None

class Args(msgspec.Struct, gc=False, rename={"external_id": "External id", "external_id_lower": "external id",
                                             "sequence": "Sequence number", "correlation_id": "correlation id",
                                             "device_type": "Device Type", "device_id": "Device Id", "address": "Addr",
                                             "allocated": "Bytes", "total_allocated": "Total Allocated",
                                             "total_reserved": "Total Reserved", "python_id": "Python id",
                                             "python_parent_id": "Python parent id",
                                             "python_module_id": "Python module id", "call_stack": "Call stack",
                                             "registers": "registers per thread", "shared_memory": "shared memory"}):
    external_id: Id = None
    external_id_lower: Id = None
    correlation: Id = None
    correlation_id: Id = None
    stream: Id = None
    device: Id = None
    sequence: Id = None
    grid: list[int] | None = None
    block: list[int] | None = None
    bytes: Id = None
    size: Id = None
    device_type: Id = None
    device_id: Id = None
    address: Id = None
    allocated: Id = None
    total_allocated: Id = None
    total_reserved: Id = None
    python_id: Id = None
    python_parent_id: Id = None
    python_module_id: Id = None
    call_stack: str | None = None
    registers: Id = None
    shared_memory: Id = None

class Event(msgspec.Struct, gc=False):
    ph: str = ""
    name: str = ""
    cat: str = ""
    pid: Id = None
    tid: Id = None
    ts: float | None = None
    dur: float | None = None
    args: Args | None = None

class Trace(msgspec.Struct):
    traceEvents: list[Event] = []

with open(sys.argv[1], "rb") as handle:
    data = handle.read()
if sys.argv[1].endswith(".gz"):
    data = gzip.decompress(data)
print(len(msgspec.json.decode(data, type=Trace).traceEvents))
"""

#: The stages shown in the table's compact columns (all of manifest.json's are in the JSON lines).
SHOWN_STAGES = ("ingest", "models", "export")


def generated(folder: Path, size_mb: float, ranks: int) -> Path:
    """`folder` holding `ranks` generated traces rank-<r>.pt.trace.json of about `size_mb` MiB each: hard links to
    the traces of WORK/kineto_pool_<size>mb, each made once for every run that needs that rank."""
    pool = WORK / f"kineto_pool_{int(size_mb)}mb"
    folder.mkdir(parents=True, exist_ok=True)
    for rank in range(ranks):
        name = f"rank-{rank}.pt.trace.json"
        if not (pool / name).exists():
            scale(pool / name, size_mb, rank)
        if not (folder / name).exists():
            os.link(pool / name, folder / name)
    return folder


def scale(target: Path, size_mb: float, rank: int = 0) -> None:
    """A trace of about `size_mb` MiB for `rank` (its distributedInfo.rank): the real source's events repeated,
    each copy shifted past the last and its ids renumbered. Written under another name, then renamed."""
    with gzip.open(REALDATA / SCALE_SOURCE) as handle:
        trace = json.load(handle)
    events = trace.pop("traceEvents")
    trace["distributedInfo"] = {**trace.get("distributedInfo", {}), "rank": rank}
    stamps = [e["ts"] + e.get("dur", 0) for e in events if "ts" in e]
    span = max(stamps) - min(e["ts"] for e in events if "ts" in e) + 1000
    ids = ("correlation", "External id")
    id_step = 1 + max([e.get("id", 0) for e in events if isinstance(e.get("id"), int)] +
                      [e["args"][k] for e in events for k in ids if isinstance((e.get("args") or {}).get(k), int)])
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    with open(partial, "w") as out:
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
    partial.rename(target)


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


def per_file(script: str, files: list[Path], args: argparse.Namespace) -> dict:
    """`script` run on each of `files`, a process per file, one after the other: the wall times summed, the
    largest peak RSS (the first failure ends it)."""
    total = {"ok": True, "wall_s": 0.0, "peak_rss_mib": 0.0, "processes": len(files)}
    for path in files:
        one = fastest([sys.executable, "-c", script, str(path)], args)
        if not one["ok"]:
            return one
        total["wall_s"] = round(total["wall_s"] + one["wall_s"], 2)
        total["peak_rss_mib"] = max(total["peak_rss_mib"], one["peak_rss_mib"])
    return total


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator to 2 decimals; None when either is missing."""
    return round(numerator / denominator, 2) if numerator is not None and denominator else None


def wall(result: dict | None) -> float | None:
    """A measured command's wall seconds; None when it was not run or failed."""
    return result["wall_s"] if result and result["ok"] else None


def peak(result: dict | None) -> float | None:
    """A measured command's peak RSS (MiB); None when it was not run or failed."""
    return result["peak_rss_mib"] if result and result["ok"] else None


def _inflated_size(trace: Path) -> int:
    """The trace's size in bytes, inflated for .gz (the JSON the tools parse)."""
    if trace.suffix != ".gz":
        return trace.stat().st_size
    with gzip.open(trace) as handle:
        return sum(len(block) for block in iter(lambda: handle.read(1 << 24), b""))


def run_input(folder: Path, args: argparse.Namespace) -> dict:
    """Every command measured on the traces of `folder`, their ratios and profpipe's stages: one JSON-able row."""
    traces = sorted(p for p in folder.iterdir() if p.name.endswith((".json", ".json.gz")))
    bytes_in = sum(_inflated_size(p) for p in traces)
    for path in traces:
        path.read_bytes()
    arrays = [WORK / "kineto_arrays" / f"{i}.json" for i in range(len(traces))]
    for trace, array in zip(traces, arrays):
        array.parent.mkdir(parents=True, exist_ok=True)
        event_array(trace, array)
    totals = WORK / "kineto_hta_totals.json"
    out = WORK / "out_kineto"
    hta = None if args.skip_hta else fastest([args.hta_python, "-c", _HTA, str(folder), str(totals)], args)
    parse = per_file(_PARSE, arrays, args)
    typed = per_file(_TYPED_PARSE, traces, args)
    workers = [] if args.workers is None else ["--workers", str(args.workers)]
    ours = fastest([sys.executable, "-c", "from profpipe.cli import app; app()", "analyse", str(folder), "-o", str(out),
                    *workers], args)
    row: dict = {"input": str(traces[0].resolve().relative_to(REALDATA.resolve())) if traces[0].is_symlink()
                 else folder.name, "input_mib": round(bytes_in / 2**20, 1), "ranks": len(traces),
                 "hta": hta or "skipped", "duckdb_parse": parse, "typed_parse": typed, "profpipe": ours}
    if len(traces) > 1:
        row["parses"] = "a process per rank trace, one after the other: wall summed, peak RSS the largest"
    if ours["ok"]:
        manifest = json.loads((out / "manifest.json").read_text())
        row["stage_s"] = {k: round(v, 2) for k, v in manifest["timings_s"].items()}
        row["stage_peak_mib"] = {k: round(v / 2**20) for k, v in manifest["peak_rss_bytes"].items()}
        if "worker_peak_rss_bytes" in manifest:
            row["worker_peak_mib"] = {k: round(v / 2**20) for k, v in manifest["worker_peak_rss_bytes"].items()}
    row["speedup_vs_hta"] = ratio(wall(hta), wall(ours))
    row["memory_vs_hta"] = ratio(peak(ours), peak(hta))
    row["wall_vs_parse"] = ratio(wall(ours), wall(parse))
    row["wall_vs_typed_parse"] = ratio(wall(ours), wall(typed))
    row["ingest_vs_typed_parse"] = ratio(row.get("stage_s", {}).get("ingest"), wall(typed))
    if wall(ours) and wall(hta):
        row["kernel_totals"] = compare(totals, out)
    return row


def table(rows: list[dict]) -> str:
    """The rows as a Markdown table ("-": not measured, failed, or HTA skipped)."""
    def measured(result: dict | str) -> str:
        return f"{result['wall_s']:.2f} s / {result['peak_rss_mib']:,.0f} MiB" if isinstance(result, dict) and \
            result["ok"] else "-"

    def times(x: float | None) -> str:
        return "-" if x is None else f"{x}x"

    def stages(row: dict) -> tuple[str, str]:
        if "stage_s" not in row:
            return "-", "-"
        seconds = "/".join(f"{row['stage_s'].get(s, 0):.2f}" for s in SHOWN_STAGES)
        peaks = [f"{row['stage_peak_mib'].get(s, 0):,}" for s in SHOWN_STAGES]
        worker = row.get("worker_peak_mib", {}).get("ingest")
        if worker is not None:
            peaks[0] += f" (w {worker:,})"
        return seconds, "/".join(peaks)

    lines = ["| input | MiB | ranks | HTA wall / peak | DuckDB parse wall / peak | typed parse wall / peak | "
             "profpipe wall / peak | ingest/models/export s | peak MiB ingest/models/export | vs HTA speed / memory "
             "| vs DuckDB parse | vs typed parse: whole / ingest |", "|" + "---|" * 12]
    for row in rows:
        seconds, peaks = stages(row)
        lines.append(f"| {row['input']} | {row['input_mib']:,} | {row['ranks']} | {measured(row['hta'])} | "
                     f"{measured(row['duckdb_parse'])} | {measured(row['typed_parse'])} | {measured(row['profpipe'])} | "
                     f"{seconds} | {peaks} | {times(row['speedup_vs_hta'])} / {times(row['memory_vs_hta'])} | "
                     f"{times(row['wall_vs_parse'])} | {times(row['wall_vs_typed_parse'])} / "
                     f"{times(row['ingest_vs_typed_parse'])} |")
    return "\n".join(lines + [
        "", "Stage figures: profpipe's manifest.json (main process; (w N): the largest ingest worker's peak, workers "
        "run at once). Parses of several rank traces: a process per trace, one after the other, wall summed, peak "
        "the largest."])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hta-python", help="a Python with torch and HolisticTraceAnalysis (unless --skip-hta)")
    parser.add_argument("--skip-hta", action="store_true", help="leave HTA out (its columns say '-')")
    parser.add_argument("--mb", type=float, nargs="*", default=[], help="generated trace sizes (MiB), one rank each")
    parser.add_argument("--ranks", type=int, nargs="*", default=[], help="runs of this many generated rank traces")
    parser.add_argument("--rank-mb", type=float, default=50, help="size of each rank trace of --ranks (MiB)")
    parser.add_argument("--real", action="store_true", help="also the largest real traces of ../shared/realdata")
    parser.add_argument("--workers", type=int, help="passed to profpipe analyse --workers (default: profpipe's choice)")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--repeat", type=int, default=1, help="runs per command; the fastest counts")
    args = parser.parse_args()
    if not args.skip_hta and not args.hta_python:
        parser.error("--hta-python is required unless --skip-hta")
    inputs = [real_folder(REALDATA / r) for r in REAL] if args.real else []
    inputs += [generated(WORK / f"kineto_{int(size_mb)}mb", size_mb, 1) for size_mb in args.mb]
    inputs += [generated(WORK / f"kineto_{n}x{int(args.rank_mb)}mb", args.rank_mb, n) for n in args.ranks]
    rows = []
    for folder in inputs:
        rows.append(run_input(folder, args))
        print(json.dumps(rows[-1]), flush=True)
    print(table(rows))


if __name__ == "__main__":
    main()
