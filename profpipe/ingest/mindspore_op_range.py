"""Stage 2, ingest: MindSpore's binary op-range data (`FRAMEWORK/mindspore.op_range`, 2.4's
`FRAMEWORK/op_range_<rank>`) -> host_info_record (host framework events) and python_frame (with_stack frames).

One source is the op-range file of one profiler folder (discover: an era F `*_ascend_ms` folder, or an era E
2.4 folder with FRAMEWORK/ beside PROF_*). The file is framework TLV (framework_tlv.py; MindSpore's
`analysis/parser/ms_framework_parser.py` and `timeline_event/fwk_event.py`, 2.4 `parser/ascend_analysis/
fwk_file_parser.py` and `function_event.py`); MindSpore shows its records as the "MindSpore" process of
trace_view.json. Two record layouts, told apart by the file name:

* `mindspore.op_range` (2.6+): fixed `<5Qi3Hb3?` = thread id, flow id, step, start and end (host counter),
  process id, module, event and stage (indexes into MindSpore's enums below), level, is_graph_data, is_stage,
  is_stack; fields 13 name, 14 full name, 15 graph module, 16 graph event, 17 custom info. MindSpore names an
  event `<module>::<event>::<full name>` (graph data: `<graph module>::<graph event>::<name>`; a stage record:
  the stage's name; a record named `flow` with full name `flow` is a flow link, no event). Records with
  is_stack set are Python frames (MindSpore's python_function events): name = field 13.
* `op_range_<rank>` (2.4): fixed `<3q6Qb?` = start, end (host counter), sequence number, process id, start,
  end and forward thread ids, flow id, step, level, is_async; fields 3 name (`<module>::<event>::<stage>`),
  4 input dtypes, 5 input shapes, 6 call stack, 7 module hierarchy, 8 flops, 9 custom info. No stack flag: every
  record is a host event.

Each event becomes host_info_record rows as 2.1-2.3's host info file would have them (module, event, stage;
MindSpore's stage records get event `Stage`): a start and an end row (lines 2i and 2i + 1 for the i-th
record, so host_span pairs each start with its own end), or one instant row where start equals end, as
MindSpore makes an instant of it. pid is the record's process id; parent_pid and memory are not recorded
(null); custom_info the field as written (`key:value;...`). Python frames become python_frame rows, nested by
time on their thread (python_frames.py); when the folder's trace_view.json is read (msprof_export), it
already holds these frames and they are left out here (reported superseded).

Times: the host counter is converted to Unix-epoch ns by MindSpore's own formula and parameters
(clocks.mindspore_host_counter: 2.4 profiler_info system_cnt / system_time, 2.5+ host_start.log and
start_info; the frequency from the PROF_* host info.json); without them the times stay counter ticks at
100 MHz (clock host_syscnt, not aligned, reported). Records with a zero start (MindSpore drops them as
abnormal), an end before the start or a time beyond 2^62 ns are left out and reported. The step number and
flow links are not kept.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from ..clocks import mindspore_host_counter
from ..discover import Source
from ..errors import InputError
from ..health import Warn
from .framework_tlv import TlvRecords, read_records
from .python_frames import NO_OPS_SQL, PYTHON_FRAME_SQL, resolve_frames
from .run_info import run_info
from .scratch import memory_database
from .units import MAX_NS

#: 2.6+ `<5Qi3Hb3?`.
RECORD = np.dtype([("tid", "<u8"), ("flow_id", "<u8"), ("step", "<u8"), ("start", "<u8"), ("end", "<u8"),
                   ("pid", "<i4"), ("module", "<u2"), ("event", "<u2"), ("stage", "<u2"), ("level", "i1"),
                   ("is_graph_data", "u1"), ("is_stage", "u1"), ("is_stack", "u1")])
NAME, FULL_NAME, GRAPH_MODULE, GRAPH_EVENT, CUSTOM_INFO = 13, 14, 15, 16, 17
#: 2.4 `<3q6Qb?`.
RECORD_2_4 = np.dtype([("start", "<i8"), ("end", "<i8"), ("sequence", "<i8"), ("pid", "<u8"), ("tid", "<u8"),
                       ("end_tid", "<u8"), ("forward_tid", "<u8"), ("flow_id", "<u8"), ("step", "<u8"),
                       ("level", "i1"), ("is_async", "u1")])
NAME_2_4, CUSTOM_INFO_2_4 = 3, 9
FIELDS_2_4 = tuple(range(3, 10))

#: MindSpore's enums, by index (ProfilerModule, ProfilerEvent, ProfilerStage of fwk_event.py); an index past
#: the end reads as "Default", as MindSpore reads it.
MODULES = ("Default", "GraphExecutorPy", "RuntimeFramework", "PynativeFramework", "Kernel", "Python", "Capture",
           "Other")
EVENTS = ("Default", "KernelInfer", "KernelResize", "KernelInferAndResize", "KernelLaunch", "KernelLaunckCallback",
          "KernelUpdate", "KernelPrepareData", "GraphLaunch", "InputProcess", "OutputProcess", "WaitTaskFinish",
          "PreLaunch", "PostLaunch", "SendOutput", "MemoryAlloc", "MemoryFree", "CopyData", "StreamSync",
          "ProcessMultiStream", "WaitKernelsInferFinish", "WaitKernelsResizeFinish", "WaitKernelsLaunchFinish",
          "KernelInferInner", "KernelInferDataSync", "KernelResizeInner", "KernelLaunchInner", "BackendGraphRunInner",
          "RunOp", "PyNativeFrontendTask", "PyNativeBackendTask", "PyNativeDeviceTask", "PyNativeLaunchTask",
          "PyNativeBpropTask", "Wait", "PyNativeGilAcquire", "PyNativeCast", "PyNativeInfer", "PyNativeOpCompile",
          "PyNativeGradExpander", "PyNativeGradUpdateSens", "PyNativeGradClearTopCell",
          "PyNativeGradClearAutoGradCell", "PyBoostInferOutput", "PyBoostInferByOpDef", "PyBoostCreateOutputTensor",
          "PyBoostDeviceTask", "PyBoostMallocInput", "PyBoostMallocOutput", "PyBoostLaunchAclnn", "PyBoostLaunchAtb",
          "PyNativeNewGraph", "PyNativeEndGraph", "PythonObserved", "CaptureRunGraph", "CaptureProcess",
          "CaptureCompile", "CaptureGuard", "AclnnHitCacheStage1", "AclnnHitCacheStage2", "AclnnMissCacheStage1",
          "AclnnMissCacheStage2", "AclnnUpdateAddress", "AclnnRunOp", "RunExpanderFunc", "EmitOp", "Execute",
          "ReleaseResource", "NativeFunc")
STAGES = ("Default", "Python", "Capture", "RunGraph", "RunGrad", "RunOp", "Asnumpy", "CompileGradGraph",
          "WaitPipeline", "SyncStream")
FLOW = "flow"
_TABLES = "host_info_record,python_frame"


def read(source: Source, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """The run_info row, then host_info_record and python_frame of the folder's op-range file."""
    counter = mindspore_host_counter(source.directory, source.rank)
    yield "run_info", run_info(source, device_type="ascend", framework="mindspore", layout="op_range",
                               pid=source.pid, **counter.run_info())
    role = "op_range" if "op_range" in source.files else "op_range_2_4"
    path = source.files[role]
    if role == "op_range" and "op_range_2_4" in source.files:
        warn(f"{source.files['op_range_2_4']}: superseded by {path} (the newer layout of the same data)",
             check="superseded", action="superseded", path=source.files["op_range_2_4"], tables=_TABLES)
    if not counter.known:
        warn(f"{source.directory}: no profiler_info system_cnt / system_time nor PROF_*/host/host_start.log with "
             "start_info: op-range times are the host counter at 100 MHz, not aligned with the rank's other data",
             check="clock", action="kept", path=path, tables=_TABLES)
    try:
        if role == "op_range":
            records = read_records(path, RECORD, (NAME, FULL_NAME, GRAPH_MODULE, GRAPH_EVENT, CUSTOM_INFO), warn,
                                   _TABLES, "start")
        else:
            records = read_records(path, RECORD_2_4, FIELDS_2_4, warn, _TABLES, "start")
    except InputError as exc:
        warn(f"{exc}; its host events and Python frames are left out", check="malformed_record", action="dropped",
             path=path, tables=_TABLES)
        return
    events = _timed(records, counter.to_ns, path, warn)
    if role == "op_range":
        events = _named(events)
    else:
        events = _named_2_4(events)
    events = events.filter(pl.col("module").is_not_null() | pl.col("is_stack"))  # flow links are not events
    host = _host_rows(events.filter(~pl.col("is_stack")))
    if host.height:
        yield "host_info_record", host.to_arrow()
    frames = events.filter(pl.col("is_stack"))
    if frames.height and "trace_view" in source.files:
        warn(f"{path}: {frames.height} Python frames are also in {source.files['trace_view']}, which is read; "
             "left out here", check="superseded", action="superseded", rows=frames.height, path=path,
             tables="python_frame")
    elif frames.height:
        yield "python_frame", _frames(frames, path, warn)


