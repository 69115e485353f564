"""Chrome / Perfetto timeline export: one JSON object file for all ranks, built column-wise in DuckDB.

The events are the rows of the mart timeline_span (sql/marts/timeline_span.sql: lane, track, name,
args of every span and counter sample, on its source's clock); this module only decides the clock
shifts (profpipe/clocks.py, into the temp table timeline_clock) and the "(overlapping)" tracks
(profpipe/export/timeline_tracks.py), and streams the events, which sql/queries/timeline_events.sql
renders to their JSON text inside DuckDB, so no trace is ever held as Python objects.

One process per rank ("rank <r>", pid r + 1), sorted by rank; in it one thread per track, named
"<lane>: <track>" (lane names as msprof and MindInsight name their processes) and sorted by lane:

* "Step Trace: iterations": one span per step with its phases nested inside;
* "Host: Thread <tid>": the framework ops of a host thread and the runtime and driver calls it made (as
  Kineto draws them);
* "GPU ops: Ops": framework ops measured on the device;
* "Ascend Hardware: Stream <id>" (Ascend ranks) or "GPU kernels: Stream <id>": device tasks, kernels,
  memcpy and memset, with the owning op, correlation id, grid, block, registers per thread, shared memory
  and bytes in args; a flow arrow (Kineto's ac2g: s on the call, f with bp e where the activity starts)
  from each runtime or driver call to the activity it launched;
* "HCCL: Communication Kernel" with the communication op executions and their costs, "HCCL: Plane <k>"
  with the HCCL tasks (links, bytes in args);
* "Overlap Analysis: Computing", "...: Communication", "...: Communication(Not Overlapped)" and
  "...: Free" with the stretches of overlap_segment;
* counter tracks (ph "C") of the rank: the MindData queue sizes (each op's output queue, timed by the CPU
  monitor's samples, and the device or iterator queue, on the clock of the MindData logs), the allocator's
  bytes in use per device, the device's get_next queue.

A slice that partly overlaps another on its track is drawn on an "(overlapping)" track beside it
(timeline_tracks.py), so every track nests. A rank's later profiling cycles (capture c > 0) have
processes of their own: pid 1,000,000 * c + r + 1, named "rank <r> capture <c>".

Clocks (profpipe/clocks.py): every capture of every rank, and its MindData logs apart, whose clock the dump relates
to the Unix epoch (run_info.epoch_offset_ns, host_epoch_offset_ns) is put on the epoch; the others keep
their own clock, one track group per clock, each with its own base, and their processes are named
"... (unaligned clock: <clock>)" (a track or counter on another clock than its process's says its own;
`otherData.clock` and `otherData.clock_groups` say which is which). `summary_only` keeps lanes 0 and 5
(steps and overlap), as MindInsight's summary view does. Past GZIP_TIMELINE_FROM_MB of text the file is written
gzip-compressed (trace.json.gz), unless the caller says otherwise.

Times are µs relative to `baseTimeNanoseconds` (kept at the top level, as Kineto does) for the reference
group, and to their own group's base (`otherData.clock_groups`) for the others; they are exact decimals
with three digits (ns), computed in 128-bit integers so that no clock value can overflow them. With a size limit, metadata and steps are always kept, then the
other events in time order until the budget is spent: the timeline is complete up to a cut
time (every event that starts before it is present, but for a flow arrow whose end lies after it: an arrow
is kept or cut whole) and empty after it. The cut is marked by
a global instant event in a "profpipe" process (pid 0) and by the top-level
`profpipe.truncated` object.
"""
from __future__ import annotations

import gzip
import json
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import duckdb

from .. import clocks
from ..models import query
from .text_stream import write_text_column
from .timeline_tracks import place_slices

_HEADER_RESERVE = 4096
#: Above this many MiB of text the timeline is written gzip-compressed by default (level 1: about 8x smaller at
#: some 100 MB/s; Perfetto and chrome://tracing open trace.json.gz as they open trace.json).
GZIP_TIMELINE_FROM_MB = 64


