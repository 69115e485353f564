"""Stage 2, ingest: msprof exports (Ascend eras D, E and F: MindSpore 2.0+, torch_npu) -> normalized tables.

One source is one era D `PROF_*/device_N` folder with msprof's `summary/` CSVs and/or `timeline/`
Chrome-trace arrays, named `<kind>_<device>_<model>_<iteration>.csv|json`, or one era E `PROF_*`
folder whose `mindstudio_profiler_output/` holds `<kind>_<timestamp>.csv|json` (the newest of
each kind is read), or one era F result folder (MindSpore 2.5+ `*_ascend_ms`, torch_npu's text export
`*_ascend_pt`, found by what they hold: its `ASCEND_PROFILER_OUTPUT/kernel_details.csv` and `trace_view.json`);
shared/reference/formats-ascend-minddata.md §1.2, §1.3, §2.8, §2.10 and formats-ascend-today.md §2 (torch_npu). The summary CSVs, where present, give the
device tasks with their op types (`op_summary`, `kernel_details`) and the steps (`step_trace`),
see msprof_csv; their AI Core PMU metric columns and the `l2_cache`, `hbm` / `ddr` and `pcie` summaries
beside them (era D `summary/`, era E `mindstudio_profiler_output/`, era F's copies) give
device_exec_metric, l2_cache_task, memory_bandwidth and pcie_bandwidth, see msprof_pmu. The timelines give the HCCL tasks, and the tasks and steps when there are no CSVs:
`msprof_*` files (era F: `trace_view.json`) hold every process; without them the `task_time_*`,
`step_trace_*` and `hccl_*` files are read instead. DuckDB's JSON reader parses the arrays
column-wise (`ts` and `dur` as exact decimals: era F writes epoch µs as strings); events become:

* "Ascend Hardware" tasks (args Task Type / Stream Id / Task Id) -> device_exec: AI Core / AI CPU /
  vector / mix tasks are op executions (kind 'task'), notify, event and memcpy tasks of the
  runtime and HCCL are kind 'sync' without an op;
* "Iteration N" events (FP Start, BP End, Iteration End) and "Reduce_N_k" spans -> step_point;
  era F: the "ProfilerStep#N" spans of the "MindSpore" process (Profiler.step()) or of torch_npu's "Python"
  process -> step_point, with the step's first op task as FP point and no BP point; torch_npu's steps also get
  device_step_start / device_step_end, the first start and last end of the op tasks and HCCL ops starting in the
  span (msprof-analyze's step window: the step_overlap mart measures the step there);
* era F "CPU OP" process events -> host_op (side Host);
* era F torch_npu "Python" cpu_op events -> host_op (side Host, category cpu_op: op_index and parent_index by
  Kineto's nesting rule, nesting.py; Call stack, Input Dims, Input type in Kineto's forms); its `torch_to_npu` flows
  (id = the launched task's start in ns) give each task of kernel_details the op_index of the op that launched it;
  "CANN" events (AscendCL, Node@launch, Hccl, Runtime) -> host_api (category cann_<level>, correlation =
  connection_id);
* era F "python_function" events (with_stack) -> python_frame: MindSpore 2.6+'s (process "MindSpore", no ids:
  each frame's parent is the innermost frame that holds it on its thread, python_frames.py), torch_npu's (process
  "Python", Python id / parent id as Kineto's; the root frame names itself as parent);
* MSTX / msproftx ranges and marks (msprof_tx_*.csv, else the tx events of msprof_*.json, else msprof_tx_*.json,
  else, when the export holds no marker, the raw PROF_*/host/data/*.additional.msproftx.slice_N: msproftx_raw;
  era F: the msprof_tx_*.csv of its PROF_*/mindstudio_profiler_output where data_simplification left it, else
  the msprof process of trace_view.json) -> host_op (side Host, category 'marker'), and their device-side
  records (tasks of "Ascend Hardware" without a Task Type, from a marker given a stream) -> host_op (side Device,
  category 'marker'), see msprof_tx; with --step-range-name NAME (Source.step_range) the host ranges named NAME
  replace the step_trace steps;
* "HCCL" plane tasks -> comm_task, each under the communication op (thread "Communication
  Kernel"; torch_npu: "Group <k> Communication") whose span holds it; the op's n-th span in time is its execution
  ("iteration") n.

Not read (no table fits them yet): trace_view's counters (AI Core Freq, NPU MEM, HBM, LLC, QoS, Acc PMU, Stars Soc
Info), its Overlap Analysis process (the step_overlap mart recomputes it), the enqueue/dequeue and fwdbwd flows.

Times are µs on the host CLOCK_MONOTONIC_RAW timeline (era F: Unix epoch); they become ns on that
clock. One model
(graph) is read per rank: of the models the user asked for (Source.models, default all), the one
with the most files; other models are reported and left out. run_info.metadata_json keeps the
model read and every model found.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from ..discover import ERA_F_EXPORT_PREFIX, MSPROF_OUTPUT, MSPROF_PMU_SUMMARY, MSPROF_SUMMARY, MSPROF_TIMELINE, Source
from ..errors import InputError
from . import json_files, msprof_csv, msprof_pmu, msprof_tx, msproftx_raw
from ..health import Warn
from ..clocks import msprof_clock, msprof_local_time
from .lines import MAX_NS, load_json, required_columns
from .nesting import nest
from .python_frames import PYTHON_FRAME_SQL, resolve_frames
from .run_info import ascend_framework, run_info
from .scratch import memory_database

_COLUMNS = {"name": "VARCHAR", "pid": "VARCHAR", "tid": "VARCHAR", "ts": "VARCHAR", "dur": "VARCHAR",
            "ph": "VARCHAR", "cat": "VARCHAR", "id": "VARCHAR", "args": "JSON"}

_EVENTS_SQL = """
WITH raw AS MATERIALIZED (  -- parsed once, though read twice
    SELECT filename, name, pid, tid, ph, cat, id, args,
           us_to_ns(ts) AS ts_ns, us_to_ns(dur) AS dur_ns,
           (ts IS NOT NULL AND ts_ns IS NULL) OR (dur IS NOT NULL AND dur_ns IS NULL) AS bad_time
    FROM read_json($files, format = 'array', columns = $columns, filename = true)
), processes AS (
    SELECT DISTINCT pid, args->>'$.name' AS process FROM raw WHERE ph = 'M' AND name = 'process_name'
), threads AS (
    SELECT pid, tid, any_value(args->>'$.name') AS thread FROM raw WHERE ph = 'M' AND name = 'thread_name'
    GROUP BY pid, tid
)
SELECT r.*, p.process, t.thread
FROM raw r LEFT JOIN processes p USING (pid) LEFT JOIN threads t USING (pid, tid)
WHERE r.ph = 'X' OR (r.ph = 's' AND r.name = 'torch_to_npu')  -- the flows: in all_events, not in the view events
"""

#: The complete events every query reads (the torch_to_npu flow starts stay in all_events: _TORCH_NESTING_SQL).
_EVENTS_VIEW = "CREATE OR REPLACE TEMP VIEW events AS SELECT * FROM all_events WHERE ph = 'X'"

#: torch_npu's HCCL process: thread `Group <k> Communication` holds the whole ops (their args are the op's:
#: connection_id, count, ...), threads `Plane <k>` the tasks; MindSpore's and msprof's op threads hold events
#: without args.
_HCCL_OP_THREAD_RE = "^Group \\d+ Communication$"

#: Task types of op executions (the rest are runtime and HCCL sync tasks), as a regular expression.
_OP_TASK_TYPES_RE = "^(" + "|".join(msprof_csv.OP_TASK_TYPES) + ")$"

_DEVICE_EXEC_SQL = """
WITH tasks AS (  -- one JSON parse per event for all the args it needs
    SELECT name, ts_ns, dur_ns, json_extract_string(args, ['$."Task Type"', '$."Stream Id"', '$."Task Id"']) AS a
    FROM events WHERE process = 'Ascend Hardware'
)
SELECT a[2]::BIGINT AS stream_id, CASE WHEN is_op THEN 'task' ELSE 'sync' END AS kind, name, a[3]::BIGINT AS task_id,
       CASE WHEN is_op THEN name END AS op_name, ts_ns AS start_ns, dur_ns
