"""Raw msproftx host records (PROF_*/host/data/*.additional.msproftx.slice_N): the same rows as msprof's export,
read only where the export holds no marker, and damage counted with file and byte offset (fixtures/msprof_tx)."""
from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, query, run
from test_msprof_tx import EXPECTED, GEN, MARKERS_SQL

from profpipe.clocks import msprof_host_counter
from profpipe.ingest import msprof_tx, msproftx_raw

PROF = next((FIXTURES / "msprof_tx").glob("PROF_*"))
ROWS_SQL = MARKERS_SQL.replace("host_op", "rows")


def _read(prof: Path, warn) -> list[tuple]:
    data = prof / "host" / "data"
    rows = msproftx_raw.read([sorted(data.glob("*.msproftx.slice_*"))], sorted(data.glob("*.hash_dic.slice_*")),
                             msprof_host_counter(prof / "host"), warn)
    return [(r["tid"], r["op_name"], r["start_ns"], r["dur_ns"]) for r in rows.iter_rows(named=True)]


def test_record_layout_is_msprofs_256_byte_struct() -> None:
    # msprof's MSPROFTX_FMT 'HH3IQ2HI2H4Ii5Qi156s' ('=' sizes): 24-byte header + 8-byte tx info + 224-byte stamp
    assert struct.calcsize("=HH3IQ2HI2H4Ii5Qi156s") == msproftx_raw.RECORD.itemsize == 256
    assert msproftx_raw.RECORD.fields["message"][1] == 100 and msproftx_raw.RECORD.fields["start"][1] == 64


def test_raw_records_give_exactly_the_csv_rows() -> None:
    events: list[dict] = []
    raw = _read(PROF, lambda message, **kw: events.append(kw))
    csv = msprof_tx.read_csv(sorted(PROF.glob("mindstudio_profiler_output/msprof_tx_*.csv")), lambda *a, **k: None)
    assert raw == [(r["tid"], r["op_name"], r["start_ns"], r["dur_ns"]) for r in csv.iter_rows(named=True)]
    assert raw == EXPECTED and not events  # the pieces "checkpoint " + "saved" (written out of order) are joined


def test_raw_markers_are_read_when_never_exported(tmp_path: Path) -> None:
    GEN.main(tmp_path / "in", export_tx=False)
    assert not list((tmp_path / "in").rglob("msprof_tx_*"))
    out = run(tmp_path / "in", tmp_path / "out", step_range_name="train_step").output
    assert query(out, MARKERS_SQL) == EXPECTED
    # the steps are cut at the raw "train_step N" ranges (µs from the generator's ground truth)
    assert query(out, "SELECT step, start_ns, end_ns FROM step_phases ORDER BY step") == [
        (1, 5_000_000_500, 5_019_000_250), (2, 5_020_000_500, 5_039_000_250)]
    assert query(out, "SELECT count(*) FROM trace_health WHERE action = 'dropped'") == [(0,)]


def test_exported_markers_are_not_counted_twice(tmp_path: Path) -> None:
    """The committed fixture holds both the CSV and the raw records: each marker once."""
    out = run(PROF.parent, tmp_path / "out").output
    assert query(out, "SELECT count(*) FROM host_op WHERE category = 'marker'") == [(len(EXPECTED),)]


