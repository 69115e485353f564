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
* AI CPU files -> aicpu_exec (ascend_aicpu).

Device times are counter ticks; they become ns with the counter frequency (`info.json`
hwts_frequency, else 100 MHz as MindSpore 1.x assumes), on the device-counter clock.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from ..discover import Source
from ..errors import InputError
from . import ascend_aicpu, ascend_framework
from .binary_records import Warn, locate_offset, read_columns

DEFAULT_TICK_HZ = 100_000_000
HWTS_DTYPE = np.dtype([("head", "u1"), ("core", "u1"), ("unused", "<u2"), ("block_id", "<u2"),
                       ("task_id", "<u2"), ("syscnt", "<u8"), ("stream_id", "<u4"), ("reserved", "V44")])
TRAINING_TRACE_DTYPE = np.dtype([("tag", "<u8"), ("task_id", "<u2"), ("stream_id", "<u2"), ("syscnt", "<u8")])
TS_TRACK_DTYPE = np.dtype([("mode", "u1"), ("rpt_type", "u1"), ("buf_size", "<u2"), ("reserved", "<u4"),
                           ("syscnt", "<u8"), ("index_id", "<u8"), ("model_id", "<u8"), ("stream_id", "<u2"),
                           ("task_id", "<u2"), ("tag", "<u2"), ("reserved2", "<u2")])
_TS_TRACK_STEP = 10
#: Era A joins by the bare task id from this id on, by (stream, task) below it.
_BARE_TASK_ID_FROM = 25000
_EXEC_CHUNK_ROWS = 1 << 20

#: Tag meaning per step-trace format: FP start, BP end, iteration end(s), communication range.
_ERA_AB_TAGS = {"fp": 1, "bp": 2}
_ERA_C_TAGS = {"fp": 2, "bp": 3, "end": 4, "comm_low": 10000, "comm_high": 20000}


