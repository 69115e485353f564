"""Chrome / Perfetto timeline export: one JSON object file for all ranks, built column-wise in DuckDB.

Every event is rendered to its JSON text inside DuckDB and streamed to disk, so no trace is
ever held as Python objects. Processes are named as msprof and MindInsight name them, with
" rank<r>" appended; per rank r (pid = 10 * (r + 1) + lane):

* lane 0 "Step Trace": thread "iterations", one span per step with its phases nested inside;
* lane 1 "CPU ops": host ops, one thread per host thread id;
* lane 2 "GPU ops": framework ops measured on the device;
* lane 3 "Ascend Hardware" (Ascend ranks) or "GPU kernels": device tasks, kernels, memcpy and
  memset, one thread "Stream <id>" per stream, with the owning op in args;
* lane 4 "HCCL": thread "Communication Kernel" with the communication op executions and their
  costs, one thread "Plane <k>" per plane with the HCCL tasks (links, bytes in args);
* lane 5 "Overlap Analysis": threads "Computing", "Communication", "Communication(Not Overlapped)"
  and "Free" with the stretches of overlap_segment;
* lane 6 "MindData": counter tracks (ph "C") of the MindData queue sizes: each op's output queue
  (timed by the CPU monitor's samples, taken together) and the device or iterator queue, on the
  clock of the MindData logs (MindData's steady clock);
* lane 7 "CUDA API": runtime and driver calls (host_api), one thread per host thread id;
* lane 8 "Memory": counter tracks of the allocator's bytes in use, one per device (int_memory_in_use);
* lane 9 "MindData get_next": counter track of the device's get_next queue (on the device's clock on
  Ascend ranks, else on MindData's).

A rank's later profiling cycles (capture c > 0) have processes of their own: pid 1,000,000 * c +
10 * (r + 1) + lane, named "... rank<r> capture<c>".

Clocks (profpipe/clocks.py): every capture of every rank, and its MindData logs apart, whose clock the dump relates
to the Unix epoch (run_info.epoch_offset_ns, host_epoch_offset_ns) is put on the epoch; the others keep
their own clock, one track group per clock, each with its own base, and their processes are named
"... (unaligned clock: <clock>)" (`otherData.clock` and `otherData.clock_groups` say which is which).
`summary_only` keeps lanes 0 and 5 (steps and overlap), as MindInsight's summary view does.

Times are µs relative to `baseTimeNanoseconds` (kept at the top level, as Kineto does) for the reference
group, and to their own group's base (`otherData.clock_groups`) for the others; they are exact decimals
with three digits (ns), computed in 128-bit integers so that no clock value can overflow them. With a size limit, metadata and steps are always kept, then the
other events in time order until the budget is spent: the timeline is complete up to a cut
time (every event that starts before it is present) and empty after it. The cut is marked by
a global instant event in a "profpipe" process (pid 0) and by the top-level
`profpipe.truncated` object.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import duckdb

from .. import clocks
from .text_stream import write_text_column

_HEADER_RESERVE = 4096

#: Thread id of the communication op executions in the HCCL lane (msprof's own choice).
_COMMUNICATION_KERNEL_TID = 70000
#: The pid of a span's process: one per rank, capture and lane (capture 0 keeps the msprof-like 10 * (rank + 1)
#: + lane; a later capture adds 1,000,000 per capture, so it sorts after every rank's first cycle).
_PID = "1000000 * capture + 10 * (rank + 1) + lane"
_OVERLAP_THREADS = {"computation": (0, "Computing"), "communication": (1, "Communication"),
                    "pure_communication": (2, "Communication(Not Overlapped)"), "free": (3, "Free")}

#: Every timed span of every rank on its source's own clock, with its clock domain (MindData's logs are
#: "minddata", the rest "main"; profpipe/clocks.py); `_ALIGNED_SQL` puts them on their clock group's base.
_RAW_SPANS_SQL = f"""
CREATE OR REPLACE TEMP VIEW timeline_raw_spans AS
WITH overlap_threads AS (
    SELECT * FROM (VALUES {", ".join(f"('{c}', {tid})" for c, (tid, _) in _OVERLAP_THREADS.items())})
        AS t(category, tid)
), spans AS (
    SELECT rank, capture, 0 AS lane, 0 AS tid, 'Step ' || step AS name, 'step' AS cat, start_ns, total_ns AS dur_ns,
           {{'fp_op': fp_op, 'bp_op': bp_op}}::JSON AS args, 0 AS tier
    FROM step_phases
    UNION ALL
    SELECT rank, capture, 0, 0, phase.name, 'step_phase', phase.start_ns, phase.dur_ns, NULL::JSON, 0
    FROM step_phases, unnest([
        {{'name': 'iteration_interval', 'start_ns': start_ns, 'dur_ns': iteration_interval_ns}},
        {{'name': 'fp_and_bp', 'start_ns': fp_ns, 'dur_ns': fp_and_bp_ns}},
        {{'name': 'tail', 'start_ns': bp_ns, 'dur_ns': tail_ns}}]) AS t(phase)
    WHERE phase.dur_ns IS NOT NULL
    UNION ALL
    SELECT rank, capture, CASE side WHEN 'Host' THEN 1 ELSE 2 END, coalesce(tid, 0), op_name, 'op', start_ns, dur_ns,
           {{'op_type': op_type}}::JSON, 1
    FROM stg_host_op
    UNION ALL
    SELECT rank, capture, 3, coalesce(stream_id, 0), name, kind, start_ns, dur_ns,
           {{'op_name': op_name, 'stream': stream_id}}::JSON, 1
    FROM int_device_exec
    UNION ALL
    SELECT rank, capture, 4, {_COMMUNICATION_KERNEL_TID}, op_label, 'communication', start_ns, end_ns - start_ns,
           {{'op_name': op_name, 'iteration': iteration, 'communication_cost_ns': communication_cost_ns,
            'wait_cost_ns': wait_cost_ns}}::JSON, 1
    FROM comm_op_stats
    UNION ALL
    SELECT rank, capture, 4, coalesce(plane, 0), task_type, 'communication_task', start_ns, dur_ns,
           {{'op_name': op_name, 'src_rank': src_rank, 'dst_rank': dst_rank, 'transport': transport,
            'bytes': bytes}}::JSON, 1
    FROM int_comm_task
    UNION ALL
    SELECT rank, capture, 5, tid, category, 'overlap', start_ns, dur_ns, NULL::JSON, 1
    FROM overlap_segment JOIN overlap_threads USING (category)
    UNION ALL  -- MindData queue sizes: counters (dur NULL); op queues are sampled with the CPU monitor
    SELECT q.rank, q.capture, CASE q.queue WHEN 'get_next' THEN 9 ELSE 6 END, 0,
           CASE q.queue WHEN 'op_output' THEN o.op_name || '(id=' || q.op_id || ') output queue'
                        ELSE replace(q.queue, '_', ' ') || ' queue' END,
           'counter', coalesce(q.ts_ns, c.ts_ns), NULL, {{'size': q.size}}::JSON, 1
    FROM queue_sample q
    LEFT JOIN data_op_stats o ON o.rank = q.rank AND o.capture = q.capture AND o.op_id = q.op_id
    LEFT JOIN data_cpu_sample c ON q.queue = 'op_output' AND c.rank = q.rank AND c.capture = q.capture AND c.scope = 'device' AND c.sample = q.sample
    WHERE coalesce(q.ts_ns, c.ts_ns) IS NOT NULL
    UNION ALL
    SELECT rank, capture, 7, coalesce(tid, 0), name, category, start_ns, dur_ns, {{'correlation': correlation}}::JSON, 1
    FROM host_api
    UNION ALL
    SELECT rank, capture, 8, 0, 'Memory in use ' || device_type || CASE WHEN device_id >= 0 THEN ':' || device_id ELSE '' END,
           'counter', ts_ns, NULL, {{'bytes': in_use_bytes}}::JSON, 1
    FROM int_memory_in_use
)
SELECT *, CASE lane WHEN 6 THEN 'minddata' WHEN 9 THEN 'get_next' ELSE 'main' END AS domain FROM spans
WHERE __LANES__
"""

#: The spans on their clock group's base: rel_ns = start + the domain's epoch shift - the group's base, in
#: HUGEINT (no int64 subtraction or addition can overflow on any clock); `suffix` names unaligned groups.
_ALIGNED_SQL = """
CREATE OR REPLACE TEMP VIEW timeline_spans AS
SELECT s.*, (s.start_ns::HUGEINT + c.shift_ns) - c.base_ns AS rel_ns, c.suffix
FROM timeline_raw_spans s JOIN timeline_clock c USING (rank, capture, domain)
"""

_EVENTS_SQL = f"""
WITH spans AS (
    SELECT *, {_PID} AS pid FROM timeline_spans
), lanes AS (
    SELECT rank, lane, label
    FROM (SELECT rank, bool_or(device_type = 'ascend') AS ascend FROM run_info GROUP BY rank),  -- a rank may have several sources
         (VALUES (0, 'Step Trace'), (1, 'CPU ops'), (2, 'GPU ops'),
        (3, CASE WHEN ascend THEN 'Ascend Hardware' ELSE 'GPU kernels' END), (4, 'HCCL'),
        (5, 'Overlap Analysis'), (6, 'MindData'), (7, 'CUDA API'), (8, 'Memory'),
        (9, 'MindData get_next')) AS l(lane, label)
), threads AS (
    SELECT DISTINCT rank, capture, lane, tid, pid FROM spans
), processes AS (
    SELECT rank, capture, lane, pid, min(suffix) AS suffix FROM spans GROUP BY rank, capture, lane, pid
), meta AS (
    SELECT pid, 0 AS tid, 'process_name' AS name,
           {{'name': label || ' rank' || rank || CASE WHEN capture > 0 THEN ' capture' || capture ELSE '' END
                     || suffix}}::JSON AS args
    FROM processes JOIN (SELECT DISTINCT * FROM lanes) USING (rank, lane)
    UNION ALL
    SELECT DISTINCT pid, 0, 'process_sort_index', {{'sort_index': pid}}::JSON
    FROM threads
    UNION ALL
    SELECT pid, tid, 'thread_name',
           {{'name': CASE lane WHEN 0 THEN 'iterations'
                              WHEN 1 THEN 'Thread ' || tid
                              WHEN 7 THEN 'Thread ' || tid
                              WHEN 2 THEN 'Ops'
                              WHEN 3 THEN 'Stream ' || tid
                              WHEN 4 THEN CASE tid WHEN {_COMMUNICATION_KERNEL_TID} THEN 'Communication Kernel'
                                                   ELSE 'Plane ' || tid END
                              WHEN 6 THEN 'Queues'
                              WHEN 9 THEN 'Queues'
                              WHEN 8 THEN 'Allocator'
                              ELSE [{", ".join(repr(name) for _, name in _OVERLAP_THREADS.values())}][tid + 1]
                              END}}::JSON
    FROM threads
)
SELECT 0 AS tier, NULL::HUGEINT AS rel_ns,
       to_json({{'name': name, 'ph': 'M', 'pid': pid, 'tid': tid, 'args': args}}) AS event