#: record index in GEN.tx_raw(): 0 train_step 1, 1 forward, 2 "saved" (piece 1), 3 "checkpoint " (piece 0),
#: 4 dataloader, 5 train_step 2
DAMAGE = ["bad_magic", "bad_length", "bad_utf8", "missing_dictionary", "missing_piece", "truncated"]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damage=st.sets(st.sampled_from(DAMAGE), min_size=1), target=st.sampled_from([0, 1, 4]))
def test_damaged_records_are_counted_with_file_and_offset(tmp_path_factory: pytest.TempPathFactory, damage: set[str],
                                                           target: int) -> None:
    prof = tmp_path_factory.mktemp("raw") / PROF.name
    GEN.write_raw(prof)
    data = prof / "host" / "data"
    path = data / "unaging.additional.msproftx.slice_0"
    records = [bytearray(path.read_bytes()[i:i + 256]) for i in range(0, 6 * 256, 256)]
    expected = {m[1]: m for m in EXPECTED}
    by_index = ["train_step 1", "forward", None, None, "dataloader", "train_step 2"]
    ledger: set[tuple] = set()
    missing = "missing_piece" in damage

    def at(index: int) -> int:  # byte offset of a record once the missing piece is taken out
        return (index - (missing and index > 3)) * 256

    if "bad_magic" in damage:
        records[target][0:2] = b"\x34\x12"
        ledger.add(("malformed_record", "dropped", 1, at(target)))
    elif "bad_length" in damage:  # the same record: one damage at a time per record
        records[target][12:16] = struct.pack("<I", 300)
        ledger.add(("malformed_record", "dropped", 1, at(target)))
    if "bad_magic" in damage or "bad_length" in damage:
        expected.pop(by_index[target])
    if "bad_utf8" in damage:
        records[5][100:103] = b"\xff\xfe\x00"
        tid, _, start, dur = expected.pop("train_step 2")
        expected["\ufffd\ufffd"] = (tid, "\ufffd\ufffd", start, dur)
        ledger.add(("bad_encoding", "repaired", 1, at(5)))
    if "missing_dictionary" in damage:
        (data / "unaging.additional.hash_dic.slice_0").write_text("1:other\n")
        ledger.add(("unlinked", "kept", 1, 2 * 256))
    if missing:  # the piece 0 "checkpoint " is gone
        tid, _, start, dur = expected.pop("checkpoint saved")
        expected["saved"] = (tid, "saved", start, dur)
        ledger.add(("truncated", "kept", 1, 2 * 256))
    blob = b"".join(r for i, r in enumerate(records) if not (missing and i == 3))
    if "truncated" in damage:
        blob = blob[:-100]
        expected.pop("\ufffd\ufffd" if "bad_utf8" in damage else "train_step 2")
        ledger.discard(("bad_encoding", "repaired", 1, at(5)))
        ledger.add(("truncated", "dropped", 1, at(5)))
    path.write_bytes(blob)
    events: list[dict] = []
    rows = _read(prof, lambda message, **kw: events.append(kw))
    assert rows == sorted(expected.values(), key=lambda m: (m[2], m[0]))
    assert all(e["path"] == path for e in events)
    assert {(e["check"], e["action"], e["rows"], e["offset"]) for e in events} == ledger


# --- msprof's local time: exports on the epoch, raw records on the host counter -------------------------------

def test_local_time_export_is_read_on_the_epoch_and_raw_markers_follow_it(tmp_path: Path) -> None:
    """Newer msprof writes every exported time as CLOCK_MONOTONIC_RAW + start_info's offset (its "local time"): the
    rank is on the Unix epoch, and the raw markers (host counter -> CLOCK_MONOTONIC_RAW) are moved by that offset."""
    GEN.main(tmp_path / "in", export_tx=False, local_time=True)
    out = run(tmp_path / "in", tmp_path / "out", step_range_name="train_step").output
    shift = GEN.LOCAL_TIME_OFFSET_US * 1000  # 1_699_996_000_000_000_000 ns
    assert shift == 1_700_000_000_000_000 * 1000 - 4_000_000_000_000
    assert query(out, MARKERS_SQL) == [(tid, name, start + shift, dur) for tid, name, start, dur in EXPECTED]
    assert query(out, "SELECT step, start_ns - $s, end_ns - $s FROM step_phases ORDER BY step".replace("$s", str(shift))) == [
        (1, 5_000_000_500, 5_019_000_250), (2, 5_020_000_500, 5_039_000_250)]
    clock = query(out, "SELECT clock, epoch_offset_ns, host_epoch_offset_ns, metadata_json->>'time_base' FROM run_info")
    assert clock == [("unix_epoch", 0, shift, "msprof_local_time")]
    # the op tasks are where the monotonic export has them, plus the offset
    mono = run(PROF.parent, tmp_path / "mono").output
    tasks = "SELECT op_name, start_ns - {s} FROM device_exec ORDER BY start_ns, op_name"
    assert query(out, tasks.format(s=shift)) == query(mono, tasks.format(s=0))
    assert query(mono, "SELECT clock, epoch_offset_ns FROM run_info") == [("host_monotonic_raw", shift)]


