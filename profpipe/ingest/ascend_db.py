"""Stage 2, ingest: Ascend db exports (torch_npu `ascend_pytorch_profiler[_<rank>].db`, MindSpore 2.5+
`ascend_mindspore_profiler[_<rank>].db`, msprof `PROF_*/msprof_<ts>.db`) -> normalized tables.

One source is one db file (shared/reference/formats-ascend-today.md §3). SQLite is opened read-only and immutable
and the tables read are copied column-wise into a scratch DuckDB database (scratch.py, as nsys.py does); a table or
column the file lacks reads as empty or null (Level 0 has no TASK_PMU_INFO; msprof and MindSpore dbs have no
PYTORCH_API, CONNECTION_IDS, PYTORCH_CALLCHAINS, STEP_TIME, MEMORY_RECORD or OP_MEMORY; newer msprof calls
blockDim blockNum). Strings are ids into STRING_IDS, resolved by join; enums are joined by name through the file's
own ENUM_* tables (their ids drift between versions). Times are ns on the Unix epoch; PYTORCH_API keeps its
times as TEXT (cast here). The tables, with the same columns and meaning as the text export's readers give:

* device_exec: TASK ⋈ COMPUTE_TASK_INFO -> kind 'task' (name and op_name: the kernel's name, as kernel_details'
  Name; correlation: TASK.connectionId; op_index: the torch op that launched it, PYTORCH_API.connectionId ->
  CONNECTION_IDS -> TASK.connectionId); COMMUNICATION_OP -> one 'sync' row per whole HCCL op (as kernel_details'
  HCCL rows: no stream or task id); other TASK rows that are no HCCL sub-task (event, memcpy, profiling tasks)
  -> kind 'sync' named by their task type. task_desc gives each compute kernel its op type, core type and block
  dim and its tensors (shapes, data types, formats, as kernel_details writes them); device_exec_metric the TASK_PMU_INFO values (`*_time`
  ns; aic_total_time is kernel_details' aicore_time, aiv_total_time its aiv_time);
* comm_task: COMMUNICATION_TASK_INFO ⋈ TASK under its COMMUNICATION_OP (group-local src/dst ranks, bytes,
  transport by ENUM_HCCL_TRANSPORT_TYPE);
* host_op: PYTORCH_API rows of type op (ENUM_API_TYPE 'op'; category cpu_op, nested per thread, call stack from
  PYTORCH_CALLCHAINS, input shapes and dtypes as JSON lists); python_frame: rows of type trace; host_api:
  CANN_API (category cann_<level>: cann_acl, cann_node, cann_hccl, cann_runtime);
* step_point: STEP_TIME (step start and end, as FP point the step's first compute kernel, and the step's window on
  the device, device_step_start / device_step_end, as the ProfilerStep rule of the text export in msprof_export.py);
* memory_record (MEMORY_RECORD, plus the APP samples of NPU_MEM: reserved = hbm), memory_block (OP_MEMORY,
  component PTA), memory_module (NPU_MODULE_MEM by ENUM_MODULE), all in bytes;
* run_info: NPU_INFO chip, SESSION_TIME_INFO, META_DATA, RANK_DEVICE_MAP and the profiler_info JSON beside
  ASCEND_PROFILER_OUTPUT in metadata_json; the device id from RANK_DEVICE_MAP (rank != device).

Damage is never silent (trace_health): values of the wrong storage class are counted and converted by
scratch.copy_sqlite_table; rows without both times, beyond ±2^62 ns or ending before they start are left out per
table; a string id STRING_IDS lacks is counted per table and read as 'string id <n>'; a PMU value that is not a
non-negative finite number, a task detail whose globalTaskId no TASK row has, and a row whose id or name its table
requires is NULL are left out and counted. A file that is not SQLite, or has no TASK table, is an InputError naming
it; the tasks of several devices in one file are read as one rank and reported.
"""
from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import duckdb
import pyarrow as pa

from ..clocks import msprof_clock
from ..discover import Source
from ..errors import InputError
from ..health import Warn
from .lines import required_columns
from .nesting import nest
from .python_frames import PYTHON_FRAME_SQL, resolve_frames
from .run_info import run_info
from .scratch import (copy_sqlite_table, drop_bad_intervals, open_sqlite, query_tables, scratch_database,
                      scratch_folder, sqlite_columns)

