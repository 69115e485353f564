"""msprof summary CSVs -> frames for the msprof export readers.

* `op_summary_*.csv` (era D `device_N/summary/`, era E `mindstudio_profiler_output/`) and era F's
  `ASCEND_PROFILER_OUTPUT/kernel_details.csv` (the same task rows under other column names): one
  row per task: device_exec rows, and task_desc rows that give each op its type and task type
  (formats-ascend-minddata.md §2.10). kernel_details (MindSpore 2.5+, torch_npu; formats-ascend-today.md §2.1):
  its rows of core HCCL / COMMUNICATION are whole HCCL ops (N/A ids), device_exec kind 'sync' without an op;
  every other row is an op's task (DSA_SQE and Level0's N/A cores included); Level0's 8 columns have no task or
  stream ids (no task_desc then); columns are found by name (S2's leading Device_id); Model ID 4294967295 is no
  model (task_desc.graph_id null). Both CSVs' Input/Output Shapes, Data Types and Formats go to task_desc (the
  first execution of a task's op, as its op type).
* `step_trace_*.csv`: one row per iteration: step points, with `(Reduce Start, Reduce Duration)`
  column pairs as communication spans. Rows of model 4294967295 are MindSpore's own step
  markers, not iterations, and are skipped.

Times are decimal µs strings; they are parsed exactly (as decimals) into integer ns. `N/A`
means missing. A CSV is read in chunks of whole lines (lines.iter_csv_frames) and each chunk is turned
into the typed columns the tables need at once, so an op_summary of hundreds of MB is never held as
text or as a frame of all its string columns. A value that is not a number is an error naming its file and line; rows a damaged
file still allows are kept, and what is left out is reported to `warn`: a cut last row, repeated
rows, rows without a time, non-finite, out-of-range or negative times and durations.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import polars as pl

from ..errors import InputError
from ..health import Warn
from . import msprof_pmu
from .lines import csv_row, drop_rows, iter_csv_frames
from .units import MAX_US, us_text_to_ns, us_to_ns

#: Task types that run a framework op; the rest (notify, event, memcpy of the runtime) are sync tasks.
OP_TASK_TYPES = ("AI_CORE", "AI_CPU", "AI_VECTOR_CORE", "MIX_AIC", "MIX_AIV", "DSA_SQE")
#: kernel_details' Accelerator Core of its communication rows (whole HCCL ops: torch_npu 2.1 `HCCL`, later
#: `COMMUNICATION`); every other row is a compute op's task, also where the core is N/A (Level0's 8 columns).
COMM_CORES = ("HCCL", "COMMUNICATION")
#: Model ID of a task run outside any model (eager mode): no graph.
NO_MODEL = 4294967295
_MARKER_MODEL = "4294967295"


def _us_float(column: str) -> pl.Expr:
    return pl.col(column).str.strip_chars().cast(pl.Float64, strict=False)


def _typed_us(column: str) -> list[pl.Expr]:
    """A µs column as `column` (integer ns, units.us_to_ns), `column__f` (its float, for the range checks) and
    `column__bad` (the text where it was present but did not parse, else null)."""
    ns = us_to_ns(pl.col(column))
    return [ns.alias(column), _us_float(column).alias(f"{column}__f"),
            pl.when(pl.col(column).is_not_null() & ns.is_null()).then(pl.col(column)).alias(f"{column}__bad")]


def _typed_int(column: str) -> list[pl.Expr]:
    """An integer column as `column` (Int64) and `column__bad` (the text where it did not parse)."""
    value = pl.col(column).cast(pl.Int64, strict=False)
    return [value.alias(column),
            pl.when(pl.col(column).is_not_null() & value.is_null()).then(pl.col(column)).alias(f"{column}__bad")]


def _missing(column: str) -> pl.Expr:
    """True where a column typed by _typed_us / _typed_int was empty or N/A in the file."""
    return pl.col(column).is_null() & pl.col(f"{column}__bad").is_null()


def _drop_bad_times(frame: pl.DataFrame, warn: Warn, columns: list[str], tables: str, example: str,
                    durations: tuple[str, ...] = ()) -> pl.DataFrame:
    """`frame` without the rows whose time columns (with their `__f` floats) are non-finite, beyond MAX_NS or
    negative (a negative duration is a negative_duration), each kind one ledger row per file."""
    checks = [("non_finite", lambda c: ~pl.col(f"{c}__f").is_finite(), "a non-finite"),
              ("out_of_range", lambda c: pl.col(f"{c}__f").abs() > MAX_US, "an out-of-range"),
              ("negative_duration", lambda c: (pl.col(f"{c}__f") < 0) if c in durations else pl.lit(False), "a negative"),
              ("out_of_range", lambda c: (pl.col(f"{c}__f") < 0) if c not in durations else pl.lit(False), "a negative")]
    for check, test, adjective in checks:
        for column in columns:
            for path in frame["file"].unique(maintain_order=True).to_list():
                frame = drop_rows(frame, (pl.col("file") == path) & test(column), warn, path, check,
                                  f"rows with {adjective} {column!r}", line_column="line", tables=tables,
                                  example=pl.col(example))
    return frame


def _count_kept(frame: pl.DataFrame, bad: pl.Expr, name: str, warn: Warn, check: str, what: str) -> None:
    """Count the task rows where `bad` holds, kept as recorded: one ledger row per file with the first one's line."""
    hits = frame.filter(bad.fill_null(False)).group_by("file", maintain_order=True).agg(
        pl.len().alias("rows"), pl.col("line").first(), pl.col(name).first().alias("example"))
    for path, rows, line, example in hits.iter_rows():
        warn(f"{path}:{line}: {rows} {what}; kept as recorded", check=check, action="kept", rows=rows, path=path,
             line=line, example=example, tables="device_exec")