def _timed(records: TlvRecords, to_ns: Callable[[np.ndarray], np.ndarray], path: Path, warn: Warn) -> pl.DataFrame:
    """The records with start_ns / end_ns; zero starts, ends before starts and times beyond 2^62 ns left out."""
    fixed = records.fixed
    start, end = to_ns(fixed["start"]), to_ns(fixed["end"])
    zero = fixed["start"] == 0
    bad = ~zero & ((start < 0) | (start > MAX_NS) | (end < 0) | (end > MAX_NS))
    backwards = ~zero & ~bad & (end < start)
    for mask, check, action, what in ((zero, "malformed_record", "excluded",
                                       "records with a zero start time (MindSpore drops them as abnormal)"),
                                      (bad, "out_of_range", "dropped", "records with a time beyond 2^62 ns"),
                                      (backwards, "negative_duration", "dropped", "records that end before they start")):
        if mask.any():
            first = int(records.offset[mask][0])
            warn(f"{path}: byte offset {first}: {int(mask.sum())} {what}; left out", check=check, action=action,
                 rows=int(mask.sum()), path=path, offset=first, tables=_TABLES)
    keep = ~(zero | bad | backwards)
    columns = {name: fixed[name][keep] for name in fixed.dtype.names if name not in ("start", "end")}
    frame = pl.DataFrame({**{name: values.astype(np.int64) for name, values in columns.items()},
                          "start_ns": start[keep], "end_ns": end[keep], "record": np.flatnonzero(keep)})
    texts = {f"field_{kind}": values.filter(pl.Series(keep)) for kind, values in records.fields.items()}
    return frame.with_columns(**texts)