@dataclass(frozen=True)
class TimelineResult:
    """What the timeline export wrote."""

    #: timeline/trace.json, or trace.json.gz when compressed.
    path: Path
    events_written: int
    events_dropped: int
    bytes_written: int


#: The first array element, written by hand so every streamed event can start with a comma.
_PROFPIPE_PROCESS = {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "profpipe"}}


def write_timeline(con: duckdb.DuckDBPyConnection, folder: Path, limit_mb: float | None = None,
                   summary_only: bool = False, gzip_it: bool | None = None) -> TimelineResult:
    """Write the Chrome trace of everything in `con` into `folder`, as trace.json, or as trace.json.gz with `gzip_it`
    (None: when the text passes GZIP_TIMELINE_FROM_MB), at most `limit_mb` MiB of text when given.

    `summary_only` keeps the steps, their phases and the overlap analysis (no ops, kernels or tasks).
    The events are rendered to their JSON text once, into a temporary table: its sizes decide the cut time (only when
    they pass the limit: one pass over the sizes in time order) and the compression; then they are streamed
    unsorted (viewers sort them).
    """
    folder.mkdir(parents=True, exist_ok=True)
    con.execute("CREATE OR REPLACE TEMP VIEW timeline_selected AS SELECT * FROM timeline_span"
                + (" WHERE lane IN (0, 5)" if summary_only else ""))
    model = clocks.resolve(con, query("timeline_clock_ranges"))
    _register_clock_table(con, model)
    place_slices(con)
    base_ns = model.bases.get(model.primary, 0) if model.primary else 0
    con.execute("CREATE OR REPLACE TEMP TABLE timeline_events AS " + query("timeline_events"))
    count, text_bytes = con.execute("SELECT count(*), coalesce(sum(strlen(event) + 2), 0) FROM timeline_events").fetchall()[0]
    budget = None if limit_mb is None else int(limit_mb * 1024 * 1024) - _HEADER_RESERVE
    cut_ns = _cut_time(con, budget) if budget is not None and text_bytes > budget else None
    keep = "TRUE" if cut_ns is None else f"tier = 0 OR keep_ns < {cut_ns}"
    kept, dropped = (count, 0) if cut_ns is None else con.execute(
        f"SELECT count(*) FILTER (WHERE {keep}), count(*) FILTER (WHERE NOT ({keep})) FROM timeline_events").fetchall()[0]
    header = {"displayTimeUnit": "ms", "baseTimeNanoseconds": base_ns,
              "otherData": {"producer": "profpipe", "clock": model.describe(), "clock_groups": model.groups()}}
    if dropped:
        header["profpipe"] = {"truncated": {"limit_mb": limit_mb, "events_dropped": dropped,
                                            "events_written": kept, "complete_until_us": cut_ns / 1000}}
    compressed = text_bytes > GZIP_TIMELINE_FROM_MB * 2**20 if gzip_it is None else gzip_it
    path = folder / ("trace.json.gz" if compressed else "trace.json")
    with open(path, "wb") as raw, (gzip.GzipFile(filename="trace.json", mode="wb", fileobj=raw, compresslevel=1, mtime=0)
                                   if compressed else nullcontext(raw)) as out:
        out.write((json.dumps(header)[:-1] + ', "traceEvents": [\n' + json.dumps(_PROFPIPE_PROCESS) + "\n").encode())
        kept = write_text_column(con, f"SELECT ',' || event || chr(10) FROM timeline_events WHERE {keep}", out)
        if dropped:
            marker = {"name": f"profpipe: timeline truncated here, {dropped} later events dropped",
                      "ph": "i", "s": "g", "pid": 0, "tid": 0, "ts": cut_ns / 1000}
            out.write(("," + json.dumps(marker) + "\n").encode())
        out.write(b"]}\n")
    con.execute("DROP VIEW timeline_selected")
    for table in ("timeline_events", "timeline_clock", "timeline_moved", "timeline_flow_level"):
        con.execute(f"DROP TABLE {table}")
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
    return con.execute(query("timeline_cut"), [budget]).fetchall()[0][0]
