"""Stage 2, ingest helper: nest host spans (ops, NVTX ranges) and the runtime calls made inside them.

Used by the readers of traces that record spans without their parents (Kineto, Paddle, Nsight
Systems) and by python_frames.py (Python frames and the ops run in them): the reader selects the spans
and calls of each thread in nesting order, this module walks them in batches, column-wise
(profpipe/stack_walk.py), and registers where each one belongs as DuckDB tables (a few 8-byte values
per span and call held, not Python objects).
"""
from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..stack_walk import OpenSpans, enclosing

_BATCH_ROWS = 1 << 18


def nest(con: duckdb.DuckDBPyConnection, spans_sql: str, parents_table: str = "parents",
         calls_table: str = "call_ops") -> None:
    """Register tables `parents` (op_index, parent_index) and `call_ops` (call_id, start_ns, op_index), or
    under the names given (python_frames.py nests Python frames and the ops inside them as well).

    `spans_sql` yields (is_call, id, thread, start_ns, end_ns) ordered by thread, start, end descending,
    spans before calls at the same start; a span's id is its op_index (0..n-1), a call's any key the
    reader joins back on (its correlation id, its row).
    Spans follow PyTorch's rule (torch.autograd.profiler_util): a span is the child of the innermost open
    span that holds all of it; a span that ends before a later one starts, or before it ends, is closed
    for good; parent_index -1 is the top level. A call belongs to the innermost span open when it starts
    (it closes nothing): this links device activities to the span their launch was made in.
    As a stack walk (stack_walk.py): a span stays open for a later span while it ends after that one starts
    and no earlier than it ends (threshold: the later span's end - 1, or its start when it has no length), and
    for a call while it ends after the call starts (threshold: the start).
    """
    span_ids, parents, call_ids, call_starts, call_ops = [], [], [], [], []
    open_spans, thread = OpenSpans.none(), None
    for batch in con.sql(spans_sql).to_arrow_reader(_BATCH_ROWS):
        if not batch.num_rows:
            continue
        is_call = batch.column("is_call").to_numpy(zero_copy_only=False)
        ids, starts, ends = (batch.column(name).to_numpy(zero_copy_only=False).astype(np.int64)
                             for name in ("id", "start_ns", "end_ns"))
        threads = batch.column("thread")
        codes = pc.fill_null(pc.dictionary_encode(threads).indices, -1).to_numpy(zero_copy_only=False)
        new_group = np.empty(batch.num_rows, bool)
        new_group[0] = threads[0].as_py() != thread
        new_group[1:] = codes[1:] != codes[:-1]
        thread = threads[-1].as_py()
        thresholds = np.where(is_call, starts, np.maximum(starts, ends - 1))
        found, outer, open_spans = enclosing(new_group, ~is_call, ends, thresholds, ids, open_spans)
        span_ids.append(ids[~is_call])
        parents.append(np.where(found, outer, -1)[~is_call])
        placed = is_call & found
        call_ids.append(ids[placed])
        call_starts.append(starts[placed])
        call_ops.append(outer[placed])

    def column(parts: list[np.ndarray]) -> pa.Array:
        return pa.array(np.concatenate(parts) if parts else np.empty(0, np.int64), pa.int64())

    con.register(parents_table, pa.table({"op_index": column(span_ids), "parent_index": column(parents)}))
    con.register(calls_table, pa.table({"call_id": column(call_ids), "start_ns": column(call_starts),
                                        "op_index": column(call_ops)}))
