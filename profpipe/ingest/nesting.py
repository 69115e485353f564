"""Stage 2, ingest helper: nest host spans (ops, NVTX ranges) and the runtime calls made inside them.

Used by the readers of traces that record spans without their parents (Kineto, Paddle, Nsight
Systems): the reader selects the spans and calls of each thread in nesting order, this module walks
them in batches with one stack per thread and registers where each one belongs as DuckDB tables
(a few 8-byte values per span and call held, not Python objects).
"""
from __future__ import annotations

from array import array

import duckdb
import pyarrow as pa

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
    """
    span_ids, parents = array("q"), array("q")  # 8 bytes a value, not Python objects
    call_ids, call_starts, call_ops = array("q"), array("q"), array("q")
    stack: list[tuple[int, int]] = []  # (id, end) of the open spans of the current thread
    thread = None
    for batch in con.sql(spans_sql).to_arrow_reader(_BATCH_ROWS):
        columns = [batch.column(name).to_pylist() for name in ("is_call", "id", "thread", "start_ns", "end_ns")]
        for is_call, span_id, span_thread, start, end in zip(*columns):
            if span_thread != thread:
                stack, thread = [], span_thread
            while stack and (start >= stack[-1][1] or (not is_call and end > stack[-1][1])):
                stack.pop()
            if is_call:
                if stack:
                    call_ids.append(span_id)
                    call_starts.append(start)
                    call_ops.append(stack[-1][0])
                continue
            span_ids.append(span_id)
            parents.append(stack[-1][0] if stack else -1)
            stack.append((span_id, end))
    con.register(parents_table, pa.table({"op_index": pa.array(span_ids, pa.int64()),
                                      "parent_index": pa.array(parents, pa.int64())}))
    con.register(calls_table, pa.table({"call_id": pa.array(call_ids, pa.int64()),
                                       "start_ns": pa.array(call_starts, pa.int64()),
                                       "op_index": pa.array(call_ops, pa.int64())}))
