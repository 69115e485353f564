"""Stage 2, ingest: raw Ascend device dumps (MindSpore 0.5-2.0, eras A, B and C) -> normalized tables.

One source is one device's job folder as discover found it: a `JOB*` folder (era A/B, files
in it or in its `data/`) or a `PROF_*/device_N` folder (era C). The era follows from what is
on disk (shared/reference/formats-ascend-minddata.md §0-§3):

* HWTS task log (`hwts.log.data.45...` / `hwts.data...`, 64-byte records) -> device_exec: each
  start record immediately followed by the end record of the same op is one execution, as
  MindSpore pairs them; task ids are named through task_desc (era A: the bare task id when it
  is >= 25000, else stream and task; era C: always stream and task);
* step trace (`training_trace...` 20-byte records, or `ts_track...` 40-byte records with
  rptType 10) -> step_point: FP start, BP end, iteration end and communication points, a step
  ending at each iteration-end tag, starting where the previous one ended (the first at its FP);
* framework files -> task_desc, op_desc and the op names of trace points (ascend_framework);
* AI CPU files -> aicpu_exec (ascend_aicpu);
* era C: the msproftx (MSTX) markers of the PROF folder's `host/data` (a folder msprof never exported) ->
  host_op (side Host, category 'marker'; msproftx_raw), moved from the host's CLOCK_MONOTONIC_RAW onto the
  device counter with the device folder's host_start / dev_start pair (left out, and counted, without it);
  with --step-range-name NAME (Source.step_range) the ranges named NAME replace the step trace's steps.

Device times are counter ticks; they become ns with the counter frequency (`info.json`
hwts_frequency, else 100 MHz as MindSpore 1.x assumes), on the device-counter clock.
"""
from __future__ import annotations

import bisect
import json
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from ..discover import Source
from ..errors import InputError
from . import ascend_aicpu, ascend_framework, msprof_tx, msproftx_raw
from ..health import Warn
from ..clocks import ascend_raw_clock, device_minus_host_ns
from .binary_records import first_of_each, is_blank, iter_record_chunks, locate_offset, read_columns, report_blank
from .lines import MAX_JSON_BYTES, read_capped
from .run_info import run_info

DEFAULT_TICK_HZ = 100_000_000
HWTS_DTYPE = np.dtype([("head", "u1"), ("core", "u1"), ("unused", "<u2"), ("block_id", "<u2"),
                       ("task_id", "<u2"), ("syscnt", "<u8"), ("stream_id", "<u4"), ("reserved", "V44")])
TRAINING_TRACE_DTYPE = np.dtype([("tag", "<u8"), ("task_id", "<u2"), ("stream_id", "<u2"), ("syscnt", "<u8")])
TS_TRACK_DTYPE = np.dtype([("mode", "u1"), ("rpt_type", "u1"), ("buf_size", "<u2"), ("reserved", "<u4"),
                           ("syscnt", "<u8"), ("index_id", "<u8"), ("model_id", "<u8"), ("stream_id", "<u2"),
                           ("task_id", "<u2"), ("tag", "<u2"), ("reserved2", "<u2")])
_TS_TRACK_STEP = 10
#: The ts_track report types msprof knows (3 timeline, 10 step trace, 11 TS memcpy, 12 task type, 13/14 task
#: flip, 15 block dim, 61 model with queue); MindSpore reads only type 10, the others are left out by design.
_TS_TRACK_TYPES = frozenset({3, 10, 11, 12, 13, 14, 15, 61})
#: Era A joins by the bare task id from this id on, by (stream, task) below it.
_BARE_TASK_ID_FROM = 25000
#: The tables whose times come from device counter ticks.
_TIMED_TABLES = "device_exec,step_point"

#: Point kinds as small codes while decoding (0: a record that means nothing), named at the end.
_POINT_KINDS = {1: "fp_start", 2: "bp_end", 3: "step_end", 4: "comm_start", 5: "comm_end"}
_FP, _BP, _END, _COMM_START, _COMM_END = _POINT_KINDS

#: Tag meaning per step-trace format: FP start, BP end, iteration end(s), communication range.
_ERA_AB_TAGS = {"fp": 1, "bp": 2}
_ERA_C_TAGS = {"fp": 2, "bp": 3, "end": 4, "comm_low": 10000, "comm_high": 20000}


