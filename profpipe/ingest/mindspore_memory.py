"""Stage 2, ingest: MindSpore's Ascend memory files (profile_memory=True) -> memory_block, memory_record,
memory_module, static_op_memory (and, through memory_usage_pb.py, the 1.x memory usage tables).

One source is the memory files of one rank in one profiler folder (discover's `_memory_home`: a 2.5+
`*_ascend_ms` folder, or a 2.3-2.4 profiler folder with its `*_ascend_ms` copy folder and PROF_* job);
formats from shared/reference/formats-mindspore-extras.md §2 and MindSpore's memory viewer
(`mindspore/profiler/analysis/viewer/ascend_memory_viewer.py`, 2.5+ wheel). Roles (discover):

* `ms_record`: `cpu_ms_memory_record_<r>.txt`, MindSpore's allocator totals (ns, bytes) -> memory_record
  (component MindSpore);
* `msprof:memory_record`: msprof `memory_record_*.csv` (µs, KB; read by position as MindSpore reads it:
  Device_id, Component, Timestamp, Total Allocated, Total Reserved, Device) -> memory_record;
* `msprof:npu_mem`: msprof `npu_mem_*.csv`; rows of event APP -> memory_record (component APP, reserved =
  column 5 `memory(KB)`, time = the last column), as MindSpore takes them; rows of event Device are
  left out as MindSpore leaves them out (reported, action excluded);
* `output_record`: MindSpore's `ASCEND_PROFILER_OUTPUT/memory_record.csv`, made from the three above
  (MB = KB / 1000): when present it is read instead of them (they are reported superseded), without its
  MindSpore+GE rows, which are derived (the memory_curve mart recomputes them); torch_npu's copy (components PTA,
  GE, PTA+GE, APP, a Stream Ptr column, tabs after the times) counts MB = 2^20 B (formats-ascend-today.md §4.10)
  and its PTA+GE rows are derived too;
* `msprof:npu_module_mem` / `output_module`: per-module reserved KB (-1: only frees seen, read as null)
  -> memory_module (MindSpore's copy first); torch_npu's copy has 4 columns (`Component, Timestamp(us), Total
  Reserved(MB), Device`, 5 with a leading `Device_id`), read by name, MB = 2^20 B;
* `msprof:static_op_mem` / `output_static`: static graph op memory -> static_op_memory (MindSpore's copy
  first, else the newest msprof file); the TOTAL row is checked against the sum of the others;
* `ms_operator` (`operator_memory_<r>.csv`, 2.3-2.4 flat folder) / `output_operator`
  (`ASCEND_PROFILER_OUTPUT/operator_memory.csv`; the copy first): MindSpore's operator memory blocks,
  2.3-2.4 columns (Duration, MB = bytes / 2^20, a trailing comma) or 2.5+ columns (Release Time, Active,
  `N/A`) -> memory_block (component MindSpore; torch_npu's copy, told by its profiler_info JSON: component PTA);
  `msprof:operator_memory`: CANN's blocks (KB) -> memory_block (component CANN).

Times are read as exact decimals (units.py) and are Unix-epoch ns (MindSpore merges msprof's memory rows
with its own epoch rows, so the files share that clock); sizes become whole bytes from the exact decimal
(KB x 1024, memory_record MB x 1024000, operator_memory MB x 2^20), rounded half to even. Rows with a time or
size that is not a number, negative or out of range, rows without a required value, and repeated rows are
dropped and reported; a file that cannot be read at all costs only its own rows.

* `fwk_memory_usage`: MindSpore 2.5+'s raw memory events, `FRAMEWORK/mindspore.memory_usage` (memory_usage_tlv.py)
  -> memory_block (component MindSpore, each allocation paired with its free as MindSpore pairs them), and,
  when the dump has no totals file of MindSpore's (`cpu_ms_memory_record_<r>.txt`, `memory_record.csv`), the
  allocator totals each event carries -> memory_record (component MindSpore). The events win over the
  `operator_memory.csv` MindSpore makes from them (reported superseded): they hold whole bytes and ns times,
  where the CSV holds KB and µs as floats (an epoch µs as a float keeps about a quarter µs), and they are
  there whether or not MindSpore's analysis ran.
* `ms_usage`: MindSpore 1.2-2.3's `memory_usage_<r>.pb` (tensor lifetimes by graph node index, no times) ->
  memory_graph, memory_node, memory_tensor, memory_node_tensor, read by memory_usage_pb.py.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import TypeVar

import polars as pl
import pyarrow as pa

from ..clocks import epoch_clock
from ..discover import Source
from ..errors import InputError
from ..health import Warn
from . import memory_usage_pb, memory_usage_tlv
from .lines import RowCheck, drop_checked, drop_rows, iter_csv_frames, load_json
from .run_info import ascend_framework, run_info
from .units import MAX_NS, scaled_decimal

T = TypeVar("T")
KB = 1024
#: memory_record.csv's "MB": KB / 1000 (MindSpore's MemoryRecordBean.KB_TO_MB).
RECORD_MB = 1024 * 1000
#: operator_memory's MB: bytes / 2^20.
MIB = 1 << 20
#: msprof's "held to the graph's end" node index.
GRAPH_END = 4294967295


def read(source: Source, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """Yield the memory tables of one rank's profiler folder."""
    info = source.directory / f"profiler_info_{source.rank}.json"
    framework = ascend_framework(load_json(info, "a profiler_info JSON") if info.is_file() else None, source.directory)
    yield "run_info", run_info(source, device_type=source.device_type, framework=framework, layout="memory",
                               **epoch_clock())
    files = source.slices
    tlv = [usage for path in files.get("fwk_memory_usage", [])[:1]
           if (usage := _guarded(warn, path, "memory_block,memory_record", memory_usage_tlv.read)) is not None]
    if "output_record" in files:
        _superseded(files, ("ms_record", "msprof:memory_record", "msprof:npu_mem"), files["output_record"][0], warn)
        parts = [_guarded(warn, path, "memory_record", _output_record) for path in files["output_record"]]
    else:
        parts = [_guarded(warn, path, "memory_record", _ge_record) for path in files.get("msprof:memory_record", [])]
        parts += [_guarded(warn, path, "memory_record", _ms_record) for path in files.get("ms_record", [])]
        parts += [_guarded(warn, path, "memory_record", _app_record) for path in files.get("msprof:npu_mem", [])]
        if "ms_record" not in files:  # MindSpore's totals, from its memory events when it wrote no totals file
            parts += [usage[1] for usage in tlv]
    yield from _table("memory_record", parts)
    module = _first_of(files, "output_module", "msprof:npu_module_mem", warn)
    yield from _table("memory_module", [_guarded(warn, path, "memory_module", _module) for path in module])
    static = _first_of(files, "output_static", "msprof:static_op_mem", warn)[-1:]
    yield from _table("static_op_memory", [_guarded(warn, path, "static_op_memory", _static) for path in static])
    if tlv:  # the raw events win over the operator_memory CSVs MindSpore made from them
        _superseded(files, ("output_operator", "ms_operator"), files["fwk_memory_usage"][0], warn)
        parts = [usage[0] for usage in tlv]
    else:
        operator = _first_of(files, "output_operator", "ms_operator", warn)
        component = "PTA" if framework == "pytorch" else "MindSpore"  # torch_npu's allocator is its PTA component
        parts = [_guarded(warn, path, "memory_block", lambda p, w: _operator(p, w, component)) for path in operator]
    parts += [_guarded(warn, path, "memory_block", _operator) for path in files.get("msprof:operator_memory", [])]
    yield from _table("memory_block", parts)
    for path in files.get("ms_usage", []):
        yield from _guarded(warn, path, memory_usage_pb.TABLES, memory_usage_pb.read) or []


