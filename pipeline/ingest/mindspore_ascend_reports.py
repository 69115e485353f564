"""Stage 2, ingest: MindSpore 1.x Ascend result files that later analyses read back -> normalized tables.

A MindSpore 1.x profiler folder keeps, beside its reports, what the cluster and HCCL analyses of
MindSpore/MindInsight start from (shared/reference/formats-ascend-minddata.md §2.8, §4):

* `step_trace_raw_<rank>_detail_time.csv` -> step_point: per step its start, FP, BP and end and
  each communication span (columns `<name>_start_point` / `<name>_end_point`), in 10 ns ticks;
* `hccl_info/<op>_<n>_..._dev<rank>/iter<N>.trace` -> comm_task: one row per HCCL task of the
  N-th execution of the op (Chrome-trace JSON, µs on the device counter: ticks / 100).

Times become ns on the device-counter clock at MindSpore's fixed 100 MHz, so the HCCL tasks and
the step trace share one clock.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pyarrow as pa

from ..discover import HCCL_TRACE, Source
from ..errors import InputError
from .binary_records import Warn

TICK_HZ = 100_000_000
_NS_PER_TICK = 10
_NO_RANK = 4294967295
_COMM_COLUMN = re.compile(r"stream_(\d+)_(?:parallel_\d+|\d+_(.+))")


def read(source: Source, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """Yield the normalized tables of one rank's MindSpore Ascend result folder."""
    yield "run_info", pa.table({
        "rank": [source.rank], "device_id": [source.device_id], "device_type": ["ascend"],
        "framework": ["mindspore"], "layout": ["mindspore_profiler_dir"], "source_dir": [str(source.directory)],
        "clock": ["device_syscnt"], "tick_hz": [TICK_HZ],
    })
    if "step_trace_csv" in source.files:
        yield "step_point", _step_points(source.files["step_trace_csv"]).with_columns(
            pl.lit(source.rank, pl.Int32).alias("rank")).to_arrow()
    traces = source.slices.get("hccl_trace", [])
    if traces:
        tasks = pl.concat([_hccl_tasks(path) for path in traces], how="vertical_relaxed")
        yield "comm_task", tasks.with_columns(pl.lit(source.rank, pl.Int32).alias("rank")).to_arrow()


def _step_points(path: Path) -> pl.DataFrame:
    """step_point rows of a step-trace CSV (the '-' average row is MindSpore's, not a step)."""
    try:
        table = pl.read_csv(path, infer_schema=False)
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError) as exc:
        raise InputError(path, f"not a readable CSV ({exc})") from None
    base = ["step_num", "start_point", "end_point", "fp_point"]
    missing = [c for c in base if c not in table.columns]
    if missing:
        raise InputError(path, f"not a MindSpore step-trace CSV (missing columns {missing})", line=1)
    comm = [c.removesuffix("_start_point") for c in table.columns
            if c.endswith("_start_point") and c != "start_point" and f"{c[:-12]}_end_point" in table.columns]
    table = table.with_row_index("line", offset=2).filter(pl.col("step_num") != "-")
    numbers = [c for c in table.columns if c != "line"]
    parsed = table.with_columns(pl.col(numbers).cast(pl.Int64, strict=False))
    bad = parsed.filter(pl.any_horizontal(pl.col(numbers).is_null()))
    if bad.height:
        raise InputError(path, "expected integer ticks in every column", line=bad["line"][0])
    points = [("step_start", "start_point", None, None), ("fp_start", "fp_point", None, None)]
    if "bp_point" in parsed.columns:
        points.append(("bp_end", "bp_point", None, None))
    for name in comm:
        match = _COMM_COLUMN.fullmatch(name)
        stream = int(match.group(1)) if match else None
        label = match.group(2) if match and match.group(2) != "parallel" else None
        points += [("comm_start", f"{name}_start_point", stream, label), ("comm_end", f"{name}_end_point", stream, label)]
    points.append(("step_end", "end_point", None, None))
    frames = [parsed.select(
        pl.col("step_num").alias("step"), pl.lit(kind).alias("kind"), pl.lit(label, pl.String).alias("op_name"),
        pl.lit(seq - 1, pl.Int32).alias("seq"), pl.lit(stream, pl.Int64).alias("stream_id"),
        (pl.col(column) * _NS_PER_TICK).alias("ts_ns"))
        for seq, (kind, column, stream, label) in enumerate(points)]
    rows = pl.concat(frames)
    # a span a step lacks is written as zeros
    return rows.filter(~(pl.col("kind").str.starts_with("comm") & (pl.col("ts_ns") == 0))).sort("step", "seq")


def _hccl_tasks(path: Path) -> pl.DataFrame:
    """comm_task rows of one `iter<N>.trace` file."""
    op_dir = path.parent.name
    op_name = re.sub(r"_dev\d+$", "", op_dir)
    parts = op_name.split("_")
    try:
        trace = json.loads(path.read_bytes())
        events = trace["traceEvents"]
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(path, f"expected HCCL trace JSON with traceEvents ({exc})") from None
    columns: dict[str, list] = {name: [] for name in (
        "plane", "stream_id", "task_id", "task_type", "src_rank", "dst_rank", "transport", "bytes", "start_ns", "dur_ns")}
    for index, event in enumerate(events):
        try:
            args = event.get("args") or {}
            columns["plane"].append(int(event["tid"]))
            columns["stream_id"].append(_optional_int(args.get("stream id")))
            columns["task_id"].append(_optional_int(args.get("task id")))
            columns["task_type"].append(str(event["name"]))
            columns["src_rank"].append(_rank(args.get("src rank")))
            columns["dst_rank"].append(_rank(args.get("dst rank")))
            columns["transport"].append(args.get("transport type"))
            columns["bytes"].append(_size(args.get("size")))
            columns["start_ns"].append(round(float(event["ts"]) * 1000))
            columns["dur_ns"].append(round(float(event["dur"]) * 1000))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InputError(path, f"event {index}: expected an HCCL task with tid, ts, dur, name and args ({exc!r})") from None
    frame = pl.DataFrame(columns, schema={
        "plane": pl.Int64, "stream_id": pl.Int64, "task_id": pl.Int64, "task_type": pl.String, "src_rank": pl.Int64,
        "dst_rank": pl.Int64, "transport": pl.String, "bytes": pl.Int64, "start_ns": pl.Int64, "dur_ns": pl.Int64})
    return frame.with_columns(
        pl.lit(op_name).alias("op_name"), pl.lit(parts[0]).alias("op_type"),
        pl.lit(int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None, pl.Int64).alias("op_ordinal"),
        pl.lit(int(HCCL_TRACE.fullmatch(path.name).group(1)), pl.Int64).alias("iteration"),
        pl.int_range(pl.len(), dtype=pl.Int32).alias("seq"))


def _optional_int(value: object) -> int | None:
    return None if value is None or value == "NULL" else int(value)


def _rank(value: object) -> int | None:
    rank = _optional_int(value)
    return None if rank == _NO_RANK else rank


def _size(value: object) -> int | None:
    """HCCL sizes: a hex string ("0x2cfe300"), a decimal string or number, or null."""
    if value is None or value == "NULL":
        return None
    return int(value, 0) if isinstance(value, str) else int(value)