FROM meta
UNION ALL
SELECT tier, rel_ns,
       CASE WHEN cat = 'counter'
            THEN to_json({{'name': name, 'ph': 'C', 'pid': pid, 'tid': tid,
                          'ts': rel_ns::DECIMAL(38, 0) * 0.001, 'args': args}})
            ELSE to_json({{'name': name, 'cat': cat, 'ph': 'X', 'pid': pid, 'tid': tid,
                          'ts': rel_ns::DECIMAL(38, 0) * 0.001,
                          'dur': dur_ns::DECIMAL(38, 0) * 0.001,
                          'args': args}}) END
FROM spans
"""


@dataclass(frozen=True)
class TimelineResult:
    """What the timeline export wrote."""

    path: Path
    events_written: int
    events_dropped: int
    bytes_written: int


#: The first array element, written by hand so every streamed event can start with a comma.
_PROFPIPE_PROCESS = {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "profpipe"}}


def write_timeline(con: duckdb.DuckDBPyConnection, path: Path, limit_mb: float | None = None,
                   summary_only: bool = False) -> TimelineResult:
    """Write the Chrome trace of everything in `con` to `path`, at most `limit_mb` MiB when given.

    `summary_only` keeps the steps, their phases and the overlap analysis (no ops, kernels or tasks).
    Events are streamed unsorted (viewers sort them). With a limit, one pass over the event
    sizes in time order finds the cut time; the second pass writes what starts before it.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    con.execute(_RAW_SPANS_SQL.replace("__LANES__", "lane IN (0, 5)" if summary_only else "TRUE"))
    model = clocks.resolve(con, "SELECT rank, capture, domain, count(*), min(start_ns), max(start_ns) "
                                "FROM timeline_raw_spans WHERE start_ns IS NOT NULL GROUP BY rank, capture, domain "
                                "ORDER BY rank, capture, domain")
    _register_clock_table(con, model)
    con.execute(_ALIGNED_SQL)
    base_ns = model.bases.get(model.primary, 0) if model.primary else 0
    con.execute("CREATE OR REPLACE TEMP VIEW timeline_events AS " + _EVENTS_SQL)
    cut_ns = None if limit_mb is None else _cut_time(con, int(limit_mb * 1024 * 1024) - _HEADER_RESERVE)
    keep = "TRUE" if cut_ns is None else f"tier = 0 OR rel_ns < {cut_ns}"
    kept, dropped = (None, 0) if cut_ns is None else con.execute(
        f"SELECT count(*) FILTER (WHERE {keep}), count(*) FILTER (WHERE NOT ({keep})) FROM timeline_events").fetchall()[0]
    header = {"displayTimeUnit": "ms", "baseTimeNanoseconds": base_ns,
              "otherData": {"producer": "profpipe", "clock": model.describe(), "clock_groups": model.groups()}}
    if dropped:
        header["profpipe"] = {"truncated": {"limit_mb": limit_mb, "events_dropped": dropped,
                                            "events_written": kept, "complete_until_us": cut_ns / 1000}}
    with open(path, "wb") as out:
        out.write((json.dumps(header)[:-1] + ', "traceEvents": [\n' + json.dumps(_PROFPIPE_PROCESS) + "\n").encode())
        kept = write_text_column(con, f"SELECT ',' || event || chr(10) FROM timeline_events WHERE {keep}", out)
        if dropped:
            marker = {"name": f"profpipe: timeline truncated here, {dropped} later events dropped",
                      "ph": "i", "s": "g", "pid": 0, "tid": 0, "ts": cut_ns / 1000}
            out.write(("," + json.dumps(marker) + "\n").encode())
        out.write(b"]}\n")
    for view in ("timeline_events", "timeline_spans", "timeline_raw_spans"):
        con.execute(f"DROP VIEW {view}")
    con.execute("DROP TABLE timeline_clock")
    return TimelineResult(path, kept, dropped, path.stat().st_size)


