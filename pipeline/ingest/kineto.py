"""Stage 2, ingest: PyTorch profiler (Kineto) and Paddle Chrome-trace JSON -> host_op, host_api, device_exec, step_point.

One source is one trace file (`*.pt.trace.json[.gz]`, Paddle's `*.paddle_trace.json` or any Chrome
trace object with `traceEvents`; shared/reference/formats-gpu.md, families B and D). The event array
is copied into DuckDB (trace_object) and mapped by category, across the schema generations (2021
Kineto and Paddle categories are renamed to current Kineto ones on load; Paddle's "[1.2 ms]" name
suffixes and "123(C++)" thread ids are cleaned):

* `cpu_op` / `user_annotation` (2021: `Operator`) -> host_op (side Host, with category and
  External id);
* `cuda_runtime` / `cuda_driver` (2021: `Runtime`) -> host_api (the launching call, correlation id);
* `kernel`, `gpu_memcpy`, `gpu_memset`, `cuda_sync` (2021: `Kernel`, `Memcpy`, `Memset`) and MTIA's
  `mtia_ccp_events` (its `dma_request` transfers are memcpys, with their size) ->
  device_exec (stream, correlation, External id, device), with the op the trace itself links:
  the host op carrying the same External id (Kineto's external correlation), else the op its
  runtime call was made in (Paddle, which has no External id);
* `[memory]` instants (profile_memory=True) -> memory_event (device, address, bytes allocated or
  freed, the allocator's totals where the trace has them);
* `ProfilerStep#N` spans -> step_point (step start and end; FP point: the first op autograd recorded
  after the step's DataLoader annotations; BP point: the end of its last autograd engine event).

Times: `ts` and `dur` are µs, with ns fractions in newer traces, read exactly (epoch µs are split in
two numbers on the copy, smaller times survive DuckDB's double: trace_object); with
`baseTimeNanoseconds` they are relative to it. The events live in a scratch DuckDB database (scratch.py:
in memory, spilled under $TMPDIR beyond its limit; with the copied event array, up to about the
trace's uncompressed size on disk), and the tables leave it in batches. The clock is the Unix epoch (Kineto converts CUPTI
times to the host clock). Events without a duration, or with a negative one, are counted in a
warning and left out.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa

from ..discover import Source
from ..errors import InputError
from ..health import Warn
from .nesting import nest
from ..clocks import kineto_clock
from .run_info import run_info
from .scratch import check_trace_file, rank_tables, scratch_database, scratch_folder
from .step_ranges import STEP_POINTS_SQL, is_step_sql, steps_sql
from .trace_object import EXACT_DOUBLE_US, TraceArray, event_array


_COLUMNS = "{'name': 'VARCHAR', 'cat': 'VARCHAR', 'ph': 'VARCHAR', 'pid': 'VARCHAR', 'tid': 'VARCHAR', " \
           "'ts': 'VARCHAR', 'dur': 'VARCHAR', 'args': 'JSON', 'ts_hi': 'BIGINT'}"

#: Categories by role (current Kineto names; 2021 Kineto and Paddle names are mapped to them on load).
HOST_OP_CATS = ("cpu_op", "user_annotation")
HOST_API_CATS = ("cuda_runtime", "cuda_driver", "xpu_runtime", "mtia_runtime", "privateuse1_runtime")
DEVICE_KINDS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset", "cuda_sync": "sync",
                "mtia_ccp_events": "kernel"}
#: 2021 Kineto and Paddle (TracerEventType) categories -> current Kineto ones.
_CATEGORY_ALIASES = {
    "Operator": "cpu_op", "Runtime": "cuda_runtime", "Kernel": "kernel", "Memcpy": "gpu_memcpy", "Memset": "gpu_memset",
    "OperatorInner": "cpu_op", "PythonOp": "cpu_op", "CudaRuntime": "cuda_runtime", "ProfileStep": "user_annotation",
    "Dataloader": "user_annotation", "UserDefined": "user_annotation", "PythonUserDefined": "user_annotation",
    "Forward": "user_annotation", "Backward": "user_annotation", "Optimization": "user_annotation",
    "Communication": "user_annotation"}

#: Complete events with the args the tables need, parsed once per event (the args JSON is not kept), and
#: the allocator's "[memory]" instants (ph "i") with theirs.
#: Names lose Paddle's "[1.234 ms]" suffix and its ProfileStep#N becomes ProfilerStep#N; `phase` is
#: what the event marks of a training step: dataloader, forward, backward or optimizer (Paddle says so
#: by category; Kineto by name: enumerate(DataLoader)..., autograd engine events, Optimizer.step...).
_EVENTS_SQL = f"""
SELECT name, coalesce(c.alias, raw_cat) AS cat, ph, pid, tid, start_ns, dur_ns, memory, inexact_time,
       coalesce(a[1], a[2])::BIGINT AS external_id, coalesce(a[3], a[7])::BIGINT AS correlation,
       try_cast(a[4] AS BIGINT) AS stream, try_cast(a[5] AS BIGINT) AS device, a[6] IS NOT NULL AS has_sequence,
       replace(trim(a[8], '[]'), ' ', '') AS grid, replace(trim(a[9], '[]'), ' ', '') AS block,
       try_cast(coalesce(a[10], a[11]) AS BIGINT) AS bytes,
       CASE WHEN raw_cat = 'Dataloader' OR name LIKE 'enumerate(DataLoader)%' THEN 'dataloader'
            WHEN raw_cat = 'Forward' THEN 'forward'
            WHEN raw_cat = 'Backward' OR name LIKE 'autograd::engine::evaluate_function:%' THEN 'backward'
            WHEN raw_cat = 'Optimization' OR name LIKE 'Optimizer.step%' THEN 'optimizer' END AS phase
