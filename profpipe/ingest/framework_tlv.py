"""Stage 2, ingest helper: MindSpore's binary framework files (`FRAMEWORK/mindspore.memory_usage`,
`FRAMEWORK/mindspore.op_range`, `FRAMEWORK/op_range_<rank>`) -> a fixed-size part as numpy columns and the
text fields of each record as polars columns.

The framing (MindSpore's own reader: `mindspore/profiler/common/tlv_decoder.py`, 2.4+): the file is a run of
records, each a 2-byte type (not used), a 4-byte little-endian length and that many bytes of value; a value is
a fixed-size little-endian struct (the caller's numpy dtype) followed by fields of the same type-length-value
form (`<H` type, `<I` length, UTF-8 text).

How it is read, column-wise except for one loop: the lengths chain the records (a record starts where the one
before it ends), so the record starts are found by one tight Python loop that reads only the 4-byte length at
each start (into a C array: no Python object per record); nothing else is done per record in Python. The fixed
parts are then gathered with numpy (one strided view of the file indexed by the starts). The fields are found
layer by layer: the first field header of every record at once, then the second of the records that have one,
and so on, each layer's lengths checked against its record's end in one numpy pass; when fewer than _FEW records
still have fields (a few long records), theirs are walked with the same loop as the records. The texts are cut
out of the file as one Arrow array (the file is its data buffer, the field offsets its offsets) and checked as
UTF-8 in bulk by Arrow; only a run of texts that fails the check is split, down to a few texts decoded in Python.
Repeated records are found by time first (one numpy sort), and only records that share a time are compared,
byte for byte (polars, over their bytes as one Arrow array cut out the same way).

Bad input, as MindSpore treats it where it can be told (each a ledger row with the file and byte offset):
a record whose header or value runs past the end of the file ends the walk (`truncated`, the bytes lost
counted); a record shorter than its fixed part is skipped (`malformed_record`); a field whose length runs
past its record ends that record's fields (`malformed_record`, the fields before it kept: repaired); fields of
a type the format does not define are ignored (`unknown_tag`); text that is not UTF-8 is kept with U+FFFD for
the bad bytes (`bad_encoding`, repaired; MindSpore writes N/A instead); records repeated byte for byte are
kept once (`duplicate_record`). A record with several fields of one type keeps the last.
"""
from __future__ import annotations

import mmap
import struct
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from ..errors import InputError
from ..health import Warn
from .binary_records import decode_utf8, sharing

#: Bytes of a type-length header (`<H` type, `<I` length), of a record or of a field.
_HEADER = 6
_LENGTH = struct.Struct("<I")  # at 2 bytes into a header
_FIELD = np.dtype([("kind", "<u2"), ("length", "<u4")])
#: Below this many records still holding fields, their remaining fields are walked one by one (a numpy pass per
#: layer costs more than that).
_FEW = 512


@dataclass
class TlvRecords:
    """The records of one file, in file order."""

    fixed: np.ndarray  # structured, one row per record
    offset: np.ndarray  # int64 byte offset of each record's header in the file
    fields: dict[int, pl.Series]  # field type -> text per record (String; null where the record has none)


@dataclass
class _Fields:
    """Fields of some records, in file order: the record each belongs to, its header's offset, type, length."""

    record: np.ndarray
    offset: np.ndarray
    kind: np.ndarray
    length: np.ndarray


