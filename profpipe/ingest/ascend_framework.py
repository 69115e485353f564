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

def read_task_desc_text(paths: Sequence[Path], warn: Warn) -> pl.DataFrame:
    """`<op> <block_dim> <task_id> <stream_id>` per line (a 5-field variant has an extra first field).
    A line repeated exactly is read once (the copies are counted in the ledger)."""
    frames = []
    for path in paths:
        lines = _nonblank_lines(path)
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
        parsed = _drop_duplicate_lines(path, parsed, lines, warn, "task_desc,device_exec")
        frames.append(parsed.drop("line_no"))
    return _numbered(frames, TASK_DESC_SCHEMA)


def _nonblank_lines(path: Path) -> pl.DataFrame:
    """The lines of a framework text file; one with no line at all but blanks is an error."""
    lines = read_lines(path)
    if not lines.height:
        raise InputError(path, "no records: the file holds only blank lines (was the collection cut short?)")
    return lines


def _drop_duplicate_lines(path: Path, frame: pl.DataFrame, lines: pl.DataFrame, warn: Warn,
                          tables: str) -> pl.DataFrame:
    """`frame` (with line_no) without the rows whose line repeats an earlier line exactly; counted."""
    text = lines.select("line_no", pl.col("line").str.strip_chars().alias("text"))
    copies = text.filter(pl.col("text").is_duplicated() & ~pl.col("text").is_first_distinct())
    if not copies.height:
        return frame
    first = copies.row(0)
    warn(f"{path}, line {first[0]}: {copies.height} lines repeat an earlier line exactly; the copies are dropped",
         check="duplicate_record", action="dropped", rows=copies.height, path=path, line=int(first[0]),
         example=first[1], tables=tables)
    return frame.filter(~pl.col("line_no").is_in(copies["line_no"].implode()))


_GRAPH_TOKEN = re.compile(r'(\w+):("[^"]*"|\S*)')


def read_graph_desc_text(paths: Sequence[Path], backend: str, warn: Warn) -> pl.DataFrame:
    """`op_name:<full> op_type:<type> input_id:<i> input_format:.. input_data_type:.. input_shape:".."` ...
    A line repeated exactly is read once (the copies are counted in the ledger). A data type (or GE
    format) that is not a number of the backend's enum is kept as written, and the lines holding one
    are counted (`unknown_tag`)."""
    rows = []
    for path in paths:
        lines = _nonblank_lines(path)
        lines = _drop_duplicate_lines(path, lines, lines, warn, "op_desc")
        unknown: list[tuple[int, str]] = []  # (line, field) of the lines with a value no enum names
        for line_no, line in lines.iter_rows():
            tokens = _GRAPH_TOKEN.findall(line)
            if len(tokens) < 2 or tokens[0][0] != "op_name" or tokens[1][0] != "op_type":
                raise InputError(path, f"expected 'op_name:<name> op_type:<type> ...', got {line[:120]!r}",
                                 line=line_no)
            rows.append((tokens[0][1], tokens[1][1], _tensors_json(path, line_no, tokens[2:], backend, unknown)))
        if unknown:
            line_no, field = unknown[0]
            warn(f"{path}, line {line_no}: {len(unknown)} graph_desc lines have a tensor data type or format that "
                 f"is not a value of the {backend} backend's enum (first: {field[:80]}); kept as written",
                 check="unknown_tag", action="kept", rows=len(unknown), path=path, line=line_no, example=field,
                 tables="op_desc")
    frame = pl.DataFrame(rows, schema={"op_name": pl.String, "op_type": pl.String, "tensors_json": pl.String},
                         orient="row")
    return _numbered([frame], OP_DESC_SCHEMA)


def _tensors_json(path: Path, line_no: int, tokens: list[tuple[str, str]], backend: str,
                  unknown: list[tuple[int, str]]) -> str:
    """The tensors of one graph_desc line as JSON; the line (and its first field no enum names) is added
    to `unknown` when a data type or format is not a value of the backend's enum."""
    tensors: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    first_unknown: str | None = None
    for key, value in tokens:
        side, _, attribute = key.partition("_")
        if side not in ("input", "output") or attribute not in ("id", "format", "data_type", "shape"):
            raise InputError(path, f"unknown graph_desc field {key!r}", line=line_no)
        if attribute == "id":
            current = tensors.setdefault(f"{side}_{value}", {})
            continue
        if current is None:
            raise InputError(path, f"{key} before any {side}_id", line=line_no)
        rendered = _render_tensor_field(attribute, value.strip('"'), backend)
        if rendered is None:
            rendered = value.strip('"')
            first_unknown = first_unknown or f"{key}:{value}"
        current[attribute] = rendered
    if first_unknown is not None:
        unknown.append((line_no, first_unknown))
    return json.dumps(tensors)


