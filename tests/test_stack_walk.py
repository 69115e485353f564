"""The column-wise stack walk (profpipe/stack_walk.py) and the nesting built on it (profpipe/ingest/nesting.py)
against the rule itself walked in plain Python here: PyTorch's nesting of host spans (torch.autograd.profiler_util:
a span is the child of the innermost open span that holds all of it; a span that ends before a later one starts,
or before it ends, is closed for good) with the calls made inside them, on random spans and calls of a few
threads (ties, spans of no length, negative durations, a null thread), read in batches of every size so that the
open spans carry over from batch to batch."""
from __future__ import annotations

import duckdb
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from profpipe.ingest import nesting
from profpipe.stack_walk import OpenSpans, enclosing

_SQL = "SELECT is_call, id, thread, start_ns, end_ns FROM items ORDER BY thread, start_ns, end_ns DESC, is_call, tie"
_ITEMS = st.lists(st.tuples(st.booleans(), st.sampled_from([None, "7", "8"]), st.integers(0, 30),
                            st.sampled_from([0, 0, 1, 2, 5, 11, 30, -2])), max_size=60)


def _walk(items: list[tuple[bool, int, str | None, int, int]]) -> tuple[dict[int, int], dict[int, int]]:
    """Oracle: (is_call, id, thread, start, end) in nesting order walked with a stack per thread; returns each
    span's parent id (-1: top level) and each call's innermost open span (calls with none are left out)."""
    parents, calls = {}, {}
    stack: list[tuple[int, int]] = []
    thread = None
    for is_call, key, item_thread, start, end in items:
        if item_thread != thread:
            stack, thread = [], item_thread
        if is_call:
            open_spans = [s for s in stack if s[1] > start]  # spans that ended by the call's start are closed
            if open_spans:
                calls[key] = open_spans[-1][0]
            stack = open_spans
            continue
        while stack and not (stack[-1][1] > start and stack[-1][1] >= end):
            stack.pop()
        parents[key] = stack[-1][0] if stack else -1
        stack.append((key, end))
    return parents, calls


@settings(max_examples=300, deadline=None)
@given(_ITEMS, st.sampled_from([1, 2, 3, 7, 1 << 18]))
def test_nest_is_the_stack_walk_in_batches_of_any_size(items, batch_rows: int) -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE items (is_call BOOLEAN, id BIGINT, thread VARCHAR, start_ns BIGINT, end_ns BIGINT, "
                "tie BIGINT)")
    rows = [(is_call, 1000 + i if is_call else i, thread, start, start + dur, None if is_call else i)
            for i, (is_call, thread, start, dur) in enumerate(items)]
    if rows:
        con.executemany("INSERT INTO items VALUES (?, ?, ?, ?, ?, ?)", rows)
    parents, calls = _walk(con.execute(_SQL).fetchall())
    saved = nesting._BATCH_ROWS
    nesting._BATCH_ROWS = batch_rows
    try:
        nesting.nest(con, _SQL)
    finally:
        nesting._BATCH_ROWS = saved
    assert dict(con.execute("SELECT op_index, parent_index FROM parents").fetchall()) == parents
    starts = {key: start for _, key, _, start, _ in con.execute(_SQL).fetchall()}
    assert {call: (start, op) for call, start, op in con.execute("SELECT * FROM call_ops").fetchall()} == \
        {call: (starts[call], op) for call, op in calls.items()}


def test_open_spans_carry_the_stack_to_the_next_batch() -> None:
    """[0, 100) holds [10, 50) which holds [20, 30); after a batch ending at the call at 25 the stack is all three;
    the next batch's call at 60 finds [0, 100), its span [60, 70) has [0, 100) as parent."""
    found, outer, stack = enclosing(np.array([True, False, False, False]), np.array([True, True, True, False]),
                                    np.array([100, 50, 30, 25]), np.array([99, 49, 29, 25]), np.array([1, 2, 3, 4]),
                                    OpenSpans.none())
    assert found.tolist() == [False, True, True, True] and outer[1:].tolist() == [1, 2, 3]
    assert stack.keys.tolist() == [1, 2, 3] and stack.ends.tolist() == [100, 50, 30]
    found, outer, stack = enclosing(np.array([False, False]), np.array([False, True]), np.array([60, 70]),
                                    np.array([60, 69]), np.array([5, 6]), stack)
    assert found.tolist() == [True, True] and outer.tolist() == [1, 1]
    assert stack.keys.tolist() == [1, 6]