FROM (SELECT CASE WHEN suffix(name, ']') THEN regexp_replace(regexp_replace(name, '\\[[0-9.]+ ?[a-z]*s\\]$', ''),
                                                               '^ProfileStep#', 'ProfilerStep#')
                  ELSE name END AS name,
             cat AS raw_cat, ph, pid,
             CASE WHEN suffix(tid, ')') THEN regexp_extract(tid, '^(\\d+)\\(', 1) ELSE tid END AS tid,
             -- whole µs (most traces) convert as integers, fractions (ns resolution) as exact decimals, epoch µs
             -- split on the copy (trace_object) as the sum of their parts;
             -- a time that does not fit (a corrupt or huge number) is NULL: counted and left out
             try(CASE WHEN ts_hi IS NOT NULL
                      THEN ts_hi * 1000000000000000 + round((ts::DECIMAL(24, 6) - 1000000000000) * 1000)::BIGINT
                      WHEN contains(ts, '.') OR contains(ts, 'e') THEN round(ts::DECIMAL(24, 6) * 1000)::BIGINT
                      ELSE ts::BIGINT * 1000 END + $base_ns) AS start_ns,
             -- a fraction a double may have rounded: a split time that did not have 16 digits, or a large one
             -- the split did not reach (trace_object chose from the first events); quoted ones are exact
             CASE WHEN ts_hi IS NOT NULL THEN NOT coalesce(try_cast(ts AS DOUBLE) BETWEEN 1e12 AND 2e12 - 1, false)
                  ELSE (contains(ts, '.') OR contains(ts, 'e')) AND abs(try_cast(ts AS DOUBLE)) >= $exact_us
                  END AS inexact_time,
             try(CASE WHEN contains(dur, '.') OR contains(dur, 'e') THEN round(dur::DECIMAL(24, 6) * 1000)::BIGINT
                      ELSE dur::BIGINT * 1000 END) AS dur_ns,
             json_extract_string(args, ['$."External id"', '$."external id"', '$.correlation', '$.stream',
                                        '$.device', '$."Sequence number"', '$."correlation id"',
                                        '$.grid', '$.block', '$.bytes', '$.size']) AS a,
             CASE WHEN ph = 'i' THEN json_extract_string(args, ['$."Device Type"', '$."Device Id"', '$.Addr', '$.Bytes',
                                                                '$."Total Allocated"', '$."Total Reserved"']) END AS memory
      FROM read_json($path, format = 'array', columns = __COLUMNS__, ignore_errors = $tolerant)
      WHERE ph = 'X' OR (ph = 'i' AND name = '[memory]'))
LEFT JOIN (VALUES {", ".join(f"('{k}', '{v}')" for k, v in _CATEGORY_ALIASES.items())}) AS c(original, alias)
    ON c.original = raw_cat
