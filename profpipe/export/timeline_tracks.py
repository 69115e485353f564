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

The walk is a stack walk per level (a stack of open slices), done column-wise for the track itself (level 0:
profpipe/stack_walk.py, repeated over a batch until the set of slices that stay there no longer changes) and in
Python for the few slices moved to other levels; only the tracks that need it are read: tracks where some slice
starts before an earlier one ends. A flat track (a stream whose kernels run one after another, the bulk of a GPU
trace) is decided in SQL and never leaves DuckDB. The walk keeps 8 bytes per moved slice, not Python objects per
event.
"""
from __future__ import annotations

from array import array

import duckdb
import numpy as np
import pyarrow as pa

from ..models import query
from ..stack_walk import OpenSpans, enclosing

#: The deepest "(overlapping)" level; slices that nest on no level up to it are drawn on it anyway.
MAX_LEVEL = 8
_BATCH_ROWS = 1 << 18
#: Rounds over a batch before it is halved (one slice settles in two; each round settles at least one more).
_ROUNDS = 8


def place_slices(con: duckdb.DuckDBPyConnection) -> None:
    """Register, over the temp view timeline_selected (rows of timeline_span), the tables
    timeline_moved (rank, capture, lane, tid, start_ns, dur_ns, level: every slice drawn on level > 0) and
    timeline_flow_level (rank, capture, lane, tid, start_ns, level: where the innermost slice starting at that
    time is on level > 0, the level a flow event there binds to)."""
    tracks: dict[int, tuple[int, int, int, int]] = {}
    moved = {name: array("q") for name in ("track", "start_ns", "dur_ns", "level")}
    flows = {name: array("q") for name in ("track", "start_ns", "level")}
    track = last_track = -1  # the track of the moved slices' stacks; the last slice's
    stacks: list[list[int]] = [[]]  # per level above the track (index 0 unused), the ends of its open slices
    on_track, pending = OpenSpans.none(), None  # pending: a flow at the batch's last start, unless the next goes on
    for batch in con.sql(query("timeline_nested_tracks")).to_arrow_reader(_BATCH_ROWS):
        if not batch.num_rows:
            continue
        numbers, starts, durations = (batch.column(name).to_numpy(zero_copy_only=False).astype(np.int64)
                                      for name in ("track", "start_ns", "dur_ns"))
        ends = starts + durations
        if ((durations > 0) & (ends < starts)).any() or ((durations < 0) & (ends > starts)).any():
            starts, ends = starts.astype(object), starts.astype(object) + durations.astype(object)  # past int64
        if pending is not None and (int(numbers[0]), int(starts[0])) != pending[:2]:
            for name, value in zip(flows, pending):
                flows[name].append(value)
        pending = None
        new_track = np.empty(len(numbers), bool)
        new_track[0] = numbers[0] != last_track
        new_track[1:] = numbers[1:] != numbers[:-1]
        for row in np.nonzero(new_track)[0].tolist():
            tracks[int(numbers[row])] = tuple(batch.column(key)[row].as_py() for key in ("rank", "capture", "lane", "tid"))
        stays, on_track = _track_level(new_track, starts, ends, on_track)
        last = np.ones(len(numbers), bool)  # the innermost slice of its start time (the last one)
        last[:-1] = (numbers[1:] != numbers[:-1]) | (starts[1:] != starts[:-1])
        for row in np.nonzero(~stays)[0].tolist():
            number, start, end = int(numbers[row]), int(starts[row]), int(ends[row])
            if number != track:
                track, stacks = number, [[]]
            level = _level(stacks, start, end)
            for name, value in zip(moved, (number, start, int(durations[row]), level)):
                moved[name].append(value)
            if last[row] and row == len(numbers) - 1:
                pending = (number, start, level)
            elif last[row]:
                for name, value in zip(flows, (number, start, level)):
                    flows[name].append(value)
        last_track = int(numbers[-1])
    if pending is not None:
        for name, value in zip(flows, pending):
            flows[name].append(value)
    keys = pa.table({"track": pa.array(list(tracks), pa.int64()),
                     **{key: pa.array([t[i] for t in tracks.values()], pa.int64())
                        for i, key in enumerate(("rank", "capture", "lane", "tid"))}})
    con.register("timeline_track_keys", keys)
    for name, columns in (("timeline_moved_rows", moved), ("timeline_flow_rows", flows)):
        con.register(name, pa.table({key: pa.array(values, pa.int64()) for key, values in columns.items()}))
    con.execute("CREATE OR REPLACE TEMP TABLE timeline_moved AS SELECT k.rank, k.capture, k.lane, k.tid, m.start_ns, "
                "m.dur_ns, max(m.level) AS level FROM timeline_moved_rows m JOIN timeline_track_keys k USING (track) "
                "GROUP BY ALL")
    con.execute("CREATE OR REPLACE TEMP TABLE timeline_flow_level AS SELECT k.rank, k.capture, k.lane, k.tid, f.start_ns, "
                "f.level FROM timeline_flow_rows f JOIN timeline_track_keys k USING (track)")
    for name in ("timeline_track_keys", "timeline_moved_rows", "timeline_flow_rows"):
        con.unregister(name)


def _track_level(new_track: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                 on_track: OpenSpans) -> tuple[np.ndarray, OpenSpans]:
    """Which slices of a batch stay on their track (level 0), and the track's slices open after the batch.

    A slice stays when the track's slices kept before it, less those that ended by its start, leave it inside the
    innermost one (or none is left): when the nearest earlier slice kept on the track that ends after its start
    ends no earlier than it (stack_walk.enclosing, threshold: the start). Which earlier slices are kept depends on
    the same test, so the batch is walked again with the slices found to stay until nothing changes (then every
    slice's answer is the sequential walk's, slice by slice in order). Each round settles the slices before the first
    one whose answer changed, so a batch still changing after _ROUNDS rounds is walked in halves."""
    stays = np.ones(len(starts), bool)
    for _ in range(_ROUNDS):
        found, outer_end, after = enclosing(new_track, stays, ends, starts, ends, on_track)
        settled = ~found | (outer_end >= ends)
        if (settled == stays).all():
            return stays, after
        stays = settled
    half = len(starts) // 2
    first, on_track = _track_level(new_track[:half], starts[:half], ends[:half], on_track)
    second, on_track = _track_level(new_track[half:], starts[half:], ends[half:], on_track)
    return np.concatenate([first, second]), on_track


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