def _first_of(files: dict[str, list[Path]], copy: str, original: str, warn: Warn) -> list[Path]:
    """MindSpore's copy of a kind of file when there is one (the originals reported superseded), else the originals."""
    if copy in files:
        _superseded(files, (original,), files[copy][0], warn)
        return files[copy][:1]
    return files.get(original, [])


def _superseded(files: dict[str, list[Path]], roles: tuple[str, ...], by: Path, warn: Warn) -> None:
    for role in roles:
        for path in files.get(role, []):
            warn(f"{path}: superseded by {by}, which MindSpore made from it", check="superseded",
                 action="superseded", path=path)


def _table(name: str, parts: list[pl.DataFrame | None]) -> Iterator[tuple[str, pa.Table]]:
    frames = [p for p in parts if p is not None and p.height]
    if frames:
        frame = pl.concat(frames, how="diagonal_relaxed")
        yield name, frame.with_row_index("seq").with_columns(pl.col("seq").cast(pl.Int64)).to_arrow()


def _guarded(warn: Warn, path: Path, table: str, reader: Callable[[Path, Warn], T]) -> T | None:
    """The rows of one file; a file that cannot be read is one ledger row (its rows dropped), not the source."""
    try:
        return reader(path, warn)
    except InputError as exc:
        warn(f"{exc}; its rows are left out", check="malformed_record", action="dropped", path=path, line=exc.line,
             offset=exc.offset, tables=table)
        return None