_ENUM = ("id", "name")
#: Tables read: scratch name -> (SQLite table, columns). A table or column the file lacks reads as empty or null.
_LOADS: dict[str, tuple[str, tuple[str, ...]]] = {
    "strings": ("STRING_IDS", ("id", "value")),
    "task": ("TASK", ("startNs", "endNs", "deviceId", "connectionId", "globalTaskId", "taskType", "streamId", "taskId",
                      "modelId")),
    "compute": ("COMPUTE_TASK_INFO", ("name", "globalTaskId", "blockDim", "blockNum", "mixBlockDim", "mixBlockNum",
                                      "taskType", "opType", "inputFormats", "inputDataTypes", "inputShapes",
                                      "outputFormats", "outputDataTypes", "outputShapes")),
    "pmu": ("TASK_PMU_INFO", ("globalTaskId", "name", "value")),
    "comm_op": ("COMMUNICATION_OP", ("opName", "startNs", "endNs", "connectionId", "opId", "opType")),
    "comm": ("COMMUNICATION_TASK_INFO", ("globalTaskId", "taskType", "planeId", "srcRank", "dstRank", "transportType",
                                         "linkType", "size", "opId")),
    "cann": ("CANN_API", ("startNs", "endNs", "type", "globalTid", "connectionId", "name")),
    "torch": ("PYTORCH_API", ("startNs", "endNs", "globalTid", "connectionId", "name", "inputDtypes", "inputShapes",
                              "callchainId", "type")),
    "connections": ("CONNECTION_IDS", ("id", "connectionId")),
    "callchains": ("PYTORCH_CALLCHAINS", ("id", "stack", "stackDepth")),
    "step_time": ("STEP_TIME", ("id", "startNs", "endNs")),
    "memory": ("MEMORY_RECORD", ("component", "timestamp", "totalAllocated", "totalReserved", "totalActive",
                                 "deviceId")),
    "op_memory": ("OP_MEMORY", ("name", "size", "allocationTime", "releaseTime", "allocationTotalAllocated",
                                "allocationTotalReserved", "allocationTotalActive", "releaseTotalAllocated",
                                "releaseTotalReserved", "releaseTotalActive", "streamPtr", "deviceId")),
    "npu_mem": ("NPU_MEM", ("type", "hbm", "timestampNs", "deviceId")),
    "module_mem": ("NPU_MODULE_MEM", ("moduleId", "timestampNs", "totalReserved", "deviceId")),
    "enum_api": ("ENUM_API_TYPE", _ENUM),
    "enum_module": ("ENUM_MODULE", _ENUM),
    "enum_transport": ("ENUM_HCCL_TRANSPORT_TYPE", _ENUM),
    "enum_link": ("ENUM_HCCL_LINK_TYPE", _ENUM),
    "npu_info": ("NPU_INFO", ("id", "name")),
    "session": ("SESSION_TIME_INFO", ("startTimeNs", "endTimeNs")),
    "meta": ("META_DATA", ("name", "value")),
    "rank_map": ("RANK_DEVICE_MAP", ("rankId", "deviceId")),
}
#: TEXT columns (PYTORCH_API's times are TEXT in the files: cast after the copy); REAL ones (PMU values).
_TEXT = {"strings": {"value"}, "enum_api": {"name"}, "enum_module": {"name"}, "enum_transport": {"name"},
         "enum_link": {"name"},
         "npu_info": {"name"}, "meta": {"name", "value"}, "torch": {"startNs", "endNs"}}
_REAL = {"pmu": {"value"}}
#: Intervals checked per table: scratch table -> (start column, end column, the normalized tables they feed).
_INTERVALS = {"task": ("startNs", "endNs", "device_exec,comm_task"), "comm_op": ("startNs", "endNs", "device_exec,comm_task"),
              "cann": ("startNs", "endNs", "host_api"), "torch": ("start_ns", "end_ns", "host_op,python_frame"),
              "step_time": ("startNs", "endNs", "step_point")}
#: String ids per table (scratch table, column, the normalized table that shows the name).
_NAMED = (("task", "taskType", "device_exec"), ("compute", "name", "device_exec"), ("compute", "opType", "task_desc"),
          ("compute", "taskType", "task_desc"), ("comm_op", "opName", "comm_task"), ("comm", "taskType", "comm_task"),
          ("cann", "name", "host_api"), ("torch", "name", "host_op"), ("pmu", "name", "device_exec_metric"),
          *(("compute", column, "task_desc") for column in ("inputShapes", "inputDataTypes", "inputFormats",
                                                            "outputShapes", "outputDataTypes", "outputFormats")))
#: ENUM_API_TYPE names of PYTORCH_API rows (by name: the ids drift) and their fallback ids (S1's).
_OP_TYPE, _TRACE_TYPE = ("op", 50001), ("trace", 50003)


def _string(table: str, column: str) -> str:
    """SQL: the string of id `table.column` (joined as s_<column>), else 'string id <n>' (counted by _count_unnamed)."""
    return f"coalesce(s_{column}.value, 'string id ' || {table}.{column})"


def _join_string(table: str, column: str) -> str:
    return f"LEFT JOIN strings s_{column} ON s_{column}.id = {table}.{column}"


def _api_type(name: tuple[str, int]) -> str:
    """SQL: PYTORCH_API.type of the ENUM_API_TYPE name, by name where the file has the enum, else the known id."""
    return f"coalesce((SELECT min(id) FROM enum_api WHERE name = '{name[0]}'), {name[1]})"


