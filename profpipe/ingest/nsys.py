"""Stage 2, ingest: Nsight Systems SQLite export -> host_op (NVTX ranges), host_api, device_exec, step_point.

One source is one `nsys export --type sqlite` file (shared/reference/formats-gpu.md, family C). nsys
creates its tables lazily, so any of them may be missing: that is no error, the ones present are
read. SQLite is opened read-only and immutable (nothing is written beside the input) and the tables
are copied in batches into a scratch DuckDB database (scratch.py):

* CUPTI_ACTIVITY_KIND_KERNEL / MEMCPY / MEMSET / SYNCHRONIZATION -> device_exec (a kernel or memcpy table under
  another name, as a newer schema may write it, is found by its columns: _SIGNATURES; kernel names: the
  demangled signature; memcpy "[CUDA memcpy Host-to-Device]" and the like by copy kind, memset
  "[CUDA memset]", as Nsight Systems names them; grid, block, bytes);
* CUPTI_ACTIVITY_KIND_RUNTIME / DRIVER -> host_api (names without the CUDA version CUPTI appends, "_v" + 4 or 5 digits: _v7000, _v11030; a function's own "_v2" stays;
  thread id unpacked from globalTid);
* OSRT_API (the OS runtime calls nsys traces: poll, ioctl, pthread_*, file I/O) -> host_op, category os_runtime,
  on their thread, not nested (parent_index null): an export without CUDA activity still shows where its host
  threads waited;
* NVTX_EVENTS push/pop and start/end ranges -> host_op (category nvtx, or the step phase a range's
  name says: dataloader, forward, backward, optimizer; text inline or registered;
  the ", seq = ..., sizes = ..." details of PyTorch's emit_nvtx cut from the name), nested per
  thread by nesting.nest;
* a device activity's op: the innermost NVTX range open on the launching thread when its runtime
  call (same correlation id, same process) started;
* steps: NVTX ranges named ProfilerStep#N, or as the user names them (step_ranges); FP point: the
  first range that starts in the step after its data-loading ranges (names with "DataLoader");
  BP point: where its last range whose name says "backward" ends.

Times are the export's ns on the capture session's clock (run_info.clock "nsys_session"; the
session's UTC start is kept in run_info.metadata_json).

Damage is never silent (trace_health): values of the wrong SQLite storage class are counted in SQLite
before the copy (REAL whole numbers read exactly, REAL fractions rounded, TEXT / BLOB / huge read as
none, BLOB text decoded); intervals without both times, beyond ±2^62 ns or ending before they start
are left out per table; exact duplicate rows count once; a StringIds id given twice keeps its first
string (conflicting_entry when they differ); a name id StringIds lacks (unlinked), or every name id of an export
without StringIds (missing_file), is counted per table with the name read instead (repaired: a kernel's shortName,
else "kernel <id>"; "nameId <id>"; "[unnamed range]"). Fields other than names: intervals far outside the capture
are left out (_drop_outside_capture); ids no context, stream or call of the export has, launch dimensions beyond
CUDA's limits and impossible byte counts are counted and read as none (_check_fields); device activities that start
before their launching call are left out (_drop_before_launch). A file that fails SQLite's PRAGMA quick_check (a
damaged page) is read for what SQLite returns, with a lossy ledger row; table and column names are matched without
regard to case, as SQLite does. Intervals of 0 ns are legitimate: counted, kept.
"""
from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa

from ..discover import Source
from ..errors import InputError
from ..health import Warn
from .nesting import nest
from ..clocks import nsys_clock
from .run_info import run_info
from .scratch import (SQLITE_INT_LIMIT as _LIMIT, check_trace_file, copy_sqlite_table, drop_bad_intervals,
                      open_sqlite, query_tables, scratch_database, scratch_folder, sqlite_columns)
from .step_ranges import STEP_POINTS_SQL, is_step_sql, steps_sql

_ACTIVITY = ("start", "end", "deviceId", "streamId", "correlationId", "globalPid")
_API = ("start", "end", "globalTid", "correlationId", "nameId")
#: Tables read: scratch name -> (SQLite table, columns). A column the export lacks reads as null.
_LOADS: dict[str, tuple[str, tuple[str, ...]]] = {
    "kernel": ("CUPTI_ACTIVITY_KIND_KERNEL",
               _ACTIVITY + ("demangledName", "shortName", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ",
                             "registersPerThread", "staticSharedMemory", "dynamicSharedMemory")),
    "memcpy": ("CUPTI_ACTIVITY_KIND_MEMCPY", _ACTIVITY + ("bytes", "copyKind")),
    "memset": ("CUPTI_ACTIVITY_KIND_MEMSET", _ACTIVITY + ("bytes",)),
    "sync": ("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", _ACTIVITY + ("syncType",)),
    "runtime": ("CUPTI_ACTIVITY_KIND_RUNTIME", _API),
    "driver": ("CUPTI_ACTIVITY_KIND_DRIVER", _API),
    "nvtx": ("NVTX_EVENTS", ("start", "end", "eventType", "text", "textId", "globalTid")),
    "osrt": ("OSRT_API", ("start", "end", "globalTid", "nameId")),
    "strings": ("StringIds", ("id", "value")),
}
_TEXT_COLUMNS = {"text", "value"}
#: The columns by which a device table is known where the export names it otherwise (a newer schema): a table that
#: has none of _LOADS' names and all these columns is read in place of the missing one (_by_content).
_SIGNATURES = {
    "kernel": frozenset({"start", "end", "deviceId", "streamId", "correlationId", "demangledName", "gridX", "blockX"}),
    "memcpy": frozenset({"start", "end", "deviceId", "streamId", "correlationId", "bytes", "copyKind"}),
}
#: The tables that make a file an Nsight Systems export (events, or the string table every export has).
_NSYS_TABLES = {table for table, _ in _LOADS.values()}
#: ENUM_CUDA_MEMCPY_OPER and ENUM_CUPTI_SYNC_TYPE labels, as Nsight Systems prints them.
_COPY_KINDS = {0: "Unknown", 1: "Host-to-Device", 2: "Device-to-Host", 3: "Host-to-Array", 4: "Array-to-Host",
               5: "Array-to-Array", 6: "Array-to-Device", 7: "Device-to-Array", 8: "Device-to-Device",
               9: "Host-to-Host", 10: "Peer-to-Peer", 11: "Unified Host-to-Device", 12: "Unified Device-to-Host",
               13: "Unified Device-to-Device"}