def _render_tensor_field(attribute: str, value: str, backend: str) -> str | None:
    """The name of a data type (a GE format) number; None when the value is not one of the enum's."""
    enum = (_VM_DATA_TYPES if backend == "vm" else _GE_DATA_TYPES) if attribute == "data_type" else (
        _GE_FORMATS if attribute == "format" and backend == "ge" else None)
    if enum is None:
        return value
    name = enum.get(int(value)) if value.isascii() and value.isdigit() else None
    if name is None:
        return None
    return f"NUMBER_TYPE_{name}" if backend == "vm" and attribute == "data_type" else name


def read_points_text(paths: Sequence[Path], warn: Warn) -> dict[int, str]:
    """`<tag> <full op name>` per line -> {tag: op name}."""
    return _key_value_lines(paths, r"^\s*(\d+)\s+(\S+)\s*$", "'<tag> <op name>'", warn, "step_point")


def _key_value_lines(paths: Sequence[Path], pattern: str, expected: str, warn: Warn, tables: str) -> dict[int, str]:
    """{key: value} of the lines of the text files, both taken from `pattern`'s two groups.

    A line repeated exactly is read once; a key given different values keeps the last one (as
    MindSpore's dict does); both are counted in the ledger."""
    frames = []
    for path in paths:
        lines = _nonblank_lines(path)
        parsed = lines.select("line_no", pl.col("line").str.extract(pattern, 1).alias("key"),
                              pl.col("line").str.extract(pattern, 2).alias("value"))
        require(path, parsed, pl.col("key").is_not_null(), expected, lines)
        parsed = _drop_duplicate_lines(path, parsed, lines, warn, tables)
        frames.append(parsed.with_columns(pl.lit(str(path)).alias("path")))
    pairs = pl.concat(frames).with_columns(pl.col("key").str.strip_chars_start("0").alias("number"))
    values = pairs.group_by("number", maintain_order=True).agg(pl.col("value").n_unique().alias("values"),
                                                               pl.len().alias("n"))
    conflicting = values.filter(pl.col("values") > 1)
    if conflicting.height:
        first_key = conflicting["number"][0]
        rows = pairs.filter(pl.col("number") == first_key)
        kept, line_no, path = rows["value"][-1], int(rows["line_no"][0]), rows["path"][0]
        dropped = int(conflicting["n"].sum() - conflicting.height)
        warn(f"{path}, line {line_no}: {conflicting.height} keys are given different values ({dropped} entries "
             f"overridden); the last value is kept, as MindSpore does (first: key {rows['key'][0]} = "
             f"{rows['value'].to_list()[:3]}, kept {kept!r})", check="conflicting_entry", action="dropped",
             rows=dropped, path=path, line=line_no, example=f"{rows['key'][0]} -> {kept}", tables=tables)
    return {int(key): value for key, value in zip(pairs["key"].to_list(), pairs["value"].to_list())}


# ---- era C binary ------------------------------------------------------------------------------

def read_hash_dic(paths: Sequence[Path], warn: Warn) -> dict[int, str]:
    """`<hash>:<op name>` per line."""
    return _key_value_lines(paths, r"^(\d+):(.+)$", "'<hash>:<op name>'", warn, "task_desc,op_desc,device_exec")


_DATA_TAGS = {"task_desc": 23, "tensor_data": 24, "step_info": 25}


