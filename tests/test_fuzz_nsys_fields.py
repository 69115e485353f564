"""Damage tests for the fields of an Nsight Systems export other than names (issue 33, "no silent change").

Hypothesis flips bits in the times, ids, launch dimensions and sizes of the fixture export's kernel, memcpy, memset,
sync and runtime rows (a copy in a temporary folder, optionally with the TARGET_INFO_CUDA_CONTEXT_INFO /
TARGET_INFO_CUDA_STREAM / ANALYSIS_DETAILS tables nsys 2025 writes) and checks the NUMBERS: every device activity and
runtime call either equals the clean reading or is counted in the ledger (dropped: absent; repaired: the damaged
field read as none), and the kernel totals are the clean totals less what the ledger says was dropped.

The bits drawn are those the documented rules reveal (README "Bad input", Nsight Systems): a time moved by 2^40 ns
or more (18 minutes), an id beyond 32 bits or one the export lists no context / stream for, a correlation id no call
has, a launch dimension beyond CUDA's limits, bytes beyond 16 B/ns. A smaller change that stays plausible (a kernel
5 ns longer, grid 4 read as 5) is a changed value nothing reveals. contextId is not read: any flip changes nothing.
"""
from __future__ import annotations

import shutil
import sqlite3
import tempfile
from functools import cache
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES
from fuzzing import FUZZ, ReadOutcome, read_damaged

NSYS = FIXTURES / "nsys" / "report1.sqlite"
KINDS = {"kernel": "CUPTI_ACTIVITY_KIND_KERNEL", "memcpy": "CUPTI_ACTIVITY_KIND_MEMCPY",
         "memset": "CUPTI_ACTIVITY_KIND_MEMSET", "sync": "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"}
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
TIMES = range(40, 64)
IDS = ("deviceId", "streamId", "contextId", "correlationId", "globalPid")
#: Per column, the bits whose flip the reader must reveal (with the reference tables / without them).
BITS: dict[str, tuple[range, range]] = {
    "start": (TIMES, TIMES), "end": (TIMES, TIMES),
    "deviceId": (range(0, 64), range(32, 64)), "streamId": (range(0, 64), range(32, 64)),
    "contextId": (range(0, 64), range(0, 64)), "correlationId": (range(5, 64), range(5, 64)),
    "globalPid": (range(0, 64), range(0, 64)),
    "gridX": (range(31, 64),) * 2, "gridY": (range(16, 64),) * 2, "gridZ": (range(16, 64),) * 2,
    "blockX": (range(11, 64),) * 2, "blockY": (range(11, 64),) * 2, "blockZ": (range(7, 64),) * 2,
    "bytes": (range(40, 64),) * 2,
}
COLUMNS = {KINDS["kernel"]: ("start", "end", *IDS, "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ"),
           KINDS["memcpy"]: ("start", "end", *IDS, "bytes"), KINDS["memset"]: ("start", "end", *IDS, "bytes"),
           KINDS["sync"]: ("start", "end", *IDS), RUNTIME: ("start", "end")}
#: device_exec columns a repair reads as none, by the ledger row (one per rule) that counts it.
REPAIRED = {"device_id": "device_id", "stream_id": "stream_id", "correlation": "correlation", "grid": "grid",
            "block": "block", "bytes": "bytes"}
LINKS = {"op_name", "op_index"}  # follow the correlation: lost with it, or with the launching call
REFERENCE_TABLES = (
    "CREATE TABLE TARGET_INFO_CUDA_CONTEXT_INFO (nullStreamId INTEGER, hwId INTEGER, vmId INTEGER, processId INTEGER, "
    "deviceId INTEGER, contextId INTEGER, parentContextId INTEGER, isGreenContext INTEGER)",
    "INSERT INTO TARGET_INFO_CUDA_CONTEXT_INFO VALUES (7, 0, 1, 4242, 0, 1, 0, 0)",
    "CREATE TABLE TARGET_INFO_CUDA_STREAM (streamId INTEGER, hwId INTEGER, vmId INTEGER, processId INTEGER, "
    "contextId INTEGER, priority INTEGER, flag INTEGER)",
    "INSERT INTO TARGET_INFO_CUDA_STREAM VALUES (7, 0, 1, 4242, 1, 0, 1)",
    "CREATE TABLE ANALYSIS_DETAILS (globalVid INTEGER, duration INTEGER, startTime INTEGER, stopTime INTEGER)",
    "INSERT INTO ANALYSIS_DETAILS VALUES (281474976710656, 30000000, 990000000, 1020000000)",
)