FROM (SELECT *, regexp_matches(a[1], '__OP_TASK_TYPES__') AS is_op FROM tasks)
WHERE a[1] IS NOT NULL
ORDER BY ts_ns, stream_id, task_id
""".replace("__OP_TASK_TYPES__", _OP_TASK_TYPES_RE)

#: Iteration events give the four base points; Reduce_<iteration>_<k> events the communication spans.
_STEP_POINT_SQL = """
WITH iterations AS (
    SELECT DISTINCT (args->>'$."Iteration ID"')::BIGINT AS step, ts_ns,
           us_to_ns(args->>'$."FP Start"') AS fp_ns, us_to_ns(args->>'$."BP End"') AS bp_ns,
           us_to_ns(args->>'$."Iteration End"') AS end_ns
    FROM events WHERE cat = 'Iteration Time'
), reduces AS (
    SELECT DISTINCT (args->>'$."Iteration ID"')::BIGINT AS step, name, ts_ns, ts_ns + dur_ns AS end_ns,
           regexp_extract(name, '_(\\d+)$', 1)::INTEGER AS k
    FROM events WHERE cat = 'Reduce'
), points AS (
    SELECT step, 'step_start' AS kind, ts_ns, -1 AS seq FROM iterations
    UNION ALL SELECT step, 'fp_start', fp_ns, 0 FROM iterations WHERE fp_ns > 0
    UNION ALL SELECT step, 'bp_end', bp_ns, 1 FROM iterations WHERE bp_ns > 0
    UNION ALL SELECT step, 'comm_start', ts_ns, 2 + 2 * k FROM reduces
    UNION ALL SELECT step, 'comm_end', end_ns, 3 + 2 * k FROM reduces
    UNION ALL SELECT step, 'step_end', end_ns, 1000000 FROM iterations
)
SELECT step, kind, NULL::VARCHAR AS op_name, (row_number() OVER (PARTITION BY step ORDER BY seq) - 2)::INTEGER AS seq,
       NULL::BIGINT AS stream_id, NULL::BIGINT AS tag, ts_ns
