"""Timeline tracks: which track of its rank each slice of the timeline is drawn on, so that no track holds two
slices that partly overlap.

Sits between the mart timeline_span (each event with its lane and its track within the lane) and the JSON
writer (profpipe/export/chrome_trace.py). The Chrome trace format nests the complete events (ph X) of one
thread by their times; a slice that starts inside another and ends after it cannot nest, and Perfetto leaves
it out of the track (an import error). Such slices come from clocks that disagree (a kernel that starts
before the previous one on its stream ends), from annotations that are not stack-ordered, or from damaged
traces. Each goes instead to the first "(overlapping)" level beside its track where it nests: level 1, then
2, ... up to MAX_LEVEL, which takes whatever remains. Level 0, the track itself, keeps every slice that nests
with the slices kept before it (in start order, longer first).

The walk is sequential (a stack of open slices per level), so only the tracks that need it are read into
Python: tracks where some slice starts before an earlier one ends. A flat track (a stream whose kernels run
one after another, the bulk of a GPU trace) is decided in SQL and never leaves DuckDB. The walk keeps 8
bytes per moved slice, not Python objects per event.
"""
from __future__ import annotations

from array import array

import duckdb
import pyarrow as pa

from ..models import query

#: The deepest "(overlapping)" level; slices that nest on no level up to it are drawn on it anyway.
MAX_LEVEL = 8
_BATCH_ROWS = 1 << 16

def place_slices(con: duckdb.DuckDBPyConnection) -> None:
    """Register, over the temp view timeline_selected (rows of timeline_span), the tables
    timeline_moved (rank, capture, lane, tid, start_ns, dur_ns, level: every slice drawn on level > 0) and
    timeline_flow_level (rank, capture, lane, tid, start_ns, level: where the innermost slice starting at that
    time is on level > 0, the level a flow event there binds to)."""
    tracks: dict[int, tuple[int, int, int, int]] = {}
    moved = {name: array("q") for name in ("track", "start_ns", "dur_ns", "level")}
    flows = {name: array("q") for name in ("track", "start_ns", "level")}
    track = last_start = None
    last_level = 0
    stacks: list[list[int]] = [[]]  # per level, the ends of its open slices (innermost last)
    for batch in con.sql(query("timeline_nested_tracks")).to_arrow_reader(_BATCH_ROWS):
        numbers, starts, durations = (batch.column(name).to_pylist() for name in ("track", "start_ns", "dur_ns"))
        for row, (number, start, dur) in enumerate(zip(numbers, starts, durations)):
            if number != track or start != last_start:
                if last_level:  # the innermost slice of the previous start time is not on the track itself
                    for name, value in zip(flows, (track, last_start, last_level)):
                        flows[name].append(value)
                if number != track:
                    track, stacks = number, [[]]
                    tracks[number] = tuple(batch.column(key)[row].as_py() for key in ("rank", "capture", "lane", "tid"))
                last_start = start
            end = start + dur
            own = stacks[0]  # the track itself, inline: nearly every slice nests there
            while own and own[-1] <= start:
                own.pop()
            if not own or end <= own[-1]:
                own.append(end)
                last_level = 0
                continue
            last_level = _level(stacks, start, end)
            for name, value in zip(moved, (number, start, dur, last_level)):
                moved[name].append(value)
    if last_level:
        for name, value in zip(flows, (track, last_start, last_level)):
            flows[name].append(value)
    keys = pa.table({"track": pa.array(list(tracks), pa.int64()),
                     **{key: pa.array([t[i] for t in tracks.values()], pa.int64())
                        for i, key in enumerate(("rank", "capture", "lane", "tid"))}})
    con.register("timeline_track_keys", keys)
    for name, columns in (("timeline_moved_rows", moved), ("timeline_flow_rows", flows)):
        con.register(name, pa.table({key: pa.array(values, pa.int64()) for key, values in columns.items()}))
    for table in ("timeline_moved", "timeline_flow_level"):
        con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS " + query(table))
    for name in ("timeline_track_keys", "timeline_moved_rows", "timeline_flow_rows"):
        con.unregister(name)


def _level(stacks: list[list[int]], start: int, end: int) -> int:
    """The first level above the track whose open slices the slice [start, end) nests in (pushed there);
    MAX_LEVEL at the most."""
    for level in range(1, MAX_LEVEL + 1):
        if level == len(stacks):
            stacks.append([])
        stack = stacks[level]
        while stack and stack[-1] <= start:
            stack.pop()
        if not stack or end <= stack[-1]:
            stack.append(end)
            return level
    return MAX_LEVEL
