"""Stage 2, ingest helper: Ascend AI CPU kernel records -> aicpu_exec rows.

Two encodings, told apart by the first two bytes (shared/reference/formats-ascend-minddata.md §2.6):

* era A/B text `DATA_PREPROCESS.dev.AICPU.<dev>.slice_<n>`: NUL-separated records, a "Node"
  record (name, run start, run end; optional compute/memcpy fields, the `Run tart` typo, and
  `<us> <counter>` pairs in newer files) followed by its "Thread" record (dispatch and total
  time). Thread records without a Node record carry no name and give no row: MindSpore reads
  Node/Thread pairs only, and some profiler versions write Thread records alone (the real JOB3),
  so they are `excluded`, not lost;
* era C binary (0x5A5A magic): 128-byte records, named through task_desc by stream and task id;
  task ids >= 25000 are not AI CPU kernels and are skipped.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from ..errors import InputError
from ..health import Warn
from .binary_records import locate_offset, read_columns
from .ascend_framework import MAGIC, check_magic
from .lines import MAX_WHOLE_FILE_BYTES, read_capped
from .units import MAX_US

AICPU_DTYPE = np.dtype([
    ("magic", "<u2"), ("tag", "<u2"), ("stream_id", "<u2"), ("task_id", "<u2"), ("run_start", "<u8"),
    ("run_start_counter", "<u8"), ("compute_start", "<u8"), ("memcpy_start", "<u8"), ("memcpy_end", "<u8"),
    ("run_end", "<u8"), ("run_end_counter", "<u8"), ("thread", "<u4"), ("device", "<u4"),
    ("submit_tick", "<u8"), ("schedule_tick", "<u8"), ("tick_before_run", "<u8"), ("tick_after_run", "<u8"),
    ("kernel_type", "<u4"), ("dispatch_time", "<u4"), ("total_time", "<u4"), ("ffts_thread_id", "<u2"),
    ("version", "u1"), ("reserve", "V9")])
_NODE = (r"Node:(?P<name>[^,]+), Run s?tart:(?P<start>\d+)(?: \d+)?,.*?Run end:(?P<end>\d+)")
_THREAD = r"dispatchTime=(?P<dispatch>\d+) us, totalTime=(?P<total>\d+) us"
_OUT_SCHEMA = {"op_name": pl.String, "op_type": pl.String, "stream_id": pl.Int64, "task_id": pl.Int64,
               "run_start_us": pl.Int64, "run_end_us": pl.Int64, "total_us": pl.Int64, "dispatch_us": pl.Int64}
_BINARY_SKIP_TASK_ID = 25000


def is_binary(paths: Sequence[Path]) -> bool:
    """True when the stream starts with the 0x5A5A record magic (era C)."""
    with open(paths[0], "rb") as handle:
        return handle.read(2) == MAGIC.to_bytes(2, "little")


_TABLE = "aicpu_exec"


def read_aicpu_text(paths: Sequence[Path], warn: Warn) -> pl.DataFrame:
    """Node/Thread record pairs of the text files, in file order.

    Left out, each counted in the ledger: records that are neither a Node nor a Thread record (a
    cut-short last record among them), Node records not followed by their Thread record, times beyond
    int64 ns, runs that end before they start and exact repeats of a pair (all `dropped`), and Thread
    records without a Node before them (`excluded`: no name, and MindSpore reads pairs only)."""
    frames = []
    for path in paths:
        data = read_capped(path, MAX_WHOLE_FILE_BYTES, "AI CPU text records")  # a few MB in long runs
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(path, "not UTF-8 text (binary or corrupted AI CPU data)", offset=exc.start) from None
        records, offsets, position = [], [], 0
        for piece in text.split("\0"):
            if piece.strip():
                records.append(piece.strip())
                offsets.append(position)
            position += len(piece.encode("utf-8")) + 1
        frames.append(pl.DataFrame({"record": records, "offset": offsets, "path": str(path)},
                                   schema={"record": pl.String, "offset": pl.Int64, "path": pl.String}))
    frame = pl.concat(frames).with_row_index("i")
    node = pl.col("record").str.extract_groups(_NODE)
    thread = pl.col("record").str.extract_groups(_THREAD)
    parsed = frame.with_columns(node.alias("n"), thread.alias("t")).unnest("n", "t").with_columns(
        pl.col("name").is_not_null().alias("is_node"), pl.col("dispatch").is_not_null().alias("is_thread"))
    parsed = parsed.with_columns(pl.col("is_thread").shift(-1, fill_value=False).alias("thread_next"),
                                 pl.col("is_node").shift(1, fill_value=False).alias("node_before"),
                                 pl.col("dispatch").shift(-1).alias("dispatch"),
                                 pl.col("total").shift(-1).alias("total"))

    def report(mask: pl.Expr, check: str, what: str, action: str = "dropped") -> None:
        bad = parsed.filter(mask)
        if bad.height:
            first = bad.row(0, named=True)
            warn(f"{first['path']}: byte offset {first['offset']}: {bad.height} AI CPU records {what}; {action}",
                 check=check, action=action, rows=bad.height, path=first["path"], offset=first["offset"],
                 example=first["record"][:120], tables=_TABLE)

    report(~pl.col("is_node") & ~pl.col("is_thread"), "malformed_record",
           "are neither a 'Node:' nor a 'Thread' record with dispatchTime and totalTime (cut short or damaged)")
    report(pl.col("is_node") & ~pl.col("thread_next"), "unlinked", "are Node records without the Thread record "
           "that gives their dispatch and total time")
    report(pl.col("is_thread") & ~pl.col("node_before"), "unlinked", "are Thread records without a Node record "
           "before them (no op name; MindSpore reads Node/Thread pairs only)", action="excluded")
    pairs = parsed.filter(pl.col("is_node") & pl.col("thread_next")).select(
        "path", "offset", "record",
        pl.col("name").str.strip_chars().alias("op_name"),
        *(pl.col(column).cast(pl.Int64, strict=False).alias(alias) for column, alias in (
            ("start", "run_start_us"), ("end", "run_end_us"), ("total", "total_us"), ("dispatch", "dispatch_us"))))
    times = ("run_start_us", "run_end_us", "total_us", "dispatch_us")
    return _checked(pairs, times, warn).select(
        "op_name", _op_type(pl.col("op_name")).alias("op_type"), pl.lit(None, pl.Int64).alias("stream_id"),
        pl.lit(None, pl.Int64).alias("task_id"), *times)


def _checked(frame: pl.DataFrame, times: Sequence[str], warn: Warn) -> pl.DataFrame:
    """`frame` (with path, offset, record) without, each counted in the ledger: times that are not
    numbers below MAX_US, runs ending before they start, exact repeats of a record."""
    def drop(frame: pl.DataFrame, mask: pl.Expr, check: str, what: str) -> pl.DataFrame:
        bad = frame.filter(mask)
        if bad.height:
            first = bad.row(0, named=True)
            warn(f"{first['path']}: byte offset {first['offset']}: {bad.height} AI CPU records {what}; dropped",
                 check=check, action="dropped", rows=bad.height, path=first["path"], offset=first["offset"],
                 example=str(first["record"])[:120], tables=_TABLE)
        return frame.filter(~mask)

    out_of_range = pl.any_horizontal(pl.col(c).is_null() | (pl.col(c) > MAX_US) | (pl.col(c) < 0) for c in times)
    frame = drop(frame, out_of_range, "out_of_range", f"have a time beyond {MAX_US} us (int64 ns)")
    frame = drop(frame, pl.col("run_end_us") < pl.col("run_start_us"), "negative_duration",
                 "end before they start (run end below run start)")
    values = [c for c in frame.columns if c not in ("path", "offset", "record")]
    return drop(frame, pl.struct(values).is_duplicated() & ~pl.struct(values).is_first_distinct(),
                "duplicate_record", "repeat an earlier record exactly (the copies)")


def read_aicpu_binary(paths: Sequence[Path], op_names: pl.DataFrame, warn: Warn) -> pl.DataFrame:
    """128-byte records; names from `op_names` (stream_id, task_id, op_name: task_desc)."""
    columns = read_columns(paths, AICPU_DTYPE, ["magic", "tag", "stream_id", "task_id", "run_start", "run_end",
                                                "dispatch_time", "total_time"], warn,
                           keep=lambda r: r["task_id"] < _BINARY_SKIP_TASK_ID, tables=_TABLE)
    check_magic(paths, {"magic": columns["magic"], "data_tag": columns["tag"], "offset": columns["offset"]},
                "aicpu", warn, _TABLE)
    starts, ends = columns["run_start"], columns["run_end"]
    located = [locate_offset(paths, int(o)) for o in columns["offset"]]
    frame = pl.DataFrame({"stream_id": columns["stream_id"].astype(np.int64),
                          "task_id": columns["task_id"].astype(np.int64),
                          "run_start_us": np.where(starts <= MAX_US, starts, 0).astype(np.int64),
                          "run_end_us": np.where(ends <= MAX_US, ends, 0).astype(np.int64),
                          "total_us": columns["total_time"].astype(np.int64),
                          "dispatch_us": columns["dispatch_time"].astype(np.int64),
                          "path": [str(p) for p, _ in located], "offset": [o for _, o in located],
                          "record": [f"stream {s}, task {t}, run {a}..{b}" for s, t, a, b in zip(
                              columns["stream_id"], columns["task_id"], starts, ends)]},
                         schema_overrides={"path": pl.String, "offset": pl.Int64, "record": pl.String})
    frame = frame.with_columns(  # a u64 time beyond MAX_US: null, so that _checked drops it
        pl.when(pl.Series(starts > MAX_US)).then(None).otherwise(pl.col("run_start_us")).alias("run_start_us"),
        pl.when(pl.Series(ends > MAX_US)).then(None).otherwise(pl.col("run_end_us")).alias("run_end_us"))
    frame = _checked(frame, ("run_start_us", "run_end_us", "total_us", "dispatch_us"), warn)
    frame = frame.join(op_names, on=["stream_id", "task_id"], how="left", maintain_order="left")
    unnamed = frame.filter(pl.col("op_name").is_null())
    if unnamed.height:
        first = unnamed.row(0, named=True)
        warn(f"{first['path']}: byte offset {first['offset']}: {unnamed.height} AI CPU records have a stream/task "
             "id with no op in task_desc; named '<stream>_<task>'", check="unlinked", action="repaired",
             rows=unnamed.height, path=first["path"], offset=first["offset"], example=first["record"],
             tables=_TABLE)
    frame = frame.with_columns(pl.coalesce("op_name", pl.format("{}_{}", "stream_id", "task_id")).alias("op_name"))
    return frame.with_columns(_op_type(pl.col("op_name")).alias("op_type")).select(list(_OUT_SCHEMA))


def _op_type(name: pl.Expr) -> pl.Expr:
    """Last path element up to its first '-' (MindSpore's node_type_name)."""
    return name.str.split("/").list.last().str.split("-").list.first()
