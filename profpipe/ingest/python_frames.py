"""Stage 2, ingest helper: Python call-stack frames (with_stack) -> the normalized table python_frame, and the
innermost frame each host op ran in (host_op.frame_index).

Used by the readers of traces that record Python frames as spans: Kineto's `python_function` events (with
`Python id` / `Python parent id` args: the tracer's own parent links) and MindSpore's stack events in
trace_view.json (no ids: the parent is the innermost frame open on the thread, by time). The reader puts
the frames in a DuckDB table or view (`frames_sql`: thread, tid, name, start_ns, dur_ns, frame_id,
parent_id, parent_given, module_id); this module numbers them, resolves each frame's parent and nests the
host ops in them with nesting.nest (one pass over frames and ops together, a few 8-byte values per row held).

A frame's parent is the frame its `Python parent id` names (the last frame on its thread with that id that
starts no later and comes earlier in nesting order, so no frame can be its own ancestor); a frame whose
parent id is null is at the top level; frames of sources without ids, and frames whose parent id names no
such frame (a damaged or cut trace: counted in trace_health as `unlinked`, repaired), get the innermost frame
that holds them on their thread (PyTorch's nesting rule).
"""
from __future__ import annotations

from pathlib import Path

import duckdb

from ..health import Warn
from .nesting import nest

#: Frames in nesting order (thread, start, longest first, then id): frame_index is the position in it.
_NUMBERED_SQL = """
CREATE OR REPLACE TABLE py_frames AS
SELECT (row_number() OVER (ORDER BY thread, start_ns, dur_ns DESC, frame_id NULLS LAST, name) - 1) AS frame_index, *
FROM ({frames_sql})
"""

#: Frames and host ops of every thread for nesting.nest: frames are the spans, ops the calls (an op belongs to
#: the innermost frame open on its thread when it starts).
_NESTING_SQL = """
SELECT is_call, id, thread, start_ns, end_ns FROM (
    SELECT false AS is_call, frame_index AS id, thread, start_ns, start_ns + dur_ns AS end_ns, frame_index AS tie
    FROM py_frames
    UNION ALL
    SELECT true, op_index, thread, start_ns, start_ns, NULL FROM ({ops_sql}))
ORDER BY thread, start_ns, end_ns DESC, is_call, tie
"""

_RESOLVED_SQL = """
CREATE OR REPLACE TABLE py_frames_resolved AS
WITH by_id AS (  -- the frame the parent id names: the last one on the thread with that id starting no later
    SELECT c.frame_index, p.frame_index AS id_parent
    FROM (SELECT * FROM py_frames WHERE parent_id IS NOT NULL) c
    ASOF JOIN py_frames p ON p.thread = c.thread AND p.frame_id = c.parent_id AND c.start_ns >= p.start_ns
    WHERE p.frame_index < c.frame_index
)
SELECT f.*, n.parent_index AS nested_parent, b.id_parent,
       CASE WHEN b.id_parent IS NOT NULL THEN b.id_parent
            WHEN f.frame_id IS NOT NULL AND NOT f.parent_given THEN -1
            ELSE n.parent_index END AS parent_index,
       f.parent_given AND b.id_parent IS NULL AS parent_unlinked
FROM py_frames f
JOIN frame_parents n ON n.op_index = f.frame_index
LEFT JOIN by_id b USING (frame_index)
"""

#: The table python_frame (schemas/tables.json).
PYTHON_FRAME_SQL = """
SELECT frame_index, frame_id, parent_index, tid, name, module_id, start_ns, dur_ns
FROM py_frames_resolved
ORDER BY frame_index
"""

#: No host ops to nest (the reader links none).
NO_OPS_SQL = "SELECT NULL::BIGINT AS op_index, NULL::VARCHAR AS thread, NULL::BIGINT AS start_ns WHERE false"


def resolve_frames(con: duckdb.DuckDBPyConnection, frames_sql: str, ops_sql: str, path: Path, warn: Warn) -> int:
    """Create table py_frames_resolved (python_frame's rows: PYTHON_FRAME_SQL) and register `op_frames`
    (call_id: an op_index of `ops_sql`, op_index: the frame_index of the innermost frame open when it started).

    `frames_sql` yields thread (the nesting key, of the same type as the ops'), tid, name, start_ns, dur_ns,
    frame_id, parent_id, parent_given (the event names a parent, valid or not), module_id; `ops_sql` yields
    op_index, thread, start_ns. Returns the number of frames.
    """
    con.execute(_NUMBERED_SQL.format(frames_sql=frames_sql))
    nest(con, _NESTING_SQL.format(ops_sql=ops_sql), "frame_parents", "op_frames")
    con.execute(_RESOLVED_SQL)
    frames, unlinked, example = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE parent_unlinked), "
        "any_value(concat(name, ' (Python id ', frame_id, ', parent id ', parent_id, ')')) FILTER (WHERE parent_unlinked) "
        "FROM py_frames_resolved").fetchall()[0]
    if unlinked:
        warn(f"{path}: {unlinked} Python frames name a parent (Python parent id) that is no earlier frame on their "
             "thread; each gets the innermost frame that holds it in time", check="unlinked", action="repaired",
             rows=unlinked, path=path, example=example, tables="python_frame")
    return frames