_TASKS_SQL = f"""
CREATE TABLE tasks AS
SELECT task.*, task.endNs - task.startNs AS dur_ns, {_string('task', 'taskType')} AS task_type,
       compute.globalTaskId IS NOT NULL AS is_compute, comm.globalTaskId IS NOT NULL AS is_comm
FROM task {_join_string('task', 'taskType')}
LEFT JOIN (SELECT DISTINCT globalTaskId FROM compute) compute USING (globalTaskId)
LEFT JOIN (SELECT DISTINCT globalTaskId FROM comm) comm USING (globalTaskId)
"""

#: Host ops (PYTORCH_API type op) numbered by thread, start, longest first (op_index), with their call stacks.
_OPS_SQL = f"""
CREATE TABLE ops AS
WITH stacks AS (
    SELECT c.id, string_agg(coalesce(s.value, 'string id ' || c.stack), ';' ORDER BY c.stackDepth) AS call_stack
    FROM callchains c LEFT JOIN strings s ON s.id = c.stack GROUP BY c.id
)
SELECT row_number() OVER (ORDER BY torch.globalTid, torch.start_ns, torch.end_ns DESC, name) - 1 AS op_index,
       torch.globalTid, torch.globalTid & 4294967295 AS tid, coalesce(torch.name_text, 'string id ' || torch.name) AS name,
       torch.start_ns,
       torch.end_ns - torch.start_ns AS dur_ns, torch.end_ns, torch.connectionId, st.call_stack,
       '[' || array_to_string(list_transform(string_split(dims, ';'),
                                             lambda d: '[' || trim(replace(d, '"', ''), e'\r\n ') || ']'), ',') || ']'
           AS input_dims,
       to_json(list_transform(string_split(types, ';'), lambda t: trim(t, e'\r\n ')))::VARCHAR AS input_types
FROM (SELECT torch.*, s_name.value AS name_text,  -- S1 stores the dims in inputDtypes and the types in inputShapes
             CASE WHEN regexp_full_match(s_inputShapes.value, '[0-9,;"\\s]*') THEN s_inputShapes.value
                  WHEN regexp_full_match(s_inputDtypes.value, '[0-9,;"\\s]*') THEN s_inputDtypes.value END AS dims,
             CASE WHEN regexp_full_match(s_inputShapes.value, '[0-9,;"\\s]*') THEN s_inputDtypes.value
                  WHEN regexp_full_match(s_inputDtypes.value, '[0-9,;"\\s]*') THEN s_inputShapes.value
                  ELSE s_inputDtypes.value END AS types
      FROM torch {_join_string('torch', 'name')} {_join_string('torch', 'inputShapes')}
      {_join_string('torch', 'inputDtypes')}) torch
LEFT JOIN stacks st ON st.id = torch.callchainId
WHERE torch.type = {_api_type(_OP_TYPE)}
"""

_NESTING_SQL = """
SELECT false AS is_call, op_index AS id, globalTid AS thread, start_ns, end_ns FROM ops
ORDER BY thread, start_ns, end_ns DESC, id
"""

_FRAMES_SQL = f"""
SELECT torch.globalTid AS thread, torch.globalTid & 4294967295 AS tid, {_string('torch', 'name')} AS name,
       torch.start_ns, torch.end_ns - torch.start_ns AS dur_ns, NULL::BIGINT AS frame_id, NULL::BIGINT AS parent_id,
       false AS parent_given, NULL::BIGINT AS module_id
FROM torch {_join_string('torch', 'name')}
WHERE torch.type = {_api_type(_TRACE_TYPE)}
"""

_FRAME_OPS_SQL = "SELECT op_index, globalTid AS thread, start_ns FROM ops"

#: The op that launched each connection id: of the ops whose group holds it, the innermost (latest start).
_LAUNCHES_SQL = """
CREATE TABLE launches AS
SELECT c.connectionId, arg_max(o.op_index, (o.start_ns, -o.dur_ns)) AS op_index
FROM ops o JOIN connections c ON c.id = o.connectionId
GROUP BY c.connectionId
"""

_HOST_OP_SQL = """
SELECT 'Host' AS side, o.tid, o.name AS op_name, o.start_ns, o.dur_ns, 'cpu_op' AS category, NULL::BIGINT AS external_id,
       o.op_index, p.parent_index, f.op_index AS frame_index, o.call_stack, o.input_dims, o.input_types
FROM ops o JOIN parents p USING (op_index) LEFT JOIN op_frames_or_none f ON f.call_id = o.op_index
ORDER BY o.start_ns, o.op_index
"""

