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

Damage is counted, never raised: a trailing partial record (truncated), records without the magic, with a data
length outside 76..232 (the message would start beyond it), of an unknown info type, without a message, with
times beyond int64 ns or ending before they start, or repeating an earlier record exactly, are left out with a
trace_health row naming the file and byte offset; a message that is not UTF-8 is kept with U+FFFD (`repaired`).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from ..clocks import OUT_OF_RANGE, HostCounter, msprof_host_counter
from ..errors import InputError
from ..health import Warn
from .ascend_framework import MAGIC, read_hash_dic
from .binary_records import locate_offset, read_columns
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
    paths, hashes = (sorted(data.glob(f"*aging.additional.{kind}.slice_*"), key=_slice_number)
                     for kind in ("msproftx", "hash_dic"))
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
    rows = read(paths, hashes, counter, warn)
    if shift_ns and rows.height:
        shifted = pl.col("start_ns") + shift_ns
        beyond = rows.filter(~shifted.is_between(0, MAX_NS))
        if beyond.height:
            warn(f"{prof}/host: {beyond.height} raw msproftx markers fall outside 0..{MAX_NS} ns once moved by "
                 f"{shift_ns} ns onto the rank's clock; left out", check="out_of_range", action="dropped",
                 rows=beyond.height, path=paths[0], example=beyond["op_name"][0], tables=_TABLES)
        rows = rows.filter(shifted.is_between(0, MAX_NS)).with_columns(shifted)
    return rows if rows.height else None


def _slice_number(path: Path) -> tuple[int, str]:
    tail = path.name.rsplit("_", 1)[-1]
    return (int(tail) if tail.isdigit() else -1, path.name)


def read(paths: list[Path], hash_paths: list[Path], counter: HostCounter, warn: Warn) -> pl.DataFrame:
    """host_op rows (side, tid, op_name, start_ns, dur_ns, category) of the msproftx slices `paths` (one stream)."""
    columns = read_columns(paths, RECORD, [name for name in RECORD.names if name != "message"] + ["message"], warn,
                           tables=_TABLES)
    records = [dict(zip(columns, values)) for values in zip(*columns.values())]
    reject = _Rejects(paths, warn)
    kept = []
    seen: set[tuple] = set()
    for record in records:
        raw = (*(int(record[n]) for n in RECORD.names[:-1]), bytes(record["message"]))
        if record["magic"] != MAGIC:
            reject.add("malformed_record", "records without the 0x5A5A magic", record, f"{int(record['magic']):#06x}")
        elif not MESSAGE_AT <= record["data_len"] <= DATA_LEN:
            reject.add("malformed_record", f"records whose data length is outside {MESSAGE_AT}..{DATA_LEN}", record,
                       f"data length {int(record['data_len'])}")
        elif record["info_type"] not in (MARK, MARK_EX):
            reject.add("unknown_tag", "records of an info type msprof does not define (0 mark, 1 domain mark)",
                       record, f"info type {int(record['info_type'])}")
        elif raw in seen:
            reject.add("duplicate_record", "repeated records (the same bytes as an earlier one)", record, "")
        else:
            seen.add(raw)
            data = bytes(record["message"][:int(record["data_len"]) - MESSAGE_AT])
            record["text"] = data.split(b"\0", 1)[0]
            kept.append(record)
    markers = [r for r in kept if r["info_type"] == MARK] + _join_pieces(
        [r for r in kept if r["info_type"] == MARK_EX], reject, _domains(hash_paths, warn))
    rows = []
    for record in sorted(markers, key=lambda r: int(r["offset"])):
        try:
            name = record["text"].decode("utf-8")
        except UnicodeDecodeError:
            name = record["text"].decode("utf-8", errors="replace")
            reject.add("bad_encoding", "marker messages that are not UTF-8; read with U+FFFD", record, name,
                       action="repaired")
        start, end = counter.to_ns(np.array([record["start"], record["end"]], dtype=np.uint64)).tolist()
        if not name.strip():
            reject.add("malformed_record", "markers without a message", record, "")
        elif min(start, end) < 0 or start == OUT_OF_RANGE or end == OUT_OF_RANGE:
            reject.add("out_of_range", "markers whose time is beyond int64 ns or before the counter's start", record,
                       str(int(record["start"])))
        elif end < start:
            reject.add("negative_duration", "markers that end before they start", record, name)
        else:
            rows.append({"side": "Host", "tid": int(record["tid"]), "op_name": name.strip(), "start_ns": start,
                         "dur_ns": end - start, "category": "marker"})
    reject.report()
    return pl.DataFrame(rows, schema=_SCHEMA).sort("start_ns", "tid", maintain_order=True)


def _join_pieces(pieces: list[dict], reject: _Rejects, domains: dict[int, str]) -> list[dict]:
    """One record per mark id of the domain-marker pieces: the first piece's fields, the messages joined in piece
    order (as bytes, so a character split between pieces survives). Missing pieces and unnamed domains are counted."""
    groups: dict[int, list[dict]] = {}
    for piece in pieces:
        groups.setdefault(int(piece["mark_id"]), []).append(piece)
    joined = []
    for group in groups.values():
        group.sort(key=lambda r: int(r["piece"]))
        indices = [int(r["piece"]) for r in group]
        first = min(group, key=lambda r: int(r["offset"]))
        if len(set(indices)) != len(indices):
            reject.add("duplicate_record", "domain-marker pieces whose mark id and piece index repeat (the first "
                       "is kept)", group[-1], f"mark id {int(first['mark_id'])}")
            group = [r for i, r in enumerate(group) if i == 0 or indices[i] != indices[i - 1]]
        if indices[-1] + 1 != len(set(indices)):
            reject.add("truncated", "domain markers with a missing piece of their message (joined without it, as "
                       "msprof does)", first, f"mark id {int(first['mark_id'])}", action="kept")
        if int(first["domain"]) not in domains:
            reject.add("unlinked", "domain markers whose domain hash is not in the host hash_dic (the domain is not "
                       "kept)", first, str(int(first["domain"])), action="kept")
        joined.append({**group[0], "offset": first["offset"], "text": b"".join(r["text"] for r in group)})
    return joined


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

    def __init__(self, paths: list[Path], warn: Warn) -> None:
        self.paths, self.warn = paths, warn
        self.counts: dict[tuple[str, str, str], list] = {}

    def add(self, check: str, what: str, record: dict, example: str, action: str = "dropped") -> None:
        entry = self.counts.setdefault((check, what, action), [0, int(record["offset"]), example])
        entry[0] += 1

    def report(self) -> None:
        for (check, what, action), (count, stream_offset, example) in self.counts.items():
            path, offset = locate_offset(self.paths, stream_offset)
            verb = "left out" if action == "dropped" else action
            self.warn(f"{path}: byte offset {offset}: {count} msproftx {what}; {verb}", check=check, action=action,
                      rows=count, path=path, offset=offset, example=example[:200], tables=_TABLES)
