"""Stage 2, ingest helper: the framework side of raw Ascend data -> task_desc, op_desc, trace-point names.

MindSpore registers every device task of a compiled graph with the op it runs, and (era A/B)
the ops' types and tensors and the ops behind the step-trace tags. Two encodings
(shared/reference/formats-ascend-minddata.md §2.4, §2.5):

* era A/B text: `Framework.host.vm.{task_desc_info,graph_desc_info,point}` (also `vm_` and the
  GE backend without `vm`), space separated;
* era C binary: `Framework.{task_desc_info,step_info,tensor_data_info}` records whose name
  fields are inline strings or hashes looked up in the text `Framework.hash_dic`.

These files hold one line or record per op or task (thousands, not millions), so the parsing
here is plain Python where the format is irregular.
"""
from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import polars as pl

from ..errors import InputError
from ..health import Warn
from .binary_records import locate_offset, read_columns
from .lines import read_lines, require

#: Data type enums of the "vm" backend (MindSpore's TypeId in MindSpore <= 1.5).
_VM_DATA_TYPES = {27: "BOOL", 28: "INT", 29: "INT8", 30: "INT16", 31: "INT32", 32: "INT64", 33: "UINT",
                  34: "UINT8", 35: "UINT16", 36: "UINT32", 37: "UINT64", 38: "FLOAT", 39: "FLOAT16",
                  40: "FLOAT32", 41: "FLOAT64"}
#: GE DataType / Format enums of the "ge" backend.
_GE_DATA_TYPES = {0: "DT_FLOAT", 1: "DT_FLOAT16", 2: "DT_INT8", 3: "DT_INT32", 4: "DT_UINT8", 6: "DT_INT16",
                  7: "DT_UINT16", 8: "DT_UINT32", 9: "DT_INT64", 10: "DT_UINT64", 11: "DT_DOUBLE", 12: "DT_BOOL"}
_GE_FORMATS = {0: "NCHW", 1: "NHWC", 2: "ND", 3: "NC1HWC0", 4: "FRACTAL_Z", 29: "FRACTAL_NZ"}
#: Era C tensor enums (MindSpore's own, after msprof's +200 offset is removed).
_C_FORMATS = {0: "UNKNOWN", 1: "DEFAULT", 2: "NC1KHKWHWC0", 3: "ND", 4: "NCHW", 5: "NHWC", 6: "HWCN",
              7: "NC1HWC0", 8: "FRAC_Z", 9: "C1HWNCOC0", 10: "FRAC_NZ", 11: "NC1HWC0_C04",
              12: "FRACTAL_Z_C04", 13: "NDHWC"}
_C_DATA_TYPES = {30: "BOOL", 31: "INT", 32: "INT8", 33: "INT16", 34: "INT32", 35: "INT64", 36: "UINT",
                 37: "UINT8", 38: "UINT16", 39: "UINT32", 40: "UINT64", 41: "FLOAT", 42: "FLOAT16",
                 43: "FLOAT32", 44: "FLOAT64"}
#: Task types as msprof numbers them in task_desc records.
TASK_TYPES = {0: "AI_CORE", 1: "AI_CPU", 2: "AI_VECTOR_CORE", 3: "WRITE_BACK", 4: "MIX_AIC", 5: "MIX_AIV",
              6: "FFTS_PLUS", 7: "DSA_SQE", 8: "DVPP", 9: "HCCL"}

MAGIC = 0x5A5A
_MIX = lambda size: [("kind", "u1"), ("pad", "V7"), ("text", f"S{size - 8}")]  # noqa: E731
TASK_DESC_DTYPE = np.dtype([
    ("magic", "<u2"), ("data_tag", "<u2"), ("task_type", "<u4"), ("op_name", _MIX(128)),
    ("op_type", _MIX(64)), ("iteration", "<u8"), ("timestamp", "<u8"), ("shape_type", "<u4"),
    ("block_dim", "<u4"), ("model_id", "<u4"), ("stream_id", "<u4"), ("task_id", "<u4"),
    ("thread_id", "<u4"), ("reserve", "V16")])
STEP_INFO_DTYPE = np.dtype([
    ("magic", "<u2"), ("data_tag", "<u2"), ("model_id", "<u4"), ("stream_id", "<u4"), ("task_id", "<u4"),
    ("timestamp", "<u8"), ("iteration", "<u8"), ("thread_id", "<u4"), ("tag", "u1"), ("reserve", "V27")])
TENSOR_DATA_DTYPE = np.dtype([
    ("magic", "<u2"), ("data_tag", "<u2"), ("model_id", "<u4"), ("iteration", "<u8"), ("stream_id", "<u4"),
    ("task_id", "<u4"), ("tensor_num", "u1"), ("pad", "V3"), ("tensors", "<u4", (5, 11)), ("reserve", "V8")])