def read(source: Source, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """Yield the normalized tables of one raw Ascend device folder."""
    slices = source.slices
    for role, paths in slices.items():
        for path in paths:
            if path.stat().st_size == 0 and role not in ("aicpu",):
                raise InputError(path, "empty file (was the collection cut short?)")
    trace = (read_columns(slices["training_trace"], TRAINING_TRACE_DTYPE, ["tag", "stream_id", "syscnt"], warn)
             if "training_trace" in slices else None)
    era = _era(source, trace)
    tick_hz = _tick_hz(source, warn)
    yield "run_info", _run_info(source, era, tick_hz)

    tasks, ops, point_names = _framework(source, era, warn)
    if tasks.height:
        yield "task_desc", _with_rank(tasks, source.rank)
    if ops.height:
        yield "op_desc", _with_rank(ops, source.rank)

    hwts_role = "hwts_c" if era == "c" else "hwts"
    if hwts_role in slices:
        if not tasks.height:
            raise InputError(slices[hwts_role][0], "HWTS task log without task_desc: no task can be named "
                                                   "(Framework task_desc_info files are missing)")
        for frame in _task_executions(slices[hwts_role], tasks, era, tick_hz, warn):
            yield "device_exec", _with_rank(frame, source.rank)

    skip_first = bool(tasks.height) and tasks["op_name"].str.starts_with("Default/InitDataSetQueue").any()
    if trace is not None:
        points = _training_trace_points(trace, point_names, tick_hz)
        yield "step_point", _with_rank(_finish_steps(points, skip_first), source.rank)
    elif "ts_track" in slices:
        points = _ts_track_points(slices["ts_track"], tasks, point_names, tick_hz, warn)
        yield "step_point", _with_rank(_finish_steps(points, skip_first), source.rank)

    if "aicpu" in slices and any(p.stat().st_size for p in slices["aicpu"]):
        paths = [p for p in slices["aicpu"] if p.stat().st_size]
        if ascend_aicpu.is_binary(paths):
            names = tasks.select("stream_id", "task_id", "op_name").unique(["stream_id", "task_id"], keep="last")
            aicpu = ascend_aicpu.read_aicpu_binary(paths, names, warn)
        else:
            aicpu = ascend_aicpu.read_aicpu_text(paths)
        aicpu = aicpu.with_row_index("seq").with_columns(pl.col("seq").cast(pl.Int64))
        yield "aicpu_exec", _with_rank(aicpu, source.rank)


def _era(source: Source, trace: dict[str, np.ndarray] | None) -> str:
    """a, b or c, from the files present (and, for a/b, the iteration-end tag of the trace)."""
    slices = source.slices
    if {"hwts_c", "ts_track", "task_desc_bin"} & slices.keys():
        return "c"
    underscored = any("vm_" in p.name for role in ("task_desc_text", "point_text", "graph_desc_text")
                      for p in slices.get(role, []))
    if underscored:
        return "b"
    if trace is not None and (trace["tag"] == 65535).any():
        return "b"
    return "a"


def _tick_hz(source: Source, warn: Warn) -> int:
    """Device counter frequency: info.json's hwts_frequency (MHz) when present, else 100 MHz."""
    paths = source.slices.get("device_info")
    if not paths:
        return DEFAULT_TICK_HZ
    try:
        info = json.loads(paths[0].read_text(encoding="utf-8"))
        mhz = float(info["DeviceInfo"][0]["hwts_frequency"])
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise InputError(paths[0], f"expected device info JSON with DeviceInfo[0].hwts_frequency ({exc})") from None
    hz = int(round(mhz * 1_000_000))
    if hz != DEFAULT_TICK_HZ:
        warn(f"{paths[0]}: hwts_frequency is {mhz:g} MHz; times use it, while MindSpore 1.x assumed 100 MHz "
             "(its reports of this run are scaled by 100/{mhz:g})")
    return hz


def _run_info(source: Source, era: str, tick_hz: int) -> pa.Table:
    return pa.table({
        "rank": [source.rank], "device_id": [source.device_id], "device_type": ["ascend"],
        "framework": ["mindspore"], "layout": [f"ascend_era_{era}"], "source_dir": [str(source.directory)],
        "clock": ["device_syscnt"], "host_to_clock_offset_ns": pa.nulls(1, pa.int64()),
        "tick_hz": [tick_hz], "pid": pa.nulls(1, pa.int64()), "metadata_json": pa.nulls(1, pa.string()),
    })


def _framework(source: Source, era: str, warn: Warn) -> tuple[pl.DataFrame, pl.DataFrame, dict[int, str]]:
    """(task_desc rows, op_desc rows, {trace tag: op name})."""
    slices = source.slices
    if era == "c":
        hashes = ascend_framework.read_hash_dic(slices["hash_dic"]) if "hash_dic" in slices else {}
        tasks = (ascend_framework.read_task_desc_binary(slices["task_desc_bin"], hashes, warn)
                 if "task_desc_bin" in slices else _empty(ascend_framework.TASK_DESC_SCHEMA))
        ops = _era_c_ops(tasks, slices, warn)
        point_names: dict[int, str] = {}
        if "step_info_bin" in slices:
            steps = ascend_framework.read_step_info_binary(slices["step_info_bin"], warn)
            named = steps.join(tasks.select("stream_id", "task_id", "op_name").unique(["stream_id", "task_id"],
                                                                                     keep="last"),
                               on=["stream_id", "task_id"], how="left")
            point_names = {tag: name for tag, name in named.select("tag", "op_name").iter_rows() if name}
        return tasks, ops, point_names
    tasks = (ascend_framework.read_task_desc_text(slices["task_desc_text"])
             if "task_desc_text" in slices else _empty(ascend_framework.TASK_DESC_SCHEMA))
    backend = "vm" if any(".vm" in p.name for p in slices.get("graph_desc_text", [])) else "ge"
    ops = (ascend_framework.read_graph_desc_text(slices["graph_desc_text"], backend)
           if "graph_desc_text" in slices else _empty(ascend_framework.OP_DESC_SCHEMA))
    points = ascend_framework.read_points_text(slices["point_text"]) if "point_text" in slices else {}
    return tasks, ops, points


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


def _task_executions(paths: list[Path], tasks: pl.DataFrame, era: str, tick_hz: int,
                     warn: Warn) -> Iterator[pl.DataFrame]:
    """Pair HWTS start/end records of the same op into executions (device_exec rows)."""
    records = read_columns(paths, HWTS_DTYPE, ["head", "task_id", "syscnt", "stream_id"], warn,
                           keep=lambda r: (r["head"] & 0x7) <= 1)
    # task_desc: the last registration of a key wins, as in MindSpore's dict
    desc = tasks.select("task_id", "stream_id", "op_name").with_row_index("row")
    desc_keys = _task_keys(desc["task_id"].to_numpy(), desc["stream_id"].to_numpy(), era)
    order = np.argsort(desc_keys, kind="stable")
    keys_sorted = desc_keys[order]
    last_of_key = np.r_[keys_sorted[1:] != keys_sorted[:-1], True]
    unique_keys, unique_rows = keys_sorted[last_of_key], order[last_of_key]
    op_names = desc["op_name"].to_numpy()[unique_rows]

    keys = _task_keys(records["task_id"], records["stream_id"], era)
    position = np.searchsorted(unique_keys, keys)
    position[position == unique_keys.size] = 0
    known = unique_keys.size > 0
    known = (unique_keys[position] == keys) if known else np.zeros(keys.size, dtype=bool)
    unknown = int((~known).sum())
    if unknown:
        first = int(np.flatnonzero(~known)[0])
        path, offset = locate_offset(paths, int(records["offset"][first]))
        warn(f"{path}: byte offset {offset}: {unknown} of {keys.size} task records have a task id with no op in "
             f"task_desc (first: task {int(records['task_id'][first])}, stream {int(records['stream_id'][first])}); "
             "dropped, as MindSpore does (profiling and other framework-internal tasks)")
    op_index = position[known]
    kind = records["head"][known] & 0x7
    syscnt = records["syscnt"][known]
    is_start = np.r_[(kind[:-1] == 0) & (kind[1:] == 1) & (op_index[:-1] == op_index[1:]), False]
    starts = np.flatnonzero(is_start)
    start_ticks = syscnt[starts]
    dur_ticks = syscnt[starts + 1].astype(np.int64) - start_ticks.astype(np.int64)
    task_ids = records["task_id"][known][starts].astype(np.int64)
    stream_ids = records["stream_id"][known][starts].astype(np.int64)
    names = pl.Series("op_name", op_names, dtype=pl.String)
    pair_ops = op_index[starts]
    for begin in range(0, starts.size, _EXEC_CHUNK_ROWS):
        end = begin + _EXEC_CHUNK_ROWS
        name = names.gather(pair_ops[begin:end])
        yield pl.DataFrame({
            "stream_id": stream_ids[begin:end], "kind": "task", "name": name, "task_id": task_ids[begin:end], "op_name": name,
            "start_ns": ticks_to_ns(start_ticks[begin:end].astype(np.int64), tick_hz),
            "dur_ns": ticks_to_ns(dur_ticks[begin:end], tick_hz),
        })


def ticks_to_ns(ticks: np.ndarray, tick_hz: int) -> np.ndarray:
    """Device counter ticks -> ns (exact integers when the frequency divides 1 GHz)."""
    if 1_000_000_000 % tick_hz == 0:
        return ticks * (1_000_000_000 // tick_hz)
    return np.rint(ticks * (1e9 / tick_hz)).astype(np.int64)


def _training_trace_points(records: dict[str, np.ndarray], point_names: dict[int, str],
                           tick_hz: int) -> pl.DataFrame:
    """Era A/B: tags 1 FP, 2 BP, 255 or 65535 iteration end, 0 or above the end tag step-start
    marker (unused), the rest communication points (odd start, even end)."""
    tag = records["tag"].astype(np.int64)
    end_tag = 65535 if (tag == 65535).any() else 255
    kind = np.full(tag.size, "", dtype=object)
    kind[tag == _ERA_AB_TAGS["fp"]] = "fp_start"
    kind[tag == _ERA_AB_TAGS["bp"]] = "bp_end"
    kind[tag == end_tag] = "step_end"
    comm = (tag > 2) & (tag < end_tag)
    kind[comm & (tag % 2 == 1)] = "comm_start"
    kind[comm & (tag % 2 == 0)] = "comm_end"
    return _points_frame(kind, tag, records["stream_id"], records["syscnt"], _tag_names(tag, point_names),
                         tick_hz)


def _ts_track_points(paths: list[Path], tasks: pl.DataFrame, point_names: dict[int, str], tick_hz: int,
                     warn: Warn) -> pl.DataFrame:
    """Era C: rptType 10 records; tags 2 FP, 3 BP, 4 iteration end, 10000-19999 communication
    (even before the op, odd after it); 0/1 model start/end are not used."""
    records = read_columns(paths, TS_TRACK_DTYPE, ["rpt_type", "tag", "stream_id", "task_id", "syscnt",
                                                   "model_id"], warn,
                           keep=lambda r: r["rpt_type"] == _TS_TRACK_STEP)
    models = np.unique(records["model_id"])
    if models.size > 1:
        warn(f"{paths[0]}: step trace of {models.size} models (graphs {models.tolist()}); steps are cut at every "
             "iteration end, so the segmentation may mix graphs")
    tag = records["tag"].astype(np.int64)
    kind = np.full(tag.size, "", dtype=object)
    kind[tag == _ERA_C_TAGS["fp"]] = "fp_start"
    kind[tag == _ERA_C_TAGS["bp"]] = "bp_end"
    kind[tag == _ERA_C_TAGS["end"]] = "step_end"
    comm = (tag >= _ERA_C_TAGS["comm_low"]) & (tag < _ERA_C_TAGS["comm_high"])
    kind[comm & (tag % 2 == 0)] = "comm_start"
    kind[comm & (tag % 2 == 1)] = "comm_end"
    unknown = np.flatnonzero((kind == "") & (tag > 1))
    if unknown.size:
        path, offset = locate_offset(paths, int(records["offset"][unknown[0]]))
        warn(f"{path}: byte offset {offset}: {unknown.size} step-trace records have a tag that means nothing "
             f"in this format (first: {int(tag[unknown[0]])}); ignored")
    names = _neighbour_op_names(records["stream_id"], records["task_id"], kind, tasks)
    step_info_names = _tag_names(tag, point_names)  # step_info names the FP/BP ops directly
    names = pl.select(pl.coalesce(step_info_names, names)).to_series()
    return _points_frame(kind, tag, records["stream_id"], records["syscnt"], names, tick_hz)


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
                           "kind": kind.astype(str)})
    named = points.join(ordered, on=["stream_id", "task_id"], how="left", maintain_order="left")
    return named.select(
        pl.when(pl.col("kind").is_in(["fp_start", "comm_start"])).then(pl.col("next_op"))
        .when(pl.col("kind") != "").then(pl.col("previous_op"))).to_series().alias("op_name")


def _points_frame(kind: np.ndarray, tag: np.ndarray, stream_id: np.ndarray, syscnt: np.ndarray,
                  names: pl.Series, tick_hz: int) -> pl.DataFrame:
    """Number steps (a step closes at its end point) and keep the points that mean something."""
    is_end = kind == "step_end"
    step = 1 + np.r_[0, np.cumsum(is_end)[:-1]]
    frame = pl.DataFrame({
        "step": step.astype(np.int64), "kind": kind.astype(str), "tag": tag,
        "stream_id": stream_id.astype(np.int64),
        "op_name": names.cast(pl.String),
        "ts_ns": ticks_to_ns(syscnt.astype(np.int64), tick_hz),
    })
    frame = frame.with_row_index("order").filter(pl.col("kind") != "")
    return frame.with_columns(pl.col("order").rank("ordinal").over("step").cast(pl.Int32).alias("seq") - 1
                              ).drop("order")


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


def _with_rank(frame: pl.DataFrame, rank: int) -> pa.Table:
    return frame.with_columns(pl.lit(rank, pl.Int32).alias("rank")).to_arrow()


def _empty(schema: dict[str, pl.DataType]) -> pl.DataFrame:
    return pl.DataFrame(schema=schema)