def test_local_time_export_without_start_info_is_told_by_its_magnitude(tmp_path: Path) -> None:
    """Without start_info a time past 2001 (1e18 ns) is no CLOCK_MONOTONIC_RAW reading; the raw markers cannot be
    moved onto the epoch then: left out, and the ledger says why."""
    GEN.main(tmp_path / "in", export_tx=False, local_time=True)
    next((tmp_path / "in").rglob("start_info.0")).unlink()
    out = run(tmp_path / "in", tmp_path / "out").output
    assert query(out, "SELECT clock, epoch_offset_ns, host_epoch_offset_ns FROM run_info") == [("unix_epoch", 0, None)]
    assert query(out, "SELECT count(*) FROM host_op WHERE category = 'marker'") == [(0,)]
    assert query(out, "SELECT check_name, action, first_file LIKE '%msproftx.slice_0' FROM trace_health") == [
        ("clock", "dropped", True)]


@pytest.mark.parametrize(("earliest", "offset", "local"), [
    (None, 10**18, False),
    (5_000_000_000_000, 1_699_996 * 10**12, False),            # the monotonic export: far below half the offset
    (1_699_996_005 * 10**9, 1_699_996 * 10**12, True),         # the local-time export
    (10**18 - 1, None, False), (10**18, None, True),            # no start_info: the magnitude decides
])
def test_local_time_rule(earliest: int | None, offset: int | None, local: bool) -> None:
    from profpipe.clocks import msprof_local_time
    assert msprof_local_time(earliest, offset) is local


# --- a PROF folder msprof never exported: raw device data on the device counter, raw markers on the host's -----

ERA_C_TX = FIXTURES / "ascend_raw" / "era_c_tx"


def test_raw_prof_folder_markers_are_moved_onto_the_device_counter(tmp_path: Path) -> None:
    """fixtures/ascend_raw/era_c_tx: era C device data plus the host's msproftx records; the device folder's
    host_start / dev_start pair relates the two clocks. Expected values: the generator's ground truth on the
    device clock (expected.json), which it turned into host counter ticks through the pair and msprof's rule."""
    expected = json.loads((ERA_C_TX / "expected.json").read_text())
    out = run(ERA_C_TX, tmp_path / "out", step_range_name="train_step").output
    assert query(out, MARKERS_SQL) == [tuple(m) for m in expected["markers"]]
    assert query(out, "SELECT step, start_ns, end_ns FROM step_phases ORDER BY step") == [
        tuple(s) for s in expected["marker_steps"]]
    # the FP point of a marker step is its first op task: the step's Cast (the generator's FP op)
    assert query(out, "SELECT DISTINCT fp_op FROM step_phases") == [(expected["fp_op"],)]
    # the device side is the plain era C folder's, to the ns; the markers are user ranges, not ops
    plain = run(FIXTURES / "ascend_raw" / "era_c", tmp_path / "plain").output
    execs = "SELECT op_name, start_ns, dur_ns FROM device_exec ORDER BY start_ns, op_name"
    assert query(out, execs) == query(plain, execs)
    assert query(out, "SELECT count(*) FROM op_detail_stats WHERE side = 'Host'") == [(0,)]
    assert query(out, "SELECT name, instances, total_ns FROM user_range_stats WHERE name LIKE 'train_step%' "
                      "ORDER BY name") == [
        (f"train_step {s}", 1, end - start) for s, start, end in expected["marker_steps"]]