FROM points ORDER BY step, seq
"""

#: Era F: Profiler.step() spans "ProfilerStep#<step>" of the framework process (MindSpore's "MindSpore", torch_npu's
#: "Python" cpu_op). The trace has no FP/BP markers: the FP point is the first op task of the step (where the
#: "Preparing" time ends), and there is no BP point. torch_npu: the device work of the step (op tasks and whole HCCL
#: ops starting inside the host span, as msprof-analyze takes them for step_trace_time.csv) gives the points
#: device_step_start (its first start) and device_step_end (its last end): the step's window on the device.
_PROFILER_STEP_SQL = """
WITH steps AS (
    SELECT DISTINCT process, regexp_extract(name, '#(\\d+)$', 1)::BIGINT AS step, ts_ns, ts_ns + dur_ns AS end_ns
    FROM events WHERE process IN ('MindSpore', 'Python') AND name LIKE 'ProfilerStep#%'
), work AS (
    SELECT name, ts_ns, ts_ns + dur_ns AS end_ns, true AS is_task FROM events
    WHERE process = 'Ascend Hardware' AND regexp_matches(args->>'$."Task Type"', '__OP_TASK_TYPES__')
    UNION ALL
    SELECT name, ts_ns, ts_ns + dur_ns, false FROM events
    WHERE process = 'HCCL' AND regexp_matches(thread, '__HCCL_OP_THREAD__')
), first_ops AS (
    SELECT s.step, any_value(s.process) AS process,
           arg_min(w.name, w.ts_ns) FILTER (WHERE w.is_task) AS op_name, min(w.ts_ns) FILTER (WHERE w.is_task) AS ts_ns,
           min(w.ts_ns) AS work_start_ns, max(w.end_ns) AS work_end_ns
    FROM steps s JOIN work w ON w.ts_ns >= s.ts_ns AND w.ts_ns < s.end_ns
    GROUP BY s.step
), points AS (
    SELECT step, 'step_start' AS kind, NULL AS op_name, 0 AS rank_in_tie, ts_ns FROM steps
    UNION ALL SELECT step, 'device_step_start', NULL, 1, work_start_ns FROM first_ops WHERE process = 'Python'
    UNION ALL SELECT step, 'fp_start', op_name, 2, ts_ns FROM first_ops WHERE ts_ns IS NOT NULL
    UNION ALL SELECT step, 'device_step_end', NULL, 3, work_end_ns FROM first_ops WHERE process = 'Python'
    UNION ALL SELECT step, 'step_end', NULL, 4, end_ns FROM steps
)
SELECT step, kind, op_name, (row_number() OVER (PARTITION BY step ORDER BY ts_ns, rank_in_tie) - 1)::INTEGER AS seq,
       NULL::BIGINT AS stream_id, NULL::BIGINT AS tag, ts_ns
FROM points
ORDER BY step, seq
""".replace("__OP_TASK_TYPES__", _OP_TASK_TYPES_RE).replace("__HCCL_OP_THREAD__", _HCCL_OP_THREAD_RE)

#: Era F: host CPU ops (MindSpore's cpu_op_execute_timestamp, already on the trace's clock).
_HOST_OP_SQL = """
SELECT 'Host' AS side, try_cast(tid AS BIGINT) AS tid, name AS op_name, ts_ns AS start_ns, dur_ns
FROM events WHERE process = 'CPU OP'
ORDER BY ts_ns
"""

#: torch_npu: the "Python" process's cpu_op events (aten ops, autograd nodes, ProfilerStep#N) -> host_op (table
#: torch_ops), numbered by op_index in Kineto's nesting order (thread, start, longest first); their Call stack (frames
#: joined by ";\r\n") as Kineto's ';'-joined call_stack, Input Dims ("32,3,224,224;\r\n64;\r\n" for each input)
#: and Input type as the JSON lists Kineto writes ([[32, 3, 224, 224], [64]], ["float", ...]).
_TORCH_OP_SQL = """
CREATE OR REPLACE TABLE torch_ops AS
WITH ops AS (
    SELECT tid, name, ts_ns, dur_ns,
           json_extract_string(args, ['$."Call stack"', '$."Input Dims"', '$."Input type"']) AS a
    FROM events WHERE process = 'Python' AND cat = 'cpu_op'
)
SELECT (row_number() OVER (ORDER BY try_cast(tid AS BIGINT), tid, ts_ns, dur_ns DESC, name) - 1)::BIGINT AS op_index,
       tid AS thread, 'Host' AS side, try_cast(tid AS BIGINT) AS tid, name AS op_name, ts_ns AS start_ns, dur_ns,
       'cpu_op' AS category, nullif(regexp_replace(a[1], ';\\s*', ';', 'g'), '') AS call_stack,
       to_json(list_transform(string_split(regexp_replace(a[2], '\\s', '', 'g'), ';'),
                              lambda d: CASE WHEN d = '' THEN []::BIGINT[]
                                             ELSE try_cast(string_split(d, ',') AS BIGINT[]) END)
       )::VARCHAR AS input_dims,
       to_json(string_split(regexp_replace(a[3], ';\\s*', ';', 'g'), ';'))::VARCHAR AS input_types
FROM ops
"""

#: The torch ops as spans and the starts of the torch_to_npu flows as calls, for nesting.nest: each flow start lies
#: on the launching op's thread inside that op, and its id is the device task's start in ns (formats-ascend-today.md
#: §2.2): the task starting at that ns was launched by the innermost op open at the flow's start.
_TORCH_NESTING_SQL = """
SELECT is_call, id, thread, start_ns, end_ns FROM (
    SELECT false AS is_call, op_index AS id, thread, start_ns, start_ns + dur_ns AS end_ns, op_index AS tie
    FROM torch_ops
    UNION ALL
    SELECT DISTINCT true, try_cast(id AS BIGINT), tid, ts_ns, ts_ns, NULL::BIGINT
    FROM all_events WHERE ph = 's' AND name = 'torch_to_npu' AND try_cast(id AS BIGINT) IS NOT NULL)
ORDER BY thread, start_ns, end_ns DESC, is_call, tie
"""

#: host_op of the torch ops: nested (torch_parents), each in the innermost Python frame open when it started
#: (op_frames, python_frames.py; __FRAMES__ where the trace has frames); external_id is op_index, as on the device
#: tasks they launched (_link_launches).
_TORCH_HOST_OP_SQL = """
SELECT o.side, o.tid, o.op_name, o.start_ns, o.dur_ns, o.category, o.op_index AS external_id, o.op_index,
       p.parent_index, __FRAME__ AS frame_index, o.call_stack, o.input_dims, o.input_types