_DEVICE_EXEC_SQL = f"""
SELECT t.streamId AS stream_id, 'task' AS kind, {_string('compute', 'name')} AS name, t.connectionId AS correlation,
       t.taskId AS task_id, {_string('compute', 'name')} AS op_name, t.startNs AS start_ns, t.dur_ns,
       t.deviceId AS device_id, l.op_index
FROM tasks t JOIN compute USING (globalTaskId) {_join_string('compute', 'name')}
LEFT JOIN launches l ON l.connectionId = t.connectionId
UNION ALL
SELECT NULL, 'sync', {_string('comm_op', 'opName')}, comm_op.connectionId, NULL, NULL, comm_op.startNs,
       comm_op.endNs - comm_op.startNs, NULL, l.op_index
FROM comm_op {_join_string('comm_op', 'opName')} LEFT JOIN launches l ON l.connectionId = comm_op.connectionId
UNION ALL
SELECT t.streamId, 'sync', t.task_type, t.connectionId, t.taskId, NULL, t.startNs, t.dur_ns, t.deviceId, NULL
FROM tasks t WHERE NOT t.is_compute AND NOT t.is_comm
ORDER BY start_ns, stream_id, task_id
"""

#: The tensor columns of task_desc (as kernel_details.csv writes them: msprof_csv.TENSOR_COLUMNS) by their
#: COMPUTE_TASK_INFO column.
_TENSOR_COLUMNS = {"input_shapes": "inputShapes", "input_types": "inputDataTypes", "input_formats": "inputFormats",
                   "output_shapes": "outputShapes", "output_types": "outputDataTypes", "output_formats": "outputFormats"}
_TENSORS = ", ".join(f"trim(arg_min({_string('compute', theirs)}, t.startNs), '\"') AS {ours}"
                     for ours, theirs in _TENSOR_COLUMNS.items())
_TENSOR_JOINS = " ".join(_join_string("compute", theirs) for theirs in _TENSOR_COLUMNS.values())

#: Each compute kernel's task (op name, task and stream ids): its type, block dim and its tensors' ';'-joined shapes,
#: data types and formats (STRING_IDS keeps shapes in literal quotes, which are stripped), those of the task's first
#: execution.
_TASK_DESC_SQL = f"""
SELECT row_number() OVER (ORDER BY min(t.startNs), t.streamId, t.taskId) - 1 AS seq, op_name, t.taskId AS task_id,
       t.streamId AS stream_id, any_value(coalesce(compute.blockNum, compute.blockDim)) AS block_dim,
       any_value(t.modelId) AS graph_id, any_value({_string('compute', 'opType')}) AS op_type,
       any_value({_string('compute', 'taskType')}) AS task_type, {_TENSORS}
FROM (SELECT *, {_string('compute', 'name')} AS op_name FROM compute {_join_string('compute', 'name')}) compute
JOIN tasks t USING (globalTaskId) {_join_string('compute', 'opType')} {_join_string('compute', 'taskType')} {_TENSOR_JOINS}
GROUP BY op_name, t.taskId, t.streamId
ORDER BY seq
"""

#: PMU names as kernel_details' columns name them: aic_total_time is aicore_time(us) (no core prefix), aiv_total_time
#: is aiv_time(us); the rest split into core prefix and metric. `*_time` values are ns already.
_METRIC_SQL = f"""
WITH named AS (
    SELECT p.globalTaskId, p.value, {_string('p', 'name')} AS column_name
    FROM pmu p {_join_string('p', 'name')}
), split AS (
    SELECT *, CASE WHEN column_name = 'aic_total_time' THEN NULL
                   WHEN regexp_matches(column_name, '^ai[cv]_') THEN left(column_name, 3) END AS core,
              CASE WHEN column_name = 'aic_total_time' THEN 'aicore_time'
                   WHEN column_name = 'aiv_total_time' THEN 'time'
                   WHEN regexp_matches(column_name, '^ai[cv]_') THEN column_name[5:] ELSE column_name END AS metric
    FROM named
)
SELECT t.streamId AS stream_id, t.taskId AS task_id, t.startNs AS start_ns, s.core, s.metric, s.value,
       CASE WHEN s.metric LIKE '%\\_time' ESCAPE '\\' OR s.metric = 'time' THEN 'ns'
            WHEN regexp_matches(s.metric, '_(ratio|rate)$') THEN 'share'
            WHEN regexp_matches(s.metric, '_(cycles|fops|hit|allocate|miss)$') THEN 'count' ELSE 'number' END AS unit
FROM split s JOIN tasks t USING (globalTaskId)
WHERE isfinite(s.value) AND s.value >= 0
ORDER BY t.startNs, t.streamId, t.taskId, s.column_name
"""