def _enum(values: tuple[str, ...], column: str) -> pl.Expr:
    return pl.col(column).replace_strict(dict(enumerate(values)), default=values[0], return_dtype=pl.String)


def _named(events: pl.DataFrame) -> pl.DataFrame:
    """module / event / stage of 2.6+ records as MindSpore names them; null module for flow links."""
    name, full = pl.col(f"field_{NAME}").fill_null(""), pl.col(f"field_{FULL_NAME}").fill_null("")
    graph, stage_record = pl.col("is_graph_data") != 0, pl.col("is_stage") != 0
    flow_named = name == FLOW
    return events.with_columns(
        (pl.col("is_stack") != 0).alias("is_stack"),
        pl.when(graph).then(pl.col(f"field_{GRAPH_MODULE}").fill_null("")).when(stage_record).then(pl.lit(""))
        .when(~flow_named).then(_enum(MODULES, "module")).when(full != FLOW).then(pl.lit("")).alias("module"),
        pl.when(graph).then(pl.col(f"field_{GRAPH_EVENT}").fill_null("")).when(stage_record).then(pl.lit("Stage"))
        .when(~flow_named).then(_enum(EVENTS, "event")).otherwise(pl.lit("")).alias("event"),
        pl.when(graph).then(name).when(stage_record).then(_enum(STAGES, "stage"))
        .otherwise(full).alias("stage"),
        pl.col(f"field_{CUSTOM_INFO}").fill_null("").alias("custom_info"),
        name.alias("name"),
    )


def _named_2_4(events: pl.DataFrame) -> pl.DataFrame:
    """2.4 names `<module>::<event>::<stage>` split in three (a name of fewer parts is the stage); `flow` links
    have a null module."""
    name = pl.col(f"field_{NAME_2_4}").fill_null("")
    parts = name.str.splitn("::", 3)
    three = parts.struct.field("field_2").is_not_null()
    return events.with_columns(
        pl.lit(False).alias("is_stack"),
        pl.when(name == FLOW).then(None).when(three).then(parts.struct.field("field_0")).otherwise(pl.lit(""))
        .alias("module"),
        pl.when(three).then(parts.struct.field("field_1")).otherwise(pl.lit("")).alias("event"),
        pl.when(three).then(parts.struct.field("field_2")).otherwise(name).alias("stage"),
        pl.col(f"field_{CUSTOM_INFO_2_4}").fill_null("").alias("custom_info"),
        name.alias("name"),
    )


def _host_rows(events: pl.DataFrame) -> pl.DataFrame:
    """A start and an end row per span (lines 2i, 2i + 1), one instant row where start equals end."""
    base = events.select("record", "tid", "pid", pl.lit(None, pl.Int64).alias("parent_pid"), "module", "event",
                         "stage", pl.col("level").cast(pl.Int32), "custom_info", "start_ns", "end_ns")
    instant = pl.col("start_ns") == pl.col("end_ns")
    starts = base.select(pl.exclude("start_ns", "end_ns"), (pl.col("record") * 2).alias("line"),
                         pl.when(instant).then(pl.lit("instant")).otherwise(pl.lit("start")).alias("kind"),
                         pl.col("start_ns").alias("ts_ns"))
    ends = base.filter(~instant).select(pl.exclude("start_ns", "end_ns"), (pl.col("record") * 2 + 1).alias("line"),
                                        pl.lit("end").alias("kind"), pl.col("end_ns").alias("ts_ns"))
    return pl.concat([starts, ends]).sort("line").select(
        "line", "tid", "pid", "parent_pid", "module", "event", "stage", "level", "kind", "custom_info",
        pl.lit(None, pl.Int64).alias("memory_bytes"), "ts_ns")


_FRAMES_SQL = ("SELECT tid AS thread, tid, name, start_ns, end_ns - start_ns AS dur_ns, NULL::BIGINT AS frame_id, "
               "NULL::BIGINT AS parent_id, false AS parent_given, NULL::BIGINT AS module_id FROM op_range_frames")


def _frames(frames: pl.DataFrame, path: Path, warn: Warn) -> pa.Table:
    """python_frame rows (no ids: each frame's parent is the innermost frame that holds it on its thread)."""
    with memory_database() as con:
        con.register("op_range_frames", frames.select("tid", "name", "start_ns", "end_ns").to_arrow())
        resolve_frames(con, _FRAMES_SQL, NO_OPS_SQL, path, warn)
        return con.sql(PYTHON_FRAME_SQL).to_arrow_table()