def read_records(path: Path, fixed: np.dtype, field_types: tuple[int, ...], warn: Warn, tables: str,
                 time_field: str) -> TlvRecords:
    """Walk the records of `path`; `fixed` is the dtype of each value's fixed part, `field_types` the field
    types the format defines (others are ignored and reported), `time_field` a column of `fixed` by which
    repeated records are looked for (a time: equal values are rare). Raises InputError when the file
    cannot be opened."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, 2)
            # the mapping is unmapped when the last view of it goes (every array returned is a copy)
            data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror or exc})") from None
    return _walk(path, memoryview(data), fixed, field_types, warn, tables, time_field)


def _walk(path: Path, data: memoryview, fixed: np.dtype, field_types: tuple[int, ...], warn: Warn, tables: str,
          time_field: str) -> TlvRecords:
    size, width = len(data), fixed.itemsize
    starts, end = _chain(data, 0, size)
    if end < size:
        what = "its header" if end + _HEADER > size else f"its {_LENGTH.unpack_from(data, end + 2)[0]}-byte value"
        warn(f"{path}: byte offset {end}: the last record is cut short ({what} runs past the end of the file); "
             f"dropped (1 record, {size - end} bytes lost)", check="truncated", action="dropped", rows=1, path=path,
             offset=end, tables=tables, example=f"{size - end} bytes left")
    lengths = np.diff(starts, append=end) - _HEADER
    short = lengths < width
    if short.any():
        first = int(starts[short][0])
        warn(f"{path}: byte offset {first}: {int(short.sum())} records shorter than their {width}-byte fixed part; "
             "skipped, as MindSpore skips them", check="malformed_record", action="dropped", rows=int(short.sum()),
             path=path, offset=first, tables=tables)
        starts, lengths = starts[~short], lengths[~short]
    texts = _texts(path, data, starts + _HEADER + width, starts + _HEADER + lengths, field_types, warn, tables)
    records = TlvRecords(_gather(data, starts + _HEADER, fixed), starts, texts)
    return _unique(path, data, records, lengths, warn, tables, time_field)


def _chain(data: memoryview, position: int, stop: int) -> tuple[np.ndarray, int]:
    """The offsets of the whole type-length-value elements chained from `position` (each starts where the one
    before it ends), and where the chain ends: `stop`, or the offset of the element that runs past `stop`."""
    starts = array("q")
    append, length_at, last = starts.append, _LENGTH.unpack_from, stop - _HEADER
    while position <= last:
        append(position)
        position += _HEADER + length_at(data, position + 2)[0]
    if position > stop:
        position = starts.pop()
    return np.frombuffer(starts, dtype=np.int64), position


def _gather(data: memoryview, at: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The `dtype` values that begin at the byte offsets `at` of `data`, copied out (as opaque bytes: a plain
    copy each, ten times faster than a structured one)."""
    if not len(at):
        return np.empty(0, dtype)
    opaque = np.dtype((np.void, dtype.itemsize))
    every_byte = np.ndarray((len(data) - dtype.itemsize + 1,), dtype=opaque, buffer=data, strides=(1,))
    return every_byte[at].view(dtype)


def _find_fields(data: memoryview, first: np.ndarray, stops: np.ndarray, cuts: list[np.ndarray]) -> Iterator[_Fields]:
    """The fields of each record (from `first`, past its fixed part, to `stops`) in blocks, each block in file
    order, a record's fields in block order; the offsets where a field runs past its record go to `cuts`."""
    record = np.flatnonzero(first < stops)
    cursor = first[record]
    while len(record) >= _FEW:  # one layer: the next field of every record that has one
        stop = stops[record]
        whole = np.flatnonzero(cursor + _HEADER <= stop)
        header = _gather(data, cursor[whole], _FIELD)
        end = cursor[whole] + _HEADER + header["length"]
        fits = end <= stop[whole]
        cut = np.ones(len(record), dtype=bool)
        cut[whole[fits]] = False
        cuts.append(cursor[cut])
        record, cursor, end = record[whole[fits]], cursor[whole[fits]], end[fits]
        yield _Fields(record, cursor, header["kind"][fits], header["length"][fits])
        more = end < stops[record]
        record, cursor = record[more], end[more]
    walked: list[np.ndarray] = []
    for one, position in zip(record.tolist(), cursor.tolist()):  # the few records left, field by field
        found, end = _chain(data, position, int(stops[one]))
        walked.append(found)
        if end < stops[one]:
            cuts.append(np.array([end], dtype=np.int64))
    if walked:
        offset = np.concatenate(walked)
        header = _gather(data, offset, _FIELD)
        yield _Fields(np.repeat(record, [len(w) for w in walked]), offset, header["kind"], header["length"])