def read(source: Source, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """Yield the normalized tables of one raw Ascend device folder."""
    slices = source.slices
    for role, paths in slices.items():
        for path in paths:
            if path.stat().st_size == 0 and role not in ("aicpu", "host_start"):  # host_start.log is not read
                raise InputError(path, "empty file (was the collection cut short?)")
    trace = (read_columns(slices["training_trace"], TRAINING_TRACE_DTYPE, ["tag", "task_id", "stream_id", "syscnt"],
                          warn, tables="step_point") if "training_trace" in slices else None)
    era = _era(source, trace)
    tick_hz = _tick_hz(source, era, warn)
    yield "run_info", _run_info(source, era, tick_hz)

    tasks, ops, point_names = _framework(source, era, warn)
    if tasks.height:
        yield "task_desc", tasks.to_arrow()
    if ops.height:
        yield "op_desc", ops.to_arrow()

    hwts_role = "hwts_c" if era == "c" else "hwts"
    op_tasks: list[pa.Table] = []  # (op_name, start_ns) of the tasks: --step-range-name's FP points
    if hwts_role in slices:
        if not tasks.height:
            desc_role = "task_desc_bin" if era == "c" else "task_desc_text"
            if desc_role in slices:
                raise InputError(slices[desc_role][0], "task_desc holds no whole record: no task of the HWTS log "
                                                       "can be named (was the file cut short?)")
            raise InputError(slices[hwts_role][0], "HWTS task log without task_desc: no task can be named "
                                                   "(Framework task_desc_info files are missing)")
        for frame in _task_executions(slices[hwts_role], tasks, era, tick_hz, warn):
            if source.step_range is not None:
                op_tasks.append(msprof_tx.op_tasks(frame))
            yield "device_exec", frame.to_arrow()

    if hwts_role not in slices and tasks.height:
        warn(f"{source.directory}: task_desc registers {tasks.height} tasks but there is no HWTS task log: no device "
             "executions", check="missing_file", action="kept", path=source.directory, tables="device_exec")
    if hwts_role in slices and "training_trace" not in slices and "ts_track" not in slices:
        warn(f"{source.directory}: an HWTS task log but no step trace (training_trace / ts_track): no steps",
             check="missing_file", action="kept", path=source.directory, tables="step_point")
    skip_first = bool(tasks.height) and tasks["op_name"].str.starts_with("Default/InitDataSetQueue").any()
    steps = None
    if trace is not None:
        points = _training_trace_points(slices["training_trace"], trace, point_names, tick_hz, warn)
        steps = _finish_steps(points, skip_first).to_arrow()
    elif "ts_track" in slices:
        points = _ts_track_points(slices["ts_track"], tasks, point_names, tick_hz, warn)
        steps = _finish_steps(points, skip_first).to_arrow()
    # era C: the msproftx markers of the PROF folder's host, moved from the host's clock onto the device counter's
    markers = msproftx_raw.read_prof(source.directory, device_minus_host_ns(slices, tick_hz), warn) if era == "c" else None
    if markers is not None:
        yield "host_op", markers.to_arrow()
    if source.step_range is not None:
        steps = msprof_tx.steps_of_markers(markers.to_arrow() if markers is not None else None,
                                           pa.concat_tables(op_tasks) if op_tasks else None, steps,
                                           source.step_range, warn, source.directory)
    if steps is not None:
        yield "step_point", steps

    empty = [p for p in slices.get("aicpu", []) if not p.stat().st_size]
    if empty:
        warn(f"{empty[0]}: {len(empty)} AI CPU files are empty: no AI CPU kernels from them, as MindSpore reads them "
             "(the profiler leaves the file empty when no AI CPU kernel ran; nothing tells that from a file cut to "
             "nothing)", check="ambiguous", action="kept", rows=0, path=empty[0], tables="aicpu_exec")
    if "aicpu" in slices and len(empty) < len(slices["aicpu"]):
        paths = [p for p in slices["aicpu"] if p.stat().st_size]
        if ascend_aicpu.is_binary(paths):
            names = tasks.select("stream_id", "task_id", "op_name").unique(["stream_id", "task_id"], keep="last")
            aicpu = ascend_aicpu.read_aicpu_binary(paths, names, warn)
        else:
            aicpu = ascend_aicpu.read_aicpu_text(paths, warn)
        # the AI CPU writes whole µs; ns exactly (ascend_aicpu dropped those beyond units.MAX_US)
        aicpu = aicpu.with_row_index("seq").with_columns(pl.col("seq").cast(pl.Int64)).select(
            "seq", "op_name", "op_type", "stream_id", "task_id",
            *((pl.col(f"{name}_us") * 1000).alias(f"{name}_ns") for name in ("run_start", "run_end", "total", "dispatch")))
        yield "aicpu_exec", aicpu.to_arrow()


def _era(source: Source, trace: dict[str, np.ndarray] | None) -> str:
    """a, b or c, from the files present (and, for a/b, the iteration-end tag of the trace)."""
    slices = source.slices
    if {"hwts_c", "ts_track", "task_desc_bin"} & slices.keys():
        return "c"
    underscored = any("vm_" in p.name for role in ("task_desc_text", "point_text", "graph_desc_text")
                      for p in slices.get(role, []))
    if underscored:
        return "b"
    if trace is not None and _end_tag(trace["tag"]) == 65535:
        return "b"
    return "a"


def _end_tag(tag: np.ndarray) -> int:
    """Era A/B iteration-end tag: 65535 (era B) when it is at least half as frequent as 255, else 255.
    (A lone 65535 in an era-A trace is a damaged record, not a change of format.)"""
    wide, narrow = int(np.count_nonzero(tag == 65535)), int(np.count_nonzero(tag == 255))
    return 65535 if wide and 2 * wide >= narrow else 255


def _tick_hz(source: Source, era: str, warn: Warn) -> int:
    """Device counter frequency: info.json's hwts_frequency (MHz) when present, else 100 MHz.

    A frequency that is not a finite number from 1 kHz to 100 GHz (zero, negative, NaN: a damaged
    info.json) cannot convert ticks; the documented fallback is MindSpore 1.x's 100 MHz, reported as
    an `out_of_range` row with action `repaired` (every time of the source depends on it)."""
    paths = source.slices.get("device_info")
    if not paths:
        if era == "c":
            warn(f"{source.directory}: no info.json: device ticks are converted at 100 MHz, as MindSpore 1.x "
                 "assumes (times are wrong if the device counter runs at another frequency)",
                 check="missing_file", action="kept", path=source.directory, tables=_TIMED_TABLES)
        return DEFAULT_TICK_HZ
    try:
        info = json.loads(read_capped(paths[0], MAX_JSON_BYTES, "device info JSON").decode("utf-8"))
        value = info["DeviceInfo"][0]["hwts_frequency"]
        if isinstance(value, bool):
            raise TypeError(f"hwts_frequency is {value}, not a number")
        mhz = float(value)
    except (ValueError, KeyError, IndexError, TypeError, RecursionError) as exc:
        raise InputError(paths[0], f"expected device info JSON with DeviceInfo[0].hwts_frequency "
                                   f"({type(exc).__name__}: {str(exc)[:100]})") from None
    if not math.isfinite(mhz) or not 0.001 <= mhz <= 100_000:
        warn(f"{paths[0]}: hwts_frequency {mhz!r} MHz is not a usable counter frequency (expected a finite "
             f"number from 0.001 to 100000); times use MindSpore 1.x's 100 MHz instead",
             check="non_finite" if not math.isfinite(mhz) else "out_of_range", action="repaired", rows=1,
             path=paths[0], example=f"hwts_frequency={mhz!r}", tables=_TIMED_TABLES)
        return DEFAULT_TICK_HZ
    hz = int(round(mhz * 1_000_000))
    if hz != DEFAULT_TICK_HZ:
        warn(f"{paths[0]}: hwts_frequency is {mhz:g} MHz; times use it, while MindSpore 1.x assumed 100 MHz "
             f"(its reports of this run are scaled by 100/{mhz:g})", check="clock", action="kept", path=paths[0],
             example=f"hwts_frequency={mhz:g}")
    return hz


def _run_info(source: Source, era: str, tick_hz: int) -> pa.Table:
    return run_info(source, device_type="ascend", framework="mindspore", layout=f"ascend_era_{era}",
                    tick_hz=tick_hz, **ascend_raw_clock(source.slices, tick_hz))


def _framework(source: Source, era: str, warn: Warn) -> tuple[pl.DataFrame, pl.DataFrame, dict[int, str]]:
    """(task_desc rows, op_desc rows, {trace tag: op name})."""
    slices = source.slices
    if era == "c":
        hashes = ascend_framework.read_hash_dic(slices["hash_dic"], warn) if "hash_dic" in slices else {}
        tasks = (ascend_framework.read_task_desc_binary(slices["task_desc_bin"], hashes, warn)
                 if "task_desc_bin" in slices else _empty(ascend_framework.TASK_DESC_SCHEMA))
        _report_task_conflicts(tasks, era, slices.get("task_desc_bin"), warn)
        ops = _era_c_ops(tasks, slices, warn)
        point_names: dict[int, str] = {}
        if "step_info_bin" in slices:
            steps = ascend_framework.read_step_info_binary(slices["step_info_bin"], warn)
            named = steps.join(tasks.select("stream_id", "task_id", "op_name").unique(["stream_id", "task_id"],
                                                                                     keep="last"),
                               on=["stream_id", "task_id"], how="left")
            point_names = _step_info_names(named, slices["step_info_bin"], warn)
        return tasks, ops, point_names
    tasks = (ascend_framework.read_task_desc_text(slices["task_desc_text"], warn)
             if "task_desc_text" in slices else _empty(ascend_framework.TASK_DESC_SCHEMA))
    _report_task_conflicts(tasks, era, slices.get("task_desc_text"), warn)
    backend = "vm" if any(".vm" in p.name for p in slices.get("graph_desc_text", [])) else "ge"
    ops = (ascend_framework.read_graph_desc_text(slices["graph_desc_text"], backend, warn)
           if "graph_desc_text" in slices else _empty(ascend_framework.OP_DESC_SCHEMA))
    points = ascend_framework.read_points_text(slices["point_text"], warn) if "point_text" in slices else {}
    return tasks, ops, points


def _report_task_conflicts(tasks: pl.DataFrame, era: str, paths: list[Path] | None, warn: Warn) -> None:
    """task_desc registering one task (its join key) for different ops: the last registration names
    the task's executions, as in MindSpore; the overridden ones are counted."""
    if tasks.height < 2 or not paths:
        return
    keys = _task_keys(tasks["task_id"].to_numpy(), tasks["stream_id"].to_numpy(), era)
    keyed = tasks.select("seq", "op_name", "task_id", "stream_id").with_columns(pl.Series("key", keys))
    groups = keyed.group_by("key", maintain_order=True).agg(
        pl.col("op_name").n_unique().alias("names"), pl.len().alias("n"), pl.col("op_name"), pl.col("task_id").first(),
        pl.col("stream_id").first())
    conflicting = groups.filter(pl.col("names") > 1)
    if not conflicting.height:
        return
    overridden = int((conflicting["n"] - 1).sum())
    first = conflicting.row(0, named=True)
    example = f"task {first['task_id']}, stream {first['stream_id']}: {first['op_name'][:3]}"
    warn(f"{paths[0]}: {conflicting.height} tasks are registered for different ops ({overridden} registrations "
         f"overridden); the last registration names the executions, as MindSpore does (first: {example}, kept "
         f"{first['op_name'][-1]!r})", check="conflicting_entry", action="dropped", rows=overridden, path=paths[0],
         example=example, tables="device_exec")


def _step_info_names(named: pl.DataFrame, paths: list[Path], warn: Warn) -> dict[int, str]:
    """{tag: op name} from step_info rows (tag, op_name, offset); a tag naming different ops keeps the last."""
    named = named.filter(pl.col("op_name").is_not_null())
    groups = named.group_by("tag", maintain_order=True).agg(pl.col("op_name").n_unique().alias("names"),
                                                            pl.col("op_name"), pl.col("offset").first())
    conflicting = groups.filter(pl.col("names") > 1)
    if conflicting.height:
        first = conflicting.row(0, named=True)
        path, offset = locate_offset(paths, int(first["offset"]))
        overridden = int(conflicting["op_name"].list.len().sum() - conflicting.height)
        warn(f"{path}: byte offset {offset}: {conflicting.height} step_info tags name different ops ({overridden} "
             f"overridden); the last is kept (first: tag {first['tag']}: {first['op_name'][:3]}, kept "
             f"{first['op_name'][-1]!r})", check="conflicting_entry", action="dropped", rows=overridden, path=path,
             offset=offset, example=f"tag {first['tag']} -> {first['op_name'][-1]}", tables="step_point")
    return {tag: name for tag, name in named.select("tag", "op_name").iter_rows()}


def _era_c_ops(tasks: pl.DataFrame, slices: dict[str, list[Path]], warn: Warn) -> pl.DataFrame:
    """op_desc for era C: op type from task_desc, tensors from tensor_data_info, one row per op."""
    ops = tasks.filter(pl.col("op_type").is_not_null()).select("stream_id", "task_id", "op_name", "op_type")
    if "tensor_data_bin" in slices:
        tensors = ascend_framework.read_tensor_data_binary(slices["tensor_data_bin"], warn)
        ops = ops.join(tensors.unique(["stream_id", "task_id"], keep="first"), on=["stream_id", "task_id"],
                       how="left")
    else:
        ops = ops.with_columns(pl.lit(None, pl.String).alias("tensors_json"))
    ops = ops.unique("op_name", keep="first", maintain_order=True)
    return ops.with_row_index("seq").select([pl.col(n).cast(t) for n, t in ascend_framework.OP_DESC_SCHEMA.items()])


def _task_keys(task_id: np.ndarray, stream_id: np.ndarray, era: str) -> np.ndarray:
    """The join key of a task: era A/B bare task id when >= 25000, else (stream, task)."""
    combined = (stream_id.astype(np.int64) << 32) | task_id.astype(np.int64) | (1 << 62)
    if era == "c":
        return combined
    return np.where(task_id >= _BARE_TASK_ID_FROM, task_id.astype(np.int64), combined)


class _Tally:
    """Records one check left out across chunks: how many, and the stream offset and text of the first."""

    def __init__(self) -> None:
        self.count = 0
        self.first: tuple[int, str] | None = None

    def add(self, count: int, offset: int, example: str) -> None:
        if count and self.first is None:
            self.first = (offset, example)
        self.count += count

    def report(self, warn: Warn, paths: list[Path], message: str, check: str, tables: str,
               action: str = "dropped") -> None:
        if not self.count:
            return
        path, offset = locate_offset(paths, self.first[0])
        warn(f"{path}: byte offset {offset}: {message.format(n=self.count)} (first: {self.first[1]})", check=check,
             action=action, rows=self.count, path=path, offset=offset, example=self.first[1], tables=tables)


def _task_executions(paths: list[Path], tasks: pl.DataFrame, era: str, tick_hz: int,
                     warn: Warn) -> Iterator[pl.DataFrame]:
    """Pair HWTS start/end records of the same op into executions (device_exec rows), chunk by chunk.

    Only start/end records of named tasks take part (MindSpore drops the rest before pairing),
    so the last such record of a chunk is carried into the next one, where it may start a pair.
    Every record left out is counted in the ledger: unnamed tasks, unknown log types, records
    that form no pair, pairs with a counter beyond int64 ns or ending before they start, and
    exact duplicates of an execution (same op, start and end) within a chunk.
    """
    # task_desc: the last registration of a key wins, as in MindSpore's dict
    desc = tasks.select("task_id", "stream_id", "op_name")
    desc_task_ids = desc["task_id"].to_numpy()
    desc_keys = _task_keys(desc_task_ids, desc["stream_id"].to_numpy(), era)
    order = np.argsort(desc_keys, kind="stable")
    keys_sorted = desc_keys[order]
    last_of_key = np.r_[keys_sorted[1:] != keys_sorted[:-1], True]
    unique_keys, unique_rows = keys_sorted[last_of_key], order[last_of_key]
    names = pl.Series("op_name", desc["op_name"].to_numpy()[unique_rows], dtype=pl.String)
    # HWTS task ids are 16-bit: a lookup table drops records no task_desc row can name, cheaply
    named_task_id = np.zeros(1 << 16, dtype=bool)
    named_task_id[desc_task_ids[(desc_task_ids >= 0) & (desc_task_ids < 1 << 16)].astype(np.int64)] = True

    carried: dict[str, np.ndarray] | None = None
    task_records = named_records = pairs = 0
    unnamed, unknown_type, blanks, bad = _Tally(), _Tally(), _Tally(), {"out_of_range": _Tally(), "negative_duration": _Tally(),
                                                      "duplicate_record": _Tally(), "zero_length": _Tally()}
    size = HWTS_DTYPE.itemsize
    for chunk_offset, records in iter_record_chunks(paths, HWTS_DTYPE, warn, "device_exec"):
        task_id, head = records["task_id"], records["head"]
        blank = is_blank(records)
        if blank.any():
            blanks.add(int(np.count_nonzero(blank)), chunk_offset + int(np.flatnonzero(blank)[0]) * size, "")
        log_type = head & 0x7
        unknown = np.flatnonzero((log_type > 4) & ~blank)
        if unknown.size:
            unknown_type.add(unknown.size, chunk_offset + int(unknown[0]) * size,
                             f"log type {int(log_type[unknown[0]])}")
        is_task = (log_type <= 1) & ~blank
        candidates = np.flatnonzero(is_task & named_task_id[task_id])
        keys = _task_keys(task_id[candidates], records["stream_id"][candidates], era)
        position = np.minimum(np.searchsorted(unique_keys, keys), unique_keys.size - 1)
        known = unique_keys[position] == keys
        named = candidates[known]
        in_chunk = int(np.count_nonzero(is_task))
        task_records += in_chunk
        named_records += named.size
        if named.size < in_chunk:
            is_task[named] = False
            first = int(np.flatnonzero(is_task)[0])
            unnamed.add(in_chunk - named.size, chunk_offset + first * size,
                        f"task {int(task_id[first])}, stream {int(records['stream_id'][first])}")
        kept = {"op": position[known], "kind": log_type[named], "syscnt": records["syscnt"][named],
                "task_id": task_id[named], "stream_id": records["stream_id"][named],
                "offset": chunk_offset + named.astype(np.int64) * size}
        if carried is not None:
            kept = {name: np.concatenate([carried[name], column]) for name, column in kept.items()}
        if kept["op"].size == 0:
            continue
        carried = {name: column[-1:].copy() for name, column in kept.items()}
        frame, paired = _paired(kept, names, tick_hz, bad)
        pairs += paired
        if frame is not None:
            yield frame
    if blanks.count:
        report_blank(paths, blanks.count, blanks.first[0], size, warn, "device_exec")
    unnamed.report(warn, paths, f"{{n}} of {task_records} task records have a task id with no op in task_desc; "
                   "left out, as MindSpore does (profiling and other framework-internal tasks)", "unlinked",
                   "device_exec", action="excluded")
    unknown_type.report(warn, paths, "{n} HWTS records have a log type this format does not define (0-4); "
                        "dropped", "unknown_tag", "device_exec")
    unpaired = named_records - 2 * pairs
    if unpaired:
        warn(f"{paths[0]}: {unpaired} of {named_records} named task records are not a start directly followed "
             "by the end of the same op (a start without its end, an end without its start, or out of order); "
             "dropped, as MindSpore does", check="unlinked", action="dropped", rows=unpaired, path=paths[0],
             tables="device_exec")
    bad["out_of_range"].report(warn, paths, "{n} executions have a counter value beyond what int64 ns can "
                               "hold; dropped", "out_of_range", "device_exec")
    bad["negative_duration"].report(warn, paths, "{n} executions end before they start (end counter below the "
                                    "start counter); dropped", "negative_duration", "device_exec")
    bad["duplicate_record"].report(warn, paths, "{n} executions repeat an earlier one exactly (same op, start "
                                   "and end); the copies are dropped", "duplicate_record", "device_exec")
    bad["zero_length"].report(warn, paths, "{n} executions last 0 ns (end counter equal to the start counter), "
                              "shorter than the counter's resolution (real traces hold them); kept as recorded",
                              "out_of_range", "device_exec", action="kept")


def _paired(records: dict[str, np.ndarray], names: pl.Series, tick_hz: int,
            bad: dict[str, _Tally]) -> tuple[pl.DataFrame | None, int]:
    """device_exec rows of the named task records of one chunk: a start directly followed by the
    end of the same op is one execution (the chunk's last record is left for the next chunk).
    Returns the rows and the number of pairs found (before any was dropped)."""
    op, kind = records["op"], records["kind"]
    starts = np.flatnonzero((kind[:-1] == 0) & (kind[1:] == 1) & (op[:-1] == op[1:]))
    found = int(starts.size)
    if starts.size == 0:
        return None, 0
    syscnt = records["syscnt"]
    begin, finish = syscnt[starts], syscnt[starts + 1]
    limit = max_ticks(tick_hz)
    in_range = (begin <= limit) & (finish <= limit)
    negative = in_range & (finish < begin)
    for check, mask in (("out_of_range", ~in_range), ("negative_duration", negative)):
        if mask.any():
            first = int(np.flatnonzero(mask)[0])
            bad[check].add(int(np.count_nonzero(mask)), int(records["offset"][starts[first]]),
                           f"task {int(records['task_id'][starts[first]])}, start {int(begin[first])}, "
                           f"end {int(finish[first])}")
    starts = starts[in_range & ~negative]
    if starts.size > 1:
        keep = first_of_each([syscnt[starts], syscnt[starts + 1], op[starts]])
        if not keep.all():
            copy = int(np.flatnonzero(~keep)[0])
            bad["duplicate_record"].add(int(np.count_nonzero(~keep)), int(records["offset"][starts[copy]]),
                                        f"task {int(records['task_id'][starts[copy]])}, "
                                        f"start {int(syscnt[starts[copy]])}")
            starts = starts[keep]
    if starts.size == 0:
        return None, found
    zero = syscnt[starts + 1] == syscnt[starts]
    if zero.any():  # legitimate: a task shorter than one counter tick (10 ns at 100 MHz); counted, kept
        first = int(np.flatnonzero(zero)[0])
        bad["zero_length"].add(int(np.count_nonzero(zero)), int(records["offset"][starts[first]]),
                               f"task {int(records['task_id'][starts[first]])}, start {int(syscnt[starts[first]])}, "
                               f"end {int(syscnt[starts[first] + 1])}")
    begin_ticks = syscnt[starts].astype(np.int64)
    name = names.gather(op[starts])
    return pl.DataFrame({
        "stream_id": records["stream_id"][starts].astype(np.int64), "kind": "task", "name": name,
        "task_id": records["task_id"][starts].astype(np.int64), "op_name": name,
        "start_ns": ticks_to_ns(begin_ticks, tick_hz),
        "dur_ns": ticks_to_ns(syscnt[starts + 1].astype(np.int64) - begin_ticks, tick_hz),
    }), found


_INT64_MAX = (1 << 63) - 1


def max_ticks(tick_hz: int) -> np.uint64:
    """The largest counter value whose time in ns still fits in int64 (at `tick_hz`)."""
    if 1_000_000_000 % tick_hz == 0:
        return np.uint64(_INT64_MAX // (1_000_000_000 // tick_hz))
    # the float product is rounded: keep a margin of a few parts in 1e15
    return np.uint64(min(_INT64_MAX, int(_INT64_MAX / (1e9 / tick_hz) * (1 - 1e-12))))


def ticks_to_ns(ticks: np.ndarray, tick_hz: int) -> np.ndarray:
    """Device counter ticks (int64, at most `max_ticks`) -> ns (exact integers when the frequency
    divides 1 GHz)."""
    if 1_000_000_000 % tick_hz == 0:
        return ticks * (1_000_000_000 // tick_hz)
    return np.rint(ticks * (1e9 / tick_hz)).astype(np.int64)


def _training_trace_points(paths: list[Path], records: dict[str, np.ndarray], point_names: dict[int, str],
                           tick_hz: int, warn: Warn) -> pl.DataFrame:
    """Era A/B: tags 1 FP, 2 BP, 255 or 65535 iteration end, 0 or above the end tag step-start
    marker (unused: 0 and one job id), the rest communication points (odd start, even end)."""
    tag = records["tag"].astype(np.uint64)
    end_tag = _end_tag(tag)
    other_end = 255 if end_tag == 65535 else 65535
    if (tag == other_end).any():
        first = int(np.flatnonzero(tag == other_end)[0])
        path, offset = locate_offset(paths, int(records["offset"][first]))
        warn(f"{path}: byte offset {offset}: the trace holds both iteration-end tags 255 and 65535; {end_tag} is "
             f"taken (the more frequent), {int(np.count_nonzero(tag == other_end))} records with {other_end} are "
             "read by that rule", check="ambiguous", action="kept", rows=int(np.count_nonzero(tag == other_end)),
             path=path, offset=offset, tables="step_point")
    kind = np.zeros(tag.size, dtype=np.int8)
    kind[tag == _ERA_AB_TAGS["fp"]] = _FP
    kind[tag == _ERA_AB_TAGS["bp"]] = _BP
    kind[tag == end_tag] = _END
    comm = (tag > 2) & (tag < end_tag)
    kind[comm & (tag % 2 == 1)] = _COMM_START
    kind[comm & (tag % 2 == 0)] = _COMM_END
    # step-start markers: 0 and the job id (one value); any other value above the end tag is unknown
    marker = (tag > end_tag)
    unknown = np.zeros(tag.size, dtype=bool)
    if marker.any():
        values, counts = np.unique(tag[marker], return_counts=True)
        job_id = values[np.argmax(counts)]
        unknown = marker & (tag != job_id)
    tag = tag.astype(np.int64)
    _report_unknown_tags(paths, records, unknown, tag, warn)
    return _clean_points(paths, kind, tag, records, _tag_names(tag, point_names), tick_hz, warn)


def _report_unknown_tags(paths: list[Path], records: dict[str, np.ndarray], unknown: np.ndarray, tag: np.ndarray,
                         warn: Warn) -> None:
    index = np.flatnonzero(unknown)
    if index.size:
        path, offset = locate_offset(paths, int(records["offset"][index[0]]))
        warn(f"{path}: byte offset {offset}: {index.size} step-trace records have a tag that means nothing in this "
             f"format (first: {int(tag[index[0]])}); dropped", check="unknown_tag", action="dropped",
             rows=int(index.size), path=path, offset=offset, example=f"tag {int(tag[index[0]])}",
             tables="step_point")


def _ts_track_points(paths: list[Path], tasks: pl.DataFrame, point_names: dict[int, str], tick_hz: int,
                     warn: Warn) -> pl.DataFrame:
    """Era C: rptType 10 records; tags 2 FP, 3 BP, 4 iteration end, 10000-19999 communication
    (even before the op, odd after it); 0/1 model start/end are not used."""
    records = read_columns(paths, TS_TRACK_DTYPE, ["rpt_type", "tag", "stream_id", "task_id", "syscnt",
                                                   "model_id"], warn,
                           keep=lambda r: ~np.isin(r["rpt_type"], list(_TS_TRACK_TYPES - {_TS_TRACK_STEP})),
                           tables="step_point")
    records = _report_unknown_types(paths, records, warn)
    models = np.unique(records["model_id"])
    if models.size > 1:
        warn(f"{paths[0]}: step trace of {models.size} models (graphs {models.tolist()[:10]}); steps are cut at "
             "every iteration end, so the segmentation may mix graphs", check="ambiguous", action="kept",
             path=paths[0], tables="step_point")
    tag = records["tag"].astype(np.int64)
    kind = np.zeros(tag.size, dtype=np.int8)
    kind[tag == _ERA_C_TAGS["fp"]] = _FP
    kind[tag == _ERA_C_TAGS["bp"]] = _BP
    kind[tag == _ERA_C_TAGS["end"]] = _END
    comm = (tag >= _ERA_C_TAGS["comm_low"]) & (tag < _ERA_C_TAGS["comm_high"])
    kind[comm & (tag % 2 == 0)] = _COMM_START
    kind[comm & (tag % 2 == 1)] = _COMM_END
    _report_unknown_tags(paths, records, (kind == 0) & (tag > 1), tag, warn)
    names = _neighbour_op_names(records["stream_id"], records["task_id"], kind, tasks)
    step_info_names = _tag_names(tag, point_names)  # step_info names the FP/BP ops directly
    names = pl.select(pl.coalesce(step_info_names, names)).to_series()
    return _clean_points(paths, kind, tag, records, names, tick_hz, warn)


def _report_unknown_types(paths: list[Path], records: dict[str, np.ndarray], warn: Warn) -> dict[str, np.ndarray]:
    """The step-trace records (rptType 10) of the ts_track records `records` (type 10 or a type no msprof
    version defines), after counting the unknown ones: one that reads as a step point (a FP/BP/iteration-end or
    communication tag of a model the step trace has) is most likely a step record whose type byte is damaged,
    and its point is lost (dropped); any other is left out as MindSpore leaves out every type but 10 (excluded)."""
    step = records["rpt_type"] == _TS_TRACK_STEP
    if step.all():
        return records
    tag = records["tag"].astype(np.int64)
    point_tag = np.isin(tag, [_ERA_C_TAGS["fp"], _ERA_C_TAGS["bp"], _ERA_C_TAGS["end"]]) | (
        (tag >= _ERA_C_TAGS["comm_low"]) & (tag < _ERA_C_TAGS["comm_high"]))
    like_step = ~step & point_tag & np.isin(records["model_id"], records["model_id"][step])
    for mask, action, what in ((like_step, "dropped", "read as step points (a step-trace tag of a model the trace "
                                                      "has): a damaged type byte, most likely; their points are lost"),
                               (~step & ~like_step, "excluded", "are not step-trace records either; left out, as "
                                                                "MindSpore leaves out every type but 10")):
        index = np.flatnonzero(mask)
        if not index.size:
            continue
        path, offset = locate_offset(paths, int(records["offset"][index[0]]))
        first = int(records["rpt_type"][index[0]])
        warn(f"{path}: byte offset {offset}: {index.size} ts_track records have a report type no msprof version "
             f"defines (first: {first}, tag {int(tag[index[0]])}); they {what}", check="unknown_tag", action=action,
             rows=int(index.size), path=path, offset=offset, example=f"rptType {first}", tables="step_point")
    return {name: column[step] for name, column in records.items()}


def _tag_names(tag: np.ndarray, point_names: dict[int, str]) -> pl.Series:
    """Op name per trace record from a {tag: op name} map (null where the tag has none)."""
    return pl.Series(tag).replace_strict(point_names, default=None, return_dtype=pl.String)


def _neighbour_op_names(stream_id: np.ndarray, task_id: np.ndarray, kind: np.ndarray,
                        tasks: pl.DataFrame) -> pl.Series:
    """The op behind an era-C trace task: the next task in task_desc order for start points, the
    previous one for end points (the trace task itself is an inserted Profiling op)."""
    ordered = tasks.sort("seq").select(
        "stream_id", "task_id", pl.col("op_name").shift(-1).alias("next_op"),
        pl.col("op_name").shift(1).alias("previous_op")).unique(["stream_id", "task_id"], keep="last")
    points = pl.DataFrame({"stream_id": stream_id.astype(np.int64), "task_id": task_id.astype(np.int64),
                           "kind": kind})
    named = points.join(ordered, on=["stream_id", "task_id"], how="left", maintain_order="left")
    return named.select(
        pl.when(pl.col("kind").is_in([_FP, _COMM_START])).then(pl.col("next_op"))
        .when(pl.col("kind") != 0).then(pl.col("previous_op"))).to_series().alias("op_name")


def _clean_points(paths: list[Path], kind: np.ndarray, tag: np.ndarray, records: dict[str, np.ndarray],
                  names: pl.Series, tick_hz: int, warn: Warn) -> pl.DataFrame:
    """The step points that mean something, after leaving out (each counted in the ledger): exact
    duplicate records, counters beyond int64 ns, iteration ends that go back in time (the fewest that
    leave the ends in order), points outside their step, BP ends before their step's FP start and
    communication ends before their start."""
    syscnt = records["syscnt"]
    offsets = records["offset"]
    keep = np.ones(kind.size, dtype=bool)

    def drop(mask: np.ndarray, check: str, what: str, rows: int | None = None) -> None:
        index = np.flatnonzero(mask & keep)
        if not index.size:
            return
        keep[index] = False
        path, offset = locate_offset(paths, int(offsets[index[0]]))
        example = f"tag {int(tag[index[0]])}, stream {int(records['stream_id'][index[0]])}, syscnt {int(syscnt[index[0]])}"
        warn(f"{path}: byte offset {offset}: {index.size} step-trace records {what}; dropped (first: {example})",
             check=check, action="dropped", rows=int(index.size), path=path, offset=offset, example=example,
             tables="step_point")

    drop(~first_of_each([syscnt, tag, records["task_id"], records["stream_id"]]), "duplicate_record",
         "repeat an earlier record exactly (the copies)")
    drop(syscnt > max_ticks(tick_hz), "out_of_range", "have a counter value beyond what int64 ns can hold")
    keep &= kind != 0
    ends = np.flatnonzero(keep & (kind == _END))
    ordered = _non_decreasing(syscnt[ends].astype(np.int64))
    backwards = np.zeros(kind.size, dtype=bool)
    backwards[ends[~ordered]] = True
    drop(backwards, "negative_duration", "are iteration ends earlier than the iteration end before them")

    def numbered() -> np.ndarray:
        """Step per record (1 + iteration ends before it among the kept records)."""
        is_end = (kind == _END) & keep
        return 1 + np.cumsum(is_end) - is_end

    step = numbered()
    ticks = syscnt.astype(np.int64, copy=True)
    ticks[~keep] = 0
    end_ticks = ticks[keep & (kind == _END)]  # step k ends at end_ticks[k - 1]
    upper = np.where(step <= end_ticks.size, end_ticks[np.minimum(step, max(end_ticks.size, 1)) - 1]
                     if end_ticks.size else np.iinfo(np.int64).max, np.iinfo(np.int64).max)
    lower = np.where(step >= 2, end_ticks[np.clip(step - 2, 0, max(end_ticks.size - 1, 0))]
                     if end_ticks.size else np.iinfo(np.int64).min, np.iinfo(np.int64).min)
    outside = (kind != _END) & ((ticks < lower) | (ticks > upper))
    drop(outside, "negative_duration", "lie outside their step (before the previous iteration end or after "
                                       "their own)")
    # FP start before BP end, communication start before its end, within one step
    points = pl.DataFrame({"i": np.arange(kind.size), "step": step, "kind": kind, "tag": tag,
                           "stream": records["stream_id"].astype(np.int64), "ticks": ticks}).filter(
        pl.Series(keep))
    fp = points.filter(pl.col("kind") == _FP).group_by("step").agg(pl.col("ticks").first().alias("fp"))
    late_bp = points.filter(pl.col("kind") == _BP).join(fp, on="step").filter(pl.col("ticks") < pl.col("fp"))
    mask = np.zeros(kind.size, dtype=bool)
    mask[late_bp["i"].to_numpy()] = True
    drop(mask, "negative_duration", "are BP ends earlier than their step's FP start")
    occurrence = pl.int_range(pl.len()).over("step", "stream", "pair")
    comm_start = points.filter(pl.col("kind") == _COMM_START).with_columns(pl.col("tag").alias("pair"))
    comm_end = points.filter(pl.col("kind") == _COMM_END).with_columns((pl.col("tag") - 1).alias("pair"))
    matched = comm_start.with_columns(occurrence.alias("n")).join(
        comm_end.with_columns(occurrence.alias("n")), on=["step", "stream", "pair", "n"], suffix="_end").filter(
        pl.col("ticks_end") < pl.col("ticks"))
    mask = np.zeros(kind.size, dtype=bool)
    mask[matched["i"].to_numpy()] = True
    mask[matched["i_end"].to_numpy()] = True
    drop(mask, "negative_duration", "are communication points whose end is earlier than their start (both)")
    _report_incomplete_steps(paths, kind, keep, numbered(), offsets, warn)
    kept = np.flatnonzero(keep)
    return _points_frame(kind[kept], tag[kept], records["stream_id"][kept], syscnt[kept].astype(np.int64),
                         names.gather(kept), tick_hz)


def _report_incomplete_steps(paths: list[Path], kind: np.ndarray, keep: np.ndarray, step: np.ndarray,
                             offsets: np.ndarray, warn: Warn) -> None:
    """Count the steps whose FP start / BP end points say that trace points were lost (nothing in the step
    trace repeats them): a step holding the FP or BP of several iterations lost the iteration end between
    them (the iterations are one step), and a step without the FP or BP that most steps have lost it. The
    first step may lack its FP and the points after the last iteration end their BP and end (a capture
    starts and stops mid-iteration)."""
    closed = int(np.count_nonzero(keep & (kind == _END)))
    if not closed:
        return
    merged, missing = [], []  # (record index of the first point that shows it, count)
    for point, name in ((_FP, "FP start"), (_BP, "BP end")):
        index = np.flatnonzero(keep & (kind == point))
        counts = np.bincount(step[index], minlength=closed + 2)
        repeat = index[np.r_[False, step[index][1:] == step[index][:-1]]]  # the 2nd, 3rd... point of a step
        if repeat.size:
            merged.append((int(repeat[0]), set(np.flatnonzero(counts > 1).tolist()), name))
        if np.count_nonzero(counts[1:closed + 1]) * 2 <= closed:
            continue  # not a point most steps have (e.g. no BP in inference)
        lacking = np.flatnonzero(counts[1:closed + 1] == 0) + 1
        lacking = lacking[(lacking > 1) | (point != _FP)]
        if lacking.size:
            end_of = np.flatnonzero(keep & (kind == _END))[lacking[0] - 1]
            missing.append((int(end_of), int(lacking.size), int(lacking[0]), name))
    if merged:
        first, _, name = min(merged)
        steps = len(set().union(*(m[1] for m in merged)))
        path, offset = locate_offset(paths, int(offsets[first]))
        warn(f"{path}: byte offset {offset}: {steps} steps hold the FP/BP points of several iterations (first: a "
             f"second {name}): an iteration end is missing in each (lost or damaged), so iterations merged into one "
             "step", check="malformed_record", action="dropped", rows=steps, path=path, offset=offset,
             example=f"a second {name} in one step", tables="step_point")
    for end, steps, first_step, name in missing:
        path, offset = locate_offset(paths, int(offsets[end]))
        warn(f"{path}: byte offset {offset}: {steps} steps lack the {name} point the other steps have (lost or "
             f"damaged; first: step {first_step}, ending here); their phases are missing", check="malformed_record",
             action="dropped", rows=steps, path=path, offset=offset, example=f"step {first_step} without {name}",
             tables="step_point")


def _non_decreasing(values: np.ndarray) -> np.ndarray:
    """Mask of a longest non-decreasing subsequence of `values` (the fewest left out to put them in order)."""
    keep = np.ones(values.size, dtype=bool)
    if values.size < 2 or (np.diff(values) >= 0).all():
        return keep
    tails: list[int] = []  # value of the smallest tail of a run of each length
    tail_index: list[int] = []
    previous = np.full(values.size, -1)
    for i, value in enumerate(values.tolist()):
        length = bisect.bisect_right(tails, value)
        if length == len(tails):
            tails.append(value)
            tail_index.append(i)
        else:
            tails[length], tail_index[length] = value, i
        previous[i] = tail_index[length - 1] if length else -1
    keep[:] = False
    i = tail_index[-1]
    while i >= 0:
        keep[i] = True
        i = previous[i]
    return keep


def _points_frame(kind: np.ndarray, tag: np.ndarray, stream_id: np.ndarray, syscnt: np.ndarray,
                  names: pl.Series, tick_hz: int) -> pl.DataFrame:
    """Number steps (a step closes at its end point) and the points within their step (seq, in
    record order); every point given means something."""
    step = 1 + np.r_[0, np.cumsum(kind == _END)[:-1]] if kind.size else np.empty(0, np.int64)
    first_of_step = np.r_[True, step[1:] != step[:-1]] if kind.size else np.empty(0, bool)
    step_first_index = np.maximum.accumulate(np.where(first_of_step, np.arange(kind.size), 0))
    return pl.DataFrame({
        "step": step.astype(np.int64),
        "kind": pl.Series(kind, dtype=pl.Int8).replace_strict(_POINT_KINDS, return_dtype=pl.String),
        "tag": tag.astype(np.int64),
        "stream_id": stream_id.astype(np.int64),
        "op_name": names.cast(pl.String),
        "ts_ns": ticks_to_ns(syscnt, tick_hz),
        "seq": (np.arange(kind.size) - step_first_index).astype(np.int32),
    }, schema={"step": pl.Int64, "kind": pl.String, "tag": pl.Int64, "stream_id": pl.Int64, "op_name": pl.String,
               "ts_ns": pl.Int64, "seq": pl.Int32})


def _finish_steps(points: pl.DataFrame, skip_first: bool) -> pl.DataFrame:
    """Add step_start points (the previous step's end; the first step starts at its FP start)
    and, when the dataset-sink init graph ran, drop the first step as MindSpore does."""
    ends = points.filter(pl.col("kind") == "step_end").select(
        (pl.col("step") + 1).alias("step"), pl.col("ts_ns"), pl.col("op_name"))
    first_fp = points.filter((pl.col("step") == 1) & (pl.col("kind") == "fp_start")).head(1).select(
        "step", "ts_ns", "op_name")
    starts = pl.concat([first_fp, ends]).with_columns(
        pl.lit("step_start").alias("kind"), pl.lit(None, pl.Int64).alias("tag"),
        pl.lit(None, pl.Int64).alias("stream_id"), pl.lit(-1, pl.Int32).alias("seq"))
    steps = pl.concat([points, starts.select(points.columns)])
    last_step = points.filter(pl.col("kind") == "step_end")["step"].max()
    steps = steps.filter(pl.col("step") <= (last_step or 0) + 1)
    if skip_first:
        steps = steps.filter(pl.col("step") > 1).with_columns(pl.col("step") - 1)
    return steps.sort("step", "seq")




def _empty(schema: dict[str, pl.DataType]) -> pl.DataFrame:
    return pl.DataFrame(schema=schema)
