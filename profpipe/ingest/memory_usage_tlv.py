"""Stage 2, ingest helper: MindSpore 2.5+'s `FRAMEWORK/mindspore.memory_usage` (profile_memory with CPU
activities) -> memory_block rows (and the allocator totals each event carries, as memory_record rows).

Used by mindspore_memory.py. The file (shared/reference/formats-mindspore-extras.md §2.3; MindSpore's
`analysis/viewer/ascend_op_memory_viewer.py`) is framework TLV (framework_tlv.py): per memory event a fixed
struct `<i11QI4B` (device_id, tid, pid, create_at ns, addr, size, used_size, peak_size, alloc_size,
used_by_event_size, eager_free_size, stream_ptr, stream_id, from_persistent, is_persistent, run_mode,
alloc_type) and field 13, the owner's name. size 2^64-1 marks a free. create_at is the allocator's
high_resolution_clock: Unix-epoch ns with libstdc++ (the clock of the rest of the memory source).

Pairing, as MindSpore's op memory viewer pairs them: events in time order (file order on ties), per address,
an allocation pairs with the free that follows it; an allocation followed by another allocation at its
address is left out (MindSpore drops it: its free was lost), the last allocation of an address without a free
is a block never released (release_ns null). A free with no allocation right before it at its address is left
out: at the start of an address (a block allocated before profiling began) by design, as MindSpore skips it;
later (a lost allocation) as damage. MindSpore's viewer pairs such a later free with the *next* allocation of
the address, giving a block released before it was allocated; profpipe does not (its operator_memory.csv
reader drops those rows as negative durations too). Every event is also one sample of the allocator's totals
(allocated = used_size, reserved = alloc_size, active = used_size + used_by_event_size, as in MindSpore's
cpu_ms_memory_record file), which mindspore_memory.py uses when the dump has no totals file of MindSpore's.
Events with a time or size beyond 2^62 are left out and reported.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from ..health import Warn
from .framework_tlv import read_records
from .units import MAX_NS

#: The fixed part of a memory event (MindSpore's `<i11QI4B`).
EVENT = np.dtype([("device_id", "<i4"), ("tid", "<u8"), ("pid", "<u8"), ("create_at", "<u8"), ("addr", "<u8"),
                  ("size", "<u8"), ("used_size", "<u8"), ("peak_size", "<u8"), ("alloc_size", "<u8"),
                  ("used_by_event_size", "<u8"), ("eager_free_size", "<u8"), ("stream_ptr", "<u8"),
                  ("stream_id", "<u4"), ("from_persistent", "u1"), ("is_persistent", "u1"), ("run_mode", "u1"),
                  ("alloc_type", "u1")])
#: The owner's name.
OWNER = 13
FREE = np.uint64(2**64 - 1)
_LIMIT = np.uint64(MAX_NS)
_TABLES = "memory_block,memory_record"
#: The component and device columns from device_id (`NPU:<device_id>`, as MindSpore names the device).
_DEVICE = (pl.lit("MindSpore", dtype=pl.String).alias("component"),
           pl.concat_str(pl.lit("NPU:"), pl.col("device_id").cast(pl.String)).alias("device"))


def read(path: Path, warn: Warn) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(memory_block rows, memory_record rows) of one memory_usage file, in mindspore_memory's columns."""
    records = read_records(path, EVENT, (OWNER,), warn, _TABLES, "create_at")
    fixed, owner, offset = records.fixed, records.fields[OWNER], records.offset
    free = fixed["size"] == FREE
    bad = (fixed["create_at"] > _LIMIT) | (~free & (fixed["size"] > _LIMIT))
    for column in ("used_size", "alloc_size", "used_by_event_size"):
        bad |= fixed[column] > _LIMIT
    if bad.any():
        warn(f"{path}: byte offset {int(offset[bad][0])}: {int(bad.sum())} memory events with a time or size "
             "beyond 2^62; left out", check="out_of_range", action="dropped", rows=int(bad.sum()), path=path,
             offset=int(offset[bad][0]), tables=_TABLES)
        kept = np.flatnonzero(~bad)
        fixed, owner, free, offset = fixed[kept], owner.gather(kept), free[kept], offset[kept]
    order = np.lexsort((np.arange(len(fixed)), fixed["create_at"], fixed["addr"]))
    addr, is_free = fixed["addr"][order], free[order]
    same_next = np.zeros(len(order), dtype=bool)
    same_next[:-1] = addr[1:] == addr[:-1]
    same_prev = np.zeros(len(order), dtype=bool)
    same_prev[1:] = same_next[:-1]
    next_free = np.zeros(len(order), dtype=bool)
    next_free[:-1] = is_free[1:]
    prev_alloc = np.zeros(len(order), dtype=bool)
    prev_alloc[1:] = ~is_free[:-1]
    paired = ~is_free & same_next & next_free
    replaced = ~is_free & same_next & ~next_free
    unreleased = ~is_free & ~same_next
    leading = is_free & ~same_prev
    stray = is_free & same_prev & ~prev_alloc
    _report(warn, path, offset[order], replaced, "unlinked", "dropped",
            "allocations followed by another allocation at their address (their free is missing); left out, as "
            "MindSpore leaves them out")
    _report(warn, path, offset[order], leading, "unlinked", "excluded",
            "frees of blocks allocated before profiling began (the first event of their address); left out, as "
            "MindSpore leaves them out")
    _report(warn, path, offset[order], stray, "unlinked", "dropped",
            "frees with no allocation before them at their address (a lost allocation); left out")
    alloc = order[paired | unreleased]
    release = np.where(paired, np.roll(order, -1), -1)[paired | unreleased]
    has_release = release >= 0
    blocks = _blocks(fixed, owner, alloc, release, has_release)
    return blocks, _records(fixed)