TASK_DESC_SCHEMA = {"seq": pl.Int64, "op_name": pl.String, "task_id": pl.Int64, "stream_id": pl.Int64,
                    "block_dim": pl.Int64, "graph_id": pl.Int64, "op_type": pl.String, "task_type": pl.String}
OP_DESC_SCHEMA = {"seq": pl.Int64, "op_name": pl.String, "op_type": pl.String, "tensors_json": pl.String}


# ---- era A/B text ------------------------------------------------------------------------------

def read_task_desc_text(paths: Sequence[Path]) -> pl.DataFrame:
    """`<op> <block_dim> <task_id> <stream_id>` per line (a 5-field variant has an extra first field)."""
    frames = []
    for path in paths:
        lines = read_lines(path)
        fields = lines.with_columns(pl.col("line").str.split(" ").list.eval(
            pl.element().filter(pl.element() != "")).alias("f"))
        count = pl.col("f").list.len()
        require(path, fields, count.is_in([4, 5]),
                "'<op name> <block dim> <task id> <stream id>' (4 or 5 fields)", lines)
        tail = fields.select("line_no", pl.col("f").list.tail(4))
        parsed = tail.select(
            "line_no",
            pl.col("f").list.get(0).alias("op_name"),
            pl.col("f").list.get(1).cast(pl.Int64, strict=False).alias("block_dim"),
            pl.col("f").list.get(2).cast(pl.Int64, strict=False).alias("task_id"),
            pl.col("f").list.get(3).cast(pl.Int64, strict=False).alias("stream_id"))
        require(path, parsed, pl.all_horizontal(pl.col("block_dim", "task_id", "stream_id").is_not_null()),
                "integer block dim, task id and stream id", lines)
        frames.append(parsed.drop("line_no"))
    return _numbered(frames, TASK_DESC_SCHEMA)


_GRAPH_TOKEN = re.compile(r'(\w+):("[^"]*"|\S*)')


def read_graph_desc_text(paths: Sequence[Path], backend: str) -> pl.DataFrame:
    """`op_name:<full> op_type:<type> input_id:<i> input_format:.. input_data_type:.. input_shape:".."` ..."""
    rows = []
    for path in paths:
        for line_no, line in read_lines(path).iter_rows():
            tokens = _GRAPH_TOKEN.findall(line)
            if len(tokens) < 2 or tokens[0][0] != "op_name" or tokens[1][0] != "op_type":
                raise InputError(path, f"expected 'op_name:<name> op_type:<type> ...', got {line[:120]!r}",
                                 line=line_no)
            rows.append((tokens[0][1], tokens[1][1], _tensors_json(path, line_no, tokens[2:], backend)))
    frame = pl.DataFrame(rows, schema={"op_name": pl.String, "op_type": pl.String, "tensors_json": pl.String},
                         orient="row")
    return _numbered([frame], OP_DESC_SCHEMA)


def _tensors_json(path: Path, line_no: int, tokens: list[tuple[str, str]], backend: str) -> str:
    tensors: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for key, value in tokens:
        side, _, attribute = key.partition("_")
        if side not in ("input", "output") or attribute not in ("id", "format", "data_type", "shape"):
            raise InputError(path, f"unknown graph_desc field {key!r}", line=line_no)
        if attribute == "id":
            current = tensors.setdefault(f"{side}_{value}", {})
            continue
        if current is None:
            raise InputError(path, f"{key} before any {side}_id", line=line_no)
        current[attribute] = _render_tensor_field(attribute, value.strip('"'), backend)
    return json.dumps(tensors)


def _render_tensor_field(attribute: str, value: str, backend: str) -> str:
    if attribute == "data_type" and value.isdigit():
        if backend == "vm":
            name = _VM_DATA_TYPES.get(int(value))
            return f"NUMBER_TYPE_{name}" if name else value
        return _GE_DATA_TYPES.get(int(value), value)
    if attribute == "format" and backend == "ge" and value.isdigit():
        return _GE_FORMATS.get(int(value), value)
    return value


def read_points_text(paths: Sequence[Path]) -> dict[int, str]:
    """`<tag> <full op name>` per line -> {tag: op name}."""
    return {int(tag): op for tag, op in _key_value_lines(paths, r"^\s*(\d+)\s+(\S+)\s*$", "'<tag> <op name>'")}


def _key_value_lines(paths: Sequence[Path], pattern: str, expected: str) -> list[tuple[str, str]]:
    """(key, value) of every line of the text files, both taken from `pattern`'s two groups."""
    pairs: list[tuple[str, str]] = []
    for path in paths:
        lines = read_lines(path)
        parsed = lines.select("line_no", pl.col("line").str.extract(pattern, 1).alias("key"),
                              pl.col("line").str.extract(pattern, 2).alias("value"))
        require(path, parsed, pl.col("key").is_not_null(), expected, lines)
        pairs += zip(parsed["key"].to_list(), parsed["value"].to_list())
    return pairs


# ---- era C binary ------------------------------------------------------------------------------

