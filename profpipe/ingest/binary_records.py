"""Fixed-size binary records for the readers: slices joined in order, decoded column-wise with numpy.

Raw Ascend device data (HWTS logs, step traces, binary framework and AI CPU files) is a stream
of fixed-size little-endian records, split over `.slice_<n>` files that together form one
stream (a record may straddle two slices). `read_columns` walks the slices in chunks of whole
records and keeps only the columns a reader asks for, so memory is bounded by those columns,
never by the file. Problems are reported with the file and byte offset they concern.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..discover import slice_number
from ..errors import InputError
from ..health import Warn

CHUNK_RECORDS = 1 << 20


def check_slices(paths: Sequence[Path]) -> None:
    """Raise InputError when the slice numbers of one stream are not 0, 1, 2, ... without a gap."""
    for expected, path in enumerate(paths):
        number = slice_number(path)
        if number != expected:
            missing = path.with_name(path.name[: path.name.rfind(".slice_")] + f".slice_{expected}")
            raise InputError(missing, f"slice {expected} is missing (found slice {number} after it): "
                                      "the records of the following slices cannot be placed")


def iter_record_chunks(paths: Sequence[Path], dtype: np.dtype, warn: Warn,
                       tables: str | None = None) -> Iterator[tuple[int, np.ndarray]]:
    """Yield (stream offset of the first record, records) for the slices `paths`, in order.

    `records` is a structured view of up to CHUNK_RECORDS whole records in a buffer that the
    next chunk overwrites: copy what you keep. A record that straddles two slices is joined;
    a trailing partial record is dropped with a `truncated` ledger row that names its file, offset,
    the bytes lost and `tables` (the tables its rows would have gone to).
    Blank (whitespace padding) records are included; `is_blank` finds them.
    """
    check_slices(paths)
    size = dtype.itemsize
    # a chunk of records, or the whole stream when it is smaller (a zeroed 256 MiB buffer for a small file cost
    # more than reading it); a file that grows while read is still read whole, a buffer at a time
    stream_bytes = sum(path.stat().st_size for path in paths)
    buffer = bytearray(min(CHUNK_RECORDS, stream_bytes // size + 1) * size)
    view = memoryview(buffer)
    filled = 0  # bytes at the front of buffer: a partial record carried over, then what was read
    stream_offset = 0  # offset of buffer[0] within the joined stream
    file_starts: list[tuple[int, Path]] = []
    for path in paths:
        file_starts.append((stream_offset + filled, path))
        with open(path, "rb") as handle:
            while read := handle.readinto(view[filled:]):
                filled += read
                whole = filled - filled % size
                if filled < len(buffer) and whole == 0:
                    continue
                yield stream_offset, np.frombuffer(buffer, dtype=dtype, count=whole // size)
                stream_offset += whole
                buffer[: filled - whole] = buffer[whole:filled]
                filled -= whole
    if filled:
        path, local = _locate(file_starts, stream_offset)
        warn(f"{path}: byte offset {local}: last record is cut short ({filled} of {size} bytes); dropped "
             f"(1 record, {filled} bytes lost{'' if tables is None else '; tables: ' + tables})",
             check="truncated", action="dropped", rows=1, path=path, offset=local, tables=tables,
             example=f"{filled} of {size} bytes")


def read_columns(paths: Sequence[Path], dtype: np.dtype, columns: Sequence[str], warn: Warn,
                 keep: Callable[[np.ndarray], np.ndarray] | None = None,
                 tables: str | None = None) -> dict[str, np.ndarray]:
    """Decode the records of the slices `paths` (one stream) and return the named columns.

    `keep`, given a chunk of records, returns a boolean mask of those to keep (applied before
    the columns are copied out). Blank records are skipped; a trailing partial record is
    dropped with a warning (`iter_record_chunks`). The extra column "offset" holds each kept
    record's byte offset in the joined stream.
    """
    size = dtype.itemsize
    pieces: dict[str, list[np.ndarray]] = {name: [] for name in columns}
    pieces["offset"] = []
    blank_records, first_blank = 0, 0
    for start, records in iter_record_chunks(paths, dtype, warn, tables):
        blank = is_blank(records)
        if blank.any():
            if not blank_records:
                first_blank = start + int(np.flatnonzero(blank)[0]) * size
            blank_records += int(np.count_nonzero(blank))
        mask = ~blank
        if keep is not None:
            mask &= keep(records)
        index = np.flatnonzero(mask)
        for name in columns:
            pieces[name].append(records[name][index])
        pieces["offset"].append(start + index.astype(np.int64) * size)
    report_blank(paths, blank_records, first_blank, size, warn, tables)
    empty = {name: np.empty(0, dtype[name]) for name in columns} | {"offset": np.empty(0, np.int64)}
    return {name: np.concatenate(parts) if parts else empty[name] for name, parts in pieces.items()}


def report_blank(paths: Sequence[Path], count: int, first: int, size: int, warn: Warn, tables: str | None) -> None:
    """Ledger row for records made only of whitespace (padding MindSpore skips: left out of every table)."""
    if count:
        path, offset = locate_offset(paths, first)
        warn(f"{path}: byte offset {offset}: {count} records of {size} bytes hold only whitespace (padding); "
             "skipped, as MindSpore does", check="malformed_record", action="dropped", rows=count, path=path,
             offset=offset, tables=tables)


def locate_offset(paths: Sequence[Path], stream_offset: int) -> tuple[Path, int]:
    """The file among the slices `paths` and the offset within it of a joined-stream offset."""
    starts, total = [], 0
    for path in paths:
        starts.append((total, path))
        total += path.stat().st_size
    return _locate(starts, stream_offset)


def _locate(file_starts: list[tuple[int, Path]], stream_offset: int) -> tuple[Path, int]:
    start, path = file_starts[0]
    for candidate_start, candidate in file_starts:
        if candidate_start <= stream_offset:
            start, path = candidate_start, candidate
    return path, stream_offset - start


_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[[9, 10, 11, 12, 13, 32]] = True


def is_blank(records: np.ndarray) -> np.ndarray:
    """Per record: made only of ASCII whitespace (padding). The first byte is tested first: cheap."""
    rows = records.view(np.uint8).reshape(records.size, records.dtype.itemsize)
    blank = _WHITESPACE[rows[:, 0]]
    candidates = np.flatnonzero(blank)
    if candidates.size:
        blank[candidates] = _WHITESPACE[rows[candidates]].all(axis=1)
    return blank


def first_of_each(columns: Sequence[np.ndarray]) -> np.ndarray:
    """Mask of the records that are the first (lowest index) of their exact key, the values of `columns` (equal
    length, integers); a record that repeats an earlier one in every column is False. The first column should be
    a counter or time, where equal values are rare: records are sorted by it alone, and only those that share a
    value are compared whole (np.unique over every column sorts them all as one wide key: ten times slower)."""
    first = np.ones(len(columns[0]), dtype=bool)
    candidates = sharing(columns[0])
    if not candidates.size:
        return first
    key = np.stack([np.asarray(column)[candidates].astype(np.uint64) for column in columns], axis=1)
    _, first_index = np.unique(key, axis=0, return_index=True)  # of the earliest candidate with each key
    repeated = np.ones(candidates.size, dtype=bool)
    repeated[first_index] = False
    first[candidates[repeated]] = False
    return first


def sharing(column: np.ndarray) -> np.ndarray:
    """The indices (ascending) of the values of `column` that another value equals (found by one stable sort)."""
    if len(column) < 2:
        return np.empty(0, dtype=np.int64)
    order = np.argsort(column, kind="stable")
    ordered = column[order]
    same = np.flatnonzero(ordered[1:] == ordered[:-1])
    return np.unique(np.concatenate([order[same], order[same + 1]]))


#: Runs of texts that fail the bulk UTF-8 check are halved down to this many, then decoded one by one.
UTF8_LEAF = 64


def decode_utf8(raw: pa.Array) -> tuple[pa.Array, list[int]]:
    """`raw` (binary) as text (large_string), checked as UTF-8 in bulk by Arrow: a run that fails is halved until it
    is UTF8_LEAF texts or fewer, which are decoded one by one, those that are not UTF-8 with U+FFFD for the bad bytes.
    Returns the texts and the indices of those repaired so."""
    pieces: list[pa.Array] = []
    bad: list[int] = []
    _decode_run(raw, 0, bad, pieces)
    return (pa.concat_arrays(pieces) if pieces else pa.array([], pa.large_string())), bad


def _decode_run(raw: pa.Array, first: int, bad: list[int], pieces: list[pa.Array]) -> None:
    try:
        pieces.append(raw.cast(pa.large_string()))
        return
    except pa.ArrowInvalid:
        pass
    if len(raw) > UTF8_LEAF:
        half = len(raw) // 2
        _decode_run(raw.slice(0, half), first, bad, pieces)
        _decode_run(raw.slice(half), first + half, bad, pieces)
        return
    texts = []
    for index, value in enumerate(raw.to_pylist()):
        try:
            texts.append(value.decode("utf-8"))
        except UnicodeDecodeError:
            texts.append(value.decode("utf-8", errors="replace"))
            bad.append(first + index)
    pieces.append(pa.array(texts, pa.large_string()))