def _count_zero_length(frame: pl.DataFrame, duration: str, name: str, warn: Warn) -> None:
    """Tasks of 0 µs are legitimate (shorter than the file's µs resolution; real exports hold them, mostly sync and
    notify tasks): counted, kept."""
    _count_kept(frame, pl.col(duration) == 0, name, warn, "out_of_range", "tasks last 0 ns, shorter than the file's "
                "time resolution (real exports hold them)")


def _count_backwards(frame: pl.DataFrame, stream: str, start: str, name: str, warn: Warn) -> None:
    """Task rows that start before the row before them on their stream (in file order): msprof writes a stream's
    tasks in time order. The rows are read by their times, so lines moved change no number, and a damaged time
    moves its one task: counted, kept (clock)."""
    _count_kept(frame, pl.col(start) < pl.col(start).shift(1).over("file", stream), name, warn, "clock",
                "tasks start before the task before them on their stream (msprof writes a stream's tasks in time "
                "order: rows moved, or a damaged time)")


_KEYS = ["__key0", "__key1"]


def _read(paths: list[Path], required: list[str], warn: Warn, typed: Callable[[list[str]], list[pl.Expr]],
          side: Callable[[pl.DataFrame, list[str]], pl.DataFrame] | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The rows of the CSVs, each chunk turned into the columns `typed` (given the header) selects, with the
    file and line of each row; N/A is null. A cut last row is dropped and reported; a repeated row (the same
    text in every column as an earlier row of the file, in any chunk: compared by a 128-bit hash of the row)
    is left out and reported. With `side`, the frames it makes of each chunk (given the header; rows keyed
    by `line`) are concatenated with their `file` as the second value (else an empty frame); they keep rows
    the first frame drops: the caller joins on (file, line)."""
    frames, sides = [], []
    for path in paths:
        chunks, header = [], None
        for chunk in iter_csv_frames(path, warn, null_values=["N/A"], what="msprof CSV"):
            if header is None:
                header = [c for c in chunk.columns if c != "line"]
                missing = [c for c in required if c not in header]
                if missing:
                    raise InputError(path, f"not an msprof summary CSV of this kind (missing columns {missing})",
                                     line=1)
            keys = [pl.struct(header).hash(seed).alias(key) for seed, key in enumerate(_KEYS)]
            chunks.append(chunk.select(*typed(header), "line", *keys))
            if side is not None:
                sides.append(side(chunk, header).with_columns(pl.lit(str(path), pl.Categorical).alias("file")))
        frame = pl.concat(chunks)
        # rows sharing the first key are few: the second key is compared among them only (a struct of both
        # keys over all rows would cost several times the typed columns)
        shared = frame.filter(pl.col(_KEYS[0]).is_duplicated()).select("line", *_KEYS)
        repeated_lines = shared.filter(~pl.struct(_KEYS).is_first_distinct())["line"]
        repeated = pl.col("line").is_in(repeated_lines.implode())
        first = repeated_lines.min()
        example = None
        if first is not None:  # the example is the row's text, read again from the file
            row = csv_row(path, int(first), null_values=["N/A"])
            example = ",".join("N/A" if row.get(c) is None else str(row[c]) for c in header[:4])
        frame = drop_rows(frame, repeated, warn, path, "duplicate_record",
                          "repeated rows (the same values as an earlier row)", line_column="line",
                          example=pl.lit(example))
        frames.append(frame.drop(_KEYS).with_columns(pl.lit(str(path), pl.Categorical).alias("file")))
    return pl.concat(frames, how="diagonal_relaxed"), (pl.concat(sides) if sides else pl.DataFrame())


def _check_numbers(frame: pl.DataFrame, columns: list[str]) -> None:
    """A value that was present but did not parse (its `__bad` text) is an error naming its file and line."""
    for column in columns:
        bad = frame.filter(pl.col(f"{column}__bad").is_not_null())
        if bad.height:
            raise InputError(bad["file"][0], f"column {column!r}: expected a number, got {bad[f'{column}__bad'][0]!r}",
                             line=bad["line"][0])


#: Column names of the task CSVs: op_summary (eras D/E) and kernel_details (era F).
OP_SUMMARY_COLUMNS = {"task_id": "Task ID", "stream_id": "Stream ID", "name": "Op Name", "op_type": "OP Type",
                      "task_type": "Task Type", "start": "Task Start Time(us)", "duration": "Task Duration(us)",
                      "block_dim": "Block Num", "model": "Model ID"}
KERNEL_DETAILS_COLUMNS = {"task_id": "Task ID", "stream_id": "Stream ID", "name": "Name", "op_type": "Type",
                          "task_type": "Accelerator Core", "start": "Start Time(us)", "duration": "Duration(us)",
                          "block_dim": "Block Dim", "model": "Model ID"}


#: The tensor description columns of both task CSVs (task_desc's input_shapes ... output_formats), where present.
TENSOR_COLUMNS = {"input_shapes": "Input Shapes", "input_types": "Input Data Types", "input_formats": "Input Formats",
                  "output_shapes": "Output Shapes", "output_types": "Output Data Types",
                  "output_formats": "Output Formats"}


def _tensor_column(header: list[str], ours: str) -> pl.Expr:
    """A tensor description column as its text without the quotes kernel_details triples around each cell (a cell
    written as three quotes, 32,64, three quotes reads as "32,64"), held categorical (a few distinct values over many
    rows); null where the file has no such column."""
    theirs = TENSOR_COLUMNS[ours]
    if theirs not in header:
        return pl.lit(None, pl.Categorical).alias(ours)
    return pl.col(theirs).str.strip_chars().str.strip_chars('"').cast(pl.Categorical).alias(ours)


def read_op_summary(paths: list[Path], names: dict[str, str],
                    warn: Warn) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(device_exec rows, task_desc rows, device_exec_metric rows) of task CSVs whose columns are called
    `names`. Rows without a start or duration, or with a bad one, are left out and reported, with their PMU
    metric values (msprof_pmu: unpivoted chunk by chunk, malformed values left out and reported)."""
    c = names
    metric_maps: dict[tuple[str, ...], pl.DataFrame] = {}

    def metrics_of(chunk: pl.DataFrame, header: list[str]) -> pl.DataFrame:
        mapping = metric_maps.setdefault(tuple(header), msprof_pmu.metric_columns(header))
        return msprof_pmu.unpivot_metrics(chunk, mapping)

    headers: list[list[str]] = []

    def typed(header: list[str]) -> list[pl.Expr]:
        headers.append(header)
        ids = [e for key in ("stream_id", "task_id") for e in (
            _typed_int(c[key]) if c[key] in header else  # kernel_details at Level0: no task or stream ids
            [pl.lit(None, pl.Int64).alias(c[key]), pl.lit(None, pl.String).alias(f"{c[key]}__bad")])]
        return [pl.col(c["name"], c["op_type"], c["task_type"]), *ids, *_typed_us(c["start"]),
                *_typed_us(c["duration"]),
                *[pl.col(c[key]).cast(pl.Int64, strict=False) for key in ("block_dim", "model") if c[key] in header],
                *[_tensor_column(header, ours) for ours in TENSOR_COLUMNS]]

    ids_optional = c is KERNEL_DETAILS_COLUMNS
    frame, long = _read(paths, [*([] if ids_optional else [c["task_id"], c["stream_id"]]), c["name"], c["op_type"],
                                c["task_type"], c["start"], c["duration"]], warn, typed, metrics_of)
    tables = "device_exec,task_desc"
    for path in frame["file"].unique(maintain_order=True).to_list():
        frame = drop_rows(frame, (pl.col("file") == path) & (_missing(c["start"]) | _missing(c["duration"])
                                                             | pl.col(c["name"]).is_null()),
                          warn, path, "malformed_record", "task rows without a name, start time or duration (N/A or empty)",
                          line_column="line", tables=tables, example=pl.col(c["name"]).fill_null("N/A"))
    frame = _drop_bad_times(frame, warn, [c["start"], c["duration"]], tables, c["name"], durations=(c["duration"],))
    _check_numbers(frame, [c["stream_id"], c["task_id"], c["start"], c["duration"]])
    _count_zero_length(frame, c["duration"], c["name"], warn)
    _count_backwards(frame, c["stream_id"], c["start"], c["name"], warn)
    metrics = _exec_metrics(long, frame.select("file", "line", stream_id=c["stream_id"],
                                               task_id=c["task_id"], start_ns=c["start"]),
                            pl.concat(list(metric_maps.values())).unique("column"), warn)
    del long
    parsed = frame
    core = frame[c["task_type"]].str.replace_all(" ", "_").str.to_uppercase()
    is_op = (~core.is_in(COMM_CORES)).fill_null(True) if ids_optional else core.is_in(OP_TASK_TYPES)
    execs = pl.DataFrame({
        "stream_id": parsed[c["stream_id"]], "name": frame[c["name"]], "task_id": parsed[c["task_id"]],
        "start_ns": parsed[c["start"]], "dur_ns": parsed[c["duration"]], "is_op": is_op,
    }).select(
        "stream_id", pl.when("is_op").then(pl.lit("task")).otherwise(pl.lit("sync")).alias("kind"), "name",
        "task_id", pl.when("is_op").then(pl.col("name")).alias("op_name"), "start_ns", "dur_ns",
    )
    optional = {key: frame[c[key]] if c[key] in frame.columns else None for key in ("block_dim", "model")}
    if optional["model"] is not None:
        optional["model"] = optional["model"].replace(NO_MODEL, None)
    tasks = pl.DataFrame({
        "op_name": frame[c["name"]], "task_id": parsed[c["task_id"]], "stream_id": parsed[c["stream_id"]],
        "block_dim": optional["block_dim"], "graph_id": optional["model"], "op_type": frame[c["op_type"]],
        "task_type": frame[c["task_type"]], **{ours: frame[ours].cast(pl.String) for ours in TENSOR_COLUMNS},
        "file": frame["file"], "line": frame["line"],
    }).filter(is_op)
    del frame, parsed, is_op  # the typed rows: what follows needs only execs and tasks (peak memory)
    execs = execs.sort("start_ns", "stream_id", "task_id")
    if not all(c["task_id"] in header and c["stream_id"] in header for header in headers):
        tasks = tasks.clear()  # Level0's kernel_details: no ids to key an op's type by
    for path in tasks["file"].unique(maintain_order=True).to_list():
        tasks = drop_rows(tasks, (pl.col("file") == path) & (pl.col("task_id").is_null() | pl.col("stream_id").is_null()),
                          warn, path, "malformed_record", "op task rows without a task or stream id (N/A or empty); "
                          "their op types", line_column="line", tables="task_desc", example=pl.col("op_name"))
    tasks = tasks.drop("file", "line").unique(["op_name", "task_id", "stream_id"], keep="first", maintain_order=True)
    return execs, tasks.with_row_index("seq").with_columns(pl.col("seq").cast(pl.Int64)), metrics


def _exec_metrics(long: pl.DataFrame, rows: pl.DataFrame, mapping: pl.DataFrame, warn: Warn) -> pl.DataFrame:
    """device_exec_metric rows: the metric values (file, line, column, value, bad) of the task rows kept
    (`rows`: file, line and the execution key), malformed values left out and reported."""
    if not long.height:
        return pl.DataFrame()
    kept = long.join(rows, on=["file", "line"], how="inner")
    kept = msprof_pmu.report_bad_metrics(kept, warn)
    mapping = mapping.select(pl.col("column").cast(pl.Categorical), "core", "metric", "unit")
    return (kept.join(mapping, on="column", how="left")
            .sort("start_ns", "stream_id", "task_id", "line", maintain_order=True)
            .select("stream_id", "task_id", "start_ns", "core", "metric", "value", "unit"))


def read_step_trace(paths: list[Path], warn: Warn) -> pl.DataFrame:
    """step_point rows of step_trace CSVs (repeated Reduce Start / Reduce Duration column pairs). A cut last
    row, repeated rows, rows without an iteration id, end or time, and rows or spans with bad times are
    left out and reported."""
    base = ["Iteration ID", "FP Start(us)", "BP End(us)", "Iteration End(us)", "Iteration Time(us)"]
    frames = []
    for path in paths:
        header: list[str] | None = None
        for chunk in iter_csv_frames(path, warn, has_header=False, null_values=["N/A"], what="msprof CSV"):
            columns = [c for c in chunk.columns if c != "line"]
            if header is None:  # the first row of the first chunk (column names repeat: read by position)
                header = [str(v) for v in chunk.select(columns).row(0)]
                if any(c not in header for c in base):
                    raise InputError(path, f"not an msprof step_trace CSV (expected columns {base})", line=1)
                chunk = chunk.slice(1)
            reduce_starts = [i for i, c in enumerate(header) if c == "Reduce Start(us)"]
            if "Model ID" in header:
                chunk = chunk.filter(pl.col(columns[header.index("Model ID")]).ne_missing(_MARKER_MODEL))
            # Reduce Start / Reduce Duration pairs, flattened: [start_0, dur_0, start_1, dur_1, ...]
            reduces = (pl.concat_list([columns[j] for i in reduce_starts for j in (i, i + 1)]) if reduce_starts
                       else pl.lit([], dtype=pl.List(pl.String)))
            frames.append(chunk.select(pl.lit(str(path)).alias("file"), "line",
                                       *[pl.col(columns[header.index(c)]).alias(name)
                                         for c, name in zip(base, ("step", "fp", "bp", "end", "time"))],
                                       reduces.alias("reduces")))
    frame = pl.concat(frames) if frames else pl.DataFrame()
    if not frame.height:
        return pl.DataFrame()
    tables = "step_point"
    for path in frame["file"].unique(maintain_order=True).to_list():
        frame = drop_rows(frame, (pl.col("file") == path) & pl.any_horizontal(pl.col("step", "end", "time").is_null()),
                          warn, path, "malformed_record", "iteration rows without an iteration id, end or time (N/A)",
                          line_column="line", tables=tables, example=pl.col("step"))
        frame = drop_rows(frame, (pl.col("file") == path) & ~pl.struct("step", "fp", "bp", "end", "time", "reduces")
                          .is_first_distinct(), warn, path, "duplicate_record", "repeated iteration rows",
                          line_column="line", tables=tables, example=pl.col("step"))
    frame = frame.with_columns(pl.col("step").alias("step__raw"), *_typed_int("step"),
                               *[e for c in ("fp", "bp", "end", "time") for e in _typed_us(c)])
    frame = _drop_bad_times(frame, warn, ["fp", "bp", "end", "time"], tables, "step__raw", durations=("time",))
    _check_numbers(frame, ["step", "fp", "bp", "end", "time"])
    parsed = frame.select("step", "fp", "bp", "end", "time")
    points = []
    bad_spans: list[tuple[str, int, str]] = []
    backwards = [(path, line, step) for (step, _, _, end, time), path, line in
                 zip(parsed.iter_rows(), frame["file"].to_list(), frame["line"].to_list()) if end - time < 0]
    if backwards:
        warn(f"{backwards[0][0]}, line {backwards[0][1]}: {len(backwards)} iterations whose time is longer than "
             "their end (they would start before 0); left out", check="out_of_range", action="dropped",
             rows=len(backwards), path=backwards[0][0], line=backwards[0][1], example=f"iteration {backwards[0][2]}",
             tables=tables)
        keep = pl.Series([end - time >= 0 for (_, _, _, end, time) in parsed.iter_rows()])
        parsed, frame = parsed.filter(keep), frame.filter(keep)
    for (step, fp, bp, end, time), reduces, path, line in zip(parsed.iter_rows(), frame["reduces"].to_list(),
                                                              frame["file"].to_list(), frame["line"].to_list()):
        points += [(step, "step_start", end - time, -1), (step, "step_end", end, 1_000_000)]
        points += [(step, kind, ts, seq) for kind, ts, seq in (("fp_start", fp, 0), ("bp_end", bp, 1)) if ts]
        for k, (start_us, dur_us) in enumerate(zip(reduces[::2], reduces[1::2])):
            if start_us and dur_us:
                start, dur = us_text_to_ns(start_us), us_text_to_ns(dur_us)
                if start is None or dur is None or start < 0 or dur < 0:
                    check = "negative_duration" if dur is not None and dur < 0 else "out_of_range"
                    bad_spans.append((check, path, line, f"step {step} Reduce {k}: {start_us}, {dur_us}"))
                    continue
                points += [(step, "comm_start", start, 2 + 2 * k), (step, "comm_end", start + dur, 3 + 2 * k)]
    for check in ("negative_duration", "out_of_range"):
        spans = [span for span in bad_spans if span[0] == check]
        if spans:
            what = ("a negative duration" if check == "negative_duration"
                    else "a time that is negative, out of range or not a finite number")
            warn(f"{spans[0][1]}, line {spans[0][2]}: {len(spans)} Reduce spans with {what}; left out", check=check,
                 action="dropped", rows=len(spans), path=spans[0][1], line=spans[0][2], example=spans[0][3],
                 tables=tables)
    if not points:
        return pl.DataFrame()
    table = pl.DataFrame(points, schema={"step": pl.Int64, "kind": pl.String, "ts_ns": pl.Int64, "order": pl.Int64},
                         orient="row")
    repeated = table.filter(~pl.struct("step", "order").is_first_distinct())
    if repeated.height:
        warn(f"{frame['file'][0]}: {repeated.height} step points of iterations given more than once "
             f"(the first, iteration {repeated['step'][0]}); the first row of each is kept", check="conflicting_entry",
             action="dropped", rows=repeated.height, path=frame["file"][0], tables=tables,
             example=f"iteration {repeated['step'][0]}")
    table = table.unique(["step", "order"], keep="first", maintain_order=True).sort("step", "order")
    return table.with_columns(  # seq: -1 for the step start, then 0, 1, ... in point order
        (pl.col("order").rank("ordinal").over("step").cast(pl.Int32) - 2).alias("seq"),
        pl.lit(None, pl.String).alias("op_name"), pl.lit(None, pl.Int64).alias("stream_id"),
        pl.lit(None, pl.Int64).alias("tag")).drop("order")