# --- the file's text as typed columns ---------------------------------------------------------------------

def _text(path: Path, warn: Warn, table: str, names: dict[str, str | int], required: list[str],
          what: str) -> pl.DataFrame:
    """The file's rows as string columns named by `names` (our name -> the file's header name, or a position;
    a negative position counts from the last non-empty header), with `line`; a missing column is an error,
    repeated rows are dropped and reported, and so are rows without a `required` value (empty or N/A)."""
    chunks = []
    for chunk in iter_csv_frames(path, warn, null_values=["N/A", ""], what=what):
        header = [c for c in chunk.columns if c != "line"]
        named = [c for c in header if c.strip()]  # a trailing comma gives a column without a name
        columns = {}
        for ours, theirs in names.items():
            if isinstance(theirs, int):
                if not -len(named) <= theirs < len(named):
                    raise InputError(path, f"not {what}: expected at least {abs(theirs) + (theirs >= 0)} columns, "
                                           f"got {len(named)}", line=1)
                columns[ours] = named[theirs]
            elif theirs in header:
                columns[ours] = theirs
            else:
                raise InputError(path, f"not {what} (no column {theirs!r})", line=1)
        chunks.append(chunk.select(*[pl.col(c).str.strip_chars().alias(o) for o, c in columns.items()], "line"))
    frame = pl.concat(chunks)
    values = [c for c in frame.columns if c != "line"]
    example = pl.concat_str([pl.col(c).fill_null("N/A") for c in values[:3]], separator=",")
    return drop_checked(frame, [
        RowCheck(~pl.struct(values).is_first_distinct(), "duplicate_record",
                 "repeated rows (the same values as an earlier row)", example),
        RowCheck(pl.any_horizontal(pl.col(required).is_null()), "malformed_record",
                 f"rows without {', '.join(required)} (empty or N/A)", example),
    ], warn, path, line_column="line", tables=table)


def _typed(frame: pl.DataFrame, path: Path, warn: Warn, table: str, scales: dict[str, int],
           null_texts: tuple[str, ...] = (), durations: tuple[str, ...] = (),
           then: Callable[[dict[str, pl.Expr]], list[RowCheck]] | None = None) -> pl.DataFrame:
    """`frame` with the columns of `scales` as Int64: the exact decimal times the scale (µs -> ns 1000,
    KB -> bytes 1024, ...), rounded half to even. Rows where such a value is present but not a number, beyond
    2^62, or negative are dropped and reported per kind (a negative duration as negative_duration), column by
    column in the order of `scales`; the texts `null_texts` (msprof's -1) read as null. `then` gives further
    checks on the typed values (the Int64 expression of each column), made after those. All checks are one
    pass over the frame (drop_checked)."""
    number = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
    # each value once, as a column of its own; the text is already stripped (_text), so a value is null exactly
    # where the text is null, not a number or beyond 2^62, and the regex runs only on those rows
    frame = frame.with_columns(*[scaled_decimal(pl.col(c), scale).alias(f"_value {c}") for c, scale in scales.items()])
    exempt = {c: pl.col(c).is_in(list(null_texts)) if null_texts else pl.lit(False) for c in scales}
    values = {c: pl.col(f"_value {c}") for c in scales}
    typed = {c: pl.when(exempt[c]).then(None).otherwise(values[c]).cast(pl.Int64) for c in scales}
    shown = list(scales)[:2]  # the example: these two columns, as text until their own checks are done
    checks = []
    for k, column in enumerate(scales):
        text, value, skip = pl.col(column), values[column], exempt[column]
        number_like = pl.when(value.is_null()).then(text).str.contains(number)
        example = pl.concat_str([(typed[c] if i < k else pl.col(c)).cast(pl.String).fill_null("N/A")
                                 for i, c in enumerate(shown)], separator=",")
        checks += [
            RowCheck(text.is_not_null() & ~skip & value.is_null() & ~number_like, "malformed_record",
                     f"rows whose {column!r} is not a number", example),
            RowCheck(text.is_not_null() & ~skip & value.is_null(), "out_of_range",
                     f"rows whose {column!r} is beyond 2^62 once in ns or bytes", example),
            RowCheck(~skip & (value < 0), "negative_duration" if column in durations else "out_of_range",
                     f"rows with a negative {column!r}", example)]
    checks += then(typed) if then else []
    frame = drop_checked(frame, checks, warn, path, line_column="line", tables=table)
    return frame.with_columns(*[typed[c].alias(c) for c in scales]).drop(*[f"_value {c}" for c in scales])