def _report(warn: Warn, path: Path, offsets: np.ndarray, mask: np.ndarray, check: str, action: str, what: str) -> None:
    if mask.any():
        first = int(offsets[mask].min())
        warn(f"{path}: byte offset {first}: {int(mask.sum())} {what}", check=check, action=action, rows=int(mask.sum()),
             path=path, offset=first, tables="memory_block")


def _blocks(fixed: np.ndarray, owner: pl.Series, alloc: np.ndarray, release: np.ndarray,
            has_release: np.ndarray) -> pl.DataFrame:
    r = np.where(has_release, release, alloc)  # (the columns one by one: a structured gather is ten times slower)
    ints = {"bytes": fixed["size"][alloc], "alloc_ns": fixed["create_at"][alloc], "release_ns": fixed["create_at"][r],
            "alloc_allocated_bytes": fixed["used_size"][alloc], "alloc_reserved_bytes": fixed["alloc_size"][alloc],
            "alloc_active_bytes": fixed["used_size"][alloc],  # MindSpore's Allocation Total Active is used_size
            "release_allocated_bytes": fixed["used_size"][r], "release_reserved_bytes": fixed["alloc_size"][r],
            "release_active_bytes": fixed["used_size"][r]}
    frame = pl.DataFrame({
        "device_id": fixed["device_id"][alloc],
        "owner": owner.gather(alloc).fill_null(""),
        **{name: pl.Series(values.astype(np.int64), dtype=pl.Int64) for name, values in ints.items()},
        "stream_ptr": fixed["stream_ptr"][alloc],
        "_released": has_release,
        "_i": np.arange(len(alloc)),
    })
    return frame.select(
        *_DEVICE, "owner",
        *(pl.when(pl.col("_released")).then(pl.col(c)).alias(c) if c.startswith("release") else c for c in ints),
        pl.col("stream_ptr").cast(pl.String).alias("stream"), "_i",
    ).sort("alloc_ns", "_i").drop("_i")


def _records(fixed: np.ndarray) -> pl.DataFrame:
    order = np.argsort(fixed["create_at"], kind="stable")
    return pl.DataFrame({
        "device_id": fixed["device_id"][order],
        "ts_ns": fixed["create_at"][order].astype(np.int64),
        "allocated_bytes": fixed["used_size"][order].astype(np.int64),
        "reserved_bytes": fixed["alloc_size"][order].astype(np.int64),
        "active_bytes": (fixed["used_size"][order] + fixed["used_by_event_size"][order]).astype(np.int64),
    }).select(*_DEVICE, "ts_ns", "allocated_bytes", "reserved_bytes", "active_bytes")
