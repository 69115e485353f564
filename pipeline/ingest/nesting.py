"""Stage 2, ingest helper: nest host spans (ops, NVTX ranges) and the runtime calls made inside them.

Used by the readers of traces that record spans without their parents (Kineto, Paddle, Nsight
Systems): the reader selects the spans and calls of each thread in nesting order, this module walks
them with one stack per thread and registers where each one belongs as DuckDB tables.
"""
from __future__ import annotations

import duckdb
import pyarrow as pa


def nest(con: duckdb.DuckDBPyConnection, spans_sql: str) -> None:
    """Register tables `parents` (op_index, parent_index) and `call_ops` (call_id, start_ns, op_index).

    `spans_sql` yields (is_call, id, thread, start_ns, end_ns) ordered by thread, start, end descending,
    spans before calls at the same start; a span's id is its op_index (0..n-1), a call's any key the
    reader joins back on (its correlation id, its row).
    Spans follow PyTorch's rule (torch.autograd.profiler_util): a span is the child of the innermost open
    span that holds all of it; a span that ends before a later one starts, or before it ends, is closed
    for good; parent_index -1 is the top level. A call belongs to the innermost span open when it starts
    (it closes nothing): this links device activities to the span their launch was made in.
    """
    columns = con.sql(spans_sql).fetchnumpy()
    calls, ids, threads, starts, ends = (columns[name].tolist() for name in ("is_call", "id", "thread", "start_ns", "end_ns"))
    parents = [-1] * sum(1 for is_call in calls if not is_call)
    call_ids, call_starts, call_ops = [], [], []
    stack: list[int] = []  # positions in the lists above
    thread = None
    for position, (is_call, start, end) in enumerate(zip(calls, starts, ends)):
        if threads[position] != thread:
            stack, thread = [], threads[position]
        while stack and (start >= ends[stack[-1]] or (not is_call and end > ends[stack[-1]])):
            stack.pop()
        if is_call:
            if stack:
                call_ids.append(ids[position])
                call_starts.append(start)
                call_ops.append(ids[stack[-1]])
            continue
        if stack:
            parents[ids[position]] = ids[stack[-1]]
        stack.append(position)
    con.register("parents", pa.table({"op_index": pa.array(range(len(parents)), pa.int64()),
                                      "parent_index": pa.array(parents, pa.int64())}))
    con.register("call_ops", pa.table({"call_id": pa.array(call_ids, pa.int64()),
                                       "start_ns": pa.array(call_starts, pa.int64()),
                                       "op_index": pa.array(call_ops, pa.int64())}))