_SYNC_TYPES = {0: "Unknown sync", 1: "Event sync", 2: "Stream wait sync", 3: "Stream sync", 4: "Context sync"}
#: NVTX_EVENTS.eventType of ranges (push/pop, start/end, and their NVTXT twins); marks and the rest are not.
_RANGE_EVENT_TYPES = (59, 60, 70, 71)


def _labels(values: dict[int, str]) -> str:
    return ", ".join(f"({key}, '{label}')" for key, label in values.items())


_SPANS_SQL = f"""
CREATE TABLE spans AS
SELECT row_number() OVER (ORDER BY globalTid, start_ns, dur_ns DESC, name) - 1 AS op_index, *
FROM (SELECT regexp_replace(coalesce(n.text, s.value, '[unnamed range]'), ', (?:seq|op_id|sizes) = .*$', '') AS name,
             n.globalTid, n.globalTid & 16777215 AS tid, n.start AS start_ns, n."end" - n.start AS dur_ns
      FROM nvtx n LEFT JOIN strings s ON s.id = n.textId
      WHERE n.eventType IN {_RANGE_EVENT_TYPES} AND n."end" >= n.start)
"""

_CALLS_SQL = """
CREATE TABLE calls AS
SELECT row_number() OVER (ORDER BY start_ns) - 1 AS call_index, *
FROM (SELECT (globalTid >> 24) & 16777215 AS pid, globalTid, globalTid & 16777215 AS tid,
             regexp_replace(coalesce(s.value, concat('nameId ', c.nameId)), '_v\\d{4,5}$', '') AS name, category,
             correlationId AS correlation, start AS start_ns, "end" - start AS dur_ns
      FROM (SELECT *, 'cuda_runtime' AS category FROM runtime
            UNION ALL SELECT *, 'cuda_driver' FROM driver) c
      LEFT JOIN strings s ON s.id = c.nameId)
"""

#: OS runtime calls (OSRT_API), numbered after the NVTX ranges.
_OS_CALLS_SQL = """
CREATE TABLE os_calls AS
SELECT (SELECT count(*) FROM spans) + row_number() OVER (ORDER BY globalTid, start_ns, dur_ns DESC, name) - 1 AS op_index,
       *
FROM (SELECT coalesce(s.value, concat('nameId ', o.nameId)) AS name, o.globalTid & 16777215 AS tid,
             o.start AS start_ns, o."end" - o.start AS dur_ns, o.globalTid
      FROM osrt o LEFT JOIN strings s ON s.id = o.nameId)
"""

#: NVTX ranges and runtime calls of every thread in nesting order, for nesting.nest.
_NESTING_SQL = """
SELECT is_call, id, thread, start_ns, end_ns FROM (
    SELECT false AS is_call, op_index AS id, globalTid AS thread, start_ns, start_ns + dur_ns AS end_ns, op_index AS tie
    FROM spans
    UNION ALL
    SELECT true, call_index, globalTid, start_ns, start_ns + dur_ns, NULL FROM calls WHERE correlation IS NOT NULL)
ORDER BY thread, start_ns, end_ns DESC, is_call, tie
"""

#: A range named for a step phase takes it as category (dataloader: any name with "DataLoader"; forward,
#: backward, optimizer: the whole name, e.g. "forward", "Backward pass", "optimizer.step"); others are nvtx.
_HOST_OP_SQL = """
SELECT 'Host' AS side, s.tid, s.name AS op_name, s.start_ns, s.dur_ns,
       CASE WHEN s.name ILIKE '%dataloader%' THEN 'dataloader'
            WHEN regexp_matches(s.name, '(?i)^(forward|fwd)([ _-]?(pass|step))?$') THEN 'forward'
            WHEN regexp_matches(s.name, '(?i)^(backward|bwd)([ _-]?(pass|step))?$') THEN 'backward'
            WHEN regexp_matches(s.name, '(?i)^(optimizer|optim|opt)([ ._-]?step)?$') THEN 'optimizer'
            ELSE 'nvtx' END AS category,
       NULL::BIGINT AS external_id, s.op_index, p.parent_index
FROM spans s JOIN parents p USING (op_index)
UNION ALL
SELECT 'Host', tid, name, start_ns, dur_ns, 'os_runtime', NULL, op_index, NULL FROM os_calls
ORDER BY start_ns, op_index
"""

