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

from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pyarrow as pa

from ..discover import Source
from ..errors import InputError
from ..health import Warn
from ..clocks import mindspore_framework_clock
from .lines import (MAX_JSON_BYTES, MAX_NS, count_rows, drop_duplicate_lines, drop_incomplete, drop_rows, iter_csv_frames,
                    iter_line_frames, load_json, read_capped, read_lines, require)
from .run_info import run_info
from .units import ms_to_ns, us_to_ns

_INT = r"-?\d+"
_NUM = r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
#: Duration unit of each op-timestamp file, as a factor to ns.
#: Op durations are ms on the CPU, µs on the GPU: float ns for the range checks, exact ns for the table.
_OP_NS_PER_UNIT = {"cpu_op_timestamp": 1_000_000.0, "gpu_op_timestamp": 1_000.0}
_OP_DUR_TO_NS = {"cpu_op_timestamp": ms_to_ns, "gpu_op_timestamp": us_to_ns}
_OP_SIDE = {"cpu_op_timestamp": "Host", "gpu_op_timestamp": "Device"}


#: Roles whose file may be empty: MindSpore writes an empty step trace in PyNative mode.
_MAY_BE_EMPTY = {"step_trace"}


def read(source: Source, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """Yield the normalized tables of one MindSpore framework source.

    A file that cannot be read as its format is an error. Records a damaged file still allows are kept;
    what is left out is reported to `warn` (the trace-health ledger): a last line cut short, repeated
    lines, non-finite, out-of-range and negative times and durations.
    """
    for role, path in source.files.items():
        if role not in _MAY_BE_EMPTY and path.stat().st_size == 0:
            raise InputError(path, "empty file (the profiler writes at least one line; was it cut short?)")
    offset = _host_to_cupti_offset(source.files.get("start_time"))
    yield "run_info", _run_info(source, offset)
    for role in ("cpu_op_timestamp", "gpu_op_timestamp"):
        if role in source.files:
            shift = offset if (role == "cpu_op_timestamp" and offset is not None) else 0
            for frame in _op_executions(source.files[role], role, shift, warn):
                yield "host_op", frame.to_arrow()
    if "activity_timestamp" in source.files:
        for frame in _activity_executions(source.files["activity_timestamp"], warn):
            yield "device_exec", frame.to_arrow()
    for role, side in (("cpu_framework", "Host"), ("gpu_framework", "Device")):
        if role in source.files:
            yield "op_meta", _op_signatures(source.files[role], side, warn).to_arrow()
    if "kernel_summary" in source.files:
        yield "kernel_meta", _kernel_summary(source.files["kernel_summary"], warn).to_arrow()
    if "step_trace" in source.files:
        yield "step_point", _step_points(source.files["step_trace"], warn).to_arrow()




def _run_info(source: Source, offset: int | None) -> pa.Table:
    info_path = source.files.get("profiler_info")
    metadata = None
    if info_path is not None:
        info = load_json(info_path, "MindSpore's profiler_info JSON object")
        if not isinstance(info, dict):
            raise InputError(info_path, f"expected MindSpore's profiler_info JSON object, got a JSON {type(info).__name__}")
        metadata = read_capped(info_path, MAX_JSON_BYTES, "MindSpore's profiler_info JSON").decode("utf-8")
    return run_info(source, device_type=source.device_type, framework="mindspore", layout=source.layout,
                    host_to_clock_offset_ns=offset, **mindspore_framework_clock(source.device_type, source.layout, offset),
                    pid=source.pid, metadata_json=metadata)


def _host_to_cupti_offset(path: Path | None) -> int | None:
    """gpu_start_time − host_monotonic_raw_time from start_time_N.txt, or None without the file."""
    if path is None:
        return None
    lines = read_lines(path, allow_blank=False)
    values = lines.with_columns(pl.col("line").str.extract(rf"^\s*([^:]+):\s*({_INT})\s*$", 2)
                                .cast(pl.Int64, strict=False).alias("value"),
                                pl.col("line").str.extract(r"^\s*([^:(]+)", 1).alias("key"))
    require(path, values, pl.col("value").is_not_null(), "'<name>(ns): <integer>'")
    by_key: dict[str, int] = {}
    for key, value, line in zip(values["key"].str.strip_chars().to_list(), values["value"].to_list(),
                                values["line_no"].to_list()):
        if not 0 <= value <= MAX_NS:
            raise InputError(path, f"{key}: {value} ns is out of range (0 to {MAX_NS})", line=line)
        if by_key.setdefault(key, value) != value:
            raise InputError(path, f"{key} is given twice, as {by_key[key]} and {value}", line=line)
    host, gpu = by_key.get("host_monotonic_raw_time"), by_key.get("gpu_start_time")
    if host is None or gpu is None:
        raise InputError(path, "expected host_monotonic_raw_time(ns) and gpu_start_time(ns) lines")
    return gpu - host


def _op_executions(path: Path, role: str, shift_ns: int, warn: Warn) -> Iterator[pl.DataFrame]:
    """One row per op execution from a `name;kind;start,dur[,tid] ...` file.

    Fields are split and cast column-wise; a field that is missing or not a number becomes
    null, and the first null names its line. Executions with a non-finite, negative or
    out-of-range time or duration, and repeats of an execution, are left out and reported.
    """
    with_tid = role == "cpu_op_timestamp"
    expected_exec = "start_ns,dur,tid" if with_tid else "start_ns,dur"
    for lines in iter_line_frames(path, warn=warn, allow_blank=False):
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
        execs = execs.with_columns(pl.col("dur") * _OP_NS_PER_UNIT[role])  # float ns, for the checks
        execs = _checked_spans(execs, path, warn, "host_op", "op executions", shift_ns,
                               pl.concat_str("op_name", pl.lit(";"), "exec"))
        execs = drop_rows(execs, ~pl.struct("op_name", "start_ns", "dur", "tid").is_first_distinct(), warn, path,
                          "duplicate_record", "repeated op executions (same op, start and duration)",
                          tables="host_op", example=pl.concat_str("op_name", pl.lit(";"), "exec"))
        execs = drop_rows(execs, pl.col("start_ns") < pl.col("start_ns").shift(1).over("line_no"), warn, path,
                          "clock", "op executions that start before the execution before them on their line (the "
                          "profiler writes an op's executions in time order: a damaged time)", tables="host_op",
                          example=pl.concat_str("op_name", pl.lit(";"), "exec"))
        count_rows(execs, pl.col("dur") == 0, warn, path, "out_of_range", "op executions last 0 ns, shorter than the "
                   "file's time resolution (real files hold them)", tables="host_op",
                   example=pl.concat_str("op_name", pl.lit(";"), "exec"))
        yield execs.select(
            pl.lit(_OP_SIDE[role]).alias("side"),
            "tid",
            "op_name",
            pl.col("start_ns") + shift_ns,
            _OP_DUR_TO_NS[role](pl.col("field_1")).alias("dur_ns"),
        )


def _checked_spans(frame: pl.DataFrame, path: Path, warn: Warn, table: str, what: str, shift_ns: int,
                   example: pl.Expr) -> pl.DataFrame:
    """`frame` (columns start_ns: Int64 before `shift_ns`, dur: Float64 ns) without the rows whose duration is
    not finite, negative or beyond MAX_NS, or whose shifted start lies outside 0..MAX_NS; each kind reported."""
    checks = [
        ("non_finite", ~pl.col("dur").is_finite(), f"{what} with a non-finite duration"),
        ("negative_duration", pl.col("dur") < 0, f"{what} with a negative duration"),
        ("out_of_range", pl.col("dur") > MAX_NS, f"{what} with a duration beyond {MAX_NS} ns"),
        ("out_of_range", ~(pl.col("start_ns").is_between(0, MAX_NS)
                           & pl.col("start_ns").is_between(-shift_ns, MAX_NS - shift_ns)),
         f"{what} with a start time outside 0..{MAX_NS} ns"),
    ]
    for check, bad, text in checks:
        frame = drop_rows(frame, bad, warn, path, check, text, tables=table, example=example)
    return frame


def _activity_executions(path: Path, warn: Warn) -> Iterator[pl.DataFrame]:
    """One row per kernel/memcpy/memset execution; the name may hold ';', so split from the right.
    Repeated lines and executions with a bad time or duration are left out and reported. An execution that starts
    before the one before it of the same kernel (the profiler writes a kernel's executions in time order) is counted
    and kept (clock, kept): lines moved change no number; a damaged time moves one execution."""
    last = pl.DataFrame(schema={"1": pl.String, "last_start": pl.Int64})  # per kernel, its last start so far
    for lines in iter_line_frames(path, warn=warn, allow_blank=False):
        rows = lines.with_columns(pl.col("line").str.extract_groups(
            rf"^(.+);({_INT});({_INT});({_NUM})$").alias("f")).unnest("f")
        require(path, rows, pl.col("1").is_not_null(), "'<kernel name>;<stream>;<start_ns>;<dur_us>'")
        rows = rows.with_columns(pl.col("2").cast(pl.Int64, strict=False).alias("stream_id"),
                                 pl.col("3").cast(pl.Int64, strict=False).alias("start_ns"),
                                 (pl.col("4").cast(pl.Float64, strict=False) * 1_000.0).alias("dur"))  # for the checks
        require(path, rows, pl.col("stream_id").is_not_null() & pl.col("start_ns").is_not_null(),
                "a stream id and a start time within the 64-bit integer range")
        rows = _checked_spans(rows, path, warn, "device_exec", "kernel executions", 0, pl.col("line"))
        rows = drop_duplicate_lines(rows, warn, path, "kernel executions", tables="device_exec")
        ordered = rows.with_row_index("order").join(last, on="1", how="left").sort("order")
        count_rows(ordered, pl.col("start_ns") < pl.coalesce(pl.col("start_ns").shift(1).over("1"), "last_start"),
                   warn, path, "clock", "kernel executions start before the execution before them of the same kernel "
                   "(the profiler writes a kernel's executions in time order: lines moved, or a damaged time)",
                   tables="device_exec")
        count_rows(rows, pl.col("dur") == 0, warn, path, "out_of_range", "kernel executions last 0 ns, shorter "
                   "than the file's time resolution (real files hold them)", tables="device_exec")
        last = pl.concat([last, rows.group_by("1").agg(pl.col("start_ns").last().alias("last_start"))]).unique(
            "1", keep="last", maintain_order=True)
        name = pl.col("1")
        yield rows.select(
            "stream_id",
            pl.when(name.str.starts_with("Memcpy")).then(pl.lit("memcpy"))
            .when(name.str.starts_with("MemorySet") | name.str.starts_with("Memset")).then(pl.lit("memset"))
            .otherwise(pl.lit("kernel")).alias("kind"),
            name.alias("name"),
            pl.lit(None, pl.Int64).alias("correlation"),
            "start_ns",
            us_to_ns(pl.col("4")).alias("dur_ns"),
        )


def _op_signatures(path: Path, side: str, warn: Warn) -> pl.DataFrame:
    """Distinct (type, short name, graph, shapes) launch signatures with their launch counts (a line per
    launch: repeated lines are repeated launches, not damage)."""
    parts = []
    for lines in iter_line_frames(path, warn=warn, allow_blank=False):
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


def _kernel_summary(path: Path, warn: Warn) -> pl.DataFrame:
    """The name-level facts MindSpore's GPU profiler recorded in gpu_activity_data_N.csv (one row per
    kernel name: a repeated row is left out and reported)."""
    chunks = []  # read in chunks of whole lines (the text checks: UTF-8, NUL bytes, a cut last row dropped)
    for chunk in iter_csv_frames(path, warn):
        missing = [c for c in _KERNEL_SUMMARY_COLUMNS if c not in chunk.columns]
        if missing:
            raise InputError(path, f"expected a gpu_activity_data header with {missing}", line=1)
        chunk = chunk.select(*_KERNEL_SUMMARY_COLUMNS, pl.col("line").alias("line_no"))
        require(path, chunk.with_columns(pl.col("stream_id").fill_null("").alias("line")),
                pl.col("stream_id").cast(pl.Int64, strict=False).is_not_null(), "an integer stream_id")
        chunks.append(chunk)
    frame = pl.concat(chunks)
    frame = drop_rows(frame, ~pl.struct(_KERNEL_SUMMARY_COLUMNS).is_first_distinct(), warn, path, "duplicate_record",
                      "repeated kernel summary rows", tables="kernel_meta", example=pl.col("name"))
    frame = drop_incomplete(frame, "kernel_meta", warn, path)
    return frame.select(pl.col("name"), pl.col("type").alias("launch_api"),
                        pl.col("op_full_name").alias("op_name"),
                        pl.col("stream_id").cast(pl.Int64), "block_dim", "grid_dim")


def _step_points(path: Path, warn: Warn) -> pl.DataFrame:
    """Step-trace points in ns. Empty file (PyNative) -> no rows; a file of blank lines too, reported."""
    lines = read_lines(path, warn=warn)
    if lines.height == 0:
        if path.stat().st_size:
            warn(f"{path}: only blank lines; read as an empty step trace (no steps)", check="malformed_record",
                 action="kept", path=path, line=1, tables="step_point")
        return pl.DataFrame(schema={"step": pl.Int64, "kind": pl.String, "op_name": pl.String,
                                    "seq": pl.Int32, "ts_ns": pl.Int64})
    lines = drop_duplicate_lines(lines, warn, path, "step-trace lines", tables="step_point")
    tokens = (lines.with_columns(pl.col("line").str.strip_chars().str.split(" ").alias("token"))
              .with_columns(pl.int_ranges(pl.col("token").list.len()).alias("pos"))
              .explode("token", "pos"))
    if "," in lines["line"][0].split(" ")[0]:
        points = _step_points_per_step(path, lines, tokens, warn)
    else:
        points = _step_points_per_point_op(path, lines, tokens, warn)
    _check_point_order(path, points, warn)
    return points


def _check_point_order(path: Path, points: pl.DataFrame, warn: Warn) -> None:
    """Report (and keep) steps whose base points are out of order (start <= fp <= bp <= end), and steps
    whose start comes before the previous step's: lines moved in the file give such steps."""
    base = (points.filter(pl.col("seq") == 0).group_by("step")
            .agg(*[pl.col("ts_ns").filter(pl.col("kind") == kind).first().alias(kind) for kind in _BASE_KINDS])
            .sort("step"))
    order = pl.lit(False)
    for earlier, later in zip(_BASE_KINDS, _BASE_KINDS[1:]):
        order = order | (pl.col(earlier) > pl.col(later)).fill_null(False)
    outside = (points.join(base.select("step", "step_start", "step_end"), on="step")
               .filter(~pl.col("ts_ns").is_between(pl.col("step_start"), pl.col("step_end")).fill_null(True))
               .select("step").unique())
    order = order | pl.col("step").is_in(outside["step"].implode())
    bad = base.filter(order | (pl.col("step_start") < pl.col("step_start").shift(1)).fill_null(False))
    if bad.height:
        warn(f"{path}: {bad.height} steps have points out of order (start, FP, BP, communication, end, within the "
             "step, and steps in time order), "
             f"the first step {bad['step'][0]}; kept as written", check="malformed_record", action="kept",
             rows=bad.height, path=path, tables="step_point")


_BASE_KINDS = ["step_start", "fp_start", "bp_end", "step_end"]


def _step_points_per_step(path: Path, lines: pl.DataFrame, tokens: pl.DataFrame, warn: Warn) -> pl.DataFrame:
    """MindRT/async layout: a line per step, `op,ts` x4 then `op,start,end` per comm op (ns). A step with
    a time beyond MAX_NS or that ends before it starts is left out and reported; so is a communication
    span that ends before it starts."""
    require(path, lines, pl.col("line").str.strip_chars().str.split(" ").list.len() >= 4,
            "at least 4 'op,ns' points per step (start, fp, bp, end)")
    parsed = tokens.with_columns(
        pl.col("token").str.extract_groups(rf"^(.+?),({_INT})(?:,({_INT}))?$").alias("g")).unnest("g")
    base_ok = pl.when(pl.col("pos") < 4).then(pl.col("3").is_null()).otherwise(pl.col("3").is_not_null())
    require(path, parsed, pl.col("1").is_not_null() & base_ok,
            "'op,ns' for the 4 base points and 'op,start_ns,end_ns' for communication ops", lines=lines)
    parsed = parsed.with_columns(pl.col("2").cast(pl.Int64, strict=False).alias("t0"),
                                 pl.col("3").cast(pl.Int64, strict=False).alias("t1"))
    in_range = (pl.col("t0").is_between(0, MAX_NS).fill_null(False)
                & (pl.col("3").is_null() | pl.col("t1").is_between(0, MAX_NS).fill_null(False))).all().over("line_no")
    parsed = drop_rows(parsed, ~in_range & (pl.col("pos") == 0), warn, path, "out_of_range",
                       f"steps with a time outside 0..{MAX_NS} ns", tables="step_point",
                       example=pl.col("token")).filter(in_range)
    start = pl.col("t0").filter(pl.col("pos") == 0).first().over("line_no")
    end = pl.col("t0").filter(pl.col("pos") == 3).first().over("line_no")
    parsed = drop_rows(parsed, (end < start) & (pl.col("pos") == 0), warn, path, "negative_duration",
                       "steps that end before they start", tables="step_point", example=pl.col("token"))
    parsed = parsed.filter((end >= start).fill_null(True))
    parsed = drop_rows(parsed, (pl.col("pos") >= 4) & (pl.col("t1") < pl.col("t0")), warn, path, "negative_duration",
                       "communication spans that end before they start", tables="step_point",
                       example=pl.col("token"))
    if not parsed.height:
        raise InputError(path, "no step is left once the damaged ones are left out")
    parsed = parsed.with_columns(pl.col("line_no").rank("dense").cast(pl.Int64).alias("step"))
    base = parsed.filter(pl.col("pos") < 4).select(
        "step", pl.col("pos").replace_strict(list(range(4)), _BASE_KINDS, return_dtype=pl.String)
        .alias("kind"), pl.col("1").alias("op_name"), pl.lit(0, pl.Int32).alias("seq"),
        pl.col("t0").alias("ts_ns"))
    comm = parsed.filter(pl.col("pos") >= 4)
    comm_points = pl.concat([
        comm.select("step", pl.lit(kind).alias("kind"), pl.col("1").alias("op_name"),
                    (pl.col("pos") - 4).cast(pl.Int32).alias("seq"), pl.col(col).alias("ts_ns"))
        for kind, col in (("comm_start", "t0"), ("comm_end", "t1"))])
    return pl.concat([base, comm_points]).sort("step", "ts_ns")


def _step_points_per_point_op(path: Path, lines: pl.DataFrame, tokens: pl.DataFrame, warn: Warn) -> pl.DataFrame:
    """Graph layout: lines FP, BP, ITER_END, then comm ops; `op start,end ...` in 10 ns units.

    Step k starts where ITER_END of step k-1 starts (the first at its FP start), as MindSpore's
    GPU step-trace parser defines it. A time beyond MAX_NS is an error (a line holds one point of every
    step); a step with a pair that ends before it starts is left out and reported.
    """
    if lines.height < 3:
        raise InputError(path, "expected at least 3 point lines (FP start, BP end, iteration end)",
                         line=lines.height + 1)
    pairs = tokens.filter(pl.col("pos") > 0).with_columns(
        pl.col("token").str.extract_groups(rf"^({_INT}),({_INT})$").alias("g")).unnest("g")
    require(path, pairs, pl.col("1").is_not_null(), "'start,end' pairs in 10 ns units after the op name",
            lines=lines)
    pairs = pairs.with_columns(pl.col("1").cast(pl.Int64, strict=False).alias("t0"),
                               pl.col("2").cast(pl.Int64, strict=False).alias("t1"))
    require(path, pairs, pl.col("t0").is_between(0, MAX_NS // 10) & pl.col("t1").is_between(0, MAX_NS // 10),
            f"times in 10 ns units within 0..{MAX_NS // 10}", lines=lines)
    counts = pairs.group_by("line_no").agg(pl.len().alias("n")).sort("line_no")
    if counts["n"].n_unique() != 1:
        odd = counts.filter(pl.col("n") != counts["n"][0])["line_no"][0]
        raise InputError(path, f"every point line must list the same number of steps ({counts['n'][0]})",
                         line=int(odd))
    point = (lines.with_row_index("point").select(
        "line_no", pl.col("point").cast(pl.Int32),
        pl.col("line").str.strip_chars().str.split(" ").list.first().alias("op_name")))
    pairs = pairs.join(point, on="line_no").select(
        "line_no", "token", "point", "op_name", pl.col("pos").cast(pl.Int64).alias("step"),
        (pl.col("t0") * 10).alias("start"), (pl.col("t1") * 10).alias("end"))
    backwards = pairs.filter(pl.col("end") < pl.col("start"))
    bad_steps = backwards["step"].unique()
    if backwards.height:
        drop_rows(backwards, pl.col("point") == pl.col("point").min(), warn, path, "negative_duration",
                  "steps with a point span that ends before it starts", tables="step_point",
                  example=pl.col("token"))
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
    points = pl.concat(frames).filter(~pl.col("step").is_in(bad_steps.implode()))
    if not points.height:
        raise InputError(path, "no step is left once the damaged ones are left out")
    return points.sort("step", "ts_ns")
