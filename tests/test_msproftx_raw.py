"""Raw msproftx host records (PROF_*/host/data/*.additional.msproftx.slice_N): the same rows as msprof's export,
read only where the export holds no marker, and damage counted with file and byte offset (fixtures/msprof_tx)."""
from __future__ import annotations

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
    rows = msproftx_raw.read(sorted(data.glob("*.msproftx.slice_*")), sorted(data.glob("*.hash_dic.slice_*")),
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