_HOST_API_SQL = """
SELECT tid, name, category, correlation, NULL::BIGINT AS external_id, start_ns, dur_ns FROM calls ORDER BY start_ns
"""

_DEVICE_EXEC_SQL = f"""
WITH device AS (
    SELECT 'kernel' AS kind, coalesce(dn.value, sn.value, concat('kernel ', k.demangledName)) AS name, k.start, k."end",
           k.deviceId, k.streamId, k.correlationId, k.globalPid, NULL::BIGINT AS bytes,
           nullif(concat_ws(',', k.gridX, k.gridY, k.gridZ), '') AS grid,
           nullif(concat_ws(',', k.blockX, k.blockY, k.blockZ), '') AS block,
           k.registersPerThread AS registers_per_thread, k.staticSharedMemory + k.dynamicSharedMemory AS shared_memory_bytes
    FROM kernel k LEFT JOIN strings dn ON dn.id = k.demangledName LEFT JOIN strings sn ON sn.id = k.shortName
    UNION ALL
    SELECT 'memcpy', concat('[CUDA memcpy ', coalesce(l.label, concat('kind ', m.copyKind)), ']'), m.start, m."end",
           m.deviceId, m.streamId, m.correlationId, m.globalPid, m.bytes, NULL, NULL, NULL, NULL
    FROM memcpy m LEFT JOIN (VALUES {_labels(_COPY_KINDS)}) AS l(id, label) ON l.id = m.copyKind
    UNION ALL
    SELECT 'memset', '[CUDA memset]', start, "end", deviceId, streamId, correlationId, globalPid, bytes, NULL, NULL, NULL, NULL
    FROM memset
    UNION ALL
    SELECT 'sync', concat('[CUDA ', coalesce(l.label, concat('sync type ', y.syncType)), ']'), y.start, y."end",
           y.deviceId, y.streamId, y.correlationId, y.globalPid, NULL, NULL, NULL, NULL, NULL
    FROM sync y LEFT JOIN (VALUES {_labels(_SYNC_TYPES)}) AS l(id, label) ON l.id = y.syncType
), launches AS (  -- correlation ids are unique per process; one call per id even in a stitched export
    SELECT pid, correlation, min(call_index) AS call_index FROM calls WHERE correlation IS NOT NULL GROUP BY ALL
)
SELECT d.streamId AS stream_id, d.kind, d.name, d.correlationId AS correlation, NULL::BIGINT AS task_id,
       s.name AS op_name, d.start AS start_ns, d."end" - d.start AS dur_ns, NULL::BIGINT AS external_id,
       d.deviceId AS device_id, c.op_index, d.bytes, d.grid, d.block, d.registers_per_thread,
       d.shared_memory_bytes
FROM device d
LEFT JOIN launches a ON a.pid = (d.globalPid >> 24) & 16777215 AND a.correlation = d.correlationId
LEFT JOIN call_ops c ON c.call_id = a.call_index
LEFT JOIN spans s ON s.op_index = c.op_index
ORDER BY d.start
"""


def _step_point_sql(step_range: str | None) -> str:
    """Step start and end, FP point (the first range after the step's data loading) and BP point (the end
    of its last backward range); ranges on any thread of the step's time span count."""
    return f"""
WITH steps AS ({steps_sql("spans", step_range)}
), inside AS (
    SELECT st.step, sp.name, sp.start_ns, sp.start_ns + sp.dur_ns AS end_ns
    FROM steps st JOIN spans sp ON sp.start_ns >= st.start_ns AND sp.start_ns < st.end_ns
    WHERE NOT {is_step_sql('sp.name', step_range)}
), loading AS (
    SELECT step, max(end_ns) AS loaded_ns FROM inside WHERE name ILIKE '%dataloader%' GROUP BY step
), forward AS (
    SELECT i.step, arg_min(i.name, i.start_ns) AS op_name, min(i.start_ns) AS ts_ns
    FROM inside i LEFT JOIN loading l USING (step)
    WHERE i.start_ns >= coalesce(l.loaded_ns, i.start_ns) AND i.name NOT ILIKE '%dataloader%'
    GROUP BY i.step
), backward AS (
    SELECT step, arg_max(name, end_ns) AS op_name, max(end_ns) AS ts_ns
    FROM inside WHERE name ILIKE '%backward%' GROUP BY step
)
{STEP_POINTS_SQL}"""


