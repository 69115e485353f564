"""A large torch_npu text export (`*_ascend_pt`) made from the real Level 1 ranks, to compare profpipe and
msprof-analyze where reading, not start-up, is the cost.

Each rank's trace_view.json and kernel_details.csv are repeated back to back, copy k shifted in time by k spans of
the original (its events' extent plus 1 ms) and its step renamed 50 + k, so the scaled rank is a longer run of the
same model: every op, kernel, HCCL task and flow repeats once per copy (flow and correlation ids moved by k * 10^6,
torch_to_npu ids, the device start in ns, by the shift). step_trace_time.csv gets one row per step and
communication.json / communication_matrix.json one `step<N>` entry per step (timestamps shifted), the files
msprof-analyze's `cluster` reads. The other files are copied unchanged (they cover the first copy only).

trace_view.json is written one copy at a time (memory: one copy of the events, whatever the size asked), so many
GB can be made; the time shift is exact (ts texts in µs with 3 decimals, shifted as integer ns).

Usage: python benchmarks/scale_ascend_pt.py [OUT_DIR] --mb 64   (default OUT_DIR: benchmarks/work/ascend_pt_<mb>mb)
Then: python benchmarks/run_ascend_today.py --input OUT_DIR --rounds 1
"""
from __future__ import annotations

import argparse
import copy as copying
import json
import shutil
from pathlib import Path

import polars as pl

HERE = Path(__file__).resolve().parent
STEP = 50  #: the real samples' one step
ID_STRIDE = 10**6  #: above every flow, correlation and connection id of the samples (at most 8384)
_TS_NS = 10**15  #: ids at least this large are device timestamps in ns (torch_to_npu)
_ID_ARGS = ("correlation_id", "connection_id")


def _ns(ts: str) -> int:
    whole, _, fraction = ts.partition(".")
    return int(whole) * 1000 + int(fraction.ljust(3, "0")[:3])


def _us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def _span_ns(events: list[dict]) -> int:
    """The extent of the timed events plus 1 ms, rounded up to a whole µs."""
    starts = [_ns(e["ts"]) for e in events if isinstance(e.get("ts"), str)]
    ends = [_ns(e["ts"]) + round(float(e.get("dur", 0)) * 1000) for e in events if isinstance(e.get("ts"), str)]
    return (max(ends) - min(starts) + 1_000_000 + 999) // 1000 * 1000


def _shifted_event(event: dict, k: int, shift_ns: int) -> dict:
    moved = copying.deepcopy(event)
    if isinstance(moved.get("ts"), str):
        moved["ts"] = _us(_ns(moved["ts"]) + shift_ns)
    if "id" in moved:
        value = int(moved["id"])
        value += shift_ns if value >= _TS_NS else k * ID_STRIDE
        moved["id"] = value if isinstance(moved["id"], int) else str(value)
        if moved.get("cat") == "HostToDevice":
            moved["name"] = f"HostToDevice{value}"
    args = moved.get("args")
    if isinstance(args, dict):
        for key in _ID_ARGS:
            if key in args:
                args[key] = int(args[key]) + k * ID_STRIDE
    if moved.get("name") == f"ProfilerStep#{STEP}":
        moved["name"] = f"ProfilerStep#{STEP + k}"
    return moved


def _trace_view(source: Path, target: Path, copies: int) -> int:
    """Write the repeated trace_view.json; the shift between copies (ns)."""
    events = json.loads(source.read_bytes())
    span = _span_ns(events)
    with open(target, "w", encoding="utf-8") as out:
        out.write("[")
        for k in range(copies):
            batch = events if k == 0 else [_shifted_event(e, k, k * span) for e in events if e.get("ph") != "M"]
            text = json.dumps(batch, ensure_ascii=False)[1:-1]
            out.write(("," if k else "") + text)
        out.write("]")
    return span


def _kernel_details(source: Path, target: Path, copies: int, span_ns: int) -> None:
    """kernel_details.csv repeated: Start Time(us) shifted exactly, Step Id 50 + k."""
    frame = pl.read_csv(source, infer_schema=False)
    start = pl.col("Start Time(us)").str.strip_chars()
    parts = start.str.split_exact(".", 1)
    whole, fraction = parts.struct.field("field_0"), parts.struct.field("field_1")
    ns = whole.cast(pl.Int64) * 1000 + fraction.fill_null("0").str.pad_end(3, "0").str.slice(0, 3).cast(pl.Int64)
    with open(target, "w", encoding="utf-8") as out:
        for k in range(copies):
            shifted = ns + k * span_ns
            batch = frame.with_columns(
                ((shifted // 1000).cast(pl.String) + "." + (shifted % 1000).cast(pl.String).str.pad_start(3, "0")
                 + "\t").alias("Start Time(us)"),
                pl.lit(str(STEP + k)).alias("Step Id"))
            out.write(batch.write_csv(include_header=k == 0))


def _step_trace(source: Path, target: Path, copies: int) -> None:
    frame = pl.read_csv(source, infer_schema=False)
    pl.concat([frame.with_columns(pl.lit(str(STEP + k)).alias("Step")) for k in range(copies)]).write_csv(target)


def _per_step_json(source: Path, target: Path, copies: int, span_ns: int) -> None:
    """communication*.json: the step<N> entry once per step, its Start Timestamp(us) shifted."""
    document = json.loads(source.read_bytes())
    first = document.pop(f"step{STEP}")

    def shift(node: object, us: float) -> object:
        if isinstance(node, dict):
            return {key: value + us if key == "Start Timestamp(us)" else shift(value, us)
                    for key, value in node.items()}
        return node

    for k in range(copies):
        document[f"step{STEP + k}"] = shift(first, k * span_ns / 1000)
    target.write_text(json.dumps(document), encoding="utf-8")


def scale_rank(source: Path, target: Path, copies: int) -> None:
    """One rank folder `source` as `target`, its timed files repeated `copies` times."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(
        "trace_view.json", "kernel_details.csv", "step_trace_time.csv", "communication*.json"))
    for path in target.rglob("*"):
        path.chmod(path.stat().st_mode | 0o200)
    out, into = source / "ASCEND_PROFILER_OUTPUT", target / "ASCEND_PROFILER_OUTPUT"
    span = _trace_view(out / "trace_view.json", into / "trace_view.json", copies)
    _kernel_details(out / "kernel_details.csv", into / "kernel_details.csv", copies, span)
    _step_trace(out / "step_trace_time.csv", into / "step_trace_time.csv", copies)
    for name in ("communication.json", "communication_matrix.json"):
        if (out / name).is_file():
            _per_step_json(out / name, into / name, copies, span)


def scale(source: Path, target: Path, size_mb: float) -> int:
    """Every rank*_ascend_pt of `source` into `target`, each trace_view.json about `size_mb` MiB; the copies."""
    ranks = sorted(source.glob("rank*_ascend_pt"))
    original = (ranks[0] / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").stat().st_size
    copies = max(1, round(size_mb * 2**20 / original))
    for rank in ranks:
        scale_rank(rank, target / rank.name, copies)
    return copies


if __name__ == "__main__":
    import run_ascend_today

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, nargs="?")
    parser.add_argument("--mb", type=float, default=64.0, help="about this many MiB of trace_view.json per rank")
    args = parser.parse_args()
    out = args.out or HERE / "work" / f"ascend_pt_{args.mb:g}mb"
    if out.exists():
        shutil.rmtree(out)
    made = scale(run_ascend_today.REAL / "text" / "level1", out, args.mb)
    print(f"{out}: {made} steps per rank")