#: HCCL sub-tasks under their op; the op type from COMMUNICATION_OP.opType ('hcom_allReduce_' -> AllReduce).
_COMM_TASK_SQL = f"""
WITH ops AS (
    SELECT comm_op.opId, {_string('comm_op', 'opName')} AS op_name, comm_op.startNs,
           regexp_extract(coalesce(s_opType.value, s_opName.value), '^hcom_([A-Za-z]+)', 1) AS bare
    FROM comm_op {_join_string('comm_op', 'opName')} {_join_string('comm_op', 'opType')}
), executions AS (
    SELECT *, row_number() OVER (PARTITION BY op_name ORDER BY startNs) AS execution,
           CASE WHEN bare = '' THEN 'unknown' ELSE upper(left(bare, 1)) || bare[2:] END AS op_type
    FROM ops
)
SELECT coalesce(o.op_name, 'unknown') AS op_name, coalesce(o.op_type, 'unknown') AS op_type, NULL::BIGINT AS op_ordinal,
       o.execution AS iteration, NULL::BIGINT AS step,
       (row_number() OVER (PARTITION BY o.opId ORDER BY t.startNs, c.planeId, t.taskId) - 1)::INTEGER AS seq,
       c.planeId AS plane, t.streamId AS stream_id, t.taskId AS task_id,
       replace({_string('c', 'taskType')}, '_', ' ') AS task_type,
       nullif(c.srcRank, 4294967295) AS src_rank, nullif(c.dstRank, 4294967295) AS dst_rank,
       CASE WHEN e.name NOT IN ('INVALID_TYPE', 'N/A') THEN e.name END AS transport, nullif(c.size, 0) AS bytes,
       t.startNs AS start_ns, t.dur_ns,
       CASE WHEN l.name NOT IN ('INVALID_TYPE', 'N/A') THEN l.name END AS link_type
FROM comm c JOIN tasks t USING (globalTaskId) {_join_string('c', 'taskType')}
LEFT JOIN executions o ON o.opId = c.opId
LEFT JOIN enum_transport e ON e.id = c.transportType
LEFT JOIN enum_link l ON l.id = c.linkType
ORDER BY iteration, op_name, seq
"""

_HOST_API_SQL = f"""
SELECT cann.globalTid & 4294967295 AS tid, {_string('cann', 'name')} AS name, 'cann_' || coalesce(e.name, cann.type::VARCHAR) AS category,
       cann.connectionId AS correlation, NULL::BIGINT AS external_id, cann.startNs AS start_ns,
       cann.endNs - cann.startNs AS dur_ns
FROM cann {_join_string('cann', 'name')} LEFT JOIN enum_api e ON e.id = cann.type
ORDER BY cann.startNs
"""

#: STEP_TIME is the host ProfilerStep#<id> range; the FP point is the step's first compute kernel (era F's rule); the
#: compute kernels and whole HCCL ops starting inside the range (as msprof-analyze takes them for analysis.db's
#: StepTraceTime) give device_step_start (their first start) and device_step_end (their last end), the step's window on
#: the device, as the text export's reader gives them (msprof_export._PROFILER_STEP_SQL).
_STEP_POINT_SQL = f"""
WITH steps AS (
    SELECT id AS step, startNs AS start_ns, endNs AS end_ns FROM step_time
), work AS (
    SELECT {_string('compute', 'name')} AS name, t.startNs AS ts_ns, t.endNs AS end_ns, true AS is_task
    FROM tasks t JOIN compute USING (globalTaskId) {_join_string('compute', 'name')}
    UNION ALL
    SELECT NULL, startNs, endNs, false FROM comm_op
), first_ops AS (
    SELECT s.step, arg_min(w.name, w.ts_ns) FILTER (WHERE w.is_task) AS op_name,
           min(w.ts_ns) FILTER (WHERE w.is_task) AS ts_ns, min(w.ts_ns) AS work_start_ns, max(w.end_ns) AS work_end_ns
    FROM steps s JOIN work w ON w.ts_ns >= s.start_ns AND w.ts_ns < s.end_ns
    GROUP BY s.step
), points AS (
    SELECT step, 'step_start' AS kind, NULL AS op_name, 0 AS rank_in_tie, start_ns AS ts_ns FROM steps
    UNION ALL SELECT step, 'device_step_start', NULL, 1, work_start_ns FROM first_ops
    UNION ALL SELECT step, 'fp_start', op_name, 2, ts_ns FROM first_ops WHERE ts_ns IS NOT NULL
    UNION ALL SELECT step, 'device_step_end', NULL, 3, work_end_ns FROM first_ops
    UNION ALL SELECT step, 'step_end', NULL, 4, end_ns FROM steps
)
SELECT step, kind, op_name, (row_number() OVER (PARTITION BY step ORDER BY ts_ns, rank_in_tie) - 1)::INTEGER AS seq,
       NULL::BIGINT AS stream_id, NULL::BIGINT AS tag, ts_ns
FROM points
ORDER BY step, seq
"""

_MEMORY_RECORD_SQL = f"""
SELECT row_number() OVER (ORDER BY ts_ns, part, n) - 1 AS seq, component, device, ts_ns, allocated_bytes,
       reserved_bytes, active_bytes
FROM (SELECT 0 AS part, row_number() OVER () AS n, {_string('memory', 'component')} AS component,
             'NPU:' || memory.deviceId AS device, memory.timestamp AS ts_ns, memory.totalAllocated AS allocated_bytes,
             memory.totalReserved AS reserved_bytes, memory.totalActive AS active_bytes
      FROM memory {_join_string('memory', 'component')}
      UNION ALL
      SELECT 1, row_number() OVER (), 'APP', 'NPU:' || npu_mem.deviceId, npu_mem.timestampNs, NULL, npu_mem.hbm, NULL
      FROM npu_mem {_join_string('npu_mem', 'type')} WHERE lower(s_type.value) = 'app')
WHERE ts_ns IS NOT NULL
ORDER BY seq
"""

