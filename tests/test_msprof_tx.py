"""MSTX / msproftx markers of msprof exports: host ranges, steps by --step-range-name, damage (fixtures/msprof_tx)."""
from __future__ import annotations

import json
import shutil
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, REPO, assert_generator_reproduces, query, run

FIXTURE = FIXTURES / "msprof_tx"


def _generator():
    import importlib.util
    spec = importlib.util.spec_from_file_location("msprof_tx_gen", REPO / "fixtures" / "generators" / "msprof_tx.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _generator()


def _ns(us: str) -> int:
    return int((Decimal(us) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


#: (tid, message, start_ns, dur_ns) of the generator's markers, in start order
EXPECTED = sorted((tid, message, _ns(start), _ns(end) - _ns(start)) for tid, _, message, start, end in GEN.MARKERS)
EXPECTED.sort(key=lambda m: (m[2], m[0]))
MARKERS_SQL = "SELECT tid, op_name, start_ns, dur_ns FROM host_op WHERE category = 'marker' ORDER BY start_ns, tid"


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    shutil.copytree(FIXTURE, folder)
    return folder


def _tx_csv(folder: Path) -> Path:
    return next(folder.rglob("msprof_tx_*.csv"))


def test_fixture_generator_is_deterministic(tmp_path: Path) -> None:
    assert_generator_reproduces("msprof_tx.py", FIXTURE, tmp_path)


def test_markers_are_host_ranges_with_exact_times(tmp_path: Path) -> None:
    out = run(FIXTURE, tmp_path / "out").output
    assert len(EXPECTED) == 5
    assert query(out, MARKERS_SQL) == EXPECTED
    # by hand: 5000001.0005 µs -> 5000001000.5 ns -> 5000001000; 5000400.0025 -> 5000400002 (half to even)
    assert (16001, "forward", 5_000_001_000, 399_002) in EXPECTED
    assert (16002, "checkpoint saved", 5_019_500_125, 0) in EXPECTED
    # without --step-range-name the steps are step_trace's
    assert query(out, "SELECT step, start_ns, end_ns FROM step_phases ORDER BY step") == [
        (1, 5_000_000_000, 5_019_000_000), (2, 5_020_000_000, 5_039_000_000)]
    assert query(out, "SELECT count(*) FROM trace_health WHERE action = 'dropped'") == [(0,)]


def test_markers_from_the_msprof_timeline_equal_the_csv(tmp_path: Path) -> None:
    """Without msprof_tx_*.csv, the tx events inside msprof_*.json give the same rows."""
    folder = _copy(tmp_path)
    _tx_csv(folder).unlink()
    out = run(folder, tmp_path / "out").output
    assert query(out, MARKERS_SQL) == EXPECTED


def test_step_range_name_cuts_steps_at_the_marker_ranges(tmp_path: Path) -> None:
    out = run(FIXTURE, tmp_path / "out", step_range_name="train_step").output
    steps = [(int(m.split()[-1]), _ns(s), _ns(e)) for _, _, m, s, e in GEN.MARKERS if m.startswith("train_step")]
    assert query(out, "SELECT step, start_ns, end_ns FROM step_phases ORDER BY step") == steps == [
        (1, 5_000_000_500, 5_019_000_250), (2, 5_020_000_500, 5_039_000_250)]
    assert query(out, "SELECT check_name, action FROM trace_health WHERE message LIKE '%replace msprof''s step_trace%'") \
        == [("ambiguous", "kept")]
    # FP point: the step's first op task (Conv2D-op1, 10 µs after each iteration start); no BP point
    assert query(out, "SELECT step, fp_ns, bp_ns FROM step_phases ORDER BY step") == [
        (1, 5_000_010_000, None), (2, 5_020_010_000, None)]


def test_step_range_name_from_the_timeline_and_unknown_name(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    _tx_csv(folder).unlink()
    out = run(folder, tmp_path / "json", step_range_name="train_step").output
    assert query(out, "SELECT step, start_ns FROM step_phases ORDER BY step") == [(1, 5_000_000_500), (2, 5_020_000_500)]
    out = run(FIXTURE, tmp_path / "none", step_range_name="no_such_range").output
    assert query(out, "SELECT step, start_ns FROM step_phases ORDER BY step") == [(1, 5_000_000_000), (2, 5_020_000_000)]
    assert query(out, "SELECT check_name, action FROM trace_health WHERE message LIKE '%no MSTX ranges named%'") == [
        ("other", "kept")]


DAMAGE = {  # kind -> (row written in place of a good one, check, action)
    "bad_time": ("0,2345,16001,N/A,start/end,N/A,N/A,5x1.5,5000010,N/A,broken", "malformed_record", "dropped"),
    "nan_time": ("0,2345,16001,N/A,start/end,N/A,N/A,nan,5000010,N/A,broken", "malformed_record", "dropped"),
    "missing_time": ("0,2345,16001,N/A,start/end,N/A,N/A,N/A,5000010,N/A,broken", "malformed_record", "dropped"),
    "backwards": ("0,2345,16001,N/A,start/end,N/A,N/A,5000020,5000010,N/A,broken", "negative_duration", "dropped"),
    "negative": ("0,2345,16001,N/A,start/end,N/A,N/A,-5,5000010,N/A,broken", "out_of_range", "dropped"),
    "no_message": ("0,2345,16001,N/A,start/end,N/A,N/A,5000001,5000010,N/A,", "malformed_record", "dropped"),
}


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damage=st.lists(st.sampled_from(sorted(DAMAGE)), min_size=1, max_size=6),
       duplicates=st.integers(0, 2))
def test_damaged_markers_are_counted_per_kind(tmp_path_factory: pytest.TempPathFactory, damage: list[str],
                                              duplicates: int) -> None:
    """Bad rows added to the CSV are dropped and counted (one ledger row per check and kind, with the file and
    the first line); the good markers are all kept."""
    tmp_path = tmp_path_factory.mktemp("damage")
    folder = _copy(tmp_path)
    csv_file = _tx_csv(folder)
    lines = csv_file.read_text().splitlines()
    bad = [DAMAGE[kind][0] for kind in damage]
    csv_file.write_text("\n".join(lines + bad + [lines[1]] * duplicates) + "\n")
    out = run(folder, tmp_path / "out").output
    assert query(out, MARKERS_SQL) == EXPECTED
    rows = query(out, "SELECT check_name, action, rows, first_line, first_file FROM trace_health "
                      "WHERE action = 'dropped' ORDER BY first_line")
    # a repeated damaged row is a duplicate first
    distinct = list(dict.fromkeys(bad))
    expected_counts: dict[str, int] = {}
    for row in distinct:
        check = next(c for r, c, _ in DAMAGE.values() if r == row)
        expected_counts[check] = expected_counts.get(check, 0) + 1
    if duplicates or len(bad) > len(distinct):
        expected_counts["duplicate_record"] = duplicates + len(bad) - len(distinct)
    got: dict[str, int] = {}
    for check, action, count, line, file in rows:
        assert action == "dropped" and file.endswith(csv_file.name) and line > len(GEN.MARKERS) + 1
        got[check] = got.get(check, 0) + count
    assert got == expected_counts


def test_bad_tid_is_repaired_and_missing_columns_name_the_file(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    csv_file = _tx_csv(folder)
    csv_file.write_text(csv_file.read_text().replace(",16002,N/A,marker,", ",t16002,N/A,marker,"))
    out = run(folder, tmp_path / "out").output
    assert query(out, "SELECT tid FROM host_op WHERE op_name = 'checkpoint saved'") == [(None,)]
    assert query(out, "SELECT check_name, action, rows, first_line FROM trace_health WHERE action = 'repaired'") == [
        ("malformed_record", "repaired", 1, 4)]
    csv_file.write_text("Device_id,pid,tid,message\n0,1,2,x\n")  # no time columns: the markers are left out
    out = run(folder, tmp_path / "out2").output
    assert query(out, "SELECT count(*) FROM host_op") == [(0,)]
    assert query(out, "SELECT count(*) FROM device_exec WHERE kind = 'task'") == [(8,)]
    assert query(out, "SELECT check_name, first_line FROM trace_health WHERE message LIKE '%not an msprof_tx CSV%'") == [
        ("malformed_record", 1)]


# --- MindSpore 2.5+ (era F): markers in trace_view.json, or the msprof_tx CSV data_simplification=False kept -------

CLUSTER = FIXTURES / "ascend_ms_cluster"


def _cluster_generator():
    import importlib.util
    spec = importlib.util.spec_from_file_location("cluster_gen", REPO / "fixtures" / "generators" / "ascend_ms_cluster.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CLUSTER_GEN = _cluster_generator()


def _cluster_expected(rank: int) -> list[tuple[int, str, int, int]]:
    """(tid, message, start_ns, dur_ns) of the generator's host markers of a rank, in start order."""
    rows = [(tid, message, _ns(start), _ns(end) - _ns(start)) for tid, _, message, start, end in
            CLUSTER_GEN.marker_rows(rank)]
    return sorted(rows, key=lambda m: (m[2], m[0]))


def test_era_f_markers_once_from_trace_view_or_the_kept_csv(tmp_path: Path) -> None:
    """Rank 0 (data_simplification: no msprof export) has its markers from trace_view.json's msprof process; rank 1
    keeps mindstudio_profiler_output/ with the same markers in msprof_tx_*.csv and msprof_*.json: each is read once."""
    result = run(CLUSTER, tmp_path / "out")
    out = result.output
    assert len(_cluster_expected(0)) == 8
    for rank in (0, 1):
        assert query(out, f"SELECT tid, op_name, start_ns, dur_ns FROM host_op WHERE category = 'marker' AND side = 'Host' "
                          f"AND rank = {rank} ORDER BY start_ns, tid") == _cluster_expected(rank)
    # by hand: step 1 of rank 0 starts at epoch µs 1767225600000000; forward at +20.0005 µs -> ...020000.5 ns -> even
    assert (100, "forward", 1_767_225_600_000_020_000, 2_080_002) in _cluster_expected(0)
    # the device-side record of the marker given a stream: one per step, no thread
    stream, begin, end = CLUSTER_GEN.DEVICE_MARKER
    assert query(out, "SELECT rank, tid, op_name, start_ns, dur_ns FROM host_op WHERE side = 'Device' ORDER BY ALL") == [
        (rank, None, f"train_step {step}", _ns(CLUSTER_GEN._at(rank, step, begin)), _ns(end) - _ns(begin))
        for rank in (0, 1) for step in (1, 2)]
    # the export inside rank 1 is listed with its era F source, not read as a second capture of the rank
    manifest = json.loads((out / "manifest.json").read_text())
    exports = [s for s in manifest["sources"] if s["family"] == "msprof_export"]  # and each rank's ascend_summary
    assert len(exports) == 2 and {s["family"] for s in manifest["sources"]} == {"msprof_export", "ascend_summary"}
    assert {"export:csv:msprof_tx", "export:msprof"} <= {f["role"] for f in exports[1]["files"]}
    assert query(out, "SELECT count(DISTINCT capture) FROM host_op") == [(1,)]
    # markers are no device work and no ops in the rankings
    assert query(out, "SELECT count(*) FROM device_exec WHERE name LIKE 'train_step%'") == [(0,)]


def test_era_f_kept_csv_is_preferred_and_trace_view_is_the_fallback(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    shutil.copytree(CLUSTER, folder)
    csv_file = next(folder.rglob("msprof_tx_*.csv"))
    lines = csv_file.read_text().splitlines()
    csv_file.write_text("\n".join(lines[:-1]) + "\n")  # the CSV lost its last marker: trace_view's is not added
    sql = "SELECT count(*) FROM host_op WHERE rank = 1 AND side = 'Host' AND category = 'marker'"
    assert query(run(folder, tmp_path / "csv").output, sql) == [(len(_cluster_expected(1)) - 1,)]
    csv_file.unlink()
    assert query(run(folder, tmp_path / "trace").output, sql) == [(len(_cluster_expected(1)),)]


def test_era_f_step_range_name_cuts_steps_at_the_marker_ranges(tmp_path: Path) -> None:
    out = run(CLUSTER, tmp_path / "out", step_range_name="train_step").output
    expected = [(rank, int(m.split()[-1]), start, start + dur) for rank in (0, 1)
                for _, m, start, dur in _cluster_expected(rank) if m.startswith("train_step")]
    assert query(out, "SELECT rank, step, start_ns, end_ns FROM step_phases ORDER BY rank, step") == expected
    assert len(expected) == 4


def _era_f_reader_markers(folder: Path) -> tuple[list[tuple], list[dict]]:
    """Host markers and ledger rows of rank 0 read by the msprof_export reader alone (no models: fast)."""
    from profpipe.discover import discover
    from profpipe.ingest import msprof_export

    rows: list[dict] = []
    source = next(s for s in discover(folder) if s.rank == 0)
    tables = [t for name, t in msprof_export.read(source, lambda message, **kw: rows.append(kw)) if name == "host_op"]
    markers = sorted((r["tid"], r["op_name"], r["start_ns"], r["dur_ns"]) for t in tables for r in t.to_pylist()
                     if r.get("category") == "marker" and r["side"] == "Host")
    return markers, rows


TRACE_DAMAGE = {  # kind -> (how the marker event is changed, the check that counts it)
    "bad_time": (lambda e: {**e, "ts": "12x3"}, "malformed_record"),
    "nan_time": (lambda e: {**e, "dur": "NaN"}, "malformed_record"),
    "negative_dur": (lambda e: {**e, "dur": "-1.5"}, "negative_duration"),
    "no_message": (lambda e: {**e, "name": "  "}, "malformed_record"),
    "repeated": (None, "duplicate_record"),
}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damage=st.dictionaries(st.integers(0, 7), st.sampled_from(sorted(TRACE_DAMAGE)), max_size=8))
def test_damaged_trace_view_markers_are_counted(tmp_path_factory: pytest.TempPathFactory, damage: dict[int, str]) -> None:
    """Marker events of trace_view.json damaged in place (bad or NaN time, negative duration, no message) are left
    out and counted, a repeated one is kept once; every other marker is kept with its exact times."""
    folder = tmp_path_factory.mktemp("tv") / "in"
    shutil.copytree(CLUSTER, folder)
    view = sorted(folder.glob("*_ascend_ms"))[0] / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    events = json.loads(view.read_text())
    marker_at = [i for i, e in enumerate(events) if e.get("pid") == CLUSTER_GEN.MSTX_PID and e["ph"] == "X"]
    assert len(marker_at) == 8
    expected = sorted(_cluster_expected(0))
    by_place = sorted(_cluster_expected(0), key=lambda m: next(  # the ground-truth row of each marker event
        i for i in marker_at if events[i]["name"] == m[1] and _ns(events[i]["ts"]) == m[2]))
    lost: dict[str, int] = {}
    for index, kind in damage.items():
        change, check = TRACE_DAMAGE[kind]
        if change is None:
            events.append(events[marker_at[index]])
        else:
            events[marker_at[index]] = change(events[marker_at[index]])
            expected.remove(by_place[index])
        lost[check] = lost.get(check, 0) + 1
    view.write_text(json.dumps(events))
    markers, rows = _era_f_reader_markers(folder)
    assert markers == expected
    counted: dict[str, int] = {}
    for row in rows:
        if row.get("action") == "dropped" and "host_op" in (row.get("tables") or "host_op"):
            counted[row["check"]] = counted.get(row["check"], 0) + row.get("rows", 0)
    assert counted == lost