def read_task_desc_binary(paths: Sequence[Path], hashes: dict[int, str], warn: Warn) -> pl.DataFrame:
    """256-byte task_desc records (msprof data tag 23). An exact repeat of a record is read once."""
    tables = "task_desc,op_desc,device_exec"
    columns = read_columns(paths, TASK_DESC_DTYPE, ["magic", "data_tag", "task_type", "op_name", "op_type",
                                                    "block_dim", "model_id", "stream_id", "task_id"], warn,
                           tables=tables)
    check_magic(paths, columns, "task_desc", warn, tables)
    encoding = _Repairs()
    task_type = columns["task_type"]
    unknown = np.flatnonzero(~np.isin(task_type, np.array(list(TASK_TYPES), dtype=task_type.dtype)))
    if unknown.size:
        path, offset = locate_offset(paths, int(columns["offset"][unknown[0]]) + 4)
        warn(f"{path}: byte offset {offset}: {unknown.size} task_desc records have a task type this format does "
             f"not define (first: {int(task_type[unknown[0]])}); kept as the number", check="unknown_tag",
             action="kept", rows=int(unknown.size), path=path, offset=offset,
             example=f"task type {int(task_type[unknown[0]])}", tables="task_desc")
    frame = pl.DataFrame({
        "op_name": _mixed_strings(paths, columns["op_name"], columns["offset"], hashes, 8, encoding),
        "task_id": columns["task_id"].astype(np.int64),
        "stream_id": columns["stream_id"].astype(np.int64),
        "block_dim": columns["block_dim"].astype(np.int64),
        "graph_id": columns["model_id"].astype(np.int64),
        "op_type": _mixed_strings(paths, columns["op_type"], columns["offset"], hashes, 136, encoding),
        "task_type": [TASK_TYPES.get(int(t), str(int(t))) for t in task_type],
        "offset": columns["offset"],
    })
    encoding.report(paths, warn, "task_desc")
    frame = _drop_duplicate_records(paths, frame, warn, "task_desc", tables)
    return _numbered([frame.drop("offset")], TASK_DESC_SCHEMA)


def read_step_info_binary(paths: Sequence[Path], warn: Warn) -> pl.DataFrame:
    """64-byte step_info records: tag -> (stream, task) of the op that carries the trace point.
    An exact repeat of a record is read once."""
    columns = read_columns(paths, STEP_INFO_DTYPE, ["magic", "data_tag", "tag", "stream_id", "task_id",
                                                    "model_id"], warn, tables="step_point")
    check_magic(paths, columns, "step_info", warn, "step_point")
    frame = pl.DataFrame({name: columns[name].astype(np.int64)
                          for name in ("tag", "stream_id", "task_id", "model_id", "offset")})
    return _drop_duplicate_records(paths, frame, warn, "step_info", "step_point")


def read_tensor_data_binary(paths: Sequence[Path], warn: Warn) -> pl.DataFrame:
    """256-byte tensor_data_info records -> (stream_id, task_id, tensors_json) per task.
    An exact repeat of a record is read once; a tensor count above 5 is read as 5; an unknown
    format or data type is kept as its number; each is counted in the ledger."""
    columns = read_columns(paths, TENSOR_DATA_DTYPE, ["magic", "data_tag", "stream_id", "task_id", "tensor_num",
                                                      "tensors"], warn, tables="op_desc")
    check_magic(paths, columns, "tensor_data", warn, "op_desc")
    rendered = []
    too_many, unknown = [], []
    for index, (count, tensors) in enumerate(zip(columns["tensor_num"], columns["tensors"])):
        described: dict[str, dict[str, object]] = {}
        counters = {"input": 0, "output": 0}
        if count > 5:
            too_many.append(index)
        for tensor in tensors[: min(int(count), 5)]:
            side = "input" if tensor[0] == 0 else "output"
            fmt, dtype = (int(value) - 200 if value >= 200 else int(value) for value in tensor[1:3])
            if fmt not in _C_FORMATS or dtype not in _C_DATA_TYPES:
                unknown.append((index, fmt, dtype))
            described[f"{side}_{counters[side]}"] = {
                "format": _C_FORMATS.get(fmt, str(fmt)), "data_type": _C_DATA_TYPES.get(dtype, str(dtype)),
                "shape": [int(d) for d in tensor[3:] if d != 0]}
            counters[side] += 1
        rendered.append(json.dumps(described))
    if too_many:
        path, offset = locate_offset(paths, int(columns["offset"][too_many[0]]) + 24)
        warn(f"{path}: byte offset {offset}: {len(too_many)} tensor_data records give more than the 5 tensors a "
             f"record holds (first: {int(columns['tensor_num'][too_many[0]])}); read as 5", check="out_of_range",
             action="clamped", rows=len(too_many), path=path, offset=offset,
             example=f"tensor_num={int(columns['tensor_num'][too_many[0]])}", tables="op_desc")
    if unknown:
        index, fmt, dtype = unknown[0]
        path, offset = locate_offset(paths, int(columns["offset"][index]))
        warn(f"{path}: byte offset {offset}: {len(unknown)} tensors have a format or data type this format does "
             f"not define (first: format {fmt}, data type {dtype}); kept as the number", check="unknown_tag",
             action="kept", rows=len(unknown), path=path, offset=offset, example=f"format {fmt}, data type {dtype}",
             tables="op_desc")
    frame = pl.DataFrame({"stream_id": columns["stream_id"].astype(np.int64),
                          "task_id": columns["task_id"].astype(np.int64), "tensors_json": rendered,
                          "offset": columns["offset"]},
                         schema={"stream_id": pl.Int64, "task_id": pl.Int64, "tensors_json": pl.String,
                                 "offset": pl.Int64})
    return _drop_duplicate_records(paths, frame, warn, "tensor_data", "op_desc").drop("offset")