def _register_clock_table(con: duckdb.DuckDBPyConnection, model: clocks.ClockModel) -> None:
    """Table timeline_clock: per rank, capture and domain, the epoch shift, its group's base and the name
    suffix."""
    con.execute("CREATE OR REPLACE TEMP TABLE timeline_clock (rank INTEGER, capture INTEGER, domain VARCHAR, "
                "shift_ns HUGEINT, base_ns HUGEINT, suffix VARCHAR)")
    rows = [(d.rank, d.capture, d.domain, str(d.shift_ns), str(model.bases.get(d.group, 0)), model.group_label(d.group))
            for d in model.domains]
    if rows:
        con.executemany("INSERT INTO timeline_clock VALUES (?, ?, ?, ?::HUGEINT, ?::HUGEINT, ?)", rows)


def _cut_time(con: duckdb.DuckDBPyConnection, budget: int) -> int | None:
    """Time (ns since its group's base) of the first timed event that no longer fits the byte budget
    (None: all fit).

    Metadata and steps (tier 0) are always kept and paid for first.
    """
    return con.execute(f"""
        WITH sized AS (SELECT tier, rel_ns, strlen(event) + 2 AS bytes FROM timeline_events),
        fixed AS (SELECT coalesce(sum(bytes), 0) AS bytes FROM sized WHERE tier = 0),
        running AS (SELECT rel_ns, sum(bytes) OVER (ORDER BY rel_ns ROWS UNBOUNDED PRECEDING) AS bytes
                    FROM sized WHERE tier = 1)
        SELECT min(running.rel_ns) FROM running, fixed WHERE running.bytes + fixed.bytes > {budget}
    """).fetchall()[0][0]