def read(source: Source, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """Yield the normalized tables of one Nsight Systems SQLite export."""
    path = source.files["sqlite"]
    check_trace_file(path, source.rank, "no rank in the file name (rank-<n>, worker<n>)",
                     "an Nsight Systems SQLite export (nsys export --type sqlite)")
    undecodable = [0]

    def decode(raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            undecodable[0] += 1
            return raw.decode("utf-8", errors="replace")

    db = open_sqlite(path)
    db.text_factory = decode
    try:
        columns = _spelled(sqlite_columns(db))
        _quick_check(db, path, warn)
        if not _NSYS_TABLES & columns.keys():
            if "StringTable" in columns or "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL" in columns:
                raise InputError(path, "an nvprof export (StringTable, CONCURRENT_KERNEL): not read; open the run "
                                       "in Nsight Systems and export it with nsys export --type sqlite")
            raise InputError(path, "not an Nsight Systems export: it has none of the tables "
                                   + ", ".join(sorted(_NSYS_TABLES)))
        with scratch_folder("nsys") as scratch, \
                scratch_database(scratch) as con:
            tables = _by_content(columns)
            for name, (table, wanted) in _LOADS.items():
                table = tables.get(name, table)
                copy_sqlite_table(db, con, path, name, table, wanted, columns.get(table, set()), warn, _TEXT_COLUMNS)
            metadata = _metadata(db, columns)
            if tables:
                metadata["tables_by_columns"] = {_LOADS[name][0]: table for name, table in tables.items()}
                warn(f"{path}: " + "; ".join(f"no table {_LOADS[n][0]}: read {t}, which has its columns"
                                             for n, t in tables.items()),
                     check="ambiguous", action="kept", path=path, tables="device_exec")
            if undecodable[0]:
                warn(f"{path}: {undecodable[0]} strings are not UTF-8; their undecodable bytes read as U+FFFD",
                     check="bad_encoding", action="repaired", rows=undecodable[0], path=path)
            _drop_bad_intervals(con, path, warn)
            _drop_outside_capture(con, db, columns, path, warn)
            _check_fields(con, db, columns, path, warn)
            _drop_before_launch(con, path, warn)
            _count_zero_length(con, path, warn)
            _count_unnamed(con, path, "StringIds" in columns, warn)
            yield from _tables(con, source, path, metadata, warn)
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # sqlite3 decodes its messages strictly
        raise InputError(path, f"cannot be read as an SQLite database ({exc})") from None
    finally:
        db.close()


#: The tables and columns read besides _LOADS' and _SIGNATURES' (metadata, reference lists, an nvprof export's).
_OTHER_TABLES = ("ANALYSIS_DETAILS", "TARGET_INFO_CUDA_CONTEXT_INFO", "TARGET_INFO_CUDA_STREAM", "META_DATA_EXPORT",
                 "TARGET_INFO_SESSION_START_TIME", "TARGET_INFO_GPU", "StringTable", "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL")
_OTHER_COLUMNS = ("duration", "nullStreamId", "name", "utcEpochNs")


def _spelled(columns: dict[str, set[str]]) -> dict[str, set[str]]:
    """The export's table and column names, those profpipe reads spelled as it spells them: SQLite's names are
    case-insensitive (a flipped case bit in the schema, or another writer's spelling, names the same table)."""
    tables = {t.upper(): t for t in (*(table for table, _ in _LOADS.values()), *_OTHER_TABLES)}
    names = {c.lower(): c for c in (*(c for _, wanted in _LOADS.values() for c in wanted),
                                    *(c for signature in _SIGNATURES.values() for c in signature), *_OTHER_COLUMNS)}
    return {tables.get(t.upper(), t): {names.get(c.lower(), c) for c in have} for t, have in columns.items()}


def _by_content(columns: dict[str, set[str]]) -> dict[str, str]:
    """The device tables the export names otherwise, by their columns: scratch name -> the one SQLite table that
    has none of _LOADS' names and every column of _SIGNATURES[name] (none where two tables would fit)."""
    named = {table for table, _ in _LOADS.values()}
    found = {}
    for name, signature in _SIGNATURES.items():
        if _LOADS[name][0] in columns:
            continue
        fits = [table for table, have in columns.items() if table not in named and signature <= have]
        if len(fits) == 1:
            found[name] = fits[0]
    return found


def _tables(con: duckdb.DuckDBPyConnection, source: Source, path: Path, metadata: dict,
            warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    con.execute(_SPANS_SQL)
    con.execute(_CALLS_SQL)
    con.execute(_OS_CALLS_SQL)
    nest(con, _NESTING_SQL)
    kernels, activities, calls, ranges, os_calls = con.execute(
        "SELECT (SELECT count(*) FROM kernel), (SELECT count(*) FROM memcpy) + (SELECT count(*) FROM memset), "
        "(SELECT count(*) FROM calls), (SELECT count(*) FROM spans), (SELECT count(*) FROM os_calls)").fetchall()[0]
    if not kernels:
        warn(f"{path}: the export holds no CUDA kernels (no table {_LOADS['kernel'][0]}, nor one of its columns): "
             f"read {os_calls} OS runtime calls, {ranges} NVTX ranges, {calls} CUDA runtime and driver calls and "
             f"{activities} memcpy / memset activities; the kernel and GPU analyses are empty",
             check="other", action="kept", rows=0, path=path)
    yield "run_info", run_info(source, device_type="gpu" if kernels + activities else "cpu", framework="nsight_systems",
                               layout="nsys", metadata_json=json.dumps(metadata), **nsys_clock(metadata))
    yield from query_tables(con, [
        ("host_op", _HOST_OP_SQL), ("host_api", _HOST_API_SQL), ("device_exec", _DEVICE_EXEC_SQL),
        ("step_point", _step_point_sql(source.step_range))])


#: The tables with times, each row an interval (NVTX marks have no end: only ranges are checked).
_TIMED = ("kernel", "memcpy", "memset", "sync", "runtime", "driver", "nvtx", "osrt")


def _drop_bad_intervals(con: duckdb.DuckDBPyConnection, path: Path, warn: Warn) -> None:
    """Leave out, with a ledger row per table and kind, the intervals the tables cannot hold: without a start or
    end, beyond ±2^62 ns, or ending before they start; count exact duplicate rows once; keep the first string of
    an id StringIds repeats (conflicting_entry when the strings differ)."""
    drop_bad_intervals(con, path, warn, [
        (name, _LOADS[name][0], "start", '"end"', _ranges(name), "ranges" if name == "nvtx" else "rows",
         _out_table(name)) for name in _TIMED])
    repeated = con.execute(" UNION ALL ".join(
        f"SELECT '{name}', count(*) > count(DISTINCT hash({', '.join(chr(34) + c + chr(34) for c in columns)})) "
        f"FROM {name}" for name, (_, columns) in ((n, _LOADS[n]) for n in _TIMED))).fetchall()
    for name, repeats in repeated:
        table = _LOADS[name][0]
        if repeats:
            duplicates = con.execute(f"SELECT count(*) - (SELECT count(*) FROM (SELECT DISTINCT * FROM {name})) "
                                     f"FROM {name}").fetchall()[0][0]
            if duplicates:
                con.execute(f"CREATE TABLE unique_rows AS SELECT DISTINCT * FROM {name}")
                con.execute(f"DROP TABLE {name}")
                con.execute(f"ALTER TABLE unique_rows RENAME TO {name}")
                warn(f"{path}: table {table}: {duplicates} rows repeat another row exactly; each is counted once",
                     check="duplicate_record", action="dropped", rows=duplicates, path=path)
    if not con.execute("SELECT count(*) > count(DISTINCT id) FROM strings").fetchall()[0][0]:
        return
    repeated, conflicting, example = con.execute(
        "SELECT count(*) - count(DISTINCT id), count(DISTINCT id) FILTER (WHERE id IN (SELECT id FROM strings "
        "GROUP BY id HAVING count(DISTINCT value) > 1)), any_value(id) FILTER (WHERE id IN (SELECT id FROM strings "
        "GROUP BY id HAVING count(*) > 1)) FROM strings").fetchall()[0]
    if repeated:
        warn(f"{path}: table StringIds repeats {repeated} ids ({conflicting} of them with different strings); the "
             "first string of each id is read", check="conflicting_entry" if conflicting else "duplicate_record",
             action="dropped", rows=repeated, path=path, example=f"id {example}")
        con.execute("CREATE TABLE first_strings AS SELECT id, arg_min(value, rowid) AS value FROM strings GROUP BY id")
        con.execute("DROP TABLE strings")
        con.execute("ALTER TABLE first_strings RENAME TO strings")


#: Name ids that StringIds does not resolve, per table: (description, SQL of (rows, an example id), the name read
#: instead, the table they reach).
_UNNAMED = (
    ("kernels whose demangledName id", """SELECT count(*), any_value(k.demangledName) FROM kernel k
        LEFT JOIN strings d ON d.id = k.demangledName LEFT JOIN strings s ON s.id = k.shortName
        WHERE k.demangledName IS NOT NULL AND d.id IS NULL AND s.id IS NOT NULL""",
     "their shortName (the kernel's name without its template and argument types)", "device_exec"),
    ("kernels whose demangledName and shortName ids", """SELECT count(*), any_value(k.demangledName) FROM kernel k
        LEFT JOIN strings d ON d.id = k.demangledName LEFT JOIN strings s ON s.id = k.shortName
        WHERE k.demangledName IS NOT NULL AND d.id IS NULL AND s.id IS NULL""",
     "'kernel <demangledName id>'", "device_exec"),
    ("CUDA runtime and driver calls whose nameId", """SELECT count(*), any_value(c.nameId) FROM
        (SELECT nameId FROM runtime UNION ALL SELECT nameId FROM driver) c LEFT JOIN strings s ON s.id = c.nameId
        WHERE c.nameId IS NOT NULL AND s.id IS NULL""", "'nameId <id>'", "host_api"),
    ("OS runtime calls whose nameId", """SELECT count(*), any_value(o.nameId) FROM osrt o LEFT JOIN strings s
        ON s.id = o.nameId WHERE o.nameId IS NOT NULL AND s.id IS NULL""", "'nameId <id>'", "host_op"),
    ("NVTX ranges whose textId", f"""SELECT count(*), any_value(n.textId) FROM nvtx n LEFT JOIN strings s
        ON s.id = n.textId WHERE n.eventType IN {_RANGE_EVENT_TYPES} AND n.text IS NULL AND n.textId IS NOT NULL
        AND s.id IS NULL""", "'[unnamed range]'", "host_op"),
)


def _count_unnamed(con: duckdb.DuckDBPyConnection, path: Path, has_strings: bool, warn: Warn) -> None:
    """Count, per table, the rows whose name id StringIds does not hold (the whole table missing: missing_file; an
    id it lacks: unlinked): their names are read as _UNNAMED says, so statistics by name change (repaired)."""
    for what, sql, instead, table in _UNNAMED:
        rows, example = con.execute(sql).fetchall()[0]
        if not rows:
            continue
        found = f"{rows} {what} StringIds lacks" if has_strings else \
            f"the export has no StringIds table: {rows} {what} point nowhere"
        warn(f"{path}: {found}; named {instead} instead", check="unlinked" if has_strings else "missing_file",
             action="repaired", rows=rows, path=path, example=f"id {example}", tables=table)


#: A capture's events lie within its duration of each other. A time further from the middle of the export's times
#: (the median start) than the reach below is damage (a flipped high bit: 2^40 ns is 18 minutes): twice
#: ANALYSIS_DETAILS.duration (the capture's length, where the export holds it; its startTime and stopTime are not
#: always on the events' clock), 1000 times the interquartile range of the starts (the median and the quartiles
#: move little for a few damaged rows), and at least 1 s.
_REACH_IQR_FACTOR = 1000
_MIN_REACH_NS = 1_000_000_000
#: CUDA's hard limits of a launch (compute capability 3.0 on): grid x < 2^31, grid y and z, block x, y and z, threads
#: of a block; every dimension at least 1.
_GRID_MAX = {"gridX": (1 << 31) - 1, "gridY": 65535, "gridZ": 65535}
_BLOCK_MAX = {"blockX": 1024, "blockY": 1024, "blockZ": 64}
_THREADS_MAX = 1024
#: Bytes per ns no copy or memset reaches: 16 TB/s, twice the fastest GPU memory of 2025 (HBM3e, 8 TB/s); the
#: duration counts as at least 1 µs (0 ns activities exist).
_BYTES_PER_NS_MAX = 1 << 14
#: The stream id CUPTI gives a synchronization on no stream (context and event syncs: 2^32 - 1).
_NO_STREAM = (1 << 32) - 1
_DEVICE_TABLES = ("kernel", "memcpy", "memset", "sync")


def _out_table(name: str) -> str:
    return "host_op" if name in ("nvtx", "osrt") else "host_api" if name in ("runtime", "driver") else "device_exec"


def _capture_duration(db: sqlite3.Connection, columns: dict[str, set[str]]) -> int:
    """The capture's length in ns from ANALYSIS_DETAILS (0 where the export does not hold it)."""
    if "duration" not in columns.get("ANALYSIS_DETAILS", set()):
        return 0
    values = [v for (v,) in db.execute("SELECT duration FROM ANALYSIS_DETAILS") if isinstance(v, int) and 0 < v < _LIMIT]
    return max(values, default=0)


def _drop_outside_capture(con: duckdb.DuckDBPyConnection, db: sqlite3.Connection, columns: dict[str, set[str]],
                          path: Path, warn: Warn) -> None:
    """Leave out, with a ledger row per table (out_of_range, dropped), the intervals that start or end far outside
    the capture (see _REACH_IQR_FACTOR): a damaged time, which would stretch a duration, a step or the timeline."""
    starts = " UNION ALL ".join(f"SELECT start FROM {name} WHERE {_ranges(name)}" for name in _TIMED)
    middle, first, third = con.execute(f"SELECT quantile_disc(start, 0.5), quantile_disc(start, 0.25), "
                                       f"quantile_disc(start, 0.75) FROM ({starts})").fetchall()[0]
    if middle is None:
        return
    duration = _capture_duration(db, columns)
    reach = max(2 * duration, _REACH_IQR_FACTOR * (third - first), _MIN_REACH_NS)
    low, high = max(middle - reach, -_LIMIT), min(middle + reach, _LIMIT)
    outside = {name: f'{_ranges(name)} AND (start < {low} OR "end" > {high})' for name in _TIMED}
    counts = con.execute(" UNION ALL ".join(
        f"SELECT '{name}', count(*), any_value(concat('start ', start, ', end ', \"end\")) FROM {name} "
        f"WHERE {outside[name]}" for name in _TIMED)).fetchall()
    for name, count, example in counts:
        if not count:
            continue
        warn(f"{path}: table {_LOADS[name][0]}: {count} {'ranges' if name == 'nvtx' else 'rows'} start or end more "
             f"than {reach} ns from the middle of the capture ({middle} ns: its median start; the reach is the "
             f"larger of twice the capture's duration ({duration or 'not recorded'} ns), 1000 times the spread of "
             "the starts and 1 s); left out", check="out_of_range", action="dropped", rows=count, path=path,
             example=example, tables=_out_table(name))
        con.execute(f"DELETE FROM {name} WHERE {outside[name]}")


def _quick_check(db: sqlite3.Connection, path: Path, warn: Warn) -> None:
    """SQLite's own consistency check of the file's pages (PRAGMA quick_check: one pass over the file, no index
    check). A failed check means a damaged page, whose rows SQLite may skip or return changed: what it returns is
    read, and the ledger says that rows may be missing (malformed_record, dropped: the run is partial)."""
    problems = [str(line) for (line,) in db.execute("PRAGMA quick_check(5)")]
    if problems != ["ok"]:
        warn(f"{path}: the SQLite file fails its own consistency check (PRAGMA quick_check: {'; '.join(problems)}): "
             "a page is damaged; rows on it may be missing or changed (how many is unknown: counted as 0); the rows "
             "SQLite returns are read", check="malformed_record", action="dropped", rows=0, path=path,
             example=problems[0])


def _drop_before_launch(con: duckdb.DuckDBPyConnection, path: Path, warn: Warn) -> None:
    """Leave out, per table (clock, dropped), the device activities that start before the runtime or driver call that
    launched them (the first call of their process with their correlation id) started: no GPU runs work before it is
    asked for, and nsys puts both on one clock (real exports: 1 µs or more after), so one of the times is damaged."""
    calls = ("(SELECT (globalTid >> 24) & 16777215 AS pid, correlationId, min(start) AS call_start FROM "
             "(SELECT globalTid, correlationId, start FROM runtime UNION ALL SELECT globalTid, correlationId, start "
             "FROM driver) GROUP BY ALL)")
    for name in _DEVICE_TABLES:
        early = (f"EXISTS (SELECT 1 FROM {calls} c WHERE c.correlationId = {name}.correlationId "
                 f"AND c.pid = ({name}.globalPid >> 24) & 16777215 AND {name}.start < c.call_start)")
        count, example = con.execute(f"SELECT count(*), any_value(concat('start ', start, ', correlationId ', "
                                     f"correlationId)) FROM {name} WHERE {early}").fetchall()[0]
        if not count:
            continue
        warn(f"{path}: table {_LOADS[name][0]}: {count} rows start before the call that launched them (same process "
             "and correlationId) started: a damaged time; left out", check="clock", action="dropped", rows=count,
             path=path, example=example, tables="device_exec")
        con.execute(f"DELETE FROM {name} WHERE {early}")


def _count_zero_length(con: duckdb.DuckDBPyConnection, path: Path, warn: Warn) -> None:
    """Count, per table, the intervals of 0 ns (legitimate: a call or activity shorter than the clock's tick; real
    exports hold them): kept as recorded (out_of_range, kept)."""
    counts = con.execute(" UNION ALL ".join(
        f"SELECT '{name}', count(*), any_value(concat('start ', start)) FROM {name} "
        f'WHERE {_ranges(name)} AND "end" = start' for name in _TIMED)).fetchall()
    for name, count, example in counts:
        if count:
            warn(f"{path}: table {_LOADS[name][0]}: {count} {'ranges' if name == 'nvtx' else 'rows'} last 0 ns, "
                 "shorter than the clock's tick (real exports hold them); kept as recorded", check="out_of_range",
                 action="kept", rows=count, path=path, example=example, tables=_out_table(name))


def _listed(db: sqlite3.Connection, columns: dict[str, set[str]], table: str, *names: str) -> set[int] | None:
    """The integer values of columns `names` of SQLite `table` (None where the export lacks the table or them)."""
    present = [n for n in names if n in columns.get(table, set())]
    if not present:
        return None
    quoted = table.replace('"', '""')
    return {v for n in present for (v,) in db.execute(f'SELECT DISTINCT "{n}" FROM "{quoted}"') if isinstance(v, int)}


def _check_fields(con: duckdb.DuckDBPyConnection, db: sqlite3.Connection, columns: dict[str, set[str]],
                  path: Path, warn: Warn) -> None:
    """Count, per table and kind, the device activities' fields that no capture can hold, and read them as none
    (repaired; the activity and its times are kept): a deviceId or streamId that is negative or beyond 32 bits,
    or that no CUDA context / stream of the export has (where it lists them: TARGET_INFO_CUDA_CONTEXT_INFO,
    TARGET_INFO_CUDA_STREAM; a sync on no stream, 2^32 - 1, is legitimate); a correlationId that no runtime or
    driver call of its process has, in an export where other activities link (its op is then unknown); a grid
    or block beyond CUDA's limits (_GRID_MAX); bytes negative or faster than _BYTES_PER_NS_MAX."""
    devices = _listed(db, columns, "TARGET_INFO_CUDA_CONTEXT_INFO", "deviceId")
    streams = _listed(db, columns, "TARGET_INFO_CUDA_STREAM", "streamId")
    if streams is not None:
        streams |= _listed(db, columns, "TARGET_INFO_CUDA_CONTEXT_INFO", "nullStreamId") or set()
    calls = ("(SELECT (globalTid >> 24) & 16777215 AS pid, correlationId FROM runtime UNION ALL "
             "SELECT (globalTid >> 24) & 16777215, correlationId FROM driver)")
    unlinked = (f"correlationId IS NOT NULL AND NOT EXISTS (SELECT 1 FROM {calls} c WHERE c.correlationId = "
                f"{{t}}.correlationId AND c.pid = ({{t}}.globalPid >> 24) & 16777215)")
    links = con.execute(" UNION ALL ".join(f"SELECT count(*) FILTER (WHERE correlationId IS NOT NULL AND NOT "
                                           f"({unlinked.format(t=t)})) FROM {t}" for t in _DEVICE_TABLES)).fetchall()
    in_list = lambda values: "(" + ", ".join(str(v) for v in sorted(values)) + ")" if values else "(NULL)"  # noqa: E731
    grid = " OR ".join(f'"{c}" < 1 OR "{c}" > {m}' for c, m in _GRID_MAX.items())
    block = " OR ".join(f'"{c}" < 1 OR "{c}" > {m}' for c, m in _BLOCK_MAX.items()) + \
        f' OR "blockX" * "blockY" * "blockZ" > {_THREADS_MAX}'
    #: (tables, condition on {t}, columns read as none, check, what was found)
    rules: list[tuple[tuple[str, ...], str, tuple[str, ...], str, str]] = [
        (_DEVICE_TABLES, f"deviceId < 0 OR deviceId > {_NO_STREAM}", ("deviceId",), "out_of_range",
         "have a deviceId that is negative or beyond 32 bits"),
        (_DEVICE_TABLES, f"streamId < 0 OR streamId > {_NO_STREAM}", ("streamId",), "out_of_range",
         "have a streamId that is negative or beyond 32 bits"),
    ]
    if devices is not None:
        rules.append((_DEVICE_TABLES, f"deviceId NOT IN {in_list(devices)}", ("deviceId",), "unlinked",
                      "have a deviceId on which the export has no CUDA context (TARGET_INFO_CUDA_CONTEXT_INFO)"))
    if streams is not None:
        rules.append((_DEVICE_TABLES, f"streamId NOT IN {in_list(streams | {_NO_STREAM})}", ("streamId",), "unlinked",
                      "have a streamId the export lists no stream for (TARGET_INFO_CUDA_STREAM, a context's null "
                      "stream; 2^32 - 1: no stream)"))
    if sum(n for (n,) in links):
        rules.append((_DEVICE_TABLES, unlinked, ("correlationId",), "unlinked",
                      "have a correlationId that no CUDA runtime or driver call of their process has (other "
                      "activities link: the id is damaged, or its call was left out above; their op is unknown)"))
    rules += [
        (("kernel",), grid, tuple(_GRID_MAX), "out_of_range", "have a grid beyond CUDA's limits (a dimension below 1, "
         "x beyond 2^31 - 1, y or z beyond 65535)"),
        (("kernel",), block, tuple(_BLOCK_MAX), "out_of_range", "have a block beyond CUDA's limits (a dimension "
         f"below 1, x or y beyond 1024, z beyond 64, more than {_THREADS_MAX} threads)"),
        (("memcpy", "memset"), f'bytes < 0 OR bytes > {_BYTES_PER_NS_MAX} * greatest("end" - start, 1000)',
         ("bytes",), "out_of_range", f"have bytes that are negative or more than {_BYTES_PER_NS_MAX} per ns of "
         "the activity (at least 1 µs)"),
    ]
    for tables, condition, fields, check, what in rules:
        for name in tables:
            where = condition.format(t=name)
            shown = ", ".join(f"concat('{f} ', {f})" for f in fields)
            count, example = con.execute(f"SELECT count(*), any_value(concat_ws(', ', {shown})) FROM {name} "
                                         f"WHERE {where}").fetchall()[0]
            if not count:
                continue
            warn(f"{path}: table {_LOADS[name][0]}: {count} rows {what}; read as none ({', '.join(fields)})",
                 check=check, action="repaired", rows=count, path=path, example=example, tables="device_exec")
            con.execute(f"UPDATE {name} SET {', '.join(f'{f} = NULL' for f in fields)} WHERE {where}")


def _ranges(name: str) -> str:
    """SQL condition: the rows of scratch table `name` that are intervals (NVTX: ranges, not marks)."""
    return f"eventType IN {_RANGE_EVENT_TYPES}" if name == "nvtx" else "true"


def _plain(value: object) -> object:
    """A metadata value as JSON holds it: bytes decoded (bad bytes as U+FFFD), NaN and infinities as text."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _metadata(db: sqlite3.Connection, columns: dict[str, set[str]]) -> dict:
    """Export version, session start and GPUs, where the export records them."""
    metadata: dict = {}
    if {"name", "value"} <= columns.get("META_DATA_EXPORT", set()):
        export = {_plain(k): _plain(v) for k, v in db.execute("SELECT name, value FROM META_DATA_EXPORT")}
        metadata.update({key: export[name] for key, name in (("schema_version", "EXPORT_SCHEMA_VERSION"),
                                                             ("product_version", "EXPORT_PRODUCT_VERSION"),
                                                             ("time_normalized", "EXPORT_PARAM_TIME_NORMALIZE"))
                         if name in export})
    if "utcEpochNs" in columns.get("TARGET_INFO_SESSION_START_TIME", set()):
        row = db.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchone()
        if row:
            metadata["session_start_utc_ns"] = _plain(row[0])
    if {"id", "name"} <= columns.get("TARGET_INFO_GPU", set()):
        metadata["gpus"] = [{"id": _plain(gpu_id), "name": _plain(name)} for gpu_id, name in
                            db.execute("SELECT id, name FROM TARGET_INFO_GPU ORDER BY id")]
    return metadata