# --- memory_record ----------------------------------------------------------------------------------------

_RECORD = ["component", "device", "ts_ns", "allocated_bytes", "reserved_bytes", "active_bytes"]


def _ge_record(path: Path, warn: Warn) -> pl.DataFrame:
    frame = _text(path, warn, "memory_record", {"component": 1, "ts_ns": 2, "allocated_bytes": 3, "reserved_bytes": 4,
                                                "device": 5}, ["component", "ts_ns"], "an msprof memory_record CSV")
    frame = _typed(frame, path, warn, "memory_record", {"ts_ns": 1000, "allocated_bytes": KB, "reserved_bytes": KB})
    return frame.with_columns(pl.lit(0, pl.Int64).alias("active_bytes")).select(_RECORD)


def _ms_record(path: Path, warn: Warn) -> pl.DataFrame:
    frame = _text(path, warn, "memory_record", {"ts_ns": "Timestamp(ns)", "allocated_bytes": "Total Allocated(Byte)",
                                                "reserved_bytes": "Total Reserved(Byte)",
                                                "active_bytes": "Total Active(Byte)"},
                  ["ts_ns"], "MindSpore's cpu_ms_memory_record file")
    frame = _typed(frame, path, warn, "memory_record", {"ts_ns": 1, "allocated_bytes": 1, "reserved_bytes": 1,
                                                        "active_bytes": 1})
    return frame.with_columns(pl.lit("MindSpore").alias("component"), pl.lit(None, pl.String).alias("device")
                              ).select(_RECORD)


def _app_record(path: Path, warn: Warn) -> pl.DataFrame:
    frame = _text(path, warn, "memory_record", {"event": 1, "reserved_bytes": 4, "ts_ns": -1},
                  ["event"], "an msprof npu_mem CSV")
    device = frame.filter(pl.col("event") != "APP")
    if device.height:
        warn(f"{path}: {device.height} rows of event {device['event'][0]!r} (the whole device); left out as MindSpore "
             "leaves them out of memory_record (only APP rows are the application's memory)", check="other",
             action="excluded", rows=device.height, path=path, line=int(device["line"][0]), tables="memory_record")
    frame = frame.filter(pl.col("event") == "APP")
    frame = drop_rows(frame, pl.any_horizontal(pl.col("reserved_bytes", "ts_ns").is_null()), warn, path,
                      "malformed_record", "APP rows without memory or timestamp (empty or N/A)", line_column="line",
                      tables="memory_record", example=pl.col("ts_ns").fill_null("N/A"))
    frame = _typed(frame, path, warn, "memory_record", {"ts_ns": 1000, "reserved_bytes": KB})
    return frame.select(pl.lit("APP").alias("component"), pl.lit(None, pl.String).alias("device"), "ts_ns",
                        pl.lit(None, pl.Int64).alias("allocated_bytes"), "reserved_bytes",
                        pl.lit(None, pl.Int64).alias("active_bytes"))


