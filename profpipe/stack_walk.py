"""Column-wise stack walk: for each item of a batch, the span a stack walk would find open on top of its stack,
computed with numpy (a few rounds of pointer jumping over the batch), not a Python loop per item.

A walk takes items (spans and points in time) in nesting order, group by group (a thread), and keeps the open
spans on a stack: before each item it pops the spans that cannot hold it, and the item's enclosing span is the
top. When the walk pops by a threshold (a span stays open for an item while its end lies beyond the item's
threshold: PyTorch's nesting rule for host spans, Python frames and the calls made in them, ingest/nesting.py),
the top is the nearest earlier span of the group whose end exceeds the item's threshold: that span cannot have
been popped before (whatever popped it would itself be a later span ending beyond the threshold, or an item whose
threshold is at most this one's), and every later span above it ends at or before the threshold. So each item
looks back from the span before it, and skips at once every span that an earlier span's own search skipped: a
candidate span c that ends at or before the item's threshold is replaced by c's own current candidate (every span
between them ends at or before c's threshold, which is at most the item's), all items at once per round.

Used by profpipe/ingest/nesting.py (for every reader that nests spans: Kineto, Paddle, Nsight Systems, the Python
frames of Kineto and MindSpore). The timeline's track walk (export/timeline_tracks.py) stays a Python loop: which
slices stay on a track depends on which earlier ones did, and repeating this walk until that settles was no
faster than the loop (benchmarks/README.md, issue 21). Batches are walked one after the other; the spans still
open after a batch (the stack: the chain of enclosing spans of its last span) carry over to the next one, so
memory stays a few 8-byte values per item of one batch.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class OpenSpans:
    """The spans open after a batch, outermost first: their keys, ends and thresholds (the walk's stack)."""

    keys: np.ndarray
    ends: np.ndarray
    thresholds: np.ndarray

    @staticmethod
    def none() -> OpenSpans:
        empty = np.empty(0, np.int64)
        return OpenSpans(empty, empty, empty)


def enclosing(new_group: np.ndarray, is_span: np.ndarray, ends: np.ndarray, thresholds: np.ndarray,
              keys: np.ndarray, open_spans: OpenSpans) -> tuple[np.ndarray, np.ndarray, OpenSpans]:
    """For each item of a batch in nesting order: whether a span encloses it, and that span's key.

    The enclosing span is the nearest earlier span of the item's group (`open_spans` first, when the batch's first
    item goes on with their group) whose end exceeds the item's threshold. `new_group` marks the first item of each
    group (the batch's first item too, unless it goes on with the group of `open_spans`); `is_span` the items that
    are spans, which may enclose later items (their own threshold is the one they were found with); `ends` matter
    for spans only. Returns (found, key of the enclosing span where found, the spans open after the batch).
    """
    carried = 0 if len(keys) == 0 or new_group[0] else len(open_spans.keys)
    span = np.concatenate([np.ones(carried, bool), is_span])
    end = np.concatenate([open_spans.ends[:carried], ends])
    threshold = np.concatenate([open_spans.thresholds[:carried], thresholds])
    key = np.concatenate([open_spans.keys[:carried], keys])
    total = len(key)
    position = np.arange(total)
    group_start = np.zeros(total, bool)
    group_start[carried:] = new_group
    if total:
        group_start[0] = True
    first = np.maximum.accumulate(np.where(group_start, position, 0))
    last_span = np.maximum.accumulate(np.where(span, position, -1))
    before = np.full(total, -1, np.int64)  # the last span before each item, in its group
    before[1:] = last_span[:-1]
    before[before < first] = -1
    candidate = before.copy()  # a carried span's candidate is the one below it on the stack: already its answer
    active = np.nonzero(candidate[carried:] >= 0)[0] + carried
    active = active[end[candidate[active]] <= threshold[active]]
    while active.size:
        at = candidate[active]
        # skip at and every span its own search skipped (they end at or before its threshold, so before this one's),
        # else (a span whose threshold lies beyond its end: a negative duration) at alone
        after = np.where(threshold[at] <= threshold[active], candidate[at], before[at])
        candidate[active] = after
        active = active[after >= 0]
        active = active[end[candidate[active]] <= threshold[active]]
    found = candidate[carried:] >= 0
    chain = []  # the stack after the batch: the last span of the last group and its enclosing spans
    top = int(last_span[-1]) if total and last_span[-1] >= first[-1] else -1
    while top >= 0:
        chain.append(top)
        top = int(candidate[top])
    chain.reverse()
    return found, key[np.maximum(candidate[carried:], 0)], OpenSpans(key[chain], end[chain], threshold[chain])