""".replace("__COLUMNS__", _COLUMNS)

#: Host ops in nesting order: by thread, start, longest first, then External id (a parent is recorded
#: before its children); op_index is the position in that order.
_HOST_OPS_SQL = f"""
CREATE TABLE host_ops AS
SELECT (row_number() OVER (ORDER BY tid, start_ns, dur_ns DESC, external_id NULLS FIRST, name) - 1) AS op_index,
       'Host' AS side, try_cast(tid AS BIGINT) AS tid, name AS op_name, start_ns, dur_ns,
       coalesce(phase, CASE WHEN name LIKE 'ProfilerStep#%' THEN 'user_annotation' ELSE cat END) AS category,
       external_id, tid AS thread
FROM events WHERE cat IN {HOST_OP_CATS}
"""

_HOST_OP_SQL = """
SELECT o.* EXCLUDE (thread), p.parent_index
FROM host_ops o JOIN parents p USING (op_index)
ORDER BY o.start_ns
"""

_HOST_API_SQL = f"""
SELECT try_cast(tid AS BIGINT) AS tid, name, cat AS category, correlation, external_id, start_ns, dur_ns
FROM events WHERE cat IN {HOST_API_CATS}
ORDER BY start_ns
"""

_DEVICE_EXEC_SQL = f"""
WITH kinds AS (
    SELECT * FROM (VALUES {", ".join(f"('{c}', '{k}')" for c, k in DEVICE_KINDS.items())}) AS k(cat, kind)
), device AS (
    SELECT row_number() OVER () AS row_id, e.*,
           CASE WHEN e.cat = 'mtia_ccp_events' AND e.name = 'dma_request' THEN 'memcpy' ELSE k.kind END AS kind
    FROM events e JOIN kinds k USING (cat)
), by_external_id AS (  -- the host op with its External id that started last before it (ids are unique in a
                        -- sane trace; a stitched one repeats them): at most one per activity
    SELECT d.row_id, o.op_index, o.op_name
    FROM device d ASOF JOIN host_ops o ON o.external_id = d.external_id AND d.start_ns >= o.start_ns
), by_launch AS (  -- else the op its runtime call (same correlation id, last before it) was made in
    SELECT d.row_id, c.op_index, h.op_name
    FROM (FROM device ANTI JOIN by_external_id USING (row_id)) d
    ASOF JOIN call_ops c ON c.call_id = d.correlation AND d.start_ns >= c.start_ns
    JOIN host_ops h ON h.op_index = c.op_index
), launched AS (
    SELECT d.*, coalesce(x.op_index, l.op_index) AS op_index, coalesce(x.op_name, l.op_name) AS op_name
    FROM device d LEFT JOIN by_external_id x USING (row_id) LEFT JOIN by_launch l USING (row_id)
)
SELECT coalesce(stream, try_cast(tid AS BIGINT), try_cast(regexp_extract(tid, '(\\d+)', 1) AS BIGINT)) AS stream_id,
       kind, name, correlation, NULL::BIGINT AS task_id, op_name, start_ns, dur_ns, external_id,
       coalesce(device, try_cast(pid AS BIGINT)) AS device_id, op_index, bytes, grid, block
FROM launched
ORDER BY start_ns
"""

#: c10::DeviceType numbers of the "[memory]" instants' "Device Type".
_DEVICE_TYPES = {0: "cpu", 1: "cuda", 6: "hip", 12: "xpu", 13: "mps", 19: "mtia", 20: "privateuse1"}

_MEMORY_EVENT_SQL = f"""
SELECT start_ns AS ts_ns, rowid AS seq, try_cast(tid AS BIGINT) AS tid,
       coalesce(t.label, 'device type ' || memory[1]) AS device_type, try_cast(memory[2] AS BIGINT) AS device_id,
       try_cast(memory[3] AS BIGINT) AS addr, memory[4]::BIGINT AS bytes,
       try_cast(memory[5] AS BIGINT) AS total_allocated, try_cast(memory[6] AS BIGINT) AS total_reserved
FROM events LEFT JOIN (VALUES {", ".join(f"('{k}', '{v}')" for k, v in _DEVICE_TYPES.items())}) AS t(id, label)
    ON t.id = memory[1]
