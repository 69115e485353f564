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

Units follow profpipe's convention: MindData's ms become integer ns (a decimal ms such as a sampling
interval of 12.3 rounded to the nearest ns, half to even, from the number as written: no float error),
its percents fractions, its MB (MiB: kB / 1024) bytes; a value whose ns or bytes would not fit int64
is dropped and reported like a negative or non-finite one.

MindData logs add to a rank: a log that cannot be read is left out with a warning that names the
file, the line and what is missing from the analysis, and the rest of the rank is still read. A
folder with MindData logs alone is a source of its own (run_info layout 'minddata').
"""
from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from ..discover import Source
from ..errors import InputError
from ..health import Warn
from .lines import (MAX_NS, MAX_WHOLE_FILE_BYTES, drop_duplicate_lines, drop_rows, load_json, read_capped,
                    read_lines, require)
from .run_info import run_info
from .units import ms_text_to_ns

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
#: The tables each log gives, by role (named in the ledger when a log is left out).
_TABLES = {
    "pipeline": "data_op,queue_sample", "cpu_utilization": "data_cpu_sample",
    "device_queue": "data_batch_time,queue_sample", "iterator": "data_batch_time,queue_sample",
    "get_next_ascend": "queue_sample,data_batch_time", "get_next_gpu": "queue_sample,data_batch_time",
    "get_next_raw": "queue_sample,data_batch_time",
}
_BATCH_TIME_KINDS = ("pipeline", "push", "batch")
_INT = r"-?\d+"
#: Largest id, count or size a MindData log may hold (larger ones are damage; the columns are int64).
_MAX_COUNT = 2**62
#: Bytes in MindData's MB: its `*_mbytes` are /proc kB / 1024 (MiB).
_MB = 2**20
#: Largest percent of the host's CPU (device scope): more is damage.
_MAX_HOST_PCT = 100
#: data_cpu_sample's CPU columns: fractions of the host's CPU time (device) or CPUs in use (process, op).
_CPU_COLUMNS = ("user_share", "sys_share", "io_share", "idle_share", "user_cpus", "sys_cpus")


#: Largest ms a MindData log may hold (its ns must stay within MAX_NS).
_MAX_MS = MAX_NS // 1_000_000


def _ms_to_ns(value: float) -> int | None:
    """A JSON number of ms as ns by the one rule of units.py (the decimal the file writes, rounded half to even)."""
    return ms_text_to_ns(repr(value))


def _mib_to_bytes(value: float) -> int:
    """A MindData MB (MiB: its `*_mbytes` are kB / 1024) as bytes, rounded half to even, without float error."""
    return round(Decimal(repr(value)) * _MB)


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
    if source.slices.get("get_next_raw"):
        yield from _guarded("get_next_raw", _get_next_raw(source, source.slices["get_next_raw"], warn), warn)


def _guarded(role: str, tables: Iterator[tuple[str, pa.Table]], warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """The tables of one log (a reader's generator, run here), all or nothing: on bad input, a ledger row
    (the log's records dropped) instead."""
    try:
        produced = list(tables)
    except InputError as exc:
        cut = "cut short" in exc.problem or "truncated" in exc.problem or "unexpected end" in exc.problem.lower()
        warn(f"{exc}; MindData analysis without it: {_LEFT_OUT[role]} left out",
             check="truncated" if cut else "malformed_record", action="dropped", path=exc.path, line=exc.line,
             offset=exc.offset, tables=_TABLES[role])
        return
    yield from produced


def _load_json(path: Path, what: str) -> dict[str, Any]:
    """The log's JSON object (NaN and Infinity are read as floats and checked where they are used)."""
    data = load_json(path, what, allow_non_finite=True)
    if not isinstance(data, dict):
        raise InputError(path, f"expected {what}, got a JSON {type(data).__name__}")
    return data


def _number_list(path: Path, values: Any, where: str, integers: bool = False) -> list[float]:
    kinds = (int,) if integers else (int, float)
    if not isinstance(values, list) or not all(isinstance(v, kinds) and not isinstance(v, bool) for v in values):
        shown = json.dumps(values)[:80]
        raise InputError(path, f"{where}: expected a list of {'integers' if integers else 'numbers'}, got {shown}")
    return values


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _bad_number(value: float, low: float = 0, high: float = _MAX_COUNT) -> str | None:
    """The ledger check a number breaks ('non_finite', 'out_of_range'), or None when it lies in low..high."""
    if not math.isfinite(value):
        return "non_finite"
    return None if low <= value <= high else "out_of_range"


def _report_values(warn: Warn, path: Path, found: dict[str, list[str]], what: str, table: str,
                   action: str = "dropped") -> None:
    """One ledger row per check for the bad values collected in `found` (check -> examples)."""
    for check, examples in found.items():
        warn(f"{path}: {len(examples)} {what} {'not finite' if check == 'non_finite' else 'out of range'}, "
             f"e.g. {examples[0]}; left out", check=check, action=action, rows=len(examples), path=path,
             example=examples[0], tables=table)


# --- pipeline_profiling_N.json -------------------------------------------------------------------

def _pipeline(source: Source, role: str, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    path = source.files[role]
    data = _load_json(path, "MindData pipeline profiling JSON with sampling_interval and op_info")
    interval, op_info = data.get("sampling_interval"), data.get("op_info")
    if not isinstance(op_info, list) or not op_info:
        raise InputError(path, "expected a non-empty op_info list")
    if interval is not None and (not isinstance(interval, (int, float)) or isinstance(interval, bool)):
        raise InputError(path, f"sampling_interval: expected a number, got {json.dumps(interval)[:40]}")
    if interval is not None and _bad_number(interval, high=_MAX_MS):
        warn(f"{path}: sampling_interval {interval} (ms) is not a finite number within 0..{_MAX_MS}; "
             "left out (null)", check=_bad_number(interval, high=_MAX_MS), action="dropped", rows=1,
             path=path, example=str(interval), tables="data_op")
        interval = None
    ops: dict[int, dict[str, Any]] = {}
    for index, op in enumerate(op_info):
        if not isinstance(op, dict) or not _is_int(op.get("op_id")) or not isinstance(op.get("op_type"), str):
            raise InputError(path, f"op_info[{index}]: expected an object with integer op_id and string op_type")
        if not -_MAX_COUNT <= op["op_id"] <= _MAX_COUNT:
            raise InputError(path, f"op_info[{index}]: op id {op['op_id']} is out of range (within ±{_MAX_COUNT})")
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
                     f"its link under op {op_id} is left out of the tree", check="conflicting_entry",
                     action="kept", rows=1, path=path, tables="data_op")
                continue
            parent[child] = (op_id, index)
    order, pipeline_parent = _pipeline_tree(path, children, queues, warn)

    op_ids = sorted(ops)
    workers = [ops[i].get("num_workers") for i in op_ids]
    for check, bad in (("out_of_range", lambda w: _is_int(w) and not 0 <= w <= _MAX_COUNT),
                       ("non_finite", lambda w: isinstance(w, float) and not math.isfinite(w)),
                       ("malformed_record", lambda w: w is not None and not _is_int(w)
                        and not (isinstance(w, float) and not math.isfinite(w)))):
        found = [json.dumps(w) for w in workers if bad(w)]
        if found:
            warn(f"{path}: {len(found)} ops with a num_workers that is not a worker count, e.g. {found[0][:40]}; "
                 "left out (null)", check=check, action="dropped", rows=len(found), path=path, example=found[0],
                 tables="data_op")
    workers = [w if _is_int(w) and 0 <= w <= _MAX_COUNT else None for w in workers]
    yield "data_op", pa.table({
        "op_id": op_ids, "op_type": [ops[i]["op_type"] for i in op_ids],
        "num_workers": pa.array([w if isinstance(w, int) else None for w in workers], pa.int64()),
        "parent_id": pa.array([parent.get(i, (None,))[0] for i in op_ids], pa.int64()),
        "child_index": pa.array([parent.get(i, (None, None))[1] for i in op_ids], pa.int32()),
        "has_queue": [queues[i] is not None for i in op_ids],
        "queue_capacity": pa.array([queues[i][0] if queues[i] else None for i in op_ids], pa.int64()),
        "sampling_interval_ns": pa.array([None if interval is None else _ms_to_ns(interval)] * len(op_ids),
                                         pa.int64()),
        "pipeline_order": pa.array([order.get(i) for i in op_ids], pa.int32()),
        "pipeline_parent_id": pa.array([pipeline_parent.get(i) for i in op_ids], pa.int64()),
    })
    samples = [(i, n, size, queues[i][0]) for i in op_ids if queues[i] is not None
               for n, size in enumerate(queues[i][1]) if size is not None]
    if samples:
        yield "queue_sample", pa.table({
            "queue": ["op_output"] * len(samples),
            "op_id": [s[0] for s in samples],
            "sample": [s[1] for s in samples],
            "size": pa.array([round(s[2]) for s in samples], pa.int64()),
            "capacity": pa.array([s[3] for s in samples], pa.int64()),
        })


def _children(path: Path, op_id: int, op: dict[str, Any], ops: dict[int, Any], warn: Warn) -> list[int]:
    """The op's children that exist (a missing one is reported and left out)."""
    raw = op.get("children") or []
    kids = _number_list(path, raw, f"op {op_id} children", integers=True)
    missing = [k for k in kids if k not in ops]
    if missing:
        warn(f"{path}: op {op_id} lists children {missing} that are not in op_info; left out of the tree",
             check="unlinked", action="kept", rows=len(missing), path=path, example=str(missing[0]),
             tables="data_op")
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
    if capacity is not None and (not _is_int(capacity) or not 0 < capacity <= _MAX_COUNT):
        warn(f"{path}: op {op_id} output queue length {json.dumps(capacity)[:40]} is not a positive integer; "
             "its queue usage is left out", check="out_of_range" if _is_int(capacity) else "malformed_record",
             action="dropped", rows=1, path=path, example=json.dumps(capacity)[:40], tables="data_op")
        capacity = None
    try:
        sizes = _number_list(path, queue.get("size") or [], f"op {op_id} output_queue.size")
    except InputError as exc:
        raw = queue.get("size")
        warn(f"{exc}; the op's queue samples are left out", check="malformed_record", action="dropped",
             rows=len(raw) if isinstance(raw, list) else None, path=path, tables="queue_sample")
        sizes = []
    found: dict[str, list[str]] = {}
    for size in sizes:
        check = _bad_number(size)
        if check:
            found.setdefault(check, []).append(str(size))
    _report_values(warn, path, found, f"op {op_id} output queue sizes", "queue_sample")
    # a sample keeps its position (the sample number) even when one before it is left out
    return capacity, [None if _bad_number(size) else size for size in sizes]


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
                     "that link is left out of the tree", check="conflicting_entry", action="kept", rows=1,
                     path=path, tables="data_op")
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
    """MindData's percents become fractions (/ 100): of the host's CPU time for the device scope
    (`*_share`), of one CPU for the process and op threads (`*_cpus`, above 1 when they keep several CPUs
    busy); its MB (MiB) become bytes."""
    path = source.files[role]
    data = _load_json(path, "MindData CPU utilization JSON with device_info, process_info and op_info")
    rows: dict[str, list[Any]] = {k: [] for k in ("scope", "op_id", "sample", *_CPU_COLUMNS, "memory_bytes",
                                                  "ts_ns")}
    stamps = _number_list(path, data.get("time_stamp") or [], "time_stamp")
    found: dict[str, list[str]] = {}
    for stamp in stamps:
        check = _bad_number(stamp, high=_MAX_MS)
        if check:
            found.setdefault(check, []).append(str(stamp))
    _report_values(warn, path, found, "time_stamp values (ms)", "data_cpu_sample")
    stamps_ns = [None if _bad_number(t, high=_MAX_MS) else _ms_to_ns(t) for t in stamps]
    bad_values: dict[str, list[str]] = {}

    def checked(values: list[float], high: float) -> list[float | None]:
        """The values within 0..high (others left out: null, collected for the ledger)."""
        kept = []
        for value in values:
            check = _bad_number(value, high=high)
            if check:
                bad_values.setdefault(check, []).append(str(value))
            kept.append(None if check else value)
        return kept

    def add(scope: str, op_id: int | None, metrics: Any, where: str, memory: tuple[str, str] | None = None) -> None:
        if not isinstance(metrics, dict):
            raise InputError(path, f"{where}: expected an object of utilization lists")
        # the device's percents are of the whole host (0-100), the process's and ops' of one CPU
        keys, suffix, high = (("user", "sys", "io", "idle"), "share", _MAX_HOST_PCT) if scope == "device" else \
            (("user", "sys"), "cpus", 1e18)
        series = {f"{key}_{suffix}": [None if v is None else v / 100 for v in
                                      checked(_number_list(path, metrics.get(f"{key}_utilization") or [],
                                                           f"{where}.{key}_utilization"), high)]
                  for key in keys}
        if memory and isinstance(data.get(memory[0]), dict):
            series["memory_bytes"] = [None if v is None else _mib_to_bytes(v) for v in
                                      checked(_number_list(path, data[memory[0]].get(memory[1]) or [],
                                                           f"{memory[0]}.{memory[1]}"), _MAX_COUNT / _MB)]
        series["ts_ns"] = stamps_ns
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
    seen: dict[int, Any] = {}
    for index, op in enumerate(op_info):
        if not isinstance(op, dict) or not _is_int(op.get("op_id")) or not -_MAX_COUNT <= op["op_id"] <= _MAX_COUNT:
            raise InputError(path, f"op_info[{index}]: expected an object with an integer op_id (within ±{_MAX_COUNT})")
        if op["op_id"] in seen:
            same = seen[op["op_id"]] == op
            warn(f"{path}: op_info[{index}]: op {op['op_id']} appears again"
                 f"{'' if same else ' with other samples'}; only its first entry is read",
                 check="duplicate_record" if same else "conflicting_entry", action="dropped", rows=1, path=path,
                 example=f"op_info[{index}]", tables="data_cpu_sample")
            continue
        seen[op["op_id"]] = op
        add("op", op["op_id"], op.get("metrics"), f"op_info[{index}] (op {op['op_id']}).metrics")
    for check, examples in bad_values.items():
        warn(f"{path}: {len(examples)} utilization or memory values "
             f"{'not finite' if check == 'non_finite' else 'negative or out of range'}, e.g. {examples[0]}; "
             "left out (null)", check=check, action="dropped", rows=len(examples), path=path, example=examples[0],
             tables="data_cpu_sample")
    yield "data_cpu_sample", pa.table({
        **rows,
        **{key: pa.array(rows[key], pa.float64()) for key in _CPU_COLUMNS},
        "memory_bytes": pa.array(rows["memory_bytes"], pa.int64()), "ts_ns": pa.array(rows["ts_ns"], pa.int64())})


# --- device_queue_profiling_N.txt / dataset_iterator_profiling_N.txt -----------------------------

def _device_trace(source: Source, role: str, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """`type extra batch value [timestamp_ms]` records. A cut last line, repeated lines and records with a
    negative or out-of-range number are left out and reported."""
    path = source.files[role]
    if path.stat().st_size == 0:
        raise InputError(path, "empty file, expected `type extra batch value [timestamp]` records")
    lines = read_lines(path, warn=warn, allow_blank=False)
    require(path, lines, pl.col("line").str.contains(rf"^\s*[01] {_INT} {_INT} {_INT}( {_INT})?\s*$"),
            "`type extra batch value [timestamp_ms]` (integers, type 0 or 1)")
    trace = "device_queue" if role == "device_queue" else "iterator"
    tables = "data_batch_time,queue_sample"
    lines = drop_duplicate_lines(lines.with_columns(pl.col("line").str.strip_chars()), warn, path,
                                 f"{trace} records", tables=tables)
    fields = lines.select("line_no", "line", pl.col("line").str.split(" ").alias("f")).select(
        "line_no", "line", *[pl.col("f").list.get(i, null_on_oob=True).cast(pl.Int64, strict=False).alias(name)
                             for i, name in enumerate(("type", "extra", "batch", "value", "ts_ms"))])
    # a time record's value is ms (as ns it must fit the int64 column), a queue record's a size
    in_range = pl.all_horizontal(pl.col(c).is_between(0, _MAX_COUNT).fill_null(False) for c in ("extra", "batch", "value")) \
        & ((pl.col("type") != 0) | (pl.col("value") <= _MAX_MS)).fill_null(False)
    ts_ok = pl.col("ts_ms").is_null() | pl.col("ts_ms").is_between(0, _MAX_MS).fill_null(False)
    ts_given = pl.col("line").str.count_matches(" ") >= 4
    fields = drop_rows(fields, ~(in_range & ts_ok & (pl.col("ts_ms").is_not_null() | ~ts_given)), warn, path,
                       "out_of_range", f"{trace} records with a negative or out-of-range number", tables=tables)
    times = fields.filter(pl.col("type") == 0)
    require(path, times, pl.col("extra").is_between(0, 2), "time record sub-type 0 (pipeline), 1 (push) or 2 (batch)",
            lines)
    if times.height:
        yield "data_batch_time", pl.DataFrame({
            "trace": [trace] * times.height,
            "batch": times["batch"], "kind": times["extra"].replace_strict(dict(enumerate(_BATCH_TIME_KINDS))),
            "dur_ns": times["value"] * 1_000_000, "ts_ns": times["ts_ms"] * 1_000_000,
        }).to_arrow()
    sizes = fields.filter(pl.col("type") == 1)
    if sizes.height:
        yield "queue_sample", pl.DataFrame({
            "queue": [trace] * sizes.height,
            "sample": pl.int_range(sizes.height, eager=True), "batch": sizes["batch"],
            "ts_ns": sizes["ts_ms"] * 1_000_000, "size": sizes["value"], "capacity": sizes["extra"],
        }).to_arrow()


# --- get_next queue: minddata_aicpu_N.txt, minddata_getnext_profiling_N.txt, DATA_PREPROCESS.AICPUMI ---

def _get_next(source: Source, role: str, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """`name start end queue_size` rows (MindSpore often loses the header line); GetNext rows only."""
    path = source.files[role]
    lines = read_lines(path, warn=warn, allow_blank=False)
    lines = lines.filter(~pl.col("line").str.starts_with("node_name"))
    require(path, lines, pl.col("line").str.contains(rf"^\s*\S+\s+{_INT}\s+{_INT}\s+{_INT}\s*$"),
            "`node_name start_time end_time queue_size` (integer times and size)")
    lines = drop_duplicate_lines(lines.with_columns(pl.col("line").str.strip_chars()), warn, path,
                                 "get_next records", tables=_TABLES[role])
    fields = lines.with_columns(pl.col("line").str.extract_groups(
        rf"^\s*(?<name>\S+)\s+(?<start>{_INT})\s+(?<end>{_INT})\s+(?<size>{_INT})").alias("g")).unnest("g")
    to_ns = 1 if role == "get_next_gpu" else 1_000
    yield from _get_next_tables(source, fields, to_ns, warn, path, _TABLES[role])


def _get_next_raw(source: Source, paths: list[Path], warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """Era A raw records `Node:<name>, queue size:<q>, Run start:<t>, Run end:<t>` (any field order),
    each ended by a NUL byte, times in µs, in slices (`.slice_0`, `.slice_1`, ...) joined in slice order as
    MindSpore joins them: a record may run on from one slice into the next. A last record without its NUL (the file
    was cut) is dropped and reported (truncated); so is a last record that lacks a field or a digit's end before
    NUL padding (a cut record padded with NUL bytes, as a block written whole leaves it: truncated) and any other
    record without its four fields (malformed_record). An empty file (nothing but NUL bytes) gives no rows and a
    warning (`kept`: MindSpore reads it as empty). A file cut exactly after a record's NUL is a well-formed shorter
    file: nothing in it or beside it tells it from a shorter recording."""
    texts = [read_capped(path, MAX_WHOLE_FILE_BYTES, "era A GetNext records") for path in paths]  # kilobytes
    text, path = b"".join(texts), paths[-1]
    last_start = len(text) - len(texts[-1])  # where the last slice begins in the joined text
    end = text.rfind(b"\x00") + 1
    if text[end:].strip(b"\x00 \t\r\n"):
        warn(f"{path}, byte {max(end - last_start, 0)}: the last record has no terminating NUL byte (the file was "
             "cut short?); dropped", check="truncated", action="dropped", rows=1, path=path,
             offset=max(end - last_start, 0), example=text[end:end + 120].decode("utf-8", "replace"),
             tables=_TABLES["get_next_raw"])
    try:
        text[:end].decode("utf-8")
    except UnicodeDecodeError as exc:
        warn(f"{path}, byte {exc.start}: bytes that are not UTF-8 in the records; read as U+FFFD",
             check="bad_encoding", action="repaired", rows=1, path=path, offset=exc.start,
             example=text[max(exc.start - 40, 0):exc.start + 40].decode("utf-8", "replace"),
             tables=_TABLES["get_next_raw"])
    records = pl.DataFrame({"line": text[:end].decode("utf-8", "replace").split("\x00")}).with_row_index(
        "line_no", offset=1).with_columns(pl.col("line_no").cast(pl.Int64)).filter(pl.col("line").str.strip_chars() != "")
    if not records.height:
        if text.strip(b"\x00") and not text[end:].strip(b"\x00 \t\r\n"):  # blank, and no cut-short record counted
            raise InputError(path, "no records (expected NUL-separated `Node:<name>, queue size:<q>, ...` records)")
        if not text.strip(b"\x00"):
            warn(f"{path}: holds no records: no get_next samples, as MindSpore reads it (the profiler leaves the "
                 "file empty when the device queue reported nothing, as in the real JOB3)", check="ambiguous",
                 action="kept", rows=0, path=path, tables=_TABLES["get_next_raw"])
        return
    field = {"name": r"(?:^|,)\s*Node:\s*([^,]*?)\s*(?:,|$)", "size": r"(?:^|,)\s*queue size:\s*(-?\d+)\s*(?:,|$)",
             "start": r"(?:^|,)\s*Run start:\s*(-?\d+)\s*(?:,|$)", "end": r"(?:^|,)\s*Run end:\s*(-?\d+)\s*(?:,|$)"}
    fields = records.with_columns(*[pl.col("line").str.extract(pattern, 1).alias(name) for name, pattern in field.items()])
    complete = pl.all_horizontal(pl.col(name).is_not_null() for name in field)
    padded = text[:end].rstrip(b"\x00 \t\r\n").count(b"\x00") < text[:end].count(b"\x00") - 1  # NULs after its own
    cut = padded & (pl.col("line_no") == fields["line_no"].max())
    fields = drop_rows(fields, ~complete & cut, warn, path, "truncated", "records cut short before the NUL padding "
                       "that ends the file (the last record lacks a field)", tables=_TABLES["get_next_raw"])
    if not fields.height:
        return
    if not fields.filter(complete).height:
        first = fields.row(0, named=True)
        raise InputError(path, f"expected `Node:<name>, queue size:<q>, Run start:<t>, Run end:<t>`, got "
                               f"{first['line'][:80]!r}", line=first["line_no"])
    fields = drop_rows(fields, ~complete, warn, path, "malformed_record", "records without their four fields "
                       "(Node, queue size, Run start, Run end)", tables=_TABLES["get_next_raw"])
    numbers = [pl.col(name).cast(pl.Int64, strict=False) for name in ("start", "end", "size")]
    fields = drop_rows(fields, ~pl.all_horizontal(n.is_between(0, _MAX_COUNT).fill_null(False) for n in numbers),
                       warn, path, "out_of_range", "records with a negative or out-of-range number",
                       tables=_TABLES["get_next_raw"], example=pl.col("line"))
    fields = fields.with_columns(numbers)
    fields = drop_duplicate_lines(fields, warn, path, "get_next records", tables=_TABLES["get_next_raw"])
    yield from _get_next_tables(source, fields, 1_000, warn, path, _TABLES["get_next_raw"])


def _get_next_tables(source: Source, fields: pl.DataFrame, to_ns: int, warn: Warn, path: Path,
                     tables: str) -> Iterator[tuple[str, pa.Table]]:
    """queue_sample and data_batch_time of the GetNext rows (times in units of `to_ns` ns). Rows with a
    negative or out-of-range number, or that end before they start, are left out and reported."""
    rows = fields.filter(pl.col("name").str.starts_with("GetNext")).with_columns(
        pl.col("start").cast(pl.Int64, strict=False), pl.col("end").cast(pl.Int64, strict=False),
        pl.col("size").cast(pl.Int64, strict=False))
    rows = drop_rows(rows, ~(pl.col("start").is_between(0, MAX_NS // to_ns) & pl.col("end").is_between(0, MAX_NS // to_ns)
                             & pl.col("size").is_between(0, _MAX_COUNT)).fill_null(False), warn, path, "out_of_range",
                     "get_next records with a negative or out-of-range number", tables=tables)
    rows = drop_rows(rows, pl.col("end") < pl.col("start"), warn, path, "negative_duration",
                     "get_next records that end before they start", tables=tables)
    if not rows.height:
        return
    yield "queue_sample", pl.DataFrame({
        "queue": ["get_next"] * rows.height, "sample": pl.int_range(rows.height, eager=True),
        "ts_ns": rows["start"] * to_ns, "size": rows["size"],
    }).to_arrow()
    yield "data_batch_time", pl.DataFrame({
        "trace": ["get_next"] * rows.height, "batch": pl.int_range(1, rows.height + 1, eager=True),
        "kind": ["get_next_wait"] * rows.height, "dur_ns": (rows["end"] - rows["start"]) * to_ns,
        "ts_ns": rows["start"] * to_ns,
    }).to_arrow()