FROM torch_ops o JOIN torch_parents p USING (op_index) __FRAMES__
ORDER BY o.start_ns
"""

#: torch_npu: the "CANN" process's API calls (AscendCL@..., Node@launch, Hccl@..., Runtime@...) -> host_api, the
#: category cann_<level> (acl, node, hccl, runtime), the correlation its connection_id.
_HOST_API_SQL = """
SELECT coalesce(try_cast(args->>'$."Thread Id"' AS BIGINT), try_cast(tid AS BIGINT)) AS tid, name,
       'cann_' || coalesce(args->>'$.level', 'unknown') AS category,
       try_cast(args->>'$.connection_id' AS BIGINT) AS correlation, NULL::BIGINT AS external_id,
       ts_ns AS start_ns, dur_ns
FROM events WHERE process = 'CANN'
ORDER BY ts_ns
"""

#: Era F, with_stack: the Python frames (python_frames.py) of MindSpore 2.6+ (process "MindSpore": no ids, nested
#: by time) and torch_npu (process "Python": args Python id, Python parent id, Python module id, as Kineto's; a
#: root frame names itself as its parent).
#: Frames without a name are counted and left out (_read_frames).
_FRAMES_SQL = """
SELECT tid AS thread, try_cast(tid AS BIGINT) AS tid, name, ts_ns AS start_ns, dur_ns,
       try_cast(a[1] AS BIGINT) AS frame_id, try_cast(nullif(a[2], a[1]) AS BIGINT) AS parent_id,
       coalesce(a[2] <> a[1], a[2] IS NOT NULL) AS parent_given, try_cast(a[3] AS BIGINT) AS module_id
FROM (SELECT *, json_extract_string(args, ['$."Python id"', '$."Python parent id"', '$."Python module id"']) AS a
      FROM events WHERE process IN ('MindSpore', 'Python') AND cat = 'python_function' AND name IS NOT NULL)
"""

#: HCCL plane tasks under the communication op whose span (thread "Communication Kernel") holds them; the plane is k of
#: the task's thread "Plane <k>" (torch_npu writes plane k on thread k + 1, as the db's planeId), else its thread id.
_COMM_TASK_SQL = """
WITH threads AS (
    SELECT DISTINCT pid, tid FROM events
    WHERE process = 'HCCL' AND (args IS NULL OR regexp_matches(thread, '__HCCL_OP_THREAD__'))
), ops AS (
    SELECT e.filename, e.name AS op_name, e.ts_ns AS op_start_ns,
           coalesce(nullif(regexp_extract(e.name, '([A-Za-z]+)-op\\d+', 1), ''),
                    nullif(upper(regexp_extract(e.name, '^hcom_([A-Za-z])', 1))
                           || regexp_extract(e.name, '^hcom_[A-Za-z]([A-Za-z]*)_', 1), ''), 'unknown') AS op_type,
           row_number() OVER (PARTITION BY e.name ORDER BY e.ts_ns) AS execution
    FROM events e JOIN threads USING (pid, tid)
), tasks AS (  -- one JSON parse per task for all the args it needs
    SELECT filename, tid, coalesce(try_cast(regexp_extract(thread, '^Plane (\\d+)$', 1) AS BIGINT), tid::BIGINT) AS plane,
           ts_ns, dur_ns, a[1] AS task_type, a[2]::BIGINT AS stream_id, a[3]::BIGINT AS task_id,
           a[4]::BIGINT AS src_rank, a[5]::BIGINT AS dst_rank, a[6] AS transport, a[7]::BIGINT AS bytes
    FROM (SELECT *, json_extract_string(args, ['$."task type"', '$."stream id"', '$."task id"', '$."src rank"',
                                               '$."dst rank"', '$."transport type"', '$."size(Byte)"']) AS a
          FROM events WHERE process = 'HCCL' AND args IS NOT NULL)
    WHERE task_type IS NOT NULL
)
SELECT coalesce(o.op_name, 'unknown') AS op_name, coalesce(o.op_type, 'unknown') AS op_type, NULL::BIGINT AS op_ordinal,
       o.execution AS iteration, NULL::BIGINT AS step,
       (row_number() OVER (PARTITION BY o.op_name, o.execution ORDER BY t.ts_ns, t.tid, t.task_id) - 1)::INTEGER AS seq,
       t.plane, t.stream_id, t.task_id, replace(t.task_type, '_', ' ') AS task_type,
       nullif(t.src_rank, 4294967295) AS src_rank, nullif(t.dst_rank, 4294967295) AS dst_rank,
       t.transport, nullif(t.bytes, 0) AS bytes, t.ts_ns AS start_ns, t.dur_ns