WHERE ph = 'i' AND memory[4] IS NOT NULL
ORDER BY start_ns, seq
"""

#: Steps from ProfilerStep#N (or the ranges the user names: step_ranges). FP point: after the step's
#: DataLoader spans, the first Forward span (Paddle), else the first op autograd recorded (it has a
#: Sequence number), else the first cpu_op;#: BP point: where the step's last backward event ends (Paddle's Backward spans, Kineto's autograd
#: engine events); no BP point without one (inference, or 2021 traces that lack those events).
def _step_point_sql(step_range: str | None) -> str:
    return f"""
WITH steps AS ({steps_sql("events", step_range)}
), inside AS (  -- the events that can carry a point, in the step that holds their start (an ASOF join: steps
                -- do not overlap; a range join would pair every step with every event)
    SELECT s.step, e.name, e.cat, e.phase, e.has_sequence, e.start_ns, e.start_ns + e.dur_ns AS end_ns
    FROM (SELECT * FROM events WHERE (cat = 'cpu_op' OR phase IS NOT NULL) AND NOT {is_step_sql('name', step_range)}) e
    ASOF JOIN steps s ON e.start_ns >= s.start_ns
    WHERE e.start_ns < s.end_ns
), loading AS (
    SELECT step, max(end_ns) AS loaded_ns FROM inside WHERE phase = 'dataloader' GROUP BY step
), forward AS (  -- a Forward span (Paddle), else the first op autograd recorded (it carries a Sequence number)
    SELECT step, coalesce(arg_min(name, start_ns) FILTER (WHERE marked), arg_min(name, start_ns) FILTER (WHERE recorded),
                          arg_min(name, start_ns)) AS op_name,
           coalesce(min(start_ns) FILTER (WHERE marked), min(start_ns) FILTER (WHERE recorded), min(start_ns)) AS ts_ns
    FROM (SELECT i.step, i.name, i.start_ns, i.phase = 'forward' AS marked,
                 i.has_sequence AND i.name NOT LIKE 'autograd::%' AS recorded
          FROM inside i LEFT JOIN loading l USING (step)
          WHERE i.start_ns >= coalesce(l.loaded_ns, i.start_ns) AND (i.cat = 'cpu_op' OR i.phase = 'forward'))
    GROUP BY step
), backward AS (
    SELECT step, arg_max(name, end_ns) AS op_name, max(end_ns) AS ts_ns
    FROM inside WHERE cat IN {HOST_OP_CATS} AND phase = 'backward' GROUP BY step
)
{STEP_POINTS_SQL}"""


#: Top-level members kept in run_info.metadata_json (libkineto's INFO/WARNING logs are left out).
_METADATA_KEYS = ("schemaVersion", "distributedInfo", "deviceProperties", "baseTimeNanoseconds", "traceName",
                  "cupti_version", "cuda_runtime_version", "cuda_driver_version", "record_shapes", "profile_memory")


def read(source: Source, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """Yield the normalized tables of one Kineto trace file."""
    path = source.files["trace"]
    check_trace_file(path, source.rank, "no distributedInfo.rank in the trace and no rank in the file name "
                                        "(rank-<n>, worker<n>)", "a PyTorch profiler (Kineto) trace JSON object")
    with scratch_folder("kineto") as scratch:
        with scratch_database(scratch) as con:
            array = _load_events(con, path, scratch, warn)
            for repair in array.repairs:
                warn(f"{path}: {repair}")
            if array.gzip_cut_short:
                warn(f"{path}: the gzip file stops before its end (no end-of-stream marker): what it holds is read")
            if array.truncated_at is not None:
                warn(f"{path}: the trace is cut short at byte {array.truncated_at} (uncompressed): its complete events "
                     "are read, the incomplete last one is lost")
            missing, negative, unreadable, device = con.execute(
                "SELECT count(*) FILTER (WHERE dur_ns IS NULL AND ph = 'X'), count(*) FILTER (WHERE dur_ns < 0), "
                "count(*) FILTER (WHERE start_ns IS NULL), "
                f"count(*) FILTER (WHERE cat IN {tuple(DEVICE_KINDS)} AND dur_ns >= 0 AND start_ns IS NOT NULL) "
                "FROM events").fetchall()[0]
            if missing or negative or unreadable:
                warn(f"{path}: {missing} complete events without a duration, {negative} with a negative one and "
                     f"{unreadable} with a time that is not a number of µs within ±292 years are left out")
                con.execute("DELETE FROM events WHERE (ph = 'X' AND (dur_ns IS NULL OR dur_ns < 0)) OR start_ns IS NULL")
            con.execute(_HOST_OPS_SQL)
            nest(con, _NESTING_SQL)
            first_ns = con.execute("SELECT min(start_ns) FROM events WHERE ph = 'X'").fetchall()[0][0]
            yield "run_info", _run_info(source, array.metadata, device > 0, first_ns)
            yield from rank_tables(con, source.rank, [
                ("host_op", _HOST_OP_SQL), ("host_api", _HOST_API_SQL), ("device_exec", _DEVICE_EXEC_SQL),
                ("step_point", _step_point_sql(source.step_range)), ("memory_event", _MEMORY_EVENT_SQL)])


#: Host ops and runtime calls of every thread in nesting order (ops before calls at the same start), for
#: nesting.nest. The calls are only needed where device activities lack an External id (Paddle).
_NESTING_SQL = f"""
SELECT is_call, id, thread, start_ns, end_ns FROM (
    SELECT false AS is_call, op_index AS id, thread, start_ns, start_ns + dur_ns AS end_ns, op_index AS tie FROM host_ops
    UNION ALL
    SELECT true, correlation, tid, start_ns, start_ns + dur_ns, NULL FROM events
    WHERE cat IN {HOST_API_CATS} AND correlation IS NOT NULL
      AND EXISTS (SELECT 1 FROM events WHERE cat IN {tuple(DEVICE_KINDS)} AND external_id IS NULL))
