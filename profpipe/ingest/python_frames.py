"""Stage 2, ingest helper: Python call-stack frames (with_stack) -> the normalized table python_frame, and the
innermost frame each host op ran in (host_op.frame_index).

Used by the readers of traces that record Python frames as spans: Kineto's `python_function` events (with
`Python id` / `Python parent id` args: the tracer's own parent links) and MindSpore's stack events in
trace_view.json (no ids: the parent is the innermost frame open on the thread, by time). The reader puts
the frames in a DuckDB table or view (`frames_sql`: thread, tid, name, start_ns, dur_ns, frame_id,
parent_id, parent_given, module_id); this module numbers them, resolves each frame's parent and nests the
host ops in them with nesting.nest (one pass over frames and ops together, a few 8-byte values per row held).

A frame's parent is the frame its `Python parent id` names (the last frame on its thread with that id that
starts no later, holds it in time and comes earlier in nesting order, so no frame can be its own ancestor); a
frame whose parent id is null is at the top level; frames of sources without ids get the innermost frame that
holds them on their thread (PyTorch's nesting rule). Every tree stays within one thread.

A parent id that names no such frame is expected of real traces where no frame of the frame's own thread holds
it (it is the top of its thread's stack as recorded) and the id is smaller than its own (the tracer numbers
frames as they start: a parent starts first): the id names a frame of another thread (the caller that set the
thread to work: autograd's backward thread under `run_backward`, whose parent id PyTorch keeps from the thread's
first call) or a frame the trace does not hold (it began before the capture, or was still open when it ended).
Such frames stay at the top of their thread, counted as `kept` (`ambiguous`: another thread; `unlinked`: not in
the trace). Any other parent id that resolves nowhere is damage: the frame is held in time by a frame of its
thread that its id does not name, or the id is not smaller than its own; it gets the innermost frame that holds
it on its thread, counted as `unlinked`, repaired.
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
WITH by_id AS (  -- the frame the parent id names: the last one on the thread with that id starting no later,
                 -- if it holds the child in time
    SELECT c.frame_index, p.frame_index AS id_parent
    FROM (SELECT * FROM py_frames WHERE parent_id IS NOT NULL) c
    ASOF JOIN py_frames p ON p.thread = c.thread AND p.frame_id = c.parent_id AND c.start_ns >= p.start_ns
    WHERE p.frame_index < c.frame_index AND c.start_ns + c.dur_ns <= p.start_ns + p.dur_ns
), frames AS (
    SELECT f.*, n.parent_index AS nested_parent, b.id_parent
    FROM py_frames f JOIN frame_parents n ON n.op_index = f.frame_index LEFT JOIN by_id b USING (frame_index)
), named AS (  -- of the frames whose parent id resolves nowhere on their thread, where the id is expected
    SELECT c.frame_index,
           CASE WHEN c.nested_parent <> -1 OR NOT coalesce(c.parent_id < c.frame_id, false) THEN 'damaged'
                WHEN bool_or(p.thread IS DISTINCT FROM c.thread AND p.start_ns <= c.start_ns) THEN 'other_thread'
                WHEN count(p.frame_id) = 0 THEN 'not_in_trace'
                ELSE 'damaged' END AS parent_unlinked
    FROM (SELECT * FROM frames WHERE parent_given AND id_parent IS NULL) c
    LEFT JOIN py_frames p ON p.frame_id = c.parent_id
    GROUP BY c.frame_index, c.nested_parent, c.parent_id, c.frame_id
)
SELECT f.*,
       CASE WHEN f.id_parent IS NOT NULL THEN f.id_parent
            WHEN f.frame_id IS NOT NULL AND NOT f.parent_given THEN -1
            ELSE f.nested_parent END AS parent_index,
       u.parent_unlinked
FROM frames f LEFT JOIN named u USING (frame_index)
"""

#: The table python_frame (schemas/tables.json).
PYTHON_FRAME_SQL = """
SELECT frame_index, frame_id, parent_index, tid, name, module_id, start_ns, dur_ns
FROM py_frames_resolved
ORDER BY frame_index
"""

#: No host ops to nest (the reader links none).
NO_OPS_SQL = "SELECT NULL::BIGINT AS op_index, NULL::VARCHAR AS thread, NULL::BIGINT AS start_ns WHERE false"


#: Frames whose parent id resolves on no earlier frame of their thread that holds them, by kind
#: (py_frames_resolved.parent_unlinked): the ledger's check and action, and what the message says.
_UNRESOLVED = {
    "other_thread": ("ambiguous", "kept", "name as parent a frame of another thread that started before them (the "
                     "caller that set their thread to work, e.g. autograd's backward thread under run_backward, as "
                     "PyTorch's tracer links a thread's outermost frames); each stays the top of its own thread's "
                     "stack (no frame of its thread holds it)"),
    "not_in_trace": ("unlinked", "kept", "name a parent (Python parent id) that the trace does not hold, and no "
                     "frame of their thread holds them: the parent began before the capture or was still open when "
                     "it ended; each stays at the top of its thread's stack"),
    "damaged": ("unlinked", "repaired", "name a parent (Python parent id) that is no earlier frame of their thread "
                "holding them in time, although a frame of their thread holds them or the id is not smaller than "
                "their own (damage); each gets the innermost frame that holds it in time"),
}


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
    found = {kind: (rows, example) for kind, rows, example in con.execute(
        "SELECT parent_unlinked, count(*), any_value(concat(name, ' (Python id ', frame_id, ', parent id ', parent_id, "
        "')')) FROM py_frames_resolved WHERE parent_unlinked IS NOT NULL GROUP BY parent_unlinked").fetchall()}
    for kind, (check, action, what) in _UNRESOLVED.items():
        if kind in found:
            rows, example = found[kind]
            warn(f"{path}: {rows} Python frames {what}", check=check, action=action, rows=rows, path=path,
                 example=example, tables="python_frame")
    return con.execute("SELECT count(*) FROM py_frames").fetchall()[0][0]