FROM tasks t
ASOF LEFT JOIN ops o ON o.filename = t.filename AND t.ts_ns >= o.op_start_ns
ORDER BY iteration, op_name, seq
""".replace("__HCCL_OP_THREAD__", _HCCL_OP_THREAD_RE)



def read(source: Source, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """Yield the normalized tables of one msprof-exported device folder."""
    models, files = _model_files(source, warn)
    if source.layout != "ascend_era_f":  # era F keeps its rank in profiler_info_<rank>.json
        _check_rank(source, warn)
    metadata = _metadata(source, models)
    earliest = _Earliest()
    task_csv = ((files.get("csv:op_summary"), msprof_csv.OP_SUMMARY_COLUMNS) if files.get("csv:op_summary") else
                (files.get("csv:kernel_details"), msprof_csv.KERNEL_DETAILS_COLUMNS))
    csv_execs: pa.Table | None = None  # held until the timelines give their launching ops (torch_to_npu)
    if task_csv[0]:
        execs, tasks, metrics = msprof_csv.read_op_summary(*task_csv, warn)
        op_tasks = msprof_tx.op_tasks(execs) if source.step_range is not None else None
        csv_execs = earliest.see(execs.to_arrow(), "start_ns")
        if tasks.height:
            yield "task_desc", tasks.to_arrow()
        if metrics.height:
            yield "device_exec_metric", metrics.to_arrow()
        del execs, tasks, metrics
    else:
        op_tasks = None
    yield from _pmu_summaries(files, warn)
    steps: pa.Table | None = None  # held until the markers are known: --step-range-name may replace them
    if files.get("csv:step_trace"):
        points = msprof_csv.read_step_trace(files["csv:step_trace"], warn)
        steps = earliest.see(points.to_arrow(), "ts_ns") if points.height else None
    markers: pa.Table | None = None
    if files.get("csv:msprof_tx"):
        try:
            frame = msprof_tx.read_csv(files["csv:msprof_tx"], warn)
        except InputError as exc:  # the markers are left out, the rest of the rank is kept
            warn(f"{exc}; the rank's MSTX markers are left out", check="malformed_record", action="dropped",
                 path=exc.path, line=exc.line, offset=exc.offset, tables="host_op")
            frame = pl.DataFrame()
        markers = frame.to_arrow() if frame.height else None
    timeline_kinds = (["trace_view"] if source.layout == "ascend_era_f" else
                      ["msprof"] if files.get("msprof") else ["task_time", "step_trace", "hccl"])
    timelines = sorted(p for kind in timeline_kinds for p in files.get(kind, []))
    every_process = timeline_kinds[0] in ("trace_view", "msprof")  # MSTX markers are among them
    tx_in_timelines = every_process and bool(timelines) and not files.get("csv:msprof_tx")
    if timelines:
        queries = [("comm_task", _COMM_TASK_SQL)]
        queries += [] if task_csv[0] else [("device_exec", _DEVICE_EXEC_SQL)]
        if source.layout == "ascend_era_f":
            queries += [("step_point", _PROFILER_STEP_SQL), ("host_op", _HOST_OP_SQL), ("host_api", _HOST_API_SQL)]
        elif not files.get("csv:step_trace"):
            queries.append(("step_point", _STEP_POINT_SQL))
        if tx_in_timelines:
            queries.append(("marker", msprof_tx.MARKER_SQL))
        if every_process:
            queries.append(("host_op", msprof_tx.DEVICE_MARKER_SQL))
        with memory_database() as con:
            _load_events(con, timelines, warn)
            if not task_csv[0]:  # the device tasks are the timeline's (a task CSV counts its own)
                _count_zero_length_tasks(con, warn)
            if source.layout == "ascend_era_f":
                con.execute(_TORCH_OP_SQL)
                nest(con, _TORCH_NESTING_SQL, "torch_parents", "torch_launches")
                frames = list(_read_frames(con, timelines, warn))
                yield from frames
                frame_of, join = (("f.op_index", "LEFT JOIN op_frames f ON f.call_id = o.op_index") if frames
                                  else ("NULL::BIGINT", ""))
                queries.append(("host_op", _TORCH_HOST_OP_SQL.replace("__FRAME__", frame_of).replace("__FRAMES__", join)))
                if csv_execs is not None:
                    csv_execs = _link_launches(con, csv_execs)
            for table, sql in queries:
                rows = _complete(_query(con, sql, "host_op" if table == "marker" else table, timelines),
                                 "host_op" if table == "marker" else table, warn, timelines)
                if table == "step_point":
                    rows = earliest.see(_forward_steps(rows, warn, timelines), "ts_ns")
                    steps = rows if rows.num_rows else None
                elif table == "marker":
                    markers = rows if rows.num_rows else None
                elif rows.num_rows:
                    if table == "device_exec" and source.step_range is not None:
                        op_tasks = msprof_tx.op_tasks(pl.from_arrow(rows))
                    yield table, earliest.see(rows, "start_ns")
    if csv_execs is not None:
        yield "device_exec", csv_execs
    if markers is None and files.get("msprof_tx") and not tx_in_timelines:
        markers = _tx_timeline(files["msprof_tx"], warn)
    clock = _clock(source.layout, metadata, earliest.ns if earliest.ns is not None else _min_time(markers))
    if markers is None and not files.get("csv:msprof_tx") and not files.get("msprof_tx"):
        raw = msproftx_raw.read_prof(source.directory, clock["host_epoch_offset_ns"] if clock["local_time"] else 0,
                                     warn)
        markers = raw.to_arrow() if raw is not None else None
    if markers is not None:
        yield "host_op", markers
    if source.step_range is not None:
        steps = msprof_tx.steps_of_markers(markers, op_tasks, steps, source.step_range, warn, source.directory)
    if steps is not None:
        yield "step_point", steps
    yield "run_info", run_info(source, device_type="ascend", framework=ascend_framework(metadata), layout=source.layout,
                               metadata_json=json.dumps(metadata) if metadata else None,
                               **{k: v for k, v in clock.items() if k != "local_time"})


def _link_launches(con: duckdb.DuckDBPyConnection, execs: pa.Table) -> pa.Table:
    """`execs` (device_exec of the task CSV) with the op_index (and as external_id) of the torch_npu cpu_op whose
    torch_to_npu flow names the task's start (table torch_launches of _TORCH_NESTING_SQL), to the ns: kernel_details
    rounds the start of a whole HCCL op 1 ns away from the trace's (1736408883732241.563 against .564); null where
    no flow does (MindSpore, msprof)."""
    launches = con.sql("SELECT DISTINCT ON (call_id) call_id::BIGINT AS start_ns, op_index::BIGINT AS op_index "
                       "FROM torch_launches WHERE op_index >= 0 ORDER BY call_id, op_index DESC").pl()
    if not launches.height:
        return execs
    return (pl.from_arrow(execs).with_row_index("__row").sort("start_ns")
            .join_asof(launches.sort("start_ns"), on="start_ns", strategy="nearest", tolerance=1)
            .with_columns(pl.col("op_index").alias("external_id")).sort("__row").drop("__row").to_arrow())


class _Earliest:
    """The earliest time among the tables a reader has seen (what tells the export's clock)."""

    def __init__(self) -> None:
        self.ns: int | None = None

    def see(self, table: pa.Table, column: str) -> pa.Table:
        low = _min_time(table, column)
        if low is not None:
            self.ns = low if self.ns is None else min(self.ns, low)
        return table


def _min_time(table: pa.Table | None, column: str = "start_ns") -> int | None:
    return pc.min(table.column(column)).as_py() if table is not None and table.num_rows else None


def _clock(layout: str, metadata: dict, earliest_ns: int | None) -> dict:
    """run_info's clock columns and `local_time`: whether an era D/E export is in msprof's local time."""
    local = layout != "ascend_era_f" and msprof_local_time(earliest_ns, metadata.get("epoch_offset_ns"))
    if local:
        metadata["time_base"] = "msprof_local_time"
    return {**msprof_clock(layout, metadata.get("epoch_offset_ns"), local), "local_time": local}


def _tx_timeline(files: list[Path], warn: Warn) -> pa.Table | None:
    """host_op markers of msprof_tx_*.json (read where the export has neither msprof_tx CSV nor msprof JSON)."""
    with memory_database() as con:
        _load_events(con, files, warn)
        rows = _complete(_query(con, msprof_tx.MARKER_SQL, "host_op", files), "host_op", warn, files)
    return rows if rows.num_rows else None


def _read_frames(con: duckdb.DuckDBPyConnection, files: list[Path], warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """python_frame from the python_function events (with_stack) of MindSpore 2.6+ or torch_npu (_FRAMES_SQL), with
    the innermost frame each torch_npu op started in (op_frames, for host_op.frame_index)."""
    frames, nameless = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE name IS NULL) FROM events "
        "WHERE process IN ('MindSpore', 'Python') AND cat = 'python_function'").fetchall()[0]
    if nameless:
        warn(f"{files[0]}: {nameless} Python frames (python_function events) without a name; left out",
             check="malformed_record", action="dropped", rows=nameless, path=files[0], tables="python_frame")
    if frames > nameless:
        resolve_frames(con, _FRAMES_SQL, "SELECT op_index, thread, start_ns FROM torch_ops", files[0], warn)
        yield "python_frame", con.sql(PYTHON_FRAME_SQL).to_arrow_table()