def _drop_duplicate_records(paths: Sequence[Path], frame: pl.DataFrame, warn: Warn, kind: str,
                            tables: str) -> pl.DataFrame:
    """`frame` (decoded records with their stream "offset") without exact repeats of a record; counted."""
    values = [c for c in frame.columns if c != "offset"]
    copies = frame.filter(pl.struct(values).is_duplicated() & ~pl.struct(values).is_first_distinct())
    if not copies.height:
        return frame
    path, offset = locate_offset(paths, int(copies["offset"][0]))
    warn(f"{path}: byte offset {offset}: {copies.height} {kind} records repeat an earlier record exactly; the copies "
         "are dropped", check="duplicate_record", action="dropped", rows=copies.height, path=path, offset=offset,
         tables=tables)
    return frame.filter(~pl.col("offset").is_in(copies["offset"].implode()))


def check_magic(paths: Sequence[Path], columns: dict[str, np.ndarray], kind: str | None = None,
                warn: Warn | None = None, tables: str | None = None) -> None:
    """Raise InputError at the first record (read with its "magic" column) without the 0x5A5A magic;
    count in the ledger the records whose data tag (when read) is not the one of `kind`."""
    bad = np.flatnonzero(columns["magic"] != MAGIC)
    if bad.size:
        path, offset = locate_offset(paths, int(columns["offset"][bad[0]]))
        raise InputError(path, f"record without the 0x5A5A magic number (found {int(columns['magic'][bad[0]]):#06x}); "
                               "not a record of this kind or a misaligned file", offset=offset)
    expected = {**_DATA_TAGS, "aicpu": 60}.get(kind or "")
    if expected is None or warn is None or "data_tag" not in columns:
        return
    other = np.flatnonzero(columns["data_tag"] != expected)
    if other.size:
        path, offset = locate_offset(paths, int(columns["offset"][other[0]]) + 2)
        warn(f"{path}: byte offset {offset}: {other.size} {kind} records have data tag "
             f"{int(columns['data_tag'][other[0]])}, not {expected}; read as {kind} records", check="unknown_tag",
             action="kept", rows=int(other.size), path=path, offset=offset,
             example=f"data tag {int(columns['data_tag'][other[0]])}", tables=tables)


class _Repairs:
    """Inline names with bytes that are not UTF-8 (decoded with U+FFFD): how many, the first offset."""

    def __init__(self) -> None:
        self.count = 0
        self.first: tuple[int, bytes] | None = None

    def report(self, paths: Sequence[Path], warn: Warn, tables: str) -> None:
        if self.count:
            path, offset = locate_offset(paths, self.first[0])
            warn(f"{path}: byte offset {offset}: {self.count} inline names are not UTF-8; the bad bytes are read as "
                 "U+FFFD", check="bad_encoding", action="repaired", rows=self.count, path=path, offset=offset,
                 example=repr(self.first[1][:60]), tables=tables)


def _mixed_strings(paths: Sequence[Path], fields: np.ndarray, offsets: np.ndarray, hashes: dict[int, str],
                   field_offset: int, repairs: _Repairs) -> list[str]:
    """Decode msprof "mix" fields: kind 1 = inline NUL-padded string, kind 0 = u64 hash in hash_dic."""
    out = []
    for index, (kind, text) in enumerate(zip(fields["kind"], fields["text"])):
        if kind == 1:
            try:
                out.append(text.decode("utf-8"))
            except UnicodeDecodeError:
                if not repairs.count:
                    repairs.first = (int(offsets[index]) + field_offset + 8, bytes(text))
                repairs.count += 1
                out.append(text.decode("utf-8", errors="replace"))
            continue
        if kind != 0:
            path, offset = locate_offset(paths, int(offsets[index]) + field_offset)
            raise InputError(path, f"name field of kind {int(kind)} (expected 0, a hash, or 1, an inline name)",
                             offset=offset)
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
