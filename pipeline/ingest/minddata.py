"""Stage 2, ingest: MindData (dataset pipeline) logs -> data_op, queue_sample, data_cpu_sample, data_batch_time.

The dataset engine writes these beside the other profiler files (shared/reference/
formats-ascend-minddata.md §2.7, §5); discover lists them by role:

* `pipeline_profiling_N.json` ("pipeline"): the op tree with workers and output-queue size
  samples -> data_op (with the pipeline tree MindSpore walks: breadth first from op 0, ops without
  queue metrics skipped and their children promoted) and queue_sample (queue 'op_output');
* `minddata_cpu_utilization_N.json` ("cpu_utilization"): device, process and per-op user/sys
  samples -> data_cpu_sample;
* `device_queue_profiling_N.txt` / `dataset_iterator_profiling_N.txt` ("device_queue" / "iterator"):
  `type extra batch value [timestamp_ms]` records; type 0 (pipeline / push / batch time) ->
  data_batch_time, type 1 (queue size, capacity) -> queue_sample;
* `minddata_aicpu_N.txt` (Ascend, µs), `minddata_getnext_profiling_N.txt` (GPU, ns) and era A's raw
  `DATA_PREPROCESS.dev.AICPUMI` records: the device's get_next queue -> queue_sample (queue
  'get_next') and data_batch_time (kind 'get_next_wait').

MindData logs add to a rank: a log that cannot be read is left out with a warning that names the
file, the line and what is missing from the analysis, and the rest of the rank is still read. A
folder with MindData logs alone is a source of its own (run_info layout 'minddata').
"""
from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from ..discover import Source
from ..errors import InputError
from ..health import Warn
from .lines import read_lines, require
from .run_info import run_info

#: What is left out of the analysis when a log cannot be read, by role.
_LEFT_OUT = {
    "pipeline": "the pipeline tree, op queues and bottleneck findings",
    "cpu_utilization": "the CPU rules and the single bottleneck op",
    "device_queue": "the per-batch times and the device queue",
    "iterator": "the per-batch times and the iterator queue",
    "get_next_ascend": "the get_next queue",
    "get_next_gpu": "the get_next queue",
    "get_next_raw": "the get_next queue",
}
_BATCH_TIME_KINDS = ("pipeline", "push", "batch")
_INT = r"-?\d+"