ORDER BY thread, start_ns, end_ns DESC, is_call, tie
"""


def _load_events(con: duckdb.DuckDBPyConnection, path: Path, scratch: Path, warn: Warn) -> TraceArray:
    """Table `events` from the trace's event array; the TraceArray says what the copy learnt.

    Two faults DuckDB's reader refuses are recovered, each with a warning: invalid UTF-8 (the array
    is copied again with those bytes read as U+FFFD) and an event that repeats a key (the first
    value is read, as DuckDB's reader does when told to go on). Anything else is an InputError.
    Start times with ns fractions that the first events did not announce (larger than a double holds
    exactly, or epoch µs of other digits than the split expected) are read again, quoted
    (trace_object.EXACT_DOUBLE_US).
    """
    sanitize = tolerant = quote = False
    while True:
        with event_array(path, scratch, sanitize=sanitize, quote=quote) as array:
            try:
                con.execute("CREATE OR REPLACE TABLE events AS " + _EVENTS_SQL,
                            {"path": str(array.path), "base_ns": int(array.metadata.get("baseTimeNanoseconds") or 0),
                             "tolerant": tolerant, "exact_us": EXACT_DOUBLE_US})
                if array.times != "quoted" and con.execute("SELECT bool_or(inexact_time) FROM events").fetchall()[0][0]:
                    quote = True
                    continue
                if array.replaced:
                    warn(f"{path}: {array.replaced} byte sequences that are not UTF-8 are read as U+FFFD")
                return array
            except duckdb.Error as exc:
                message = re.sub(r' in file "[^"]*"', "", str(exc).strip().splitlines()[0])
        if not sanitize and "invalid UTF-8" in message:
            sanitize = True
        elif not tolerant and "duplicate key" in message:
            tolerant = True
            warn(f"{path}: an event repeats a key ({message.split(': ', 1)[-1]}); the first value of a repeated key "
                 "is read")
        else:
            raise InputError(path, f"not a Kineto trace: its events cannot be parsed ({message})")


def _run_info(source: Source, metadata: dict, has_device: bool, first_ns: int | None) -> pa.Table:
    """Paddle's exporter says so by its string schemaVersion ("1.0.1") and its span_indx / ExtraInfo members."""
    paddle = isinstance(metadata.get("schemaVersion"), str) or "span_indx" in metadata or "ExtraInfo" in metadata
    kept = {key: metadata[key] for key in _METADATA_KEYS if key in metadata}
    return run_info(source, device_type="gpu" if has_device else "cpu", framework="paddle" if paddle else "pytorch",
                    layout="kineto", metadata_json=json.dumps(kept), **kineto_clock(metadata, first_ns))