def _copy(folder: Path, reference: bool) -> Path:
    path = folder / "report1.sqlite"
    shutil.copy(NSYS, path)
    if reference:
        with sqlite3.connect(path) as db:
            for statement in REFERENCE_TABLES:
                db.execute(statement)
        db.close()
    return path


def _flip(path: Path, flips: list[tuple[str, str, int, int]]) -> None:
    """XOR bit `bit` of `column` in row `row` (by position) of each table, as int64 (bit 63: the sign)."""
    with sqlite3.connect(path) as db:
        for table, column, row, bit in flips:
            rowids = [r for (r,) in db.execute(f"SELECT rowid FROM {table} ORDER BY rowid")]
            rowid = rowids[row % len(rowids)]
            (value,) = db.execute(f'SELECT "{column}" FROM {table} WHERE rowid = ?', (rowid,)).fetchone()
            flipped = (value ^ (1 << bit)) & ((1 << 64) - 1)
            flipped -= (1 << 64) if flipped >> 63 else 0
            db.execute(f'UPDATE {table} SET "{column}" = ? WHERE rowid = ?', (flipped, rowid))
    db.close()


@cache
def _clean(reference: bool) -> tuple[dict, dict]:
    with tempfile.TemporaryDirectory() as folder:
        _copy(Path(folder), reference)
        outcome = read_damaged(Path(folder))
    assert not outcome.health and not outcome.errors, outcome.health
    return _device(outcome), _calls(outcome)


def _device(outcome: ReadOutcome) -> dict[tuple, dict]:
    rows = outcome.tables["device_exec"].to_pylist() if "device_exec" in outcome.tables else []
    keyed = {(r["kind"], r["start_ns"], r["dur_ns"]): r for r in rows}
    assert len(keyed) == len(rows)
    return keyed


def _calls(outcome: ReadOutcome) -> dict[tuple, dict]:
    rows = outcome.tables["host_api"].to_pylist() if "host_api" in outcome.tables else []
    keyed = {(r["start_ns"], r["dur_ns"], r["name"]): r for r in rows}
    assert len(keyed) == len(rows)
    return keyed


def _ledger(outcome: ReadOutcome, table: str, action: str) -> int:
    return sum(e.rows for e in outcome.health if e.action == action and f"table {table}:" in e.message)


@st.composite
def _damages(draw) -> tuple[bool, list[tuple[str, str, int, int]]]:
    reference = draw(st.booleans(), label="reference tables")
    flips = []
    for _ in range(draw(st.integers(1, 3), label="flips")):
        table = draw(st.sampled_from(sorted(COLUMNS)), label="table")
        column = draw(st.sampled_from(COLUMNS[table]), label="column")
        bit = draw(st.sampled_from(BITS[column][0 if reference else 1]), label="bit")
        flips.append((table, column, draw(st.integers(0, 20), label="row"), bit))
    return reference, flips


