"""Chrome / Perfetto timeline export: one JSON object file for all ranks, built column-wise in DuckDB.

Every event is rendered to its JSON text inside DuckDB and streamed to disk, so no trace is
ever held as Python objects. Layout, per rank r (pid = 10 * (r + 1) + lane):

* lane 0 "Steps": one span per step (thread "Steps") and its phases (thread "Phases");
* lane 1 "CPU ops": host ops, one thread per host thread id;
* lane 2 "GPU ops": framework ops measured on the device;
* lane 3 "GPU kernels": kernels, memcpy and memset, one thread per stream, with the owning op in args.

Times are µs relative to `baseTimeNanoseconds` (kept at the top level, as Kineto does), so a
double keeps ns precision. With a size limit, metadata and steps are always kept, then the
other events in time order until the budget is spent: the timeline is complete up to a cut
time and empty after it. The cut is marked by a global instant event and by the top-level
`profpipe.truncated` object.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import duckdb

_HEADER_RESERVE = 4096

_EVENTS_SQL = """
WITH spans AS (
    SELECT rank, 0 AS lane, 0 AS tid, 'Step ' || step AS name, 'step' AS cat, start_ns, total_ns AS dur_ns,
           {'fp_op': fp_op, 'bp_op': bp_op}::JSON AS args, 0 AS tier
    FROM step_phases
    UNION ALL
    SELECT rank, 0, 1, phase.name, 'step_phase', phase.start_ns, phase.dur_ns, NULL::JSON, 0
    FROM step_phases, unnest([
        {'name': 'iteration_interval', 'start_ns': start_ns, 'dur_ns': iteration_interval_ns},
        {'name': 'fp_and_bp', 'start_ns': fp_ns, 'dur_ns': fp_and_bp_ns},
        {'name': 'tail', 'start_ns': bp_ns, 'dur_ns': tail_ns}]) AS t(phase)
    WHERE phase.dur_ns IS NOT NULL
    UNION ALL
    SELECT rank, CASE side WHEN 'Host' THEN 1 ELSE 2 END, coalesce(tid, 0), op_name, 'op', start_ns, dur_ns,
           {'op_type': op_type}::JSON, 1
    FROM stg_host_op
    UNION ALL
    SELECT rank, 3, coalesce(stream_id, 0), name, kind, start_ns, dur_ns,
           {'op_name': op_name, 'stream': stream_id}::JSON, 1
    FROM stg_device_exec
), lanes AS (
    SELECT * FROM (VALUES (0, 'Steps'), (1, 'CPU ops'), (2, 'GPU ops'), (3, 'GPU kernels')) AS l(lane, label)
), threads AS (
    SELECT DISTINCT rank, lane, tid FROM spans
), meta AS (
    SELECT 10 * (rank + 1) + lane AS pid, 0 AS tid, 'process_name' AS name,
           {'name': 'Rank ' || rank || ' ' || label}::JSON AS args
    FROM (SELECT DISTINCT rank, lane FROM threads) JOIN lanes USING (lane)
    UNION ALL
    SELECT DISTINCT 10 * (rank + 1) + lane, 0, 'process_sort_index', {'sort_index': 10 * (rank + 1) + lane}::JSON
    FROM threads
    UNION ALL
    SELECT 10 * (rank + 1) + lane, tid, 'thread_name',
           {'name': CASE lane WHEN 0 THEN (CASE tid WHEN 0 THEN 'Steps' ELSE 'Phases' END)
                              WHEN 1 THEN 'Thread ' || tid
                              WHEN 2 THEN 'Ops'
                              ELSE 'Stream ' || tid END}::JSON
    FROM threads
)
SELECT 0 AS tier, NULL::BIGINT AS start_ns,
       to_json({'name': name, 'ph': 'M', 'pid': pid, 'tid': tid, 'args': args}) AS event
FROM meta
UNION ALL
SELECT tier, start_ns,
       to_json({'name': name, 'cat': cat, 'ph': 'X', 'pid': 10 * (rank + 1) + lane, 'tid': tid,
                'ts': ((start_ns - __BASE_NS__)::DECIMAL(38, 0) / 1000)::DECIMAL(18, 3),
                'dur': (dur_ns::DECIMAL(38, 0) / 1000)::DECIMAL(18, 3),
                'args': args})
FROM spans
"""


@dataclass(frozen=True)
class TimelineResult:
    """What the timeline export wrote."""

    path: Path
    events_written: int
    events_dropped: int
    bytes_written: int


def write_timeline(con: duckdb.DuckDBPyConnection, path: Path, limit_mb: float | None = None) -> TimelineResult:
    """Write the Chrome trace of everything in `con` to `path`, at most `limit_mb` MiB when given."""
    path.parent.mkdir(parents=True, exist_ok=True)
    base_ns = con.execute("SELECT least((SELECT min(start_ns) FROM stg_host_op), "
                          "(SELECT min(start_ns) FROM stg_device_exec), "
                          "(SELECT min(start_ns) FROM step_phases))").fetchone()[0] or 0
    budget = None if limit_mb is None else max(int(limit_mb * 1024 * 1024) - _HEADER_RESERVE, 0)
    con.execute(f"""CREATE OR REPLACE TEMP TABLE timeline_events AS
        SELECT event, start_ns,
               sum(strlen(event) + 2) OVER (ORDER BY tier, start_ns NULLS FIRST, event
                                            ROWS UNBOUNDED PRECEDING) AS cumulative_bytes
        FROM ({_EVENTS_SQL.replace('__BASE_NS__', str(base_ns))})""")
    keep = "TRUE" if budget is None else f"cumulative_bytes <= {budget}"
    total, kept, cut_ns = con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE {keep}), "
        f"min(start_ns) FILTER (WHERE NOT ({keep})) FROM timeline_events").fetchone()
    dropped = total - kept
    header = {"displayTimeUnit": "ms", "baseTimeNanoseconds": base_ns,
              "otherData": {"producer": "profpipe", "clock": "rank clock, ns since baseTimeNanoseconds"}}
    if dropped:
        header["profpipe"] = {"truncated": {"limit_mb": limit_mb, "events_dropped": dropped,
                                            "events_written": kept,
                                            "complete_until_us": (cut_ns - base_ns) / 1000}}
    body = path.with_suffix(".body.tmp")
    con.execute(f"""COPY (SELECT CASE WHEN row_number() OVER (ORDER BY cumulative_bytes) = 1
                                      THEN '' ELSE ',' END || event
                          FROM timeline_events WHERE {keep} ORDER BY cumulative_bytes)
                    TO '{body}' (FORMAT CSV, HEADER false, QUOTE '', ESCAPE '', DELIMITER '\x01')""")
    con.execute("DROP TABLE timeline_events")
    with open(path, "w", encoding="utf-8") as out:
        out.write(json.dumps(header)[:-1] + ', "traceEvents": [\n')
        with open(body, encoding="utf-8") as events:
            shutil.copyfileobj(events, out, 1024 * 1024)
        if dropped:
            marker = {"name": f"profpipe: timeline truncated here, {dropped} later events dropped",
                      "ph": "i", "s": "g", "pid": 0, "tid": 0, "ts": (cut_ns - base_ns) / 1000}
            out.write(("," if kept else "") + json.dumps(marker) + "\n")
        out.write("]}\n")
    body.unlink()
    return TimelineResult(path, kept, dropped, path.stat().st_size)