def read_hash_dic(paths: Sequence[Path]) -> dict[int, str]:
    """`<hash>:<op name>` per line."""
    return {int(key): name for key, name in _key_value_lines(paths, r"^(\d+):(.+)$", "'<hash>:<op name>'")}


def read_task_desc_binary(paths: Sequence[Path], hashes: dict[int, str], warn: Warn) -> pl.DataFrame:
    """256-byte task_desc records (msprof data tag 23)."""
    columns = read_columns(paths, TASK_DESC_DTYPE, ["magic", "task_type", "op_name", "op_type", "block_dim",
                                                    "model_id", "stream_id", "task_id"], warn)
    check_magic(paths, columns)
    frame = pl.DataFrame({
        "op_name": _mixed_strings(paths, columns["op_name"], columns["offset"], hashes, 8),
        "task_id": columns["task_id"].astype(np.int64),
        "stream_id": columns["stream_id"].astype(np.int64),
        "block_dim": columns["block_dim"].astype(np.int64),
        "graph_id": columns["model_id"].astype(np.int64),
        "op_type": _mixed_strings(paths, columns["op_type"], columns["offset"], hashes, 136),
        "task_type": [TASK_TYPES.get(int(t), str(int(t))) for t in columns["task_type"]],
    })
    return _numbered([frame], TASK_DESC_SCHEMA)


def read_step_info_binary(paths: Sequence[Path], warn: Warn) -> pl.DataFrame:
    """64-byte step_info records: tag -> (stream, task) of the op that carries the trace point."""
    columns = read_columns(paths, STEP_INFO_DTYPE, ["magic", "tag", "stream_id", "task_id", "model_id"], warn)
    check_magic(paths, columns)
    return pl.DataFrame({name: columns[name].astype(np.int64)
                         for name in ("tag", "stream_id", "task_id", "model_id")})


def read_tensor_data_binary(paths: Sequence[Path], warn: Warn) -> pl.DataFrame:
    """256-byte tensor_data_info records -> (stream_id, task_id, tensors_json) per task."""
    columns = read_columns(paths, TENSOR_DATA_DTYPE, ["magic", "stream_id", "task_id", "tensor_num", "tensors"],
                           warn)
    check_magic(paths, columns)
    rendered = []
    for count, tensors in zip(columns["tensor_num"], columns["tensors"]):
        described: dict[str, dict[str, object]] = {}
        counters = {"input": 0, "output": 0}
        for tensor in tensors[: min(int(count), 5)]:
            side = "input" if tensor[0] == 0 else "output"
            fmt, dtype = (int(value) - 200 if value >= 200 else int(value) for value in tensor[1:3])
            described[f"{side}_{counters[side]}"] = {
                "format": _C_FORMATS.get(fmt, str(fmt)), "data_type": _C_DATA_TYPES.get(dtype, str(dtype)),
                "shape": [int(d) for d in tensor[3:] if d != 0]}
            counters[side] += 1
        rendered.append(json.dumps(described))
    return pl.DataFrame({"stream_id": columns["stream_id"].astype(np.int64),
                         "task_id": columns["task_id"].astype(np.int64), "tensors_json": rendered},
                        schema={"stream_id": pl.Int64, "task_id": pl.Int64, "tensors_json": pl.String})


def check_magic(paths: Sequence[Path], columns: dict[str, np.ndarray]) -> None:
    """Raise InputError at the first record (read with its "magic" column) without the 0x5A5A magic."""
    bad = np.flatnonzero(columns["magic"] != MAGIC)
    if bad.size:
        path, offset = locate_offset(paths, int(columns["offset"][bad[0]]))
        raise InputError(path, f"record without the 0x5A5A magic number (found {int(columns['magic'][bad[0]]):#06x}); "
                               "not a record of this kind or a misaligned file", offset=offset)


def _mixed_strings(paths: Sequence[Path], fields: np.ndarray, offsets: np.ndarray, hashes: dict[int, str],
                   field_offset: int) -> list[str]:
    """Decode msprof "mix" fields: kind 1 = inline NUL-padded string, kind 0 = u64 hash in hash_dic."""
    out = []
    for index, (kind, text) in enumerate(zip(fields["kind"], fields["text"])):
        if kind == 1:
            out.append(text.decode("utf-8", errors="replace"))
            continue
        key = int.from_bytes(text[:8].ljust(8, b"\0"), "little")
        name = hashes.get(key)
        if name is None:
            path, offset = locate_offset(paths, int(offsets[index]) + field_offset)
            raise InputError(path, f"name hash {key} is not in Framework.hash_dic", offset=offset)
        out.append(name)
    return out


def _numbered(frames: list[pl.DataFrame], schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """Concatenate, number rows in file order (seq) and complete the declared columns."""
    frame = pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()
    frame = frame.with_row_index("seq").with_columns(pl.col("seq").cast(pl.Int64))
    return frame.select(pl.col(name).cast(dtype) if name in frame.columns else pl.lit(None, dtype).alias(name)
                        for name, dtype in schema.items())