@FUZZ
@given(_damages())
def test_flipped_fields_change_no_number_in_silence(damage):
    reference, flips = damage
    clean_device, clean_calls = _clean(reference)
    with tempfile.TemporaryDirectory() as folder:
        path = _copy(Path(folder), reference)
        _flip(path, flips)
        outcome = read_damaged(Path(folder))
    assert not outcome.errors, outcome.errors
    assert all(e.path == str(path) and e.rows for e in outcome.health), outcome.health
    device, calls = _device(outcome), _calls(outcome)
    # runtime calls: each equals its clean reading or is counted as dropped
    lost_calls = [c for key, c in clean_calls.items() if key not in calls]
    assert not set(calls) - set(clean_calls), "a call changed its times without being dropped"
    assert all(calls[key] == c for key, c in clean_calls.items() if key in calls)
    assert len(lost_calls) == _ledger(outcome, RUNTIME, "dropped"), (lost_calls, outcome.health)
    lost_correlations = {c["correlation"] for c in lost_calls}
    # device activities: equal, dropped (counted per table) or with damaged fields read as none (one ledger row each)
    assert not set(device) - set(clean_device), "an activity changed its times without being dropped"
    dropped = {kind: 0 for kind in KINDS}
    repaired = {kind: 0 for kind in KINDS}
    for key, clean in clean_device.items():
        kind = clean["kind"]
        if key not in device:
            dropped[kind] += 1
            continue
        got = device[key]
        changed = {c for c in clean if got[c] != clean[c]}
        assert changed <= set(REPAIRED) | LINKS, (clean, got)
        assert all(got[c] is None for c in changed - LINKS), (clean, got)
        if changed & LINKS and "correlation" not in changed:
            assert clean["correlation"] in lost_correlations, ("the op link changed in silence", clean, got)
        repaired[kind] += len(changed - LINKS)
    for kind, table in KINDS.items():
        assert _ledger(outcome, table, "dropped") == dropped[kind], (kind, outcome.health)
        assert _ledger(outcome, table, "repaired") == repaired[kind], (kind, outcome.health)
    # kernel statistics: the clean totals less what the ledger says was dropped
    kernels = [r["dur_ns"] for r in device.values() if r["kind"] == "kernel"]
    clean_kernels = {key: r["dur_ns"] for key, r in clean_device.items() if r["kind"] == "kernel"}
    assert len(kernels) == len(clean_kernels) - _ledger(outcome, KINDS["kernel"], "dropped")
    assert sum(kernels) == sum(d for key, d in clean_kernels.items() if key in device)
    # a damage revealed is never silent: the run is partial
    changed_any = device != clean_device or calls != clean_calls
    assert changed_any == outcome.lossy, (changed_any, outcome.health)


def _direct_rows(path: Path) -> dict[str, list[tuple]] | None:
    """Per device table, the (start, end) rows SQLite itself returns from `path` (None where it cannot read them)."""
    try:
        with sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True) as db:
            return {kind: db.execute(f"SELECT start, end FROM {table}").fetchall() for kind, table in KINDS.items()}
    except sqlite3.DatabaseError:
        return None


@FUZZ
@given(st.integers(0, NSYS.stat().st_size - 1), st.integers(0, 7))
def test_a_bit_flipped_anywhere_in_the_file_is_refused_counted_or_a_single_plausible_value(offset, bit):
    """One bit of the export file flipped (a page header, a record header, a value, the schema, a string): the read
    fails naming the file, or the ledger counts it, or nothing is lost and at most one time of one activity moved
    (a plausible value: no check can tell it). Never a row lost or a total changed in silence."""
    clean_device, clean_calls = _clean(False)
    with tempfile.TemporaryDirectory() as folder:
        path = _copy(Path(folder), False)
        data = bytearray(path.read_bytes())
        data[offset] ^= 1 << bit
        path.write_bytes(bytes(data))
        direct = _direct_rows(path)
        outcome = read_damaged(Path(folder))
    if outcome.errors:
        assert all(str(path) in str(e) for e in outcome.errors), outcome.errors
        return
    device = _device(outcome)
    for kind, table in KINDS.items():
        ours = sorted((r["start_ns"], r["start_ns"] + r["dur_ns"]) for r in device.values() if r["kind"] == kind)
        if direct is not None:  # what SQLite returns, less what the ledger says was left out
            assert set(ours) <= set(direct[kind]), (kind, ours, direct[kind])
            assert len(ours) == len(direct[kind]) - _ledger(outcome, table, "dropped"), (kind, outcome.health)
    if outcome.lossy:
        return
    assert len(device) == len(clean_device), "an activity was lost in silence"
    moved = [(key, r) for key, r in clean_device.items() if key not in device]
    assert len(moved) <= 1, moved
    for key, new in device.items():  # the time that moved is still a possible one: not before its launch
        launches = [c["start_ns"] for c in clean_calls.values() if c["correlation"] == new["correlation"]]
        assert key in clean_device or new["start_ns"] >= min(launches, default=new["start_ns"]), (new, launches)
    kernels = sum(r["dur_ns"] for r in device.values() if r["kind"] == "kernel")
    clean_kernels = sum(r["dur_ns"] for r in clean_device.values() if r["kind"] == "kernel")
    assert kernels == clean_kernels or (moved and moved[0][1]["kind"] == "kernel"), "kernel totals changed in silence"
