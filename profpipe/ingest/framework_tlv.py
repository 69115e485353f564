"""Stage 2, ingest helper: MindSpore's binary framework files (`FRAMEWORK/mindspore.memory_usage`,
`FRAMEWORK/mindspore.op_range`, `FRAMEWORK/op_range_<rank>`) -> a fixed-size part as numpy columns and the
text fields of each record.

The framing (MindSpore's own reader: `mindspore/profiler/common/tlv_decoder.py`, 2.4+): the file is a run of
records, each a 2-byte type (not used), a 4-byte little-endian length and that many bytes of value; a value is
a fixed-size little-endian struct (the caller's numpy dtype) followed by fields of the same type-length-value
form (`<H` type, `<I` length, UTF-8 text). The record walk is one Python step per record and per field (only
offsets and lengths: the lengths chain the records, so no columnar pass can find them); the fixed parts are
then gathered column-wise with numpy, in chunks, so memory stays bounded by the columns kept.

Bad input, as MindSpore treats it where it can be told (each a ledger row with the file and byte offset):
a record whose header or value runs past the end of the file ends the walk (`truncated`, the bytes lost
counted); a record shorter than its fixed part is skipped (`malformed_record`); a field whose length runs
past its record ends that record's fields (`malformed_record`, the fields before it kept: repaired); fields of
a type the format does not define are ignored (`unknown_tag`); text that is not UTF-8 is kept with U+FFFD for
the bad bytes (`bad_encoding`, repaired; MindSpore writes N/A instead); records repeated byte for byte are
kept once (`duplicate_record`).
"""
from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..health import Warn
from .binary_records import first_of_each

_HEADER = struct.Struct("<HI")
#: Fixed parts gathered per numpy pass (a few MB of index at a time).
_GATHER = 1 << 16


@dataclass
class TlvRecords:
    """The records of one file, in file order."""

    fixed: np.ndarray  # structured, one row per record
    offset: np.ndarray  # int64 byte offset of each record's header in the file
    fields: dict[int, list[str | None]]  # field type -> text per record (None where the record has none)