_MEMORY_BLOCK_SQL = f"""
SELECT row_number() OVER (ORDER BY op_memory.allocationTime, op_memory.name) - 1 AS seq, 'PTA' AS component,
       'NPU:' || op_memory.deviceId AS device, {_string('op_memory', 'name')} AS owner, op_memory.size AS bytes,
       op_memory.allocationTime AS alloc_ns, op_memory.releaseTime AS release_ns,
       op_memory.allocationTotalAllocated AS alloc_allocated_bytes, op_memory.allocationTotalReserved AS alloc_reserved_bytes,
       op_memory.allocationTotalActive AS alloc_active_bytes, op_memory.releaseTotalAllocated AS release_allocated_bytes,
       op_memory.releaseTotalReserved AS release_reserved_bytes, op_memory.releaseTotalActive AS release_active_bytes,
       op_memory.streamPtr::VARCHAR AS stream
FROM op_memory {_join_string('op_memory', 'name')}
WHERE op_memory.allocationTime IS NOT NULL
ORDER BY seq
"""

_MEMORY_MODULE_SQL = """
SELECT row_number() OVER (ORDER BY m.timestampNs, m.moduleId) - 1 AS seq, coalesce(e.name, 'module ' || m.moduleId) AS component,
       'NPU:' || m.deviceId AS device, m.timestampNs AS ts_ns, CASE WHEN m.totalReserved >= 0 THEN m.totalReserved END AS reserved_bytes
FROM module_mem m LEFT JOIN enum_module e ON e.id = m.moduleId
WHERE m.timestampNs IS NOT NULL
ORDER BY seq
"""