def _output_record(path: Path, warn: Warn) -> pl.DataFrame:
    # torch_npu's copy (it alone has a Stream Ptr column) counts MB as 2^20 B, MindSpore's as 1,024,000 B
    unit = MIB if "Stream Ptr" in _header(path, "a memory_record CSV") else RECORD_MB
    frame = _text(path, warn, "memory_record", {"component": "Component", "ts_ns": "Timestamp(us)",
                                                "allocated_bytes": "Total Allocated(MB)",
                                                "reserved_bytes": "Total Reserved(MB)",
                                                "active_bytes": "Total Active(MB)", "device": "Device Type"},
                  ["component", "ts_ns"], "MindSpore's memory_record.csv")
    is_combined = pl.col("component").str.ends_with("+GE")  # MindSpore+GE, torch_npu's PTA+GE
    combined = frame.filter(is_combined)
    if combined.height:
        warn(f"{path}: {combined.height} {combined['component'][0]} rows are derived from the framework's and the GE "
             "rows; not kept (memory_curve recomputes them)", check="other", action="excluded", rows=combined.height,
             path=path, tables="memory_record")
    frame = _typed(frame.filter(~is_combined), path, warn, "memory_record",
                   {"ts_ns": 1000, "allocated_bytes": unit, "reserved_bytes": unit, "active_bytes": unit})
    # the devices and zeros MindSpore adds to its own and the APP rows are not in the files it read
    own = pl.col("component").is_in(["MindSpore", "APP"])
    app = pl.col("component") == "APP"
    return frame.with_columns(pl.when(own).then(None).otherwise(pl.col("device")).alias("device"),
                              pl.when(app).then(None).otherwise(pl.col("allocated_bytes")).alias("allocated_bytes"),
                              pl.when(app).then(None).otherwise(pl.col("active_bytes")).alias("active_bytes")
                              ).select(_RECORD)


# --- memory_module, static_op_memory ----------------------------------------------------------------------

def _module(path: Path, warn: Warn) -> pl.DataFrame:
    if "Total Reserved(MB)" in _header(path, "an npu_module_mem CSV"):  # torch_npu's copy: 4 columns (5 with Device_id)
        names: dict[str, str | int] = {"component": "Component", "ts_ns": "Timestamp(us)",
                                       "reserved_bytes": "Total Reserved(MB)", "device": "Device"}
        unit = MIB
    else:  # msprof's and MindSpore's: Device_id, Component, Timestamp(us), Total Reserved(KB), Device
        names, unit = {"component": 1, "ts_ns": 2, "reserved_bytes": 3, "device": 4}, KB
    frame = _text(path, warn, "memory_module", names, ["component", "ts_ns"], "an msprof npu_module_mem CSV")
    frame = _typed(frame, path, warn, "memory_module", {"ts_ns": 1000, "reserved_bytes": unit}, null_texts=("-1",))
    return frame.select("component", "device", "ts_ns", "reserved_bytes")


def _static(path: Path, warn: Warn) -> pl.DataFrame:
    frame = _text(path, warn, "static_op_memory", {"device_id": 0, "op_name": 1, "model_name": 2, "graph_id": 3,
                                                   "node_index_start": 4, "node_index_end": 5, "bytes": 6},
                  ["op_name"], "an msprof static_op_mem CSV")
    total = frame.filter(pl.col("op_name") == "TOTAL")
    frame = drop_rows(frame.filter(pl.col("op_name") != "TOTAL"),
                      pl.any_horizontal(pl.col("node_index_start", "bytes").is_null()), warn, path, "malformed_record",
                      "rows without Node Index Start or Size (empty or N/A)", line_column="line",
                      tables="static_op_memory", example=pl.col("op_name"))
    frame = _typed(frame, path, warn, "static_op_memory", {"device_id": 1, "graph_id": 1, "node_index_start": 1,
                                                           "node_index_end": 1, "bytes": KB})
    if total.height:
        stated = sum((Decimal(t) for t in total["bytes"].to_list() if _decimal(t) is not None), Decimal(0)) * KB
        if stated != sum(frame["bytes"].to_list()):
            warn(f"{path}, line {total['line'][0]}: the TOTAL row says {stated} bytes, the rows add up to "
                 f"{sum(frame['bytes'].to_list())}; the rows are kept", check="conflicting_entry", action="kept",
                 path=path, line=int(total["line"][0]), tables="static_op_memory")
    return frame.with_columns(pl.when(pl.col("node_index_end") == GRAPH_END).then(None)
                              .otherwise(pl.col("node_index_end")).alias("node_index_end")).drop("line")


def _decimal(text: str | None) -> Decimal | None:
    try:
        return Decimal(text) if text is not None and Decimal(text).is_finite() else None
    except ArithmeticError:
        return None