def read_records(path: Path, fixed: np.dtype, field_types: tuple[int, ...], warn: Warn, tables: str,
                 time_field: str) -> TlvRecords:
    """Walk the records of `path`; `fixed` is the dtype of each value's fixed part, `field_types` the field
    types the format defines (others are ignored and reported), `time_field` a column of `fixed` by which
    repeated records are looked for (a time: equal values are rare). Raises InputError when the file
    cannot be opened."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, 2)
            data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror or exc})") from None
    try:
        return _walk(path, memoryview(data), fixed, field_types, warn, tables, time_field)
    finally:
        if isinstance(data, mmap.mmap):
            data.close()


def _walk(path: Path, data: memoryview, fixed: np.dtype, field_types: tuple[int, ...], warn: Warn, tables: str,
          time_field: str) -> TlvRecords:
    end_of_file, width = len(data), fixed.itemsize
    starts: list[int] = []
    digests: list[int] = []  # of each kept record's bytes, to find repeats
    fields: dict[int, list[str | None]] = {t: [] for t in field_types}
    short = cut_fields = bad_text = 0
    first_short = first_cut = first_bad = None
    unknown: dict[int, list[int]] = {}  # type -> [count, first offset]
    position = 0
    while position < end_of_file:
        if position + _HEADER.size > end_of_file:
            _cut(path, warn, tables, position, end_of_file - position, "its header")
            break
        _, length = _HEADER.unpack_from(data, position)
        value = position + _HEADER.size
        if value + length > end_of_file:
            _cut(path, warn, tables, position, end_of_file - position, f"its {length}-byte value")
            break
        if length < width:
            short += 1
            first_short = position if first_short is None else first_short
            position = value + length
            continue
        starts.append(position)
        digests.append(hash(bytes(data[position:value + length])))
        texts: dict[int, str | None] = {}
        cursor, stop = value + width, value + length
        while cursor < stop:
            if cursor + _HEADER.size > stop:
                field_len = -1
            else:
                kind, field_len = _HEADER.unpack_from(data, cursor)
            if field_len < 0 or cursor + _HEADER.size + field_len > stop:
                cut_fields += 1
                first_cut = cursor if first_cut is None else first_cut
                break
            raw = bytes(data[cursor + _HEADER.size: cursor + _HEADER.size + field_len])
            if kind in fields:
                try:
                    texts[kind] = raw.decode("utf-8")
                except UnicodeDecodeError:
                    texts[kind] = raw.decode("utf-8", errors="replace")
                    bad_text += 1
                    first_bad = cursor if first_bad is None else first_bad
            else:
                unknown.setdefault(kind, [0, cursor])[0] += 1
            cursor += _HEADER.size + field_len
        for kind, column in fields.items():
            column.append(texts.get(kind))
        position = stop
    offsets = np.array(starts, dtype=np.int64)
    records = _gather(data, offsets + _HEADER.size, fixed)
    if short:
        warn(f"{path}: byte offset {first_short}: {short} records shorter than their {width}-byte fixed part; "
             "skipped, as MindSpore skips them", check="malformed_record", action="dropped", rows=short, path=path,
             offset=first_short, tables=tables)
    if cut_fields:
        warn(f"{path}: byte offset {first_cut}: {cut_fields} records have a field whose length runs past the record; "
             "the fields before it are kept, the rest of the record's fields are lost", check="malformed_record",
             action="repaired", rows=cut_fields, path=path, offset=first_cut, tables=tables)
    for kind, (count, first) in sorted(unknown.items()):
        warn(f"{path}: byte offset {first}: {count} fields of type {kind}, which the format does not define; ignored, "
             "as MindSpore ignores them", check="unknown_tag", action="kept", rows=count, path=path, offset=first,
             tables=tables, example=f"type {kind}")
    if bad_text:
        warn(f"{path}: byte offset {first_bad}: {bad_text} text fields are not UTF-8; the bad bytes read as U+FFFD",
             check="bad_encoding", action="repaired", rows=bad_text, path=path, offset=first_bad, tables=tables)
    return _unique(path, TlvRecords(records, offsets, fields), np.array(digests, dtype=np.int64), warn, tables,
                   time_field)


def _cut(path: Path, warn: Warn, tables: str, position: int, left: int, what: str) -> None:
    warn(f"{path}: byte offset {position}: the last record is cut short ({what} runs past the end of the file); "
         f"dropped (1 record, {left} bytes lost)", check="truncated", action="dropped", rows=1, path=path,
         offset=position, tables=tables, example=f"{left} bytes left")


def _gather(data: memoryview, starts: np.ndarray, fixed: np.dtype) -> np.ndarray:
    """The fixed parts that begin at `starts` as one structured array (copied out, chunk by chunk)."""
    raw = np.frombuffer(data, dtype=np.uint8) if len(data) else np.empty(0, np.uint8)
    columns = np.arange(fixed.itemsize, dtype=np.int64)
    out = np.empty(len(starts), dtype=fixed)
    for first in range(0, len(starts), _GATHER):
        chunk = starts[first:first + _GATHER]
        out[first:first + len(chunk)] = raw[chunk[:, None] + columns].view(fixed).reshape(len(chunk))
    return out


def _unique(path: Path, records: TlvRecords, digests: np.ndarray, warn: Warn, tables: str,
            time_field: str) -> TlvRecords:
    """`records` without the records that repeat an earlier one byte for byte (same time and digest: reported)."""
    if len(records.offset) < 2:
        return records
    keep = first_of_each([records.fixed[time_field].astype(np.int64, copy=False), digests])
    if keep.all():
        return records
    first = int(records.offset[~keep][0])
    repeated = int((~keep).sum())
    warn(f"{path}: byte offset {first}: {repeated} records repeat an earlier record byte for byte; kept once",
         check="duplicate_record", action="dropped", rows=repeated, path=path, offset=first, tables=tables)
    index = np.flatnonzero(keep)
    return TlvRecords(records.fixed[index], records.offset[index],
                      {kind: [column[i] for i in index] for kind, column in records.fields.items()})