def _pmu_summaries(files: dict[str, list[Path]], warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """The device PMU summaries beside the task CSVs (msprof_pmu): L2 cache per task, HBM/DDR and PCIe
    bandwidth."""
    if files.get("pmu:l2_cache"):
        rows = msprof_pmu.read_l2_cache(files["pmu:l2_cache"], warn)
        if rows.height:
            yield "l2_cache_task", rows.to_arrow()
    memories = {kind: files[f"pmu:{kind}"] for kind in ("hbm", "ddr") if files.get(f"pmu:{kind}")}
    if memories:
        rows = msprof_pmu.read_memory_bandwidth(memories, warn)
        if rows.height:
            yield "memory_bandwidth", rows.to_arrow()
    if files.get("pmu:pcie"):
        rows = msprof_pmu.read_pcie(files["pmu:pcie"], warn)
        if rows.height:
            yield "pcie_bandwidth", rows.to_arrow()


def _forward_steps(rows: pa.Table, warn: Warn, files: list[Path]) -> pa.Table:
    """Step points without the steps that end before they start (an Iteration End before the iteration's
    start), reported as one negative_duration row."""
    frame = pl.from_arrow(rows)
    ends = frame.group_by("step").agg(pl.col("ts_ns").filter(pl.col("kind") == "step_start").min().alias("start"),
                                      pl.col("ts_ns").filter(pl.col("kind") == "step_end").max().alias("end"))
    backwards = ends.filter(pl.col("end") < pl.col("start"))["step"]
    if not backwards.len():
        return rows
    where = files[0] if len(files) == 1 else files[0].parent
    warn(f"{where}: {backwards.len()} steps end before they start (the first, step {backwards.min()}); left out",
         check="negative_duration", action="dropped", rows=backwards.len(), path=where,
         example=f"step {backwards.min()}", tables="step_point")
    return frame.filter(~pl.col("step").is_in(backwards.implode())).to_arrow()


def _complete(rows: pa.Table, table: str, warn: Warn, files: list[Path]) -> pa.Table:
    """`rows` without those lacking a value the table requires (an event without a name, a time, or a
    communication op to belong to), reported as one ledger row."""
    needed = [c for c in required_columns(table) if c in rows.column_names]
    if not needed or not any(rows.column(c).null_count for c in needed):
        return rows
    frame = pl.from_arrow(rows)
    incomplete = frame.filter(pl.any_horizontal(pl.col(needed).is_null()))
    missing = [c for c in needed if incomplete[c].null_count()]
    unlinked = table == "comm_task" and missing == ["iteration"]
    where = files[0] if len(files) == 1 else files[0].parent
    warn(f"{where}: {incomplete.height} {table} rows without {', '.join(missing)}"
         f"{' (tasks before any communication op)' if unlinked else ''}; left out",
         check="unlinked" if unlinked else "malformed_record", action="dropped", rows=incomplete.height, path=where,
         tables=table)
    return frame.filter(~pl.any_horizontal(pl.col(needed).is_null())).to_arrow()


def _query(con: duckdb.DuckDBPyConnection, sql: str, table: str, files: list[Path]) -> pa.Table:
    """The rows of one table's query over `events`; a value the query cannot convert (a stream id that is
    not a number, ...) is an InputError naming the file, found by running the query on each file alone."""
    try:
        return con.sql(sql).to_arrow_table()
    except (duckdb.Error, UnicodeDecodeError) as error:  # a message quoting bytes that are not UTF-8
        for path in files:
            con.execute(f"{_EVENTS_VIEW} AND filename = ?", [str(path)])
            try:
                con.sql(sql).fetchall()
            except (duckdb.Error, UnicodeDecodeError) as file_error:
                raise InputError(path, f"events of the wrong type for {table} "
                                       f"({json_files.duckdb_reason(file_error)})") from None
            finally:
                con.execute(_EVENTS_VIEW)
        raise InputError(files[0].parent, f"events of the wrong type for {table} "
                                          f"({json_files.duckdb_reason(error)})") from None


def _model_files(source: Source, warn: Warn) -> tuple[dict[str, int | list[int]], dict[str, list[Path]]]:
    """({"model_id", "models"} where the names carry models, the files to read per kind): era E/F,
    the newest export of each kind (no model in the names); era D, the files of the chosen model."""
    if source.layout == "ascend_era_f":  # of its msprof export (discover's ERA_F_EXPORT_PREFIX) only the MSTX CSV
        files = dict(source.slices)
        if files.get(ERA_F_EXPORT_PREFIX + "csv:msprof_tx"):
            files["csv:msprof_tx"] = [_most_complete("csv:msprof_tx", files[ERA_F_EXPORT_PREFIX + "csv:msprof_tx"], warn)]
        return {}, files
    if source.layout == "ascend_era_e":
        return {}, {kind: [_most_complete(kind, paths, warn)] for kind, paths in source.slices.items()}
    by_model: dict[int, dict[str, list[Path]]] = {}
    pmu = {kind: paths for kind, paths in source.slices.items() if kind.startswith("pmu:")}
    for kind, paths in source.slices.items():
        if kind in pmu:
            continue
        pattern = MSPROF_SUMMARY if kind.startswith("csv:") else MSPROF_TIMELINE
        for path in paths:
            model = int(pattern.fullmatch(path.name).group(3))
            by_model.setdefault(model, {}).setdefault(kind, []).append(path)
    if not by_model:  # device-wide summaries alone
        return {}, dict(pmu)
    candidates = [m for m in by_model if source.models is None or m in source.models]
    if not candidates:
        raise InputError(source.directory, f"no exports of models {list(source.models or [])} "
                                           f"(this rank has models {sorted(by_model)})")
    model = max(candidates, key=lambda m: (sum(len(v) for v in by_model[m].values()), -m))
    others = sorted(set(candidates) - {model})
    if others:
        warn(f"{source.directory}: exports of models {[model, *others]}; model {model} (most files) is "
             f"analysed, models {others} are left out (choose with --model)", check="ambiguous", action="kept",
             rows=sum(len(v) for m in others for v in by_model[m].values()), path=source.directory)
    for kind, paths in by_model[model].items():
        pattern = MSPROF_SUMMARY if kind.startswith("csv:") else MSPROF_TIMELINE
        iterations = {int(pattern.fullmatch(p.name).group(4)) for p in paths}
        missing = sorted(set(range(min(iterations), max(iterations) + 1)) - iterations)
        if missing:
            warn(f"{paths[0].parent}: {kind.removeprefix('csv:')} files of iterations {missing} are missing "
                 f"(found {min(iterations)}..{max(iterations)}); those iterations are absent from the analysis",
                 check="missing_file", action="kept", rows=len(missing), path=paths[0].parent)
    chosen = dict(by_model.get(model, {}))
    for kind, paths in pmu.items():  # device-wide summaries, or per model where the name carries one
        kept = [p for p in paths if MSPROF_PMU_SUMMARY.fullmatch(p.name).group(3) in (None, str(model))]
        if kept:
            chosen[kind] = kept
    return {"model_id": model, "models": sorted(by_model)}, chosen


def _most_complete(kind: str, paths: list[Path], warn: Warn) -> Path:
    """Era E: of several exports of one kind, the one with the most records (the newest among equals); the
    others are reported as superseded. A newer export may be empty or cut short (a failed re-export)."""
    if len(paths) == 1:
        return paths[0]
    counted = {path: _record_count(path) for path in paths}
    chosen = max(paths, key=lambda p: (counted[p], int(MSPROF_OUTPUT.fullmatch(p.name).group(2))))
    for path in sorted(set(paths) - {chosen}):
        warn(f"{path}: superseded by {chosen.name}, the {kind.removeprefix('csv:')} export with the most records "
             f"({counted[chosen]} against {counted[path]})", check="superseded", action="superseded",
             rows=counted[path], path=path)
    return chosen


def _record_count(path: Path) -> int:
    """Records of an export, counted without parsing: the lines after the header of a CSV, the events
    (`"ph"` keys) of a JSON trace."""
    needle = b"\n" if path.suffix == ".csv" else b'"ph"'
    count, tail = 0, b""
    with open(path, "rb") as handle:
        while block := handle.read(16 * 1024 * 1024):
            data = tail + block
            count += data.count(needle)
            tail = data[-(len(needle) - 1):] if len(needle) > 1 else b""
            count -= tail.count(needle)  # counted again with the next block
    count += tail.count(needle)
    return max(count - 1, 0) if path.suffix == ".csv" else count


def _device_file(source: Source, name: str) -> Path:
    """A device file (info.json.N, start_info.N): in the device folder, or in era E's device_N."""
    direct = source.directory / name
    return direct if direct.is_file() else source.directory / f"device_{source.device_id}" / name


def _check_rank(source: Source, warn: Warn) -> None:
    """Ranks are numbered by device id; say so when info.json is missing or gives another rank_id."""
    info = _device_file(source, f"info.json.{source.device_id}")
    if not info.is_file():
        warn(f"{source.directory}: no info.json.{source.device_id}; the rank is numbered by the device id "
             f"({source.device_id})", check="missing_file", action="kept", path=source.directory)
        return
    data = load_json(info, "msprof device info JSON with rank_id")
    try:
        rank_id = int(data.get("rank_id", -1))
    except (ValueError, TypeError, AttributeError, OverflowError) as exc:
        raise InputError(info, f"expected msprof device info JSON with rank_id ({exc})") from None
    if rank_id >= 0 and rank_id != source.device_id:
        warn(f"{info}: rank_id {rank_id} differs from the device id {source.device_id}; profpipe numbers the rank "
             f"by the device id", check="ambiguous", action="kept", path=info, example=f"rank_id {rank_id}")


def _load_events(con: duckdb.DuckDBPyConnection, files: list[Path], warn: Warn) -> None:
    """Parse the JSON arrays into table `all_events` (read through the view `events`); a file that is not
    one is named in the error. Events whose time or duration is not a number (NaN, inf, true, ...) or is
    beyond MAX_NS, events with a negative duration, and repeats of an event in one file, are left out and
    reported, whichever tables read them."""
    json_files.create_table(con, "all_events", _EVENTS_SQL.replace("$columns", _duckdb_struct(_COLUMNS)), files,
                            "an msprof Chrome-trace JSON array")
    _drop_events(con, warn, "bad_time", "malformed_record", "events whose time or duration is not a number")
    _drop_events(con, warn, "dur_ns < 0", "negative_duration", "events with a negative duration")
    _drop_events(con, warn, f"ts_ns NOT BETWEEN 0 AND {MAX_NS} OR dur_ns > {MAX_NS}", "out_of_range",
                 "events with a time or duration out of range")
    key = "filename, name, pid, tid, ph, cat, id, args, ts_ns, dur_ns"
    if con.execute(f"SELECT count(*) = count(DISTINCT hash({key})) FROM all_events").fetchall()[0][0]:
        con.execute(_EVENTS_VIEW)
        return  # no two events alike (equal events hash alike; the exact count below runs otherwise)
    repeated = con.execute("SELECT filename, count(*) - count(DISTINCT (name, pid, tid, ph, cat, id, args::VARCHAR, "
                           "ts_ns, dur_ns)) FROM all_events GROUP BY filename ORDER BY filename").fetchall()
    for filename, count in repeated:
        if count:
            warn(f"{filename}: {count} repeated events (the same name, place, time and args as an earlier one); "
                 "left out", check="duplicate_record", action="dropped", rows=count, path=filename,
                 tables="device_exec,step_point,host_op,comm_task,python_frame")
    if any(count for _, count in repeated):
        con.execute("CREATE OR REPLACE TABLE all_events AS SELECT DISTINCT ON (filename, name, pid, tid, ph, cat, "
                    "id, args::VARCHAR, ts_ns, dur_ns) * FROM all_events")
    con.execute(_EVENTS_VIEW)


def _count_zero_length_tasks(con: duckdb.DuckDBPyConnection, warn: Warn) -> None:
    """Device tasks of 0 µs are legitimate (msprof writes a task shorter than its µs resolution so: a real era D export
    holds 256 in 4,900, mostly sync and notify tasks): kept as recorded, counted per file."""
    found = con.execute("SELECT filename, count(*), arg_min(name, ts_ns) FROM all_events WHERE dur_ns = 0 AND "
                        "process = 'Ascend Hardware' AND args->>'$.\"Task Type\"' IS NOT NULL "
                        "GROUP BY filename ORDER BY filename").fetchall()
    for filename, count, example in found:
        warn(f"{filename}: {count} device tasks last 0 ns, shorter than the export's time resolution (real exports "
             "hold them); kept as recorded", check="out_of_range", action="kept", rows=count, path=filename,
             example=example, tables="device_exec")


def _drop_events(con: duckdb.DuckDBPyConnection, warn: Warn, condition: str, check: str, what: str) -> None:
    found = con.execute(f"SELECT filename, count(*), arg_min(name, ts_ns) FROM all_events WHERE {condition} "
                        "GROUP BY filename ORDER BY filename").fetchall()
    for filename, count, example in found:
        warn(f"{filename}: {count} {what}; left out", check=check, action="dropped", rows=count, path=filename,
             example=example, tables="device_exec,step_point,host_op,comm_task,python_frame")
    if found:
        con.execute(f"DELETE FROM all_events WHERE {condition}")


def _duckdb_struct(columns: dict[str, str]) -> str:
    return "{" + ", ".join(f"'{name}': '{kind}'" for name, kind in columns.items()) + "}"


def _metadata(source: Source, models: dict[str, int | list[int]]) -> dict:
    """run_info.metadata_json: era F, its profiler_info JSON with epoch_offset_ns 0; else the model analysed, the
    models found and start_info's epoch offset (collectionTimeBegin µs x 1000 - clockMonotonicRaw ns)."""
    if source.layout == "ascend_era_f":
        info_path = source.directory / f"profiler_info_{source.rank}.json"
        info = load_json(info_path, "MindSpore's profiler_info JSON object") if info_path.is_file() else {}
        if not isinstance(info, dict):
            raise InputError(info_path, "expected MindSpore's profiler_info JSON object")
        return {**info, "epoch_offset_ns": 0}
    metadata: dict = dict(models)
    start_info = _device_file(source, f"start_info.{source.device_id}")
    if start_info.is_file():
        info = load_json(start_info, "JSON with collectionTimeBegin and clockMonotonicRaw")
        try:
            offset = int(info["collectionTimeBegin"]) * 1000 - int(info["clockMonotonicRaw"])
        except (ValueError, KeyError, TypeError, OverflowError) as exc:
            raise InputError(start_info, f"expected JSON with collectionTimeBegin and clockMonotonicRaw ({exc})") from None
        if abs(offset) > MAX_NS:
            raise InputError(start_info, f"collectionTimeBegin and clockMonotonicRaw give an epoch offset of "
                                         f"{offset} ns, beyond ±{MAX_NS}")
        metadata["epoch_offset_ns"] = offset
    return metadata
