"""Stage 2, ingest helper: Ascend AI CPU kernel records -> aicpu_exec rows.

Two encodings, told apart by the first two bytes (shared/reference/formats-ascend-minddata.md §2.6):

* era A/B text `DATA_PREPROCESS.dev.AICPU.<dev>.slice_<n>`: NUL-separated records, a "Node"
  record (name, run start, run end; optional compute/memcpy fields, the `Run tart` typo, and
  `<us> <counter>` pairs in newer files) followed by its "Thread" record (dispatch and total
  time). Thread records without a Node record carry no name and give no row, as in MindSpore;
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
from .binary_records import read_columns
from .ascend_framework import MAGIC, check_magic

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


def read_aicpu_text(paths: Sequence[Path]) -> pl.DataFrame:
    """Node/Thread record pairs of the text files, in file order."""
    records = []
    for path in paths:
        data = path.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(path, "not UTF-8 text (binary or corrupted AI CPU data)", offset=exc.start) from None
        records += [r.strip() for r in text.split("\0") if r.strip()]
    frame = pl.DataFrame({"record": records}, schema={"record": pl.String})
    node = pl.col("record").str.extract_groups(_NODE)
    thread = pl.col("record").str.extract_groups(_THREAD).shift(-1)
    pairs = frame.select(node.alias("n"), thread.alias("t")).unnest("n", "t").drop_nulls(
        ["name", "start", "dispatch"])
    return pairs.select(
        pl.col("name").str.strip_chars().alias("op_name"),
        _op_type(pl.col("name").str.strip_chars()).alias("op_type"),
        pl.lit(None, pl.Int64).alias("stream_id"),
        pl.lit(None, pl.Int64).alias("task_id"),
        pl.col("start").cast(pl.Int64).alias("run_start_us"),
        pl.col("end").cast(pl.Int64).alias("run_end_us"),
        pl.col("total").cast(pl.Int64).alias("total_us"),
        pl.col("dispatch").cast(pl.Int64).alias("dispatch_us"))


def read_aicpu_binary(paths: Sequence[Path], op_names: pl.DataFrame, warn: Warn) -> pl.DataFrame:
    """128-byte records; names from `op_names` (stream_id, task_id, op_name: task_desc)."""
    columns = read_columns(paths, AICPU_DTYPE, ["magic", "stream_id", "task_id", "run_start", "run_end",
                                                "dispatch_time", "total_time"], warn,
                           keep=lambda r: r["task_id"] < _BINARY_SKIP_TASK_ID)
    check_magic(paths, columns)
    frame = pl.DataFrame({"stream_id": columns["stream_id"].astype(np.int64),
                          "task_id": columns["task_id"].astype(np.int64),
                          "run_start_us": columns["run_start"].astype(np.int64),
                          "run_end_us": columns["run_end"].astype(np.int64),
                          "total_us": columns["total_time"].astype(np.int64),
                          "dispatch_us": columns["dispatch_time"].astype(np.int64)})
    frame = frame.join(op_names, on=["stream_id", "task_id"], how="left", maintain_order="left")
    unnamed = frame["op_name"].null_count()
    if unnamed:
        warn(f"{paths[0]}: {unnamed} AI CPU records have a stream/task id with no op in task_desc; "
             "named '<stream>_<task>'")
    frame = frame.with_columns(pl.coalesce("op_name", pl.format("{}_{}", "stream_id", "task_id")).alias("op_name"))
    return frame.with_columns(_op_type(pl.col("op_name")).alias("op_type")).select(list(_OUT_SCHEMA))


def _op_type(name: pl.Expr) -> pl.Expr:
    """Last path element up to its first '-' (MindSpore's node_type_name)."""
    return name.str.split("/").list.last().str.split("-").list.first()
