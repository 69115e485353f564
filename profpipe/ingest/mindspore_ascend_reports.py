"""Stage 2, ingest: MindSpore 1.x Ascend result files that later analyses read back -> normalized tables.

A MindSpore 1.x profiler folder keeps, beside its reports, what the cluster and HCCL analyses of
MindSpore/MindInsight start from (shared/reference/formats-ascend-minddata.md §2.8, §4):

* `step_trace_raw_<rank>_detail_time.csv` -> step_point: per step its start, FP, BP and end and
  each communication span (columns `<name>_start_point` / `<name>_end_point`), in 10 ns ticks;
* `hccl_info/<op>_<n>_..._dev<rank>/iter<N>.trace` -> comm_task: one row per HCCL task of the
  N-th execution of the op (Chrome-trace JSON, µs on the device counter: ticks / 100), parsed by
  DuckDB (json_files) with no Python object per event.

Times become ns on the device-counter clock at MindSpore's fixed 100 MHz, so the HCCL tasks and
the step trace share one clock.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa

from ..discover import Source
from ..errors import InputError
from . import json_files
from ..health import Warn
from .lines import MAX_NS, drop_rows, iter_csv_frames
from .run_info import run_info
from .scratch import memory_database

TICK_HZ = 100_000_000
_NS_PER_TICK = 10
_COMM_COLUMN = re.compile(r"stream_(\d+)_(?:parallel_\d+|\d+_(.+))")


def read(source: Source, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """Yield the normalized tables of one rank's MindSpore Ascend result folder."""
    yield "run_info", run_info(source, device_type="ascend", framework="mindspore", layout="mindspore_profiler_dir",
                               clock="device_syscnt", tick_hz=TICK_HZ)
    if "step_trace_csv" in source.files:
        yield "step_point", _step_points(source.files["step_trace_csv"], warn).to_arrow()
    traces = source.slices.get("hccl_trace", [])
    if traces:
        yield "comm_task", _hccl_tasks(traces, warn)