def _texts(path: Path, data: memoryview, first: np.ndarray, stops: np.ndarray, field_types: tuple[int, ...],
           warn: Warn, tables: str) -> dict[int, pl.Series]:
    """Per defined field type, the text of each record's last field of that type (null where it has none). The
    field blocks are used as they are found and not kept; what is reported is reported once all are seen."""
    defined = np.array(field_types, dtype=np.uint16)
    cuts: list[np.ndarray] = []
    unknown: list[tuple[np.ndarray, np.ndarray]] = []  # (type, offset) of fields of undefined types
    pieces: list[pa.Array] = []
    bad: list[int] = []
    first_bad = None
    picked = {kind: np.full(len(first), -1, dtype=np.int64) for kind in field_types}
    count = 0
    for block in _find_fields(data, first, stops, cuts):
        mask = np.isin(block.kind, defined)
        if not mask.all():
            unknown.append((block.kind[~mask], block.offset[~mask]))
        record, kind, offset = block.record[mask], block.kind[mask], block.offset[mask]
        known_bad = len(bad)
        texts, wrong = decode_utf8(_slices(data, offset + _HEADER, block.length[mask]))
        pieces.append(texts)
        bad.extend(count + index for index in wrong)
        if len(bad) > known_bad:
            at = int(offset[np.array(bad[known_bad:]) - count].min())
            first_bad = at if first_bad is None else min(first_bad, at)
        for field_type, column in picked.items():
            chosen = np.flatnonzero(kind == field_type)
            last = np.ones(len(chosen), dtype=bool)  # the record's last field of the type (a block may hold more)
            last[:-1] = record[chosen][1:] != record[chosen][:-1]
            column[record[chosen[last]]] = count + chosen[last]
        count += len(record)
    cut = np.concatenate(cuts) if cuts else np.empty(0, np.int64)
    if cut.size:
        warn(f"{path}: byte offset {int(cut.min())}: {cut.size} records have a field whose length runs past the "
             "record; the fields before it are kept, the rest of the record's fields are lost",
             check="malformed_record", action="repaired", rows=cut.size, path=path, offset=int(cut.min()),
             tables=tables)
    _report_unknown(path, unknown, warn, tables)
    if bad:
        warn(f"{path}: byte offset {first_bad}: {len(bad)} text fields are not UTF-8; the bad bytes read as U+FFFD",
             check="bad_encoding", action="repaired", rows=len(bad), path=path, offset=first_bad, tables=tables)
    texts = pl.from_arrow(pa.chunked_array(pieces, pa.large_string()), rechunk=False)  # one copy, shared below
    return {kind: texts.gather(pl.Series(pa.array(column, mask=column < 0))) for kind, column in picked.items()}


def _report_unknown(path: Path, unknown: list[tuple[np.ndarray, np.ndarray]], warn: Warn, tables: str) -> None:
    """One ledger row per field type the format does not define: how many, the first one's offset."""
    if not unknown:
        return
    kind = np.concatenate([kinds for kinds, _ in unknown])
    offset = np.concatenate([offsets for _, offsets in unknown])
    order = np.lexsort((offset, kind))
    types, first, counts = np.unique(kind[order], return_index=True, return_counts=True)
    for field_type, at, rows in zip(types.tolist(), offset[order][first].tolist(), counts.tolist()):
        warn(f"{path}: byte offset {at}: {rows} fields of type {field_type}, which the format does not define; "
             "ignored, as MindSpore ignores them", check="unknown_tag", action="kept", rows=rows, path=path,
             offset=at, tables=tables, example=f"type {field_type}")


def _slices(data: memoryview, at: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """The bytes at `at` of `lengths` (in file order, not overlapping) as one Arrow binary array, copied out: the
    file is the data buffer of an array whose elements are these slices and the gaps between them."""
    if not len(at):
        return pa.array([], pa.large_binary())
    bounds = np.empty(2 * len(at), dtype=np.int64)
    bounds[0::2], bounds[1::2] = at, at + lengths
    spans = pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(bounds) - 1,
                                             [None, pa.py_buffer(bounds), pa.py_buffer(data)])
    return spans.take(pa.array(np.arange(0, len(bounds) - 1, 2)))


def _unique(path: Path, data: memoryview, records: TlvRecords, lengths: np.ndarray, warn: Warn, tables: str,
            time_field: str) -> TlvRecords:
    """`records` without the records that repeat an earlier one byte for byte (reported): only records that share
    a time with another are compared, whole."""
    candidates = sharing(records.fixed[time_field])
    if not candidates.size:
        return records
    whole = _slices(data, records.offset[candidates], lengths[candidates] + _HEADER)
    repeated = candidates[~pl.Series(whole).is_first_distinct().to_numpy()]
    if not repeated.size:
        return records
    first = int(records.offset[repeated[0]])
    warn(f"{path}: byte offset {first}: {repeated.size} records repeat an earlier record byte for byte; kept once",
         check="duplicate_record", action="dropped", rows=repeated.size, path=path, offset=first, tables=tables)
    keep = np.ones(len(records.offset), dtype=bool)
    keep[repeated] = False
    mask = pl.Series(keep)
    return TlvRecords(records.fixed[keep], records.offset[keep],
                      {kind: column.filter(mask) for kind, column in records.fields.items()})