def read(source: Source, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """A folder with MindData logs only: its run_info row, then the logs."""
    device_type = ("gpu" if "get_next_gpu" in source.files else
                   "ascend" if {"get_next_ascend", "get_next_raw"} & (source.files.keys() | source.slices.keys())
                   else "cpu")
    yield "run_info", run_info(source, device_type=device_type, framework="mindspore", layout="minddata", clock="steady")
    yield from read_logs(source, warn)


def read_logs(source: Source, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """Yield the MindData tables of one rank; a log that cannot be read is reported and left out."""
    readers = [("pipeline", _pipeline), ("cpu_utilization", _cpu_utilization),
               ("device_queue", _device_trace), ("iterator", _device_trace),
               ("get_next_ascend", _get_next), ("get_next_gpu", _get_next)]
    for role, reader in readers:
        if role in source.files:
            yield from _guarded(role, reader(source, role, warn), warn)
    for path in source.slices.get("get_next_raw", []):
        yield from _guarded("get_next_raw", _get_next_raw(source, path), warn)


def _guarded(role: str, tables: Iterator[tuple[str, pa.Table]], warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """The tables of one log (a reader's generator, run here), all or nothing: on bad input, a warning instead."""
    try:
        produced = list(tables)
    except InputError as exc:
        warn(f"{exc}; MindData analysis without it: {_LEFT_OUT[role]} left out")
        return
    yield from produced


def _load_json(path: Path, what: str) -> dict[str, Any]:
    if path.stat().st_size == 0:
        raise InputError(path, f"empty file, expected {what}")
    try:
        data = json.loads(path.read_bytes())
    except UnicodeDecodeError as exc:
        raise InputError(path, "not UTF-8 text", offset=exc.start) from None
    except json.JSONDecodeError as exc:
        raise InputError(path, f"invalid JSON ({exc.msg}), expected {what}", line=exc.lineno,
                         offset=exc.pos) from None
    if not isinstance(data, dict):
        raise InputError(path, f"expected {what}, got a JSON {type(data).__name__}")
    return data


def _number_list(path: Path, values: Any, where: str, integers: bool = False) -> list[float]:
    kinds = (int,) if integers else (int, float)
    if not isinstance(values, list) or not all(isinstance(v, kinds) and not isinstance(v, bool) for v in values):
        shown = json.dumps(values)[:80]
        raise InputError(path, f"{where}: expected a list of {'integers' if integers else 'numbers'}, got {shown}")
    return values


# --- pipeline_profiling_N.json -------------------------------------------------------------------

def _pipeline(source: Source, role: str, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    path = source.files[role]
    data = _load_json(path, "MindData pipeline profiling JSON with sampling_interval and op_info")
    interval, op_info = data.get("sampling_interval"), data.get("op_info")
    if not isinstance(op_info, list) or not op_info:
        raise InputError(path, "expected a non-empty op_info list")
    if interval is not None and not isinstance(interval, (int, float)):
        raise InputError(path, f"sampling_interval: expected a number, got {json.dumps(interval)[:40]}")
    ops: dict[int, dict[str, Any]] = {}
    for index, op in enumerate(op_info):
        if not isinstance(op, dict) or not isinstance(op.get("op_id"), int) or not isinstance(op.get("op_type"), str):
            raise InputError(path, f"op_info[{index}]: expected an object with integer op_id and string op_type")
        if op["op_id"] in ops:
            raise InputError(path, f"op_info[{index}]: op id {op['op_id']} appears twice")
        ops[op["op_id"]] = op
    if 0 not in ops:
        raise InputError(path, f"no op 0 (the root of the pipeline); op ids are {sorted(ops)}")

    children = {op_id: _children(path, op_id, op, ops, warn) for op_id, op in ops.items()}
    queues = {op_id: _output_queue(path, op_id, op, warn) for op_id, op in ops.items()}
    parent = {}
    for op_id, kids in children.items():
        for index, child in enumerate(kids):
            if child in parent:
                warn(f"{path}: op {child} is a child of both op {parent[child][0]} and op {op_id}; "
                     f"its link under op {op_id} is left out of the tree")
                continue
            parent[child] = (op_id, index)
    order, pipeline_parent = _pipeline_tree(path, children, queues, warn)

    op_ids = sorted(ops)
    workers = [ops[i].get("num_workers") for i in op_ids]
    yield "data_op", pa.table({
        "rank": pa.array([source.rank] * len(op_ids), pa.int32()),
        "op_id": op_ids, "op_type": [ops[i]["op_type"] for i in op_ids],
        "num_workers": pa.array([w if isinstance(w, int) else None for w in workers], pa.int64()),
        "parent_id": pa.array([parent.get(i, (None,))[0] for i in op_ids], pa.int64()),
        "child_index": pa.array([parent.get(i, (None, None))[1] for i in op_ids], pa.int32()),
        "has_queue": [queues[i] is not None for i in op_ids],
        "queue_capacity": pa.array([queues[i][0] if queues[i] else None for i in op_ids], pa.int64()),
        "sampling_interval_ms": pa.array([interval] * len(op_ids), pa.float64()),
        "pipeline_order": pa.array([order.get(i) for i in op_ids], pa.int32()),
        "pipeline_parent_id": pa.array([pipeline_parent.get(i) for i in op_ids], pa.int64()),
    })
    sampled = [(i, queues[i]) for i in op_ids if queues[i] is not None and queues[i][1]]
    if sampled:
        yield "queue_sample", pa.table({
            "rank": pa.array([source.rank] * sum(len(q[1]) for _, q in sampled), pa.int32()),
            "queue": ["op_output"] * sum(len(q[1]) for _, q in sampled),
            "op_id": [i for i, q in sampled for _ in q[1]],
            "sample": [n for _, q in sampled for n in range(len(q[1]))],
            "size": pa.array([round(s) for _, q in sampled for s in q[1]], pa.int64()),
            "capacity": pa.array([q[0] for _, q in sampled for _ in q[1]], pa.int64()),
        })


def _children(path: Path, op_id: int, op: dict[str, Any], ops: dict[int, Any], warn: Warn) -> list[int]:
    """The op's children that exist (a missing one is reported and left out)."""
    raw = op.get("children") or []
    kids = _number_list(path, raw, f"op {op_id} children", integers=True)
    missing = [k for k in kids if k not in ops]
    if missing:
        warn(f"{path}: op {op_id} lists children {missing} that are not in op_info; left out of the tree")
    return [k for k in kids if k in ops]


def _output_queue(path: Path, op_id: int, op: dict[str, Any], warn: Warn) -> tuple[int | None, list[float]] | None:
    """(capacity, size samples) of the op's output queue; None when the op reports no queue metrics.
    Sizes that are not numbers are reported and their samples left out (the op keeps its queue)."""
    metrics = op.get("metrics")
    queue = metrics.get("output_queue") if isinstance(metrics, dict) else None
    if not queue:
        return None
    if not isinstance(queue, dict):
        raise InputError(path, f"op {op_id} metrics.output_queue: expected an object")
    capacity = queue.get("length")
    if capacity is not None and (not isinstance(capacity, int) or capacity <= 0):
        warn(f"{path}: op {op_id} output queue length {json.dumps(capacity)[:40]} is not a positive integer; "
             "its queue usage is left out")
        capacity = None
    try:
        sizes = _number_list(path, queue.get("size") or [], f"op {op_id} output_queue.size")
    except InputError as exc:
        warn(f"{exc}; the op's queue samples are left out")
        sizes = []
    return capacity, sizes


def _pipeline_tree(path: Path, children: dict[int, list[int]], queues: dict[int, Any],
                   warn: Warn) -> tuple[dict[int, int], dict[int, int]]:
    """MindSpore's walk: breadth first from op 0; an op without queue metrics is skipped and its
    children take its place (breadth first too). Returns (position, pipeline parent) per op walked.
    An op reached a second time (a cycle, or a child listed twice) is reported and not walked again."""
    order, parent, seen = {0: 0}, {}, {0}
    walk = deque([0])
    while walk:
        op_id = walk.popleft()
        pending, kept = deque(children[op_id]), []
        while pending:
            child = pending.popleft()
            if child in seen:
                warn(f"{path}: op {child} is reached again below op {op_id} (a cycle in children); "
                     "that link is left out of the tree")
                continue
            seen.add(child)
            if queues[child] is None:
                pending.extend(children[child])
            else:
                kept.append(child)
        for child in kept:
            order[child], parent[child] = len(order), op_id
            walk.append(child)
    return order, parent


# --- minddata_cpu_utilization_N.json -------------------------------------------------------------

def _cpu_utilization(source: Source, role: str, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    path = source.files[role]
    data = _load_json(path, "MindData CPU utilization JSON with device_info, process_info and op_info")
    rows: dict[str, list[Any]] = {k: [] for k in ("scope", "op_id", "sample", "user_pct", "sys_pct",
                                                  "io_pct", "idle_pct", "memory_mb", "ts_ns")}
    stamps = _number_list(path, data.get("time_stamp") or [], "time_stamp")

    def add(scope: str, op_id: int | None, metrics: Any, where: str, memory: tuple[str, str] | None = None) -> None:
        if not isinstance(metrics, dict):
            raise InputError(path, f"{where}: expected an object of utilization lists")
        series = {f"{key}_pct": _number_list(path, metrics.get(f"{key}_utilization") or [], f"{where}.{key}_utilization")
                  for key in ("user", "sys", "io", "idle")}
        if memory and isinstance(data.get(memory[0]), dict):
            series["memory_mb"] = _number_list(path, data[memory[0]].get(memory[1]) or [], f"{memory[0]}.{memory[1]}")
        series["ts_ns"] = [round(t * 1_000_000) for t in stamps]
        # the lists of one object may differ in length (MindSpore 2.10 writes 2 user, 4 idle samples)
        for n in range(max(len(v) for key, v in series.items() if key != "ts_ns")):
            rows["scope"].append(scope)
            rows["op_id"].append(op_id)
            rows["sample"].append(n)
            for key in rows.keys() - {"scope", "op_id", "sample"}:
                values = series.get(key, [])
                rows[key].append(values[n] if n < len(values) else None)

    if "device_info" in data:
        add("device", None, data["device_info"], "device_info", ("system_memory_info", "used_sys_memory_mbytes"))
    if "process_info" in data:
        add("process", None, data["process_info"], "process_info", ("process_memory_info", "rss_mbytes"))
    op_info = data.get("op_info") or []
    if not isinstance(op_info, list):
        raise InputError(path, "op_info: expected a list")
    for index, op in enumerate(op_info):
        if not isinstance(op, dict) or not isinstance(op.get("op_id"), int):
            raise InputError(path, f"op_info[{index}]: expected an object with an integer op_id")
        add("op", op["op_id"], op.get("metrics"), f"op_info[{index}] (op {op['op_id']}).metrics")
    yield "data_cpu_sample", pa.table({
        **rows, "rank": pa.array([source.rank] * len(rows["sample"]), pa.int32()),
        **{key: pa.array(rows[key], pa.float64()) for key in ("user_pct", "sys_pct", "io_pct", "idle_pct", "memory_mb")},
        "ts_ns": pa.array(rows["ts_ns"], pa.int64())})


# --- device_queue_profiling_N.txt / dataset_iterator_profiling_N.txt -----------------------------

def _device_trace(source: Source, role: str, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    path = source.files[role]
    if path.stat().st_size == 0:
        raise InputError(path, "empty file, expected `type extra batch value [timestamp]` records")
    lines = read_lines(path, newline_terminated=False)
    require(path, lines, pl.col("line").str.contains(rf"^\s*[01] {_INT} {_INT} {_INT}( {_INT})?\s*$"),
            "`type extra batch value [timestamp_ms]` (integers, type 0 or 1)")
    fields = lines.select("line_no", pl.col("line").str.strip_chars().str.split(" ").alias("f")).select(
        "line_no", *[pl.col("f").list.get(i, null_on_oob=True).cast(pl.Int64).alias(name)
                     for i, name in enumerate(("type", "extra", "batch", "value", "ts_ms"))])
    trace = "device_queue" if role == "device_queue" else "iterator"
    times = fields.filter(pl.col("type") == 0)
    require(path, times, pl.col("extra").is_between(0, 2), "time record sub-type 0 (pipeline), 1 (push) or 2 (batch)",
            lines)
    if times.height:
        yield "data_batch_time", pl.DataFrame({
            "rank": pl.Series([source.rank] * times.height, dtype=pl.Int32), "trace": [trace] * times.height,
            "batch": times["batch"], "kind": times["extra"].replace_strict(dict(enumerate(_BATCH_TIME_KINDS))),
            "ms": times["value"].cast(pl.Float64), "ts_ns": times["ts_ms"] * 1_000_000,
        }).to_arrow()
    sizes = fields.filter(pl.col("type") == 1)
    if sizes.height:
        yield "queue_sample", pl.DataFrame({
            "rank": pl.Series([source.rank] * sizes.height, dtype=pl.Int32), "queue": [trace] * sizes.height,
            "sample": pl.int_range(sizes.height, eager=True), "batch": sizes["batch"],
            "ts_ns": sizes["ts_ms"] * 1_000_000, "size": sizes["value"], "capacity": sizes["extra"],
        }).to_arrow()


# --- get_next queue: minddata_aicpu_N.txt, minddata_getnext_profiling_N.txt, DATA_PREPROCESS.AICPUMI ---

def _get_next(source: Source, role: str, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """`name start end queue_size` rows (MindSpore often loses the header line); GetNext rows only."""
    path = source.files[role]
    lines = read_lines(path, newline_terminated=False)
    lines = lines.filter(~pl.col("line").str.starts_with("node_name"))
    require(path, lines, pl.col("line").str.contains(rf"^\s*\S+\s+{_INT}\s+{_INT}\s+{_INT}\s*$"),
            "`node_name start_time end_time queue_size` (integer times and size)")
    fields = lines.select(pl.col("line").str.extract_groups(
        rf"^\s*(?<name>\S+)\s+(?<start>{_INT})\s+(?<end>{_INT})\s+(?<size>{_INT})")).unnest("line")
    yield from _get_next_tables(source, fields, 1_000_000 if role == "get_next_gpu" else 1_000,
                                1 if role == "get_next_gpu" else 1_000)


def _get_next_raw(source: Source, path: Path) -> Iterator[tuple[str, pa.Table]]:
    """Era A raw records `Node:<name>, queue size:<q>, Run start:<t>, Run end:<t>` (any field order),
    NUL separated, times in µs."""
    text = path.read_bytes()
    records = [r for r in text.split(b"\x00") if r.strip()]
    rows = []
    offset = 0
    for record in records:
        offset = text.index(record, offset)
        fields = dict(part.split(":", 1) for part in record.decode("utf-8", "replace").split(",") if ":" in part)
        fields = {k.strip(): v.strip() for k, v in fields.items()}
        try:
            rows.append((fields["Node"], int(fields["Run start"]), int(fields["Run end"]), int(fields["queue size"])))
        except (KeyError, ValueError):
            raise InputError(path, f"expected `Node:<name>, queue size:<q>, Run start:<t>, Run end:<t>`, "
                                   f"got {record[:80]!r}", offset=offset) from None
    fields = pl.DataFrame(rows, schema={"name": pl.String, "start": pl.Int64, "end": pl.Int64, "size": pl.Int64},
                          orient="row")
    yield from _get_next_tables(source, fields, 1_000, 1_000)


def _get_next_tables(source: Source, fields: pl.DataFrame, per_ms: int, to_ns: int) -> Iterator[tuple[str, pa.Table]]:
    """queue_sample and data_batch_time of the GetNext rows (times in units of 1/`per_ms` ms)."""
    rows = fields.filter(pl.col("name").str.starts_with("GetNext")).select(
        pl.col("start").cast(pl.Int64), pl.col("end").cast(pl.Int64), pl.col("size").cast(pl.Int64))
    if not rows.height:
        return
    rank = pl.Series([source.rank] * rows.height, dtype=pl.Int32)
    yield "queue_sample", pl.DataFrame({
        "rank": rank, "queue": ["get_next"] * rows.height, "sample": pl.int_range(rows.height, eager=True),
        "ts_ns": rows["start"] * to_ns, "size": rows["size"],
    }).to_arrow()
    yield "data_batch_time", pl.DataFrame({
        "rank": rank, "trace": ["get_next"] * rows.height, "batch": pl.int_range(1, rows.height + 1, eager=True),
        "kind": ["get_next_wait"] * rows.height, "ms": (rows["end"] - rows["start"]) / per_ms,
        "ts_ns": rows["start"] * to_ns,
    }).to_arrow()