def test_raw_prof_folder_without_the_clock_pair_keeps_the_device_and_counts_the_markers(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    shutil.copytree(ERA_C_TX, folder)
    next(folder.rglob("dev_start.log.0")).unlink()
    out = run(folder, tmp_path / "out").output
    assert query(out, "SELECT count(*) FROM host_op WHERE category = 'marker'") == [(0,)]
    assert query(out, "SELECT count(*) FROM device_exec") == [(json.loads(
        (ERA_C_TX / "expected.json").read_text())["task_executions"],)]
    ledger = query(out, "SELECT check_name, action, first_file FROM trace_health WHERE check_name = 'clock'")
    assert len(ledger) == 1 and ledger[0][:2] == ("clock", "dropped") and ledger[0][2].endswith("msproftx.slice_0")


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cntvct=st.one_of(st.integers(0, 2**64), st.text(max_size=12)),
       mono=st.one_of(st.integers(-(2**63), 2**63), st.just("")))
def test_damaged_clock_pair_places_markers_exactly_or_counts_them(tmp_path_factory: pytest.TempPathFactory,
                                                                  cntvct: int | str, mono: int | str) -> None:
    """Whatever the device folder's host_start / dev_start say, the device side is untouched and each marker is
    either placed by the pair's shift (device ns = host ns + cntvct * 10 - clock_monotonic_raw) or left out and
    counted (clock: no usable pair; out_of_range: moved beyond 0..2^62 ns)."""
    from profpipe.ingest.units import MAX_NS
    folder = tmp_path_factory.mktemp("pair") / "in"
    shutil.copytree(ERA_C_TX, folder)
    device = next(folder.rglob("device_0"))
    (device / "dev_start.log.0").write_text(f"clock_monotonic_raw: 1\ncntvct: {cntvct}\n")
    (device / "host_start.log.0").write_text(f"clock_monotonic_raw: {mono}\ncntvct: 1\n")
    expected = json.loads((ERA_C_TX / "expected.json").read_text())
    out = run(folder, tmp_path_factory.mktemp("out")).output
    assert query(out, "SELECT count(*) FROM device_exec") == [(expected["task_executions"],)]
    original = 700_000 * 10 - 9_000_000_000  # the fixture's pair
    usable = isinstance(cntvct, int) and isinstance(mono, int) and abs(cntvct * 10 - mono) <= MAX_NS
    placed = [] if not usable else [
        (tid, name, start - original + cntvct * 10 - mono, dur) for tid, name, start, dur in expected["markers"]
        if 0 <= start - original + cntvct * 10 - mono <= MAX_NS]
    assert query(out, MARKERS_SQL) == placed
    dropped = dict(query(out, "SELECT check_name, sum(rows) FROM trace_health WHERE tables = 'host_op' GROUP BY 1"))
    assert dropped == ({"clock": 6} if not usable else  # 6 records: the domain mark is two
                       {"out_of_range": len(expected["markers"]) - len(placed)} if len(placed) < 5 else {})


def test_aging_and_unaging_slices_are_two_streams(tmp_path: Path) -> None:
    """msprof writes two streams, `aging.*` and `unaging.*`, each split into slices a record may straddle: the
    records split over both streams (the aging one cut mid-record between its two slices, the two pieces of the
    domain mark one in each stream) give the same markers."""
    prof = tmp_path / PROF.name
    GEN.write_raw(prof)
    data = prof / "host" / "data"
    blob = (data / "unaging.additional.msproftx.slice_0").read_bytes()
    (data / "aging.additional.msproftx.slice_0").write_bytes(blob[:256 + 100])
    (data / "aging.additional.msproftx.slice_1").write_bytes(blob[256 + 100:3 * 256])
    (data / "unaging.additional.msproftx.slice_0").write_bytes(blob[3 * 256:])
    events: list[dict] = []
    rows = msproftx_raw.read_prof(prof / "device_0", 0, lambda message, **kw: events.append(kw))
    assert [(r["tid"], r["op_name"], r["start_ns"], r["dur_ns"]) for r in rows.iter_rows(named=True)] == EXPECTED
    assert not events
