"""msproftx (MSTX) markers of msprof exports -> host_op rows, and the steps they mark.

MindSpore 2.5+'s `mstx.mark / range_start / range_end` (and any application's msproftx calls) are stored
by CANN as msproftx data and exported (shared/reference/formats-mindspore-extras.md §6) to
`mindstudio_profiler_output/msprof_tx_<ts>.csv` (`Device_id, pid, tid, category, event_type, payload_type,
payload_value, Start_time(us), End_time(us), message_type, message`; older CANN wrote `Start_time(ns)` /
`End_time(ns)`, or bare `Start_time` / `End_time` in ns, and no Device_id), to `msprof_tx_<ts>.json`, and
into `msprof_<ts>.json` as complete events named by the message with args `Category`, `Payload_type`,
`Payload_value`, `Message_type`, `event_type` (CANN 8's domain markers: `event_type`, `domain`). MindSpore 2.5+
copies msprof_<ts>.json's processes into `ASCEND_PROFILER_OUTPUT/trace_view.json` unchanged, so the same events
are read there (the msprof process is named after the application, `python` / `python3`). Each range or mark
becomes a host_op row of category 'marker' on its thread (tid; a mark has no duration), named by its message.
Times are read as exact decimals (µs x 1000, or ns, rounded half to even), on the export's clock. A marker given
a stream also has a device-side record (DEVICE_MARKER_SQL).

Not read: MindSpore's own "Mstx" API events and the "MsTx" flows in trace_view.json (they only link the Python
call to its marker). The raw msproftx records of PROF_*/host/data/ are read by msproftx_raw, only where the
export holds no marker.

Damage is counted, never raised: rows without a message, without a start or end, with a time that is not a
plain number, negative or beyond MAX_NS, ending before they start, or repeating an earlier row, are left out
with a trace_health row naming the file and the first line; a tid that is not an integer is read as empty
(`repaired`). A CSV without the columns is an error naming it.

`steps_of_markers`: with --step-range-name NAME, the ranges named NAME (optionally followed by the step number,
step_ranges.py's rule) are the rank's steps, replacing the step_trace steps (msprof exports and raw PROF folders).
"""
from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow as pa

from ..database import connect as duckdb_connect
from ..errors import InputError
from ..health import Warn
from .lines import MAX_NS, drop_rows, iter_csv_frames
from .step_ranges import STEP_POINTS_SQL, steps_sql
from .units import scaled_decimal

#: (start column, end column, ns per unit), in the order they are looked for.
_TIME_COLUMNS = (("Start_time(us)", "End_time(us)", 1_000), ("Start_time(ns)", "End_time(ns)", 1),
                 ("Start_time", "End_time", 1))
_TABLES = "host_op,step_point"

#: tx events of an msprof timeline (events view of msprof_export): every complete event with an event_type arg
#: outside the device's processes. An empty message is no name.
MARKER_SQL = """
SELECT 'Host' AS side, try_cast(tid AS BIGINT) AS tid, nullif(trim(name), '') AS op_name, ts_ns AS start_ns, dur_ns,
       'marker' AS category
FROM events
WHERE args->>'$.event_type' IS NOT NULL AND process IS DISTINCT FROM 'Ascend Hardware'
ORDER BY ts_ns, tid
"""


#: Device-side records of markers given a stream (mstx.mark / range_start with `stream`): msprof writes each as a task
#: of the "Ascend Hardware" process on its stream, named by the host marker's message, with args "Physic Stream Id"
#: and "Task Id" and no "Task Type" (which every other task has). They are not device work: host_op rows of side
#: Device, without a thread (the stream is not kept).
DEVICE_MARKER_SQL = """
SELECT 'Device' AS side, NULL::BIGINT AS tid, nullif(trim(name), '') AS op_name, ts_ns AS start_ns, dur_ns,
       'marker' AS category
FROM events
WHERE process = 'Ascend Hardware' AND args->>'$."Task Type"' IS NULL AND args->>'$."Physic Stream Id"' IS NOT NULL
ORDER BY ts_ns
"""