# --- memory_block -----------------------------------------------------------------------------------------

#: Dialects of operator_memory by a header column they alone have: (component, size of the totals' unit,
#: our name -> the file's column).
_OPERATOR = {
    "Release Time(us)": ("MindSpore", MIB, {  # 2.5+
        "release_ns": "Release Time(us)", "alloc_allocated_bytes": "Allocation Total Allocated(MB)",
        "alloc_reserved_bytes": "Allocation Total Reserved(MB)", "alloc_active_bytes": "Allocation Total Active(MB)",
        "release_allocated_bytes": "Release Total Allocated(MB)", "release_reserved_bytes": "Release Total Reserved(MB)",
        "release_active_bytes": "Release Total Active(MB)", "stream": "Stream Ptr", "device": "Device Type"}),
    "Allocation Total Allocated(MB)": ("MindSpore", MIB, {  # 2.3-2.4
        "duration": "Duration(us)", "alloc_allocated_bytes": "Allocation Total Allocated(MB)",
        "alloc_reserved_bytes": "Allocation Total Reserved(MB)", "release_allocated_bytes": "Release Total Allocated(MB)",
        "release_reserved_bytes": "Release Total Reserved(MB)", "device": "Device"}),
    "Allocation Total Allocated(KB)": ("CANN", KB, {  # msprof
        "duration": "Duration(us)", "alloc_allocated_bytes": "Allocation Total Allocated(KB)",
        "alloc_reserved_bytes": "Allocation Total Reserved(KB)", "release_allocated_bytes": "Release Total Allocated(KB)",
        "release_reserved_bytes": "Release Total Reserved(KB)", "device": "Device"}),
}
_BLOCK = ["component", "device", "owner", "bytes", "alloc_ns", "release_ns", "alloc_allocated_bytes",
          "alloc_reserved_bytes", "alloc_active_bytes", "release_allocated_bytes", "release_reserved_bytes",
          "release_active_bytes", "stream"]


def _header(path: Path, what: str) -> list[str]:
    """The column names of a CSV (its first chunk's)."""
    return next(iter_csv_frames(path, None, null_values=["N/A", ""], what=what, chunk_bytes=1 << 16)).columns


def _operator(path: Path, warn: Warn, framework_component: str = "MindSpore") -> pl.DataFrame:
    """memory_block rows of an operator_memory CSV; its blocks are the framework's (`framework_component`: MindSpore
    or torch_npu's PTA) unless the dialect says CANN."""
    header = _header(path, "an operator_memory CSV")
    dialect = next((d for key, d in _OPERATOR.items() if key in header), None)
    if dialect is None:
        raise InputError(path, "not an operator_memory CSV (no Allocation Total Allocated column)", line=1)
    component, unit, columns = dialect
    component = framework_component if component == "MindSpore" else component
    frame = _text(path, warn, "memory_block", {"owner": "Name", "bytes": "Size(KB)", "alloc_ns": "Allocation Time(us)",
                                               **columns}, ["owner", "bytes", "alloc_ns"],
                  f"{component}'s operator_memory CSV")
    scales = {"alloc_ns": 1000, "bytes": KB, **{c: unit for c in columns if c.endswith("_bytes")},
              **{c: 1000 for c in ("release_ns", "duration") if c in columns}}

    def released(typed: dict[str, pl.Expr]) -> list[RowCheck]:
        release = typed["alloc_ns"] + typed["duration"] if "duration" in typed else typed["release_ns"]
        return [RowCheck(release > MAX_NS, "out_of_range", "blocks released beyond 2^62 ns", pl.col("owner")),
                RowCheck(release < typed["alloc_ns"], "negative_duration",
                         "blocks released before they were allocated", pl.col("owner"))]

    frame = _typed(frame, path, warn, "memory_block", scales, durations=("duration",), then=released)
    if "duration" in frame.columns:
        frame = frame.with_columns((pl.col("alloc_ns") + pl.col("duration")).alias("release_ns"))
    return frame.with_columns(pl.lit(component).alias("component"),
                              *[pl.lit(None, pl.Int64 if c.endswith(("_ns", "_bytes")) else pl.String).alias(c)
                                for c in _BLOCK if c not in frame.columns and c != "component"]).select(_BLOCK)
