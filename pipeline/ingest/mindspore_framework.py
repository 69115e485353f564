"""Stage 2, ingest: MindSpore framework-profiler text files (CPU and GPU/CUPTI) -> normalized tables.

Reads one rank's files as listed by discover (both the flat <= 2.4 profiler folder and the
2.5+ `*_ascend_ms/FRAMEWORK` layout) and yields (table name, Arrow table) pieces. Formats
and units are those of shared/reference/formats-gpu.md, family A:

* `{cpu,gpu}_op_execute_timestamp_N.txt` / `op_execute_timestamp_N.txt`: one line per op,
  `name;HostCpuOps;start_ns,dur_ms,tid ...` (CPU) or `name;GpuOps;start_ns,dur_us ...` (GPU);
* `activity_execute_timestamp_N.txt`: `kernel;stream;start_ns;dur_us` per kernel execution;
* `{cpu,gpu}_framework_N.txt`: `type;short name;graph;input_1:shape;...` per launch;
* `gpu_activity_data_N.csv`: the profiler's per-kernel-name summary (first op, stream, dims);
* `step_trace_profiling_N.txt`: the two step-trace layouts, told apart by the first token;
* `start_time_N.txt`, `profiler_info_N.json`: clocks and run metadata.

No statistics here: that is the models' job.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pyarrow as pa

from ..discover import Source
from ..errors import InputError
from ..health import Warn
from .lines import iter_line_frames, read_lines, require
from ..clocks import mindspore_framework_clock
from .run_info import run_info

_INT = r"-?\d+"
_NUM = r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
#: Duration unit of each op-timestamp file, as a factor to ns.
_OP_DUR_TO_NS = {"cpu_op_timestamp": 1_000_000.0, "gpu_op_timestamp": 1_000.0}
_OP_SIDE = {"cpu_op_timestamp": "Host", "gpu_op_timestamp": "Device"}


#: Roles whose file may be empty: MindSpore writes an empty step trace in PyNative mode.
_MAY_BE_EMPTY = {"step_trace"}


def read(source: Source, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """Yield the normalized tables of one MindSpore framework source (every problem here is an error)."""
    for role, path in source.files.items():
        if role not in _MAY_BE_EMPTY and path.stat().st_size == 0:
            raise InputError(path, "empty file (the profiler writes at least one line; was it cut short?)")
    offset = _host_to_cupti_offset(source.files.get("start_time"))
    yield "run_info", _run_info(source, offset)
    for role in ("cpu_op_timestamp", "gpu_op_timestamp"):
        if role in source.files:
            shift = offset if (role == "cpu_op_timestamp" and offset is not None) else 0
            for frame in _op_executions(source.files[role], role, shift):
                yield "host_op", _with_rank(frame, source.rank)
    if "activity_timestamp" in source.files:
        for frame in _activity_executions(source.files["activity_timestamp"]):
            yield "device_exec", _with_rank(frame, source.rank)
    for role, side in (("cpu_framework", "Host"), ("gpu_framework", "Device")):
        if role in source.files:
            yield "op_meta", _with_rank(_op_signatures(source.files[role], side), source.rank)
    if "kernel_summary" in source.files:
        yield "kernel_meta", _with_rank(_kernel_summary(source.files["kernel_summary"]), source.rank)
    if "step_trace" in source.files:
        yield "step_point", _with_rank(_step_points(source.files["step_trace"]), source.rank)


def _with_rank(frame: pl.DataFrame, rank: int) -> pa.Table:
    return frame.with_columns(pl.lit(rank, pl.Int32).alias("rank")).to_arrow()


def _run_info(source: Source, offset: int | None) -> pa.Table:
    info_path = source.files.get("profiler_info")
    metadata = None
    if info_path is not None:
        text = info_path.read_text(encoding="utf-8", errors="replace")
        try:
            json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(info_path, f"not valid JSON ({exc.msg})", line=exc.lineno,
                             offset=exc.pos) from None
        metadata = text
    return run_info(source, device_type=source.device_type, framework="mindspore", layout=source.layout,
                    host_to_clock_offset_ns=offset, **mindspore_framework_clock(source.device_type, source.layout, offset),
                    pid=source.pid, metadata_json=metadata)


def _host_to_cupti_offset(path: Path | None) -> int | None:
    """gpu_start_time − host_monotonic_raw_time from start_time_N.txt, or None without the file."""
    if path is None:
        return None
    lines = read_lines(path)
    values = lines.with_columns(pl.col("line").str.extract(rf"^\s*([^:]+):\s*({_INT})\s*$", 2)
                                .cast(pl.Int64, strict=False).alias("value"),
                                pl.col("line").str.extract(r"^\s*([^:(]+)", 1).alias("key"))
    require(path, values, pl.col("value").is_not_null(), "'<name>(ns): <integer>'")
    by_key = dict(zip(values["key"].str.strip_chars().to_list(), values["value"].to_list()))
    host, gpu = by_key.get("host_monotonic_raw_time"), by_key.get("gpu_start_time")
    if host is None or gpu is None:
        raise InputError(path, "expected host_monotonic_raw_time(ns) and gpu_start_time(ns) lines")
    return gpu - host


def _op_executions(path: Path, role: str, shift_ns: int) -> Iterator[pl.DataFrame]:
    """One row per op execution from a `name;kind;start,dur[,tid] ...` file.

    Fields are split and cast column-wise; a field that is missing or not a number becomes
    null, and the first null names its line.
    """
    with_tid = role == "cpu_op_timestamp"
    expected_exec = "start_ns,dur,tid" if with_tid else "start_ns,dur"
    for lines in iter_line_frames(path):
        split = lines.with_columns(pl.col("line").str.split_exact(";", 2).alias("f")).unnest("f")
        executions = pl.col("field_2")
        require(path, split, pl.col("field_0").is_not_null() & executions.is_not_null()
                & ((executions.str.len_bytes() == 0) | executions.str.ends_with(" ")),
                "'<op full name>;<kind>;<start>,<dur>... ' ending with a space")
        execs = (split.select("line_no", pl.col("field_0").alias("op_name"),
                              executions.str.strip_chars_end(" ").str.split(" ").alias("exec"))
                 .explode("exec").filter(pl.col("exec").is_not_null() & (pl.col("exec") != ""))
                 .with_columns(pl.col("exec").str.split_exact(",", 2 if with_tid else 1).alias("g")).unnest("g")
                 .with_columns(pl.col("field_0").cast(pl.Int64, strict=False).alias("start_ns"),
                               pl.col("field_1").cast(pl.Float64, strict=False).alias("dur"),
                               (pl.col("field_2").cast(pl.Int64, strict=False) if with_tid
                                else pl.lit(None, pl.Int64)).alias("tid")))
        require(path, execs, pl.col("start_ns").is_not_null() & pl.col("dur").is_not_null()
                & (pl.col("tid").is_not_null() if with_tid else pl.lit(True)),
                f"executions as '{expected_exec}' separated by spaces", lines=lines)
        yield execs.select(
            pl.lit(_OP_SIDE[role]).alias("side"),
            "tid",
            "op_name",
            pl.col("start_ns") + shift_ns,
            (pl.col("dur") * _OP_DUR_TO_NS[role]).round().cast(pl.Int64).alias("dur_ns"),
        )


def _activity_executions(path: Path) -> Iterator[pl.DataFrame]:
    """One row per kernel/memcpy/memset execution; the name may hold ';', so split from the right."""
    for lines in iter_line_frames(path):
        rows = lines.with_columns(pl.col("line").str.extract_groups(
            rf"^(.+);({_INT});({_INT});({_NUM})$").alias("f")).unnest("f")
        require(path, rows, pl.col("1").is_not_null(), "'<kernel name>;<stream>;<start_ns>;<dur_us>'")
        name = pl.col("1")
        yield rows.select(
            pl.col("2").cast(pl.Int64).alias("stream_id"),
            pl.when(name.str.starts_with("Memcpy")).then(pl.lit("memcpy"))
            .when(name.str.starts_with("MemorySet") | name.str.starts_with("Memset")).then(pl.lit("memset"))
            .otherwise(pl.lit("kernel")).alias("kind"),
            name.alias("name"),
            pl.lit(None, pl.Int64).alias("correlation"),
            pl.col("3").cast(pl.Int64).alias("start_ns"),
            (pl.col("4").cast(pl.Float64) * 1_000.0).round().cast(pl.Int64).alias("dur_ns"),
        )


def _op_signatures(path: Path, side: str) -> pl.DataFrame:
    """Distinct (type, short name, graph, shapes) launch signatures with their launch counts."""
    parts = []
    for lines in iter_line_frames(path):
        rows = lines.with_columns(pl.col("line").str.extract_groups(
            r"^([^;]+);([^;]+);([^;]*);?(.*)$").alias("f")).unnest("f")
        require(path, rows, pl.col("1").is_not_null(), "'<op type>;<op name>;<graph id>;<inputs>;'")
        parts.append(rows.group_by("1", "2", "3", "4").agg(pl.len().alias("launches")))
    if not parts:
        return pl.DataFrame(schema={"side": pl.String, "op_type": pl.String, "short_name": pl.String,
                                    "graph_id": pl.String, "input_shapes": pl.String,
                                    "launches": pl.Int64})
    return (pl.concat(parts).group_by("1", "2", "3", "4").agg(pl.col("launches").sum())
            .select(pl.lit(side).alias("side"), pl.col("1").alias("op_type"),
                    pl.col("2").alias("short_name"), pl.col("3").alias("graph_id"),
                    pl.col("4").str.strip_chars_end(";").alias("input_shapes"),
                    pl.col("launches").cast(pl.Int64))
            .sort("op_type", "short_name", "input_shapes"))


_KERNEL_SUMMARY_COLUMNS = ["name", "type", "op_full_name", "stream_id", "block_dim", "grid_dim"]


def _kernel_summary(path: Path) -> pl.DataFrame:
    """The name-level facts MindSpore's GPU profiler recorded in gpu_activity_data_N.csv."""
    read_lines(path)  # the text checks (UTF-8, NUL bytes, truncation) with offsets and lines
    try:
        frame = pl.read_csv(path, infer_schema=False)
    except (pl.exceptions.PolarsError, UnicodeDecodeError) as exc:
        raise InputError(path, f"not a readable CSV ({str(exc).splitlines()[0]})") from None
    missing = [c for c in _KERNEL_SUMMARY_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(path, f"expected a gpu_activity_data header with {missing}", line=1)
    frame = frame.with_row_index("line_no", offset=2).with_columns(pl.col("line_no").cast(pl.Int64))
    require(path, frame.with_columns(pl.col("stream_id").alias("line")),
            pl.col("stream_id").cast(pl.Int64, strict=False).is_not_null(), "an integer stream_id")
    return frame.select(pl.col("name"), pl.col("type").alias("launch_api"),
                        pl.col("op_full_name").alias("op_name"),
                        pl.col("stream_id").cast(pl.Int64), "block_dim", "grid_dim")


def _step_points(path: Path) -> pl.DataFrame:
    """Step-trace points in ns. Empty file (PyNative) -> no rows."""
    lines = read_lines(path)
    if lines.height == 0:
        return pl.DataFrame(schema={"step": pl.Int64, "kind": pl.String, "op_name": pl.String,
                                    "seq": pl.Int32, "ts_ns": pl.Int64})
    tokens = (lines.with_columns(pl.col("line").str.strip_chars().str.split(" ").alias("token"))
              .with_columns(pl.int_ranges(pl.col("token").list.len()).alias("pos"))
              .explode("token", "pos"))
    if "," in lines["line"][0].split(" ")[0]:
        return _step_points_per_step(path, lines, tokens)
    return _step_points_per_point_op(path, lines, tokens)


_BASE_KINDS = ["step_start", "fp_start", "bp_end", "step_end"]


def _step_points_per_step(path: Path, lines: pl.DataFrame, tokens: pl.DataFrame) -> pl.DataFrame:
    """MindRT/async layout: a line per step, `op,ts` x4 then `op,start,end` per comm op (ns)."""
    require(path, lines, pl.col("line").str.strip_chars().str.split(" ").list.len() >= 4,
            "at least 4 'op,ns' points per step (start, fp, bp, end)")
    parsed = tokens.with_columns(
        pl.col("token").str.extract_groups(rf"^(.+?),({_INT})(?:,({_INT}))?$").alias("g")).unnest("g")
    base_ok = pl.when(pl.col("pos") < 4).then(pl.col("3").is_null()).otherwise(pl.col("3").is_not_null())
    require(path, parsed, pl.col("1").is_not_null() & base_ok,
            "'op,ns' for the 4 base points and 'op,start_ns,end_ns' for communication ops", lines=lines)
    parsed = parsed.with_columns(pl.col("line_no").rank("dense").cast(pl.Int64).alias("step"))
    base = parsed.filter(pl.col("pos") < 4).select(
        "step", pl.col("pos").replace_strict(list(range(4)), _BASE_KINDS, return_dtype=pl.String)
        .alias("kind"), pl.col("1").alias("op_name"), pl.lit(0, pl.Int32).alias("seq"),
        pl.col("2").cast(pl.Int64).alias("ts_ns"))
    comm = parsed.filter(pl.col("pos") >= 4)
    comm_points = pl.concat([
        comm.select("step", pl.lit(kind).alias("kind"), pl.col("1").alias("op_name"),
                    (pl.col("pos") - 4).cast(pl.Int32).alias("seq"), pl.col(col).cast(pl.Int64).alias("ts_ns"))
        for kind, col in (("comm_start", "2"), ("comm_end", "3"))])
    return pl.concat([base, comm_points]).sort("step", "ts_ns")


def _step_points_per_point_op(path: Path, lines: pl.DataFrame, tokens: pl.DataFrame) -> pl.DataFrame:
    """Graph layout: lines FP, BP, ITER_END, then comm ops; `op start,end ...` in 10 ns units.

    Step k starts where ITER_END of step k-1 starts (the first at its FP start), as MindSpore's
    GPU step-trace parser defines it.
    """
    if lines.height < 3:
        raise InputError(path, "expected at least 3 point lines (FP start, BP end, iteration end)",
                         line=lines.height + 1)
    pairs = tokens.filter(pl.col("pos") > 0).with_columns(
        pl.col("token").str.extract_groups(rf"^({_INT}),({_INT})$").alias("g")).unnest("g")
    require(path, pairs, pl.col("1").is_not_null(), "'start,end' pairs in 10 ns units after the op name",
            lines=lines)
    counts = pairs.group_by("line_no").agg(pl.len().alias("n")).sort("line_no")
    if counts["n"].n_unique() != 1:
        odd = counts.filter(pl.col("n") != counts["n"][0])["line_no"][0]
        raise InputError(path, f"every point line must list the same number of steps ({counts['n'][0]})",
                         line=int(odd))
    point = (lines.with_row_index("point").select(
        "line_no", pl.col("point").cast(pl.Int32),
        pl.col("line").str.strip_chars().str.split(" ").list.first().alias("op_name")))
    pairs = pairs.join(point, on="line_no").select(
        "point", "op_name", pl.col("pos").cast(pl.Int64).alias("step"),
        (pl.col("1").cast(pl.Int64) * 10).alias("start"), (pl.col("2").cast(pl.Int64) * 10).alias("end"))
    fp = pairs.filter(pl.col("point") == 0)
    iter_end = pairs.filter(pl.col("point") == 2)
    step_start = pl.concat([
        fp.filter(pl.col("step") == 1).select("step", "op_name", pl.col("start").alias("ts_ns")),
        iter_end.select((pl.col("step") + 1).alias("step"), "op_name", pl.col("start").alias("ts_ns"))
        .filter(pl.col("step") <= fp["step"].max())])
    frames = [
        step_start.select("step", pl.lit("step_start").alias("kind"), "op_name", pl.lit(0, pl.Int32).alias("seq"),
                          "ts_ns"),
        fp.select("step", pl.lit("fp_start").alias("kind"), "op_name", pl.lit(0, pl.Int32).alias("seq"),
                  pl.col("start").alias("ts_ns")),
        pairs.filter(pl.col("point") == 1).select("step", pl.lit("bp_end").alias("kind"), "op_name",
                                                  pl.lit(0, pl.Int32).alias("seq"), pl.col("end").alias("ts_ns")),
        iter_end.select("step", pl.lit("step_end").alias("kind"), "op_name", pl.lit(0, pl.Int32).alias("seq"),
                        pl.col("end").alias("ts_ns")),
    ]
    comm = pairs.filter(pl.col("point") >= 3)
    for kind, col in (("comm_start", "start"), ("comm_end", "end")):
        frames.append(comm.select("step", pl.lit(kind).alias("kind"), "op_name",
                                  (pl.col("point") - 3).cast(pl.Int32).alias("seq"), pl.col(col).alias("ts_ns")))
    return pl.concat(frames).sort("step", "ts_ns")