def read_csv(paths: list[Path], warn: Warn) -> pl.DataFrame:
    """host_op rows (side, tid, op_name, start_ns, dur_ns, category) of msprof_tx CSVs."""
    frames = []
    for path in paths:
        for chunk in iter_csv_frames(path, warn, null_values=["N/A"], what="msprof_tx CSV"):
            header = [c for c in chunk.columns if c != "line"]
            units = next(((s, e, k) for s, e, k in _TIME_COLUMNS if s in header and e in header), None)
            if units is None or "tid" not in header or "message" not in header:
                raise InputError(path, "not an msprof_tx CSV (expected columns tid, message, Start_time(us), "
                                       "End_time(us) or their ns forms)", line=1)
            start, end, scale = units
            text = [pl.col(c) if c in header else pl.lit(None, pl.String).alias(c) for c in ("pid", "event_type")]
            frames.append(chunk.select(
                pl.lit(str(path)).alias("file"), "line", *text, pl.col("tid").alias("tid_text"),
                pl.col("message").alias("message_text"), pl.col(start).alias("start_text"),
                pl.col(end).alias("end_text"), scaled_decimal(pl.col(start), scale).alias("start_ns"),
                scaled_decimal(pl.col(end), scale).alias("end_ns"),
                pl.col("tid").str.strip_chars().cast(pl.Int64, strict=False).alias("tid"),
                pl.col("message").str.strip_chars().replace("", None).alias("op_name")))
    if not frames:
        return pl.DataFrame()
    frame = pl.concat(frames)
    for path in frame["file"].unique(maintain_order=True).to_list():
        here = pl.col("file") == path
        rules = [
            (~pl.struct("pid", "tid_text", "event_type", "message_text", "start_text", "end_text")
             .is_first_distinct().over("file"), "duplicate_record", "repeated markers (the same row as an earlier one)"),
            (pl.col("op_name").is_null(), "malformed_record", "markers without a message"),
            (pl.col("start_text").is_null() | pl.col("end_text").is_null(), "malformed_record",
             "markers without a start or end time"),
            (pl.col("start_ns").is_null() | pl.col("end_ns").is_null(), "malformed_record",
             "markers whose start or end time is not a number or beyond 2^62 ns"),
            ((pl.col("start_ns") < 0) | (pl.col("end_ns") < 0), "out_of_range", "markers with a negative time"),
            (pl.col("end_ns") < pl.col("start_ns"), "negative_duration", "markers that end before they start"),
            ((pl.col("end_ns") - pl.col("start_ns")) > MAX_NS, "out_of_range", "markers longer than 2^62 ns"),
        ]
        for bad, check, what in rules:
            frame = drop_rows(frame, here & bad, warn, path, check, what, line_column="line", tables=_TABLES,
                              example=pl.coalesce(pl.col("message_text"), pl.col("start_text"), pl.lit("")))
        unreadable = frame.filter(here & pl.col("tid_text").is_not_null() & pl.col("tid").is_null())
        if unreadable.height:
            first = unreadable.sort("line").row(0, named=True)
            warn(f"{path}, line {first['line']}: {unreadable.height} markers whose tid is not an integer; read as "
                 "no thread", check="malformed_record", action="repaired", rows=unreadable.height, path=path,
                 line=int(first["line"]), example=first["tid_text"], tables="host_op")
    return frame.sort("start_ns", "tid", "line").select(
        pl.lit("Host").alias("side"), "tid", "op_name", "start_ns", (pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns"),
        pl.lit("marker").alias("category"))


def op_tasks(execs: pl.DataFrame) -> pa.Table:
    """(op_name, start_ns) of the op tasks among device_exec rows: the FP points of marker steps."""
    return execs.filter(pl.col("kind") == "task").select("op_name", "start_ns").to_arrow()


def steps_of_markers(markers: pa.Table | None, tasks: pa.Table | None, steps: pa.Table | None, step_range: str,
                     warn: Warn, where: Path) -> pa.Table | None:
    """--step-range-name on Ascend data: the marker ranges named `step_range` replace the rank's `steps` (from
    step_trace); without any, `steps` are kept and the ledger says so."""
    found = marker_steps(markers, tasks, step_range, warn, where) if markers is not None else None
    if found is not None and found.num_rows:
        if steps is not None:
            warn(f"{where}: {len(set(found.column('step').to_pylist()))} steps from the MSTX ranges named "
                 f"{step_range!r} replace msprof's step_trace steps (--step-range-name)", check="ambiguous",
                 action="kept", rows=len(set(steps.column("step").to_pylist())), path=where, tables="step_point")
        return found
    warn(f"{where}: no MSTX ranges named {step_range!r} (--step-range-name); "
         f"{'the step_trace steps are kept' if steps is not None else 'the rank has no steps'}", check="other",
         action="kept", path=where, tables="step_point")
    return steps


def marker_steps(markers: pa.Table, op_tasks: pa.Table | None, step_range: str, warn: Warn, where: Path) -> pa.Table:
    """step_point rows of the marker ranges named `step_range`: step start and end, and as FP point the step's
    first op task (as for era F: the iteration gap is the time before the device starts; no BP point:
    --fp-op / --bp-op set them). Marks (no duration) are no steps. A step number given twice keeps its
    first range."""
    with duckdb_connect() as con:
        con.register("markers", markers)
        con.register("op_tasks", op_tasks if op_tasks is not None else
                     pa.table({"op_name": pa.array([], pa.string()), "start_ns": pa.array([], pa.int64())}))
        ranges = "(SELECT op_name AS name, start_ns, dur_ns FROM markers WHERE dur_ns > 0)"
        con.execute(f"CREATE TABLE found AS {steps_sql(ranges, step_range)}")
        repeated, first = con.execute("SELECT count(*) - count(DISTINCT step), min(step) FILTER (WHERE n > 1) FROM "
                                      "(SELECT step, count(*) OVER (PARTITION BY step) AS n FROM found)").fetchall()[0]
        if repeated:
            warn(f"{where}: {repeated} marker ranges named {step_range!r} repeat a step number (the first, step "
                 f"{first}); the earliest range of each step is kept", check="conflicting_entry",
                 action="dropped", rows=repeated, path=where, example=f"step {first}", tables="step_point")
        return con.sql(f"""
            WITH steps AS (SELECT DISTINCT ON (step) * FROM found ORDER BY step, start_ns),
            forward AS (SELECT s.step, arg_min(t.op_name, t.start_ns) AS op_name, min(t.start_ns) AS ts_ns
                        FROM steps s JOIN op_tasks t ON t.start_ns >= s.start_ns AND t.start_ns < s.end_ns
                        GROUP BY s.step),
            backward AS (SELECT NULL::BIGINT AS step, NULL::VARCHAR AS op_name, NULL::BIGINT AS ts_ns WHERE false)
            {STEP_POINTS_SQL}""").to_arrow_table()
