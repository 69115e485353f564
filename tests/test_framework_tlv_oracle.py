"""The column-wise framework TLV walk (profpipe/ingest/framework_tlv.py) against the walk it replaced: profpipe's
record-by-record, field-by-field Python walk before the tlvfast branch, kept below only as this test's oracle.

Hypothesis builds files of records (random fixed parts with a few times, so that records share them; defined and
undefined field types; valid and bad UTF-8; declared field lengths off by a little or by a lot; partial headers
after the fields; records shorter than their fixed part; byte-for-byte repeats) and damages them (a length
overwritten anywhere, a cut at any byte), or takes random bytes as the file. Both walks must give the same fixed
parts, offsets and texts and the same ledger events, every field of each (message, rows, offset, example). The new
walk switches from numpy layers to one-by-one work below thresholds (_FEW records with fields left, UTF8_LEAF texts in
a run that fails the bulk UTF-8 check); the small tests lower the thresholds so that both paths meet every damage,
and one test runs hundreds of records in wide layers. Last, memory_usage_tlv's blocks and allocator
samples, now built column-wise, against their former per-row build (kept here as well).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import numpy as np
import polars as pl
from hypothesis import HealthCheck, example, given, settings, strategies as st

from profpipe.health import HealthLedger, Warn
from profpipe.ingest import binary_records, framework_tlv, memory_usage_tlv, mindspore_op_range
from profpipe.ingest.binary_records import first_of_each

SETTINGS = settings(max_examples=300, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large])
TINY = np.dtype([("t", "<u8")])
#: (fixed dtype, defined field types, time column): a tiny layout and MindSpore's three.
LAYOUTS = [(TINY, (13, 14), "t"), (memory_usage_tlv.EVENT, (memory_usage_tlv.OWNER,), "create_at"),
           (mindspore_op_range.RECORD, (13, 14, 15, 16, 17), "start"),
           (mindspore_op_range.RECORD_2_4, mindspore_op_range.FIELDS_2_4, "start")]
#: Byte strings at the edges of UTF-8: surrogates, overlong forms, past U+10FFFF, cut sequences, NUL.
EDGES = [b"", b"\x00", b"\xed\xa0\x80", b"\xc0\x80", b"\xe0\x80\x80", b"\xf4\x90\x80\x80", b"\xf0\x9f\x98",
         b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\xff", b"\x80abc", b"ok\xc3"]


# --- the oracle: framework_tlv's walk as it was (commit 975e153), unchanged but for its names -------------------

_OLD_HEADER = struct.Struct("<HI")
_OLD_GATHER = 1 << 16


@dataclass
class OldRecords:
    fixed: np.ndarray
    offset: np.ndarray
    fields: dict[int, list[str | None]]


def old_walk(path: Path, data: memoryview, fixed: np.dtype, field_types: tuple[int, ...], warn: Warn, tables: str,
             time_field: str) -> OldRecords:
    end_of_file, width = len(data), fixed.itemsize
    starts: list[int] = []
    digests: list[int] = []
    fields: dict[int, list[str | None]] = {t: [] for t in field_types}
    short = cut_fields = bad_text = 0
    first_short = first_cut = first_bad = None
    unknown: dict[int, list[int]] = {}
    position = 0
    while position < end_of_file:
        if position + _OLD_HEADER.size > end_of_file:
            _old_cut(path, warn, tables, position, end_of_file - position, "its header")
            break
        _, length = _OLD_HEADER.unpack_from(data, position)
        value = position + _OLD_HEADER.size
        if value + length > end_of_file:
            _old_cut(path, warn, tables, position, end_of_file - position, f"its {length}-byte value")
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
            if cursor + _OLD_HEADER.size > stop:
                field_len = -1
            else:
                kind, field_len = _OLD_HEADER.unpack_from(data, cursor)
            if field_len < 0 or cursor + _OLD_HEADER.size + field_len > stop:
                cut_fields += 1
                first_cut = cursor if first_cut is None else first_cut
                break
            raw = bytes(data[cursor + _OLD_HEADER.size: cursor + _OLD_HEADER.size + field_len])
            if kind in fields:
                try:
                    texts[kind] = raw.decode("utf-8")
                except UnicodeDecodeError:
                    texts[kind] = raw.decode("utf-8", errors="replace")
                    bad_text += 1
                    first_bad = cursor if first_bad is None else first_bad
            else:
                unknown.setdefault(kind, [0, cursor])[0] += 1
            cursor += _OLD_HEADER.size + field_len
        for kind, column in fields.items():
            column.append(texts.get(kind))
        position = stop
    offsets = np.array(starts, dtype=np.int64)
    records = _old_gather(data, offsets + _OLD_HEADER.size, fixed)
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
    return _old_unique(path, OldRecords(records, offsets, fields), np.array(digests, dtype=np.int64), warn, tables,
                       time_field)


def _old_cut(path: Path, warn: Warn, tables: str, position: int, left: int, what: str) -> None:
    warn(f"{path}: byte offset {position}: the last record is cut short ({what} runs past the end of the file); "
         f"dropped (1 record, {left} bytes lost)", check="truncated", action="dropped", rows=1, path=path,
         offset=position, tables=tables, example=f"{left} bytes left")


def _old_gather(data: memoryview, starts: np.ndarray, fixed: np.dtype) -> np.ndarray:
    raw = np.frombuffer(data, dtype=np.uint8) if len(data) else np.empty(0, np.uint8)
    columns = np.arange(fixed.itemsize, dtype=np.int64)
    out = np.empty(len(starts), dtype=fixed)
    for first in range(0, len(starts), _OLD_GATHER):
        chunk = starts[first:first + _OLD_GATHER]
        out[first:first + len(chunk)] = raw[chunk[:, None] + columns].view(fixed).reshape(len(chunk))
    return out


def _old_unique(path: Path, records: OldRecords, digests: np.ndarray, warn: Warn, tables: str,
                time_field: str) -> OldRecords:
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
    return OldRecords(records.fixed[index], records.offset[index],
                      {kind: [column[i] for i in index] for kind, column in records.fields.items()})


# --- files -------------------------------------------------------------------------------------------------------

def _texts() -> st.SearchStrategy[bytes]:
    return st.one_of(st.text(max_size=8).map(str.encode), st.binary(max_size=8), st.sampled_from(EDGES))


@st.composite
def _field(draw: st.DrawFn, field_types: tuple[int, ...]) -> bytes:
    kind = draw(st.sampled_from([*field_types, 0, 1, 99, 65535]))
    text = draw(_texts())
    length = len(text) + draw(st.one_of(st.just(0), st.just(0), st.integers(-3, 3), st.integers(0, 2**32 - 1)))
    return struct.pack("<HI", kind, min(max(length, 0), 2**32 - 1)) + text


@st.composite
def _record(draw: st.DrawFn, fixed: np.dtype, field_types: tuple[int, ...], time_field: str) -> bytes:
    kind = draw(st.sampled_from([0, 1, 2, 65535]))
    if draw(st.integers(0, 9)) == 0:  # shorter than its fixed part
        return _framed(kind, draw(st.binary(max_size=fixed.itemsize - 1)))
    value = bytearray(draw(st.binary(min_size=fixed.itemsize, max_size=fixed.itemsize)))
    at, size = fixed.fields[time_field][1], fixed[time_field].itemsize
    value[at:at + size] = draw(st.integers(0, 3)).to_bytes(size, "little")  # records share times
    value += b"".join(draw(st.lists(_field(field_types), max_size=5)))
    value += draw(st.one_of(st.just(b""), st.just(b""), st.binary(max_size=7)))  # a partial header, a stray byte
    return _framed(kind, bytes(value))


def _framed(kind: int, value: bytes) -> bytes:
    return struct.pack("<HI", kind, len(value)) + value


@st.composite
def _file(draw: st.DrawFn, fixed: np.dtype, field_types: tuple[int, ...], time_field: str, most: int) -> bytes:
    records: list[bytes] = []
    for _ in range(draw(st.integers(0, most))):
        if records and draw(st.integers(0, 5)) == 0:
            records.append(draw(st.sampled_from(records)))  # a byte-for-byte repeat
        else:
            records.append(draw(_record(fixed, field_types, time_field)))
    data = bytearray(b"".join(records))
    if data and draw(st.booleans()):  # a length (or anything) overwritten
        at = draw(st.integers(0, len(data) - 1))
        data[at:at + 4] = draw(st.integers(0, 2**32 - 1)).to_bytes(4, "little")[:len(data) - at]
    if draw(st.booleans()):  # a cut at any byte
        del data[draw(st.integers(0, len(data))):]
    return bytes(data)


def _compare(path: Path, data: bytes, fixed: np.dtype, field_types: tuple[int, ...], time_field: str) -> None:
    path.write_bytes(data)
    old_ledger, new_ledger = HealthLedger(), HealthLedger()
    old = old_walk(path, memoryview(data), fixed, field_types, old_ledger.for_source("s", 0), "t", time_field)
    new = framework_tlv.read_records(path, fixed, field_types, new_ledger.for_source("s", 0), "t", time_field)
    assert new.fixed.dtype == fixed and new.fixed.tobytes() == old.fixed.tobytes()
    assert new.offset.dtype == np.int64 and new.offset.tolist() == old.offset.tolist()
    assert all(column.dtype == pl.String for column in new.fields.values())
    assert {kind: column.to_list() for kind, column in new.fields.items()} == old.fields
    assert new_ledger.events == old_ledger.events


@SETTINGS
@given(layout=st.sampled_from(LAYOUTS), few=st.sampled_from([1, 2, framework_tlv._FEW]),
       leaf=st.sampled_from([1, 2, binary_records.UTF8_LEAF]), data=st.data())
def test_the_column_wise_walk_is_the_record_by_record_walk(tmp_path, layout, few, leaf, data):
    fixed, field_types, time_field = layout
    payload = data.draw(_file(fixed, field_types, time_field, 12))
    with mock.patch.object(framework_tlv, "_FEW", few), mock.patch.object(binary_records, "UTF8_LEAF", leaf):
        _compare(tmp_path / "f", payload, fixed, field_types, time_field)


@SETTINGS
@given(layout=st.sampled_from(LAYOUTS), payload=st.binary(max_size=400), few=st.sampled_from([1, 64]))
@example(layout=LAYOUTS[0], payload=b"", few=64)
@example(layout=LAYOUTS[0], payload=b"\x01\x00\x08\x00\x00", few=64)  # a cut header
def test_random_bytes_walk_alike(tmp_path, layout, payload, few):
    with mock.patch.object(framework_tlv, "_FEW", few):
        _compare(tmp_path / "f", payload, *layout)


@settings(SETTINGS, max_examples=40)
@given(layout=st.sampled_from(LAYOUTS), data=st.data())
def test_hundreds_of_records_in_wide_layers(tmp_path, layout, data):
    """Layers of hundreds of records (the threshold lowered from 512 to 64 to keep the files small) and runs of
    texts long enough to be halved several times before the real UTF8_LEAF."""
    fixed, field_types, time_field = layout
    payload = data.draw(_file(fixed, field_types, time_field, 400))
    with mock.patch.object(framework_tlv, "_FEW", 64):
        _compare(tmp_path / "f", payload, fixed, field_types, time_field)


def test_every_damage_is_met_and_walked_alike(tmp_path):
    """A file with each damage once, at both thresholds: the ledger names them all (the generators above can reach
    each, and the comparison is not between two empty ledgers)."""
    fixed, field_types = TINY, (13, 14)
    good = _framed(1, struct.pack("<Q", 5) + struct.pack("<HI", 13, 2) + b"ok" + struct.pack("<HI", 14, 1) + b"x")
    records = [good, good,  # a repeat
               _framed(1, b"\x01\x02"),  # short
               _framed(1, struct.pack("<Q", 6) + struct.pack("<HI", 13, 9) + b"abc"),  # a field past its record
               _framed(1, struct.pack("<Q", 7) + struct.pack("<HI", 99, 1) + b"z"),  # an undefined type
               _framed(1, struct.pack("<Q", 8) + struct.pack("<HI", 14, 2) + b"\xffa"),  # bad UTF-8
               _framed(1, struct.pack("<Q", 9) + struct.pack("<HI", 13, 1) + b"a" + struct.pack("<HI", 13, 1) + b"b"),
               b"\x01\x00\x40\x00\x00\x00abc"]  # cut
    data = b"".join(records)
    for few in (1, 64):
        with mock.patch.object(framework_tlv, "_FEW", few):
            _compare(tmp_path / "f", data, fixed, field_types, "t")
    ledger = HealthLedger()
    records = framework_tlv.read_records(tmp_path / "f", fixed, field_types, ledger.for_source("s", 0), "t", "t")
    assert [(e.check, e.action, e.rows) for e in ledger.events] == [
        ("truncated", "dropped", 1), ("malformed_record", "dropped", 1), ("malformed_record", "repaired", 1),
        ("unknown_tag", "kept", 1), ("bad_encoding", "repaired", 1), ("duplicate_record", "dropped", 1)]
    assert records.fields[13].to_list() == ["ok", None, None, None, "b"]  # the last of two fields of a type
    assert records.fields[14].to_list() == ["x", None, None, "\ufffda", None]


# --- memory_usage_tlv: the blocks and samples as they were built per row ---------------------------------------

def old_blocks(fixed: np.ndarray, owner: np.ndarray, alloc: np.ndarray, release: np.ndarray,
               has_release: np.ndarray) -> pl.DataFrame:
    a, r = fixed[alloc], fixed[np.where(has_release, release, alloc)]
    ints = {"bytes": a["size"], "alloc_ns": a["create_at"], "release_ns": r["create_at"],
            "alloc_allocated_bytes": a["used_size"], "alloc_reserved_bytes": a["alloc_size"],
            "alloc_active_bytes": a["used_size"],
            "release_allocated_bytes": r["used_size"], "release_reserved_bytes": r["alloc_size"],
            "release_active_bytes": r["used_size"]}
    frame = pl.DataFrame({
        "component": pl.Series(["MindSpore"] * len(a), dtype=pl.String),
        "device": pl.Series(["NPU:" + str(d) for d in a["device_id"].tolist()], dtype=pl.String),
        "owner": pl.Series([o if o is not None else "" for o in owner[alloc].tolist()], dtype=pl.String),
        **{name: pl.Series(values.astype(np.int64), dtype=pl.Int64) for name, values in ints.items()},
        "stream": pl.Series([str(s) for s in a["stream_ptr"].tolist()], dtype=pl.String),
        "_released": has_release,
        "_i": np.arange(len(a)),
    })
    return frame.with_columns(pl.when(pl.col("_released")).then(pl.col(c)).alias(c) for c in ints
                              if c.startswith("release")).sort("alloc_ns", "_i").drop("_released", "_i")


def old_records(fixed: np.ndarray) -> pl.DataFrame:
    order = np.lexsort((np.arange(len(fixed)), fixed["create_at"]))
    f = fixed[order]
    return pl.DataFrame({
        "component": pl.Series(["MindSpore"] * len(f), dtype=pl.String),
        "device": pl.Series(["NPU:" + str(d) for d in f["device_id"].tolist()], dtype=pl.String),
        "ts_ns": f["create_at"].astype(np.int64),
        "allocated_bytes": f["used_size"].astype(np.int64),
        "reserved_bytes": f["alloc_size"].astype(np.int64),
        "active_bytes": (f["used_size"] + f["used_by_event_size"]).astype(np.int64),
    })


@settings(SETTINGS, max_examples=100)
@given(events=st.lists(st.tuples(st.integers(-2**31, 2**31 - 1), st.integers(0, 5), st.integers(0, 2**62),
                                 st.integers(0, 2**64 - 1), st.one_of(st.none(), st.text(max_size=6))), max_size=20),
       data=st.data())
def test_blocks_and_samples_are_built_as_per_row(events, data):
    fixed = np.zeros(len(events), dtype=memory_usage_tlv.EVENT)
    fixed["device_id"] = [e[0] for e in events]
    fixed["create_at"] = [e[1] for e in events]
    fixed["size"] = fixed["used_size"] = fixed["alloc_size"] = [e[2] for e in events]
    fixed["stream_ptr"] = [e[3] for e in events]
    owner = [e[4] for e in events]
    index = st.integers(0, max(len(events) - 1, 0))
    alloc = np.array(data.draw(st.lists(index, max_size=len(events) and 10)), dtype=np.int64)
    release = np.array(data.draw(st.lists(st.one_of(st.just(-1), index), min_size=len(alloc), max_size=len(alloc))),
                       dtype=np.int64)
    want = old_blocks(fixed, np.array(owner, dtype=object), alloc, release, release >= 0)
    got = memory_usage_tlv._blocks(fixed, pl.Series(owner, dtype=pl.String), alloc, release, release >= 0)
    assert got.schema == want.schema and got.equals(want)
    assert memory_usage_tlv._records(fixed).equals(old_records(fixed))
    assert memory_usage_tlv._records(fixed).schema == old_records(fixed).schema
