"""Raw msproftx records of a PROF folder's host data -> host_op marker rows (read when msprof never exported them).

`PROF_*/host/data/(aging|unaging).additional.msproftx.slice_N` holds what msprof exports as msprof_tx_*.csv
(msprof_tx.py reads the export; msprof_export.py reads these only when the PROF folder has no msprof_tx export, so
no marker is counted twice). Facts from msprof's analysis source (msparser/msproftx, data_struct_size_constant
MSPROFTX_FMT, prof_common.h MsprofTxInfo / MsprofStampInfo, hash_dic_parser, info_conf_reader), layout only:

* 256-byte little-endian records: the 24-byte additional-info header (u16 magic 0x5A5A, u16 level 20500, u32 type,
  u32 thread, u32 data length 232, u64 timestamp), then u16 info type (0 mark, 1 mark "ex": a domain marker),
  u16 piece index (the reserved field msprof reads as the segment index), u32 reserved, u16 magic, u16 data tag,
  u32 pid, u32 tid, u32 category, u32 event type (0 marker, 1 push/pop, 2 start/end, 3 marker_ex), i32 payload
  type, u64 payload, u64 start, u64 end, u64 mark id, u64 domain (a hash), i32 message type, char[156] message
  (NUL-terminated).
* A domain marker's message longer than one record is split: its pieces share the mark id and are joined in
  piece-index order; pid, tid, event type and times are the first piece's. msprof joins what it has when a piece is
  missing; so does profpipe (counted). Domains are hashes named by `(aging|unaging).additional.hash_dic.slice_N`,
  text lines `<decimal hash>:<name>`; host_op has no domain column (as for the exported markers), so a hash the
  dictionary lacks is only counted.
* start / end are host counter ticks; msprof turns them into the CSV's µs with the host CPU frequency
  (host/info.json CPU[0].Frequency, MHz) and host/host_start.log's cntvct / clock_monotonic_raw pair, or reads
  them as ns when info.json gives no frequency (clocks.msprof_host_counter). That gives CLOCK_MONOTONIC_RAW ns;
  `read_prof` then moves them by the caller's `shift_ns` onto the rank's clock: none for an export on
  CLOCK_MONOTONIC_RAW, start_info's epoch offset for an export in msprof's local time (the Unix epoch), the
  host/device counter pair for a PROF folder msprof never exported (raw device data on the device counter).

The records are read column-wise (numpy columns of the 256-byte records; the texts gathered into one Arrow array
and checked as UTF-8 in bulk; the pieces of domain markers joined by sorting): no Python object per record (1M markers
in 2.7 s, a plain numpy read of the file 0.54 s; benchmarks/README.md). The aging and unaging slices are two streams
(a record may straddle two slices of one), read one after the other.

Damage is counted, never raised: a trailing partial record (truncated), records without the magic, with a data
length outside 76..232 (the message would start beyond it), of an unknown info type, without a message, with
times beyond int64 ns or ending before they start, or repeating an earlier record exactly, are left out with a
trace_health row naming the file and byte offset; a message that is not UTF-8 is kept with U+FFFD (`repaired`).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from ..clocks import OUT_OF_RANGE, HostCounter, msprof_host_counter
from ..discover import slice_number
from ..errors import InputError
from ..health import Warn
from .ascend_framework import MAGIC, read_hash_dic
from .binary_records import decode_utf8, first_of_each, locate_offset, read_columns
from .units import MAX_NS

RECORD = np.dtype([
    ("magic", "<u2"), ("level", "<u2"), ("type", "<u4"), ("thread", "<u4"), ("data_len", "<u4"), ("timestamp", "<u8"),
    ("info_type", "<u2"), ("piece", "<u2"), ("reserved", "<u4"), ("stamp_magic", "<u2"), ("data_tag", "<u2"),
    ("pid", "<u4"), ("tid", "<u4"), ("category", "<u4"), ("event_type", "<u4"), ("payload_type", "<i4"),
    ("payload", "<u8"), ("start", "<u8"), ("end", "<u8"), ("mark_id", "<u8"), ("domain", "<u8"),
    ("message_type", "<i4"), ("message", "u1", (156,))])
assert RECORD.itemsize == 256
#: The data length msprof writes (MsprofTxInfo) and the shortest that still reaches the message (its offset in it).
DATA_LEN, MESSAGE_AT = 232, 76
MARK, MARK_EX = 0, 1
_TABLES = "host_op"
_SCHEMA = {"side": pl.String, "tid": pl.Int64, "op_name": pl.String, "start_ns": pl.Int64, "dur_ns": pl.Int64,
           "category": pl.String}


def read_prof(directory: Path, shift_ns: int | None, warn: Warn) -> pl.DataFrame | None:
    """host_op markers of the raw msproftx records of the PROF folder that holds `directory` (None without any):
    their CLOCK_MONOTONIC_RAW ns plus `shift_ns`, the rank's clock minus that one (None: the two cannot be related;
    the markers are left out and the ledger says so)."""
    prof = next((p for p in (directory, *directory.parents) if p.name.startswith("PROF_")), None)
    data = prof / "host" / "data" if prof is not None else None
    if data is None or not data.is_dir():
        return None
    streams = [sorted(data.glob(f"{prefix}.additional.msproftx.slice_*"), key=slice_number)
               for prefix in ("aging", "unaging")]  # two streams: a record may straddle the slices of one
    paths = [path for stream in streams for path in stream]
    hashes = sorted(data.glob("*aging.additional.hash_dic.slice_*"))
    if not paths:
        return None
    counter = msprof_host_counter(prof / "host")
    if not counter.known or shift_ns is None or abs(shift_ns) > MAX_NS:
        why = ("info.json gives the host CPU frequency but host_start.log no cntvct / clock_monotonic_raw pair"
               if not counter.known else "nothing relates the host's CLOCK_MONOTONIC_RAW to the rank's clock "
               "(the device folder has no host_start / dev_start pair, or start_info is missing)")
        records = sum(path.stat().st_size for path in paths) // RECORD.itemsize
        warn(f"{prof}/host: {why}; the {records} raw msproftx records of {len(paths)} files cannot be placed on the "
             f"run's clock and are left out", check="clock", action="dropped", rows=records, path=paths[0],
             tables=_TABLES)
        return None
    rows = read([stream for stream in streams if stream], hashes, counter, warn)
    if shift_ns and rows.height:
        shifted = pl.col("start_ns") + shift_ns
        beyond = rows.filter(~shifted.is_between(0, MAX_NS))
        if beyond.height:
            warn(f"{prof}/host: {beyond.height} raw msproftx markers fall outside 0..{MAX_NS} ns once moved by "
                 f"{shift_ns} ns onto the rank's clock; left out", check="out_of_range", action="dropped",
                 rows=beyond.height, path=paths[0], example=beyond["op_name"][0], tables=_TABLES)
        rows = rows.filter(shifted.is_between(0, MAX_NS)).with_columns(shifted)
    return rows if rows.height else None


def read(streams: list[list[Path]], hash_paths: list[Path], counter: HostCounter, warn: Warn) -> pl.DataFrame:
    """host_op rows (side, tid, op_name, start_ns, dur_ns, category) of the msproftx `streams` (each the slices of
    one), column-wise: no Python object per record. A domain marker's pieces are joined across the streams."""
    parts, base = [], 0
    for stream in streams:  # each stream's offsets moved past the earlier streams': offsets into `paths` joined
        part = read_columns(stream, RECORD, list(RECORD.names), warn, tables=_TABLES)
        part["offset"] += base
        parts.append(part)
        base += sum(path.stat().st_size for path in stream)
    columns = {name: np.concatenate([part[name] for part in parts]) for name in (*RECORD.names, "offset")}
    paths = [path for stream in streams for path in stream]
    reject = _Rejects(paths, columns["offset"], warn)
    keep = np.ones(len(columns["offset"]), dtype=bool)
    message = columns["message"]
    reject.drop(keep, columns["magic"] != MAGIC, "malformed_record", "records without the 0x5A5A magic",
                columns["magic"], hex_example=True)
    data_len = columns["data_len"].astype(np.int64)
    reject.drop(keep, (data_len < MESSAGE_AT) | (data_len > DATA_LEN), "malformed_record",
                f"records whose data length is outside {MESSAGE_AT}..{DATA_LEN}", data_len, prefix="data length ")
    reject.drop(keep, ~np.isin(columns["info_type"], (MARK, MARK_EX)), "unknown_tag",
                "records of an info type msprof does not define (0 mark, 1 domain mark)", columns["info_type"],
                prefix="info type ")
    kept = np.flatnonzero(keep)
    key = [columns[name][kept] for name in ("start", *RECORD.names[:-1])]
    key += list(message.view("<u4")[kept].T)  # the message as 39 words (a view, no copy): part of the key
    repeated = np.zeros(len(keep), dtype=bool)
    repeated[kept[~first_of_each(key)]] = True
    reject.drop(keep, repeated, "duplicate_record", "repeated records (the same bytes as an earlier one)", None)
    # the text: up to the data length and the first NUL
    zero = message == 0
    nul = np.where(zero.any(axis=1), zero.argmax(axis=1), message.shape[1])
    del zero
    length = np.clip(np.minimum(nul, data_len - MESSAGE_AT), 0, None)
    marks = np.flatnonzero(keep & (columns["info_type"] == MARK))
    joined, joined_at, texts = _join_pieces(np.flatnonzero(keep & (columns["info_type"] == MARK_EX)), columns,
                                            message, length, reject, _domains(hash_paths, warn))
    rows = np.concatenate([marks, joined])  # a record per marker: a mark, or a domain marker's piece 0
    at = np.concatenate([columns["offset"][marks], joined_at])  # where each marker starts in the file
    texts = pa.concat_arrays([_gather_text(message, length, marks), texts])
    order = np.argsort(at, kind="stable")
    rows, at, texts = rows[order], at[order], texts.take(pa.array(order))
    names = _decode(texts, at, reject)
    start, end = (counter.to_ns(columns[name][rows]) for name in ("start", "end"))
    frame = pl.DataFrame({"row": rows, "tid": columns["tid"][rows].astype(np.int64), "op_name": names.str.strip_chars(),
                          "start_ns": start, "end_ns": end})
    bad = [((frame["op_name"] == "").to_numpy(), "malformed_record", "markers without a message", None),
           (((start < 0) | (end < 0) | (start == OUT_OF_RANGE) | (end == OUT_OF_RANGE)), "out_of_range",
            "markers whose time is beyond int64 ns or before the counter's start", columns["start"]),
           (end < start, "negative_duration", "markers that end before they start", names)]
    good = np.ones(frame.height, dtype=bool)
    for mask, check, what, example in bad:
        reject.drop_rows(good, mask, at, check, what, example[rows] if isinstance(example, np.ndarray) else example)
    reject.report()
    return frame.filter(pl.Series(good)).select(
        pl.lit("Host").alias("side"), "tid", "op_name", "start_ns", (pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns"),
        pl.lit("marker").alias("category")).sort("start_ns", "tid", maintain_order=True)


def _gather_text(message: np.ndarray, length: np.ndarray, rows: np.ndarray) -> pa.Array:
    """The first length[r] bytes of message[r] for each of `rows`, in that order, as one binary array."""
    sizes = length[rows].astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    # byte i of the result is message.flat[row * width + (i - offsets[row's position])]
    flat = np.repeat(rows.astype(np.int64) * message.shape[1] - offsets[:-1], sizes) + np.arange(offsets[-1])
    data = message.reshape(-1)[flat]
    return pa.Array.from_buffers(pa.binary(), len(rows), [None, pa.py_buffer(offsets.astype(np.int32)),
                                                          pa.py_buffer(data.tobytes())])


def _decode(texts: pa.Array, offsets: np.ndarray, reject: _Rejects) -> pl.Series:
    """UTF-8 text of each binary value; one that is not UTF-8 is read with U+FFFD (counted, `repaired`)."""
    names, bad = decode_utf8(texts)
    if bad:
        first = min(bad, key=lambda i: offsets[i])
        reject.add("bad_encoding", "marker messages that are not UTF-8; read with U+FFFD", len(bad), int(offsets[first]),
                   names[first].as_py(), action="repaired")
    return pl.Series(names).cast(pl.String)


def _join_pieces(pieces: np.ndarray, columns: dict[str, np.ndarray], message: np.ndarray, length: np.ndarray,
                 reject: _Rejects, domains: dict[int, str]) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """One marker per mark id of the domain-marker records `pieces`: the record of its lowest piece index (its pid,
    tid, event type and times), where its first piece in the file starts, and the messages joined in piece-index
    order (as bytes, so a character split between pieces survives). Repeated piece indexes (the first in the file is
    kept), missing pieces and unnamed domains are counted."""
    if not pieces.size:
        return pieces, pieces.astype(np.int64), pa.array([], pa.binary())
    mark, piece, offset = columns["mark_id"][pieces], columns["piece"][pieces], columns["offset"][pieces]
    order = np.lexsort((offset, piece, mark))
    pieces, mark, piece, offset = pieces[order], mark[order], piece[order], offset[order]
    again = np.concatenate([[False], (mark[1:] == mark[:-1]) & (piece[1:] == piece[:-1])])
    if again.any():
        reject.add("duplicate_record", "domain-marker pieces whose mark id and piece index repeat (the first is kept)",
                   int(again.sum()), int(offset[again].min()), f"mark id {int(mark[again][np.argmin(offset[again])])}")
        pieces, mark, piece, offset = pieces[~again], mark[~again], piece[~again], offset[~again]
    starts = np.flatnonzero(np.concatenate([[True], mark[1:] != mark[:-1]]))
    counts = np.diff(np.append(starts, len(mark)))
    first = np.minimum.reduceat(offset, starts)  # each marker's first piece in the file
    rows = pieces[starts]
    gaps = piece[starts + counts - 1].astype(np.int64) + 1 != counts
    if gaps.any():
        reject.add("truncated", "domain markers with a missing piece of their message (joined without it, as msprof "
                   "does)", int(gaps.sum()), int(first[gaps].min()), f"mark id {int(mark[starts][gaps][np.argmin(first[gaps])])}",
                   action="kept")
    unnamed = ~np.isin(columns["domain"][rows], np.array(list(domains), dtype=np.uint64))
    if unnamed.any():
        reject.add("unlinked", "domain markers whose domain hash is not in the host hash_dic (the domain is not "
                   "kept)", int(unnamed.sum()), int(first[unnamed].min()),
                   str(int(columns["domain"][rows][unnamed][np.argmin(first[unnamed])])), action="kept")
    flat = _gather_text(message, length, pieces)  # in (mark id, piece) order: a marker's pieces are adjacent
    edges = np.append(starts, len(pieces))
    text_offsets = np.concatenate([[0], np.cumsum(length[pieces])])[edges].astype(np.int32)
    joined = pa.Array.from_buffers(pa.binary(), len(starts), [None, pa.py_buffer(text_offsets), flat.buffers()[2]])
    return rows, first, joined


def _domains(paths: list[Path], warn: Warn) -> dict[int, str]:
    if not paths:
        return {}
    try:
        return read_hash_dic(paths, warn)
    except InputError as exc:
        warn(f"{exc}; domain names are unknown", check="malformed_record", action="dropped", path=exc.path,
             line=exc.line, tables=_TABLES)
        return {}


class _Rejects:
    """Ledger counts per (check, what, action), each with its first record's file and byte offset."""

    def __init__(self, paths: list[Path], offsets: np.ndarray, warn: Warn) -> None:
        self.paths, self.offsets, self.warn = paths, offsets, warn
        self.counts: dict[tuple[str, str, str], list] = {}

    def add(self, check: str, what: str, count: int, stream_offset: int, example: str, action: str = "dropped") -> None:
        entry = self.counts.setdefault((check, what, action), [0, stream_offset, example])
        entry[0] += count
        if stream_offset < entry[1]:
            entry[1:] = [stream_offset, example]

    def drop(self, keep: np.ndarray, bad: np.ndarray, check: str, what: str, values, prefix: str = "",
             hex_example: bool = False) -> None:
        """Records still kept where `bad` holds are dropped (keep updated) and counted, the first's value as example."""
        hit = keep & bad
        if hit.any():
            first = int(np.argmax(hit))
            example = "" if values is None else (f"{int(values[first]):#06x}" if hex_example else
                                                 f"{prefix}{int(values[first])}")
            self.add(check, what, int(hit.sum()), int(self.offsets[first]), example)
            keep &= ~bad

    def drop_rows(self, good: np.ndarray, bad: np.ndarray, at: np.ndarray, check: str, what: str, values) -> None:
        """The same for markers (`at`: where each starts in the stream, ascending), the first's value as example."""
        hit = good & bad
        if hit.any():
            first = int(np.argmax(hit))
            self.add(check, what, int(hit.sum()), int(at[first]), "" if values is None else str(values[first]))
            good &= ~bad

    def report(self) -> None:
        for (check, what, action), (count, stream_offset, example) in self.counts.items():
            path, offset = locate_offset(self.paths, stream_offset)
            verb = "left out" if action == "dropped" else action
            self.warn(f"{path}: byte offset {offset}: {count} msproftx {what}; {verb}", check=check, action=action,
                      rows=count, path=path, offset=offset, example=example[:200], tables=_TABLES)