def read(source: Source, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """Yield the normalized tables of one Ascend db export."""
    path = source.files["db"]
    if path.stat().st_size == 0:
        raise InputError(path, "empty file, expected an Ascend profiler db export (SQLite)")
    db = open_sqlite(path)
    db.text_factory = lambda raw: raw.decode("utf-8", errors="replace")
    try:
        columns = sqlite_columns(db)
        if "TASK" not in columns:
            raise InputError(path, "not an Ascend profiler db export: it has no TASK table"
                                   + (f" (tables: {', '.join(sorted(columns)[:8])})" if columns else " (no tables)"))
        with scratch_folder("ascenddb") as scratch, scratch_database(scratch) as con:
            for name, (table, wanted) in _LOADS.items():
                copy_sqlite_table(db, con, path, name, table, wanted, columns.get(table, set()), warn,
                                  _TEXT.get(name, frozenset()), _REAL.get(name, frozenset()))
            _cast_text_times(con, path, warn)
            _count_orphans(con, path, warn)
            drop_bad_intervals(con, path, warn, [(name, _LOADS[name][0], start, end, "true", "rows", tables)
                                                 for name, (start, end, tables) in _INTERVALS.items()])
            _count_unnamed(con, path, "STRING_IDS" in columns, warn)
            _count_bad_metrics(con, path, warn)
            source = _identity(con, source, path, warn)
            yield "run_info", _run_info(con, source, path, columns)
            yield from _tables(con, path, warn)
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # sqlite3 decodes its messages strictly
        raise InputError(path, f"cannot be read as an SQLite database ({exc})") from None
    finally:
        db.close()


def _tables(con: duckdb.DuckDBPyConnection, path: Path, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    con.execute(_TASKS_SQL)
    con.execute(_OPS_SQL)
    nest(con, _NESTING_SQL)
    con.execute(_LAUNCHES_SQL)
    frames = con.execute(f"SELECT count(*) FROM ({_FRAMES_SQL})").fetchall()[0][0]
    if frames:
        resolve_frames(con, _FRAMES_SQL, _FRAME_OPS_SQL, path, warn)
        con.execute("CREATE VIEW op_frames_or_none AS SELECT call_id, op_index FROM op_frames")
    else:
        con.execute("CREATE VIEW op_frames_or_none AS SELECT NULL::BIGINT AS call_id, NULL::BIGINT AS op_index WHERE false")
    queries = [("device_exec", _DEVICE_EXEC_SQL), ("task_desc", _TASK_DESC_SQL),
               ("device_exec_metric", _METRIC_SQL),
               ("comm_task", _COMM_TASK_SQL), ("host_op", _HOST_OP_SQL), ("host_api", _HOST_API_SQL),
               ("step_point", _STEP_POINT_SQL), ("memory_record", _memory_records(con, path, warn)),
               ("memory_block", _MEMORY_BLOCK_SQL), ("memory_module", _MEMORY_MODULE_SQL)]
    if frames:
        queries.append(("python_frame", PYTHON_FRAME_SQL))
    for name, sql in queries:
        yield from query_tables(con, [(name, _complete(con, name, sql, path, warn))])


def _memory_records(con: duckdb.DuckDBPyConnection, path: Path, warn: Warn) -> str:
    """MEMORY_RECORD as SQL, less its PTA+GE rows: derived from the PTA and GE rows, as memory_record.csv's (the text
    export's reader leaves them out the same way), counted; memory_curve recomputes them."""
    con.execute(f"CREATE TABLE memory_rows AS {_MEMORY_RECORD_SQL}")
    derived, component = con.execute("SELECT count(*), any_value(component) FROM memory_rows "
                                     "WHERE ends_with(component, '+GE')").fetchall()[0]
    if derived:
        warn(f"{path}: table MEMORY_RECORD: {derived} {component} rows are derived from the framework's and the GE "
             "rows; not kept (memory_curve recomputes them)", check="other", action="excluded", rows=derived,
             path=path, tables="memory_record")
    return "SELECT * FROM memory_rows WHERE NOT ends_with(component, '+GE')"


def _complete(con: duckdb.DuckDBPyConnection, name: str, sql: str, path: Path, warn: Warn) -> str:
    """The rows of `sql` (materialized as table out_<name>) that have every value table `name` requires: a row whose
    id or name the file left empty or unreadable (a NULL stream id, a sub-task of no op, a step without an id) is
    left out and counted, as SQL of the rest."""
    con.execute(f"CREATE TABLE out_{name} AS {sql}")
    needed = [c for c in required_columns(name) if c != "capture"]
    missing = " OR ".join(f'"{c}" IS NULL' for c in needed)
    per_column = ", ".join(f'count(*) FILTER (WHERE "{c}" IS NULL)' for c in needed)
    counts = con.execute(f"SELECT count(*), {per_column} FROM out_{name} WHERE {missing}").fetchall()[0]
    if counts[0]:
        without = ", ".join(c for c, n in zip(needed, counts[1:]) if n)
        warn(f"{path}: {counts[0]} {name} rows without {without} (a NULL or unreadable id or name in the file); "
             "left out", check="unlinked" if without == "iteration" else "malformed_record", action="dropped",
             rows=counts[0], path=path, tables=name)
    return f"SELECT * FROM out_{name} WHERE NOT ({missing})"


def _cast_text_times(con: duckdb.DuckDBPyConnection, path: Path, warn: Warn) -> None:
    """PYTORCH_API's TEXT times as integer ns (start_ns, end_ns); a time that is no integer is counted and read as
    none (the row is then left out by scratch.drop_bad_intervals)."""
    con.execute("ALTER TABLE torch ADD COLUMN start_ns BIGINT")
    con.execute("ALTER TABLE torch ADD COLUMN end_ns BIGINT")
    con.execute("UPDATE torch SET start_ns = try_cast(trim(startNs) AS BIGINT), end_ns = try_cast(trim(endNs) AS BIGINT)")
    bad, example = con.execute("SELECT count(*), any_value(concat(startNs, ', ', endNs)) FROM torch "
                               "WHERE (startNs IS NOT NULL AND start_ns IS NULL) OR (endNs IS NOT NULL AND end_ns IS NULL)"
                               ).fetchall()[0]
    if bad:
        warn(f"{path}: table PYTORCH_API: {bad} rows whose startNs or endNs is not an integer", check="malformed_record",
             action="repaired", rows=bad, path=path, example=example, tables="host_op,python_frame")


#: Rows that describe a task by its TASK.globalTaskId: (scratch table, the normalized table they give).
_TASK_DETAILS = (("compute", "device_exec"), ("comm", "comm_task"), ("pmu", "device_exec_metric"))


def _count_orphans(con: duckdb.DuckDBPyConnection, path: Path, warn: Warn) -> None:
    """Count the rows of COMPUTE_TASK_INFO, COMMUNICATION_TASK_INFO and TASK_PMU_INFO whose globalTaskId no TASK row
    has (no times: they give no row)."""
    found = con.execute(" UNION ALL ".join(
        f"SELECT '{name}', count(*), any_value(x.globalTaskId) FROM {name} x "
        "WHERE NOT EXISTS (SELECT 1 FROM task t WHERE t.globalTaskId = x.globalTaskId)"
        for name, _ in _TASK_DETAILS)).fetchall()
    for (name, rows, example), (_, table) in zip(found, _TASK_DETAILS):
        if rows:
            warn(f"{path}: table {_LOADS[name][0]}: {rows} rows whose globalTaskId no TASK row has; left out",
                 check="unlinked", action="dropped", rows=rows, path=path, example=f"globalTaskId {example}",
                 tables=table)


def _count_unnamed(con: duckdb.DuckDBPyConnection, path: Path, has_strings: bool, warn: Warn) -> None:
    """Count, per table and column, the string ids STRING_IDS does not hold: they are read as 'string id <n>'
    (repaired: statistics by name change)."""
    found = con.execute(" UNION ALL ".join(
        f"SELECT '{name}', '{column}', '{table}', count(*), any_value(x.{column}) FROM {name} x "
        f"LEFT JOIN strings s ON s.id = x.{column} WHERE x.{column} IS NOT NULL AND s.id IS NULL"
        for name, column, table in _NAMED)).fetchall()
    for name, column, table, rows, example in found:
        if not rows:
            continue
        what = (f"{rows} {column} ids STRING_IDS lacks" if has_strings else
                f"the file has no STRING_IDS table: {rows} {column} ids point nowhere")
        warn(f"{path}: table {_LOADS[name][0]}: {what}; read as 'string id <n>'",
             check="unlinked" if has_strings else "missing_file", action="repaired", rows=rows, path=path,
             example=f"id {example}", tables=table)


def _count_bad_metrics(con: duckdb.DuckDBPyConnection, path: Path, warn: Warn) -> None:
    """PMU values that are not a non-negative finite number are left out (_METRIC_SQL skips them; those that are no
    number at all were counted by the copy and read as none: no row, like a missing value)."""
    bad, example = con.execute("SELECT count(*), any_value(value::VARCHAR) FROM pmu "
                               "WHERE NOT isfinite(value) OR value < 0").fetchall()[0]
    if bad:
        warn(f"{path}: table TASK_PMU_INFO: {bad} PMU values that are not a non-negative finite number; left out",
             check="malformed_record", action="dropped", rows=bad, path=path, example=example,
             tables="device_exec_metric")


def _identity(con: duckdb.DuckDBPyConnection, source: Source, path: Path, warn: Warn) -> Source:
    """`source` with the device id of RANK_DEVICE_MAP (else NPU_INFO, else TASK.deviceId); a rank RANK_DEVICE_MAP
    gives that differs from the one discover took (file name, profiler_info) is reported, the discovered one kept, and
    so are the tasks of several devices in one file (not split into ranks)."""
    rank_id, device_id = con.execute(
        "SELECT (SELECT min(rankId) FROM rank_map WHERE rankId >= 0), coalesce((SELECT min(deviceId) FROM rank_map), "
        "(SELECT min(id) FROM npu_info), (SELECT min(deviceId) FROM task))").fetchall()[0]
    devices = [d for (d,) in con.execute("SELECT DISTINCT deviceId FROM task WHERE deviceId IS NOT NULL ORDER BY 1")
               .fetchall()]
    if len(devices) > 1:  # an msprof db of a multi-device collection: one rank is read for all of them
        warn(f"{path}: TASK holds the tasks of devices {devices}; they are read as one rank ({source.rank})",
             check="ambiguous", action="kept", path=path, example=f"deviceId {devices[1]}", tables="device_exec")
    if rank_id is not None and source.rank >= 0 and rank_id != source.rank:
        warn(f"{path}: RANK_DEVICE_MAP gives rank {rank_id}, but its {source.rank_from} says rank {source.rank}; "
             f"rank {source.rank} kept", check="conflicting_entry", action="kept", path=path, example=f"rankId {rank_id}")
    return replace(source, device_id=device_id) if device_id is not None and 0 <= device_id < 1 << 31 else source


def _run_info(con: duckdb.DuckDBPyConnection, source: Source, path: Path, columns: dict[str, set[str]]) -> pa.Table:
    """run_info: the framework by file name (pytorch for torch_npu's, mindspore, msprof), metadata_json with the file's own
    identity tables and the profiler_info JSON beside ASCEND_PROFILER_OUTPUT."""
    name = path.name
    framework = ("pytorch" if name.startswith("ascend_pytorch_profiler") else
                 "mindspore" if name.startswith("ascend_mindspore_profiler") else "msprof")
    chips = dict(con.execute("SELECT id, name FROM npu_info").fetchall())
    session = con.execute("SELECT min(startTimeNs), max(endTimeNs) FROM session").fetchall()[0]
    metadata: dict = {"db": name, "npu_info": {str(k): v for k, v in chips.items()},
                      "session_start_ns": session[0], "session_end_ns": session[1],
                      "meta_data": dict(con.execute("SELECT name, value FROM meta WHERE name IS NOT NULL").fetchall()),
                      "rank_device_map": [list(r) for r in con.execute("SELECT rankId, deviceId FROM rank_map").fetchall()],
                      "tables": sorted(columns)}
    info = source.files.get("profiler_info")
    if info is not None:
        try:
            metadata["profiler_info"] = json.loads(info.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            raise InputError(info, f"expected the profiler_info JSON object ({exc})") from None
    return run_info(source, device_type="ascend", framework=framework, layout="ascend_db",
                    metadata_json=json.dumps(metadata), **msprof_clock("ascend_era_f", None, False))