def _step_points(path: Path, warn: Warn) -> pl.DataFrame:
    """step_point rows of a step-trace CSV. The average row is MindSpore's, not a step: its step_num is
    '-', or 0 in older MindInsight files (steps count from 1; MindInsight shows the average as step 0).
    A value that is not an integer is an error; a cut last row, repeated steps and steps with a tick
    beyond MAX_NS or that end before they start are left out and reported."""
    base = ["step_num", "start_point", "end_point", "fp_point"]
    chunks = []
    for chunk in iter_csv_frames(path, warn):  # chunks of whole lines, each kept only as its integer columns
        missing = [c for c in base if c not in chunk.columns]
        if missing:
            raise InputError(path, f"not a MindSpore step-trace CSV (missing columns {missing})", line=1)
        chunk = chunk.filter(~pl.col("step_num").is_in(["-", "0"]))
        numbers = [c for c in chunk.columns if c != "line"]
        typed = chunk.with_columns(pl.col(numbers).cast(pl.Int64, strict=False))
        bad = typed.filter(pl.any_horizontal(pl.col(numbers).is_null()))
        if bad.height:
            raise InputError(path, "expected integer ticks in every column", line=int(bad["line"][0]))
        chunks.append(typed.with_columns(pl.col("line").cast(pl.UInt32)))
    parsed = pl.concat(chunks)
    comm = [c.removesuffix("_start_point") for c in numbers
            if c.endswith("_start_point") and c != "start_point" and f"{c[:-12]}_end_point" in numbers]
    parsed = parsed.select("line", *numbers)
    example = pl.concat_str(pl.lit("step "), pl.col("step_num").cast(pl.String))
    parsed = drop_rows(parsed, ~pl.all_horizontal(pl.col(numbers).is_between(0, MAX_NS // _NS_PER_TICK)), warn, path,
                       "out_of_range", "steps with a negative or out-of-range tick", line_column="line",
                       tables="step_point", example=example)
    parsed = drop_rows(parsed, pl.col("end_point") < pl.col("start_point"), warn, path, "negative_duration",
                       "steps that end before they start", line_column="line", tables="step_point", example=example)
    parsed = drop_rows(parsed, ~pl.struct(numbers).is_first_distinct(), warn, path, "duplicate_record",
                       "repeated step rows", line_column="line", tables="step_point", example=example)
    parsed = drop_rows(parsed, ~pl.col("step_num").is_first_distinct(), warn, path, "conflicting_entry",
                       "rows of a step already given with other values (the first is kept)", line_column="line",
                       tables="step_point", example=example)
    points = [("step_start", "start_point", None, None), ("fp_start", "fp_point", None, None)]
    if "bp_point" in parsed.columns:
        points.append(("bp_end", "bp_point", None, None))
    for name in comm:
        match = _COMM_COLUMN.fullmatch(name)
        stream = int(match.group(1)) if match else None
        label = match.group(2) if match and match.group(2) != "parallel" else None
        points += [("comm_start", f"{name}_start_point", stream, label), ("comm_end", f"{name}_end_point", stream, label)]
    points.append(("step_end", "end_point", None, None))
    backwards = pl.concat([parsed.filter((pl.col(f"{name}_end_point") < pl.col(f"{name}_start_point"))
                                         & (pl.col(f"{name}_end_point") != 0)).select("line", "step_num", pl.lit(name).alias("span"))
                           for name in comm] or [pl.DataFrame(schema={"line": pl.UInt32, "step_num": pl.Int64,
                                                                       "span": pl.String})])
    if backwards.height:
        first = backwards.sort("line").row(0, named=True)
        warn(f"{path}, line {first['line']}: {backwards.height} communication spans end before they start "
             f"(the first {first['span']} of step {first['step_num']}); left out", check="negative_duration",
             action="dropped", rows=backwards.height, path=path, line=int(first["line"]),
             example=f"step {first['step_num']} {first['span']}", tables="step_point")
    frames = [parsed.select(
        pl.col("step_num").alias("step"), pl.lit(kind).alias("kind"), pl.lit(label, pl.String).alias("op_name"),
        pl.lit(seq - 1, pl.Int32).alias("seq"), pl.lit(stream, pl.Int64).alias("stream_id"),
        (pl.col(column) * _NS_PER_TICK).alias("ts_ns"),
        pl.lit(column.removesuffix("_start_point").removesuffix("_end_point"), pl.String).alias("span"))
        for seq, (kind, column, stream, label) in enumerate(points)]
    rows = pl.concat(frames).join(backwards.select(pl.col("step_num").alias("step"), "span"), on=["step", "span"],
                                  how="anti").drop("span")
    # a span a step lacks is written as zeros
    rows = rows.filter(~(pl.col("kind").str.starts_with("comm") & (pl.col("ts_ns") == 0)))
    return rows.sort("step", "seq")


#: One row per HCCL task of every `iter<N>.trace` file: the folder names the op, the file the execution.
_HCCL_TASKS_SQL = """
WITH events AS (
    SELECT filename, generate_subscripts(traceEvents, 1) - 1 AS seq, unnest(traceEvents) AS e
    FROM read_json($files, columns = {'traceEvents': 'JSON[]'}, filename = true)
), named AS (
    SELECT *, regexp_replace(regexp_extract(filename, '([^/\\\\]+)[/\\\\]iter\\d+\\.trace$', 1), '_dev\\d+$', '') AS op_name
    FROM events
)
SELECT filename, op_name, split_part(op_name, '_', 1) AS op_type,
       try_cast(split_part(op_name, '_', 2) AS BIGINT) AS op_ordinal,
       regexp_extract(filename, 'iter(\\d+)\\.trace$', 1)::BIGINT AS iteration,
       seq::INTEGER AS seq, (e->>'$.tid')::BIGINT AS plane,
       nullif(e->>'$.args."stream id"', 'NULL')::BIGINT AS stream_id,
       nullif(e->>'$.args."task id"', 'NULL')::BIGINT AS task_id,
       e->>'$.name' AS task_type,
       nullif(nullif(e->>'$.args."src rank"', 'NULL')::BIGINT, 4294967295) AS src_rank,
       nullif(nullif(e->>'$.args."dst rank"', 'NULL')::BIGINT, 4294967295) AS dst_rank,
       e->>'$.args."transport type"' AS transport,
       nullif(e->>'$.args.size', 'NULL')::BIGINT AS bytes,
       us_to_ns(e->>'$.ts') AS start_ns, us_to_ns(e->>'$.dur') AS dur_ns
FROM named
"""


def _hccl_tasks(paths: list[Path], warn: Warn) -> pa.Table:
    """comm_task rows of the HCCL trace files, parsed by DuckDB (sizes may be hex strings). Tasks with a
    negative duration or a time beyond MAX_NS, and repeats of a task, are left out and reported."""
    with memory_database() as con:
        json_files.create_table(con, "tasks", _HCCL_TASKS_SQL, paths, "an HCCL trace JSON with traceEvents")
        with_events = dict(con.execute(
            "SELECT filename, bool_and(traceEvents IS NOT NULL) FROM read_json($files, columns = "
            "{'traceEvents': 'JSON[]'}, filename = true) GROUP BY filename", {"files": [str(p) for p in paths]}).fetchall())
        for path in paths:  # an object without the key gives a NULL list
            if not with_events.get(str(path)):
                raise InputError(path, "expected HCCL trace JSON with traceEvents")
        incomplete = con.execute("SELECT filename, seq FROM tasks WHERE plane IS NULL OR task_type IS NULL "
                                 "OR start_ns IS NULL OR dur_ns IS NULL ORDER BY filename, seq LIMIT 1").fetchall()
        if incomplete:
            raise InputError(incomplete[0][0], f"event {incomplete[0][1]}: expected an HCCL task with tid, ts, "
                                               "dur, name and args")
        _drop_tasks(con, warn, "dur_ns < 0", "negative_duration", "HCCL tasks with a negative duration")
        _drop_tasks(con, warn, f"start_ns NOT BETWEEN 0 AND {MAX_NS} OR dur_ns > {MAX_NS}", "out_of_range",
                    "HCCL tasks with a time or duration out of range")
        _drop_tasks(con, warn, "row_number() OVER (PARTITION BY filename, plane, stream_id, task_id, task_type, "
                    "src_rank, dst_rank, transport, bytes, start_ns, dur_ns ORDER BY seq) > 1", "duplicate_record",
                    "repeated HCCL tasks (the same task, time and duration as an earlier event)", window=True)
        return con.sql("SELECT * EXCLUDE (filename) FROM tasks ORDER BY filename, seq").to_arrow_table()


def _drop_tasks(con: duckdb.DuckDBPyConnection, warn: Warn, condition: str, check: str, what: str,
                window: bool = False) -> None:
    """Delete the tasks where `condition` holds, reported per file (count, first event)."""
    flagged = (f"SELECT filename, seq FROM (SELECT filename, seq, {condition} AS bad FROM tasks) WHERE bad"
               if window else f"SELECT filename, seq FROM tasks WHERE {condition}")
    found = con.execute(f"SELECT filename, count(*), min(seq) FROM ({flagged}) GROUP BY filename "
                        "ORDER BY filename").fetchall()
    for filename, count, first in found:
        warn(f"{filename}: {count} {what}, the first event {first}; left out", check=check, action="dropped",
             rows=count, path=filename, example=f"traceEvents[{first}]", tables="comm_task")
    if found:
        con.execute(f"DELETE FROM tasks WHERE (filename, seq) IN ({flagged})")
