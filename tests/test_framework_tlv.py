"""MindSpore's binary FRAMEWORK data (framework TLV): mindspore.memory_usage (profpipe/ingest/memory_usage_tlv.py)
and the op-range files (profpipe/ingest/mindspore_op_range.py), against oracles: the generator's ground truth
(fixtures/mindspore_fwk_tlv/expected.json, op-range times by MindSpore's formulas in Decimal), the operator_memory.csv
MindSpore's op memory viewer makes from the same events, and MindSpore's TimeConverter written here in Decimal.
Damage tests: hypothesis packs memory events with known damage and checks the blocks against a pairing written
here and the ledger's counts."""
from __future__ import annotations

import json
import shutil
import struct
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from conftest import FIXTURES, assert_generator_reproduces, query, run
from profpipe.clocks import HostCounter
from profpipe.discover import discover
from profpipe.health import HealthLedger
from profpipe.ingest import memory_usage_tlv, mindspore_op_range

TLV = FIXTURES / "mindspore_fwk_tlv"
F26 = TLV / "v2_6" / "host_4321_20260101000000000_ascend_ms"
EXPECTED = json.loads((TLV / "expected.json").read_text())
FREE = 2**64 - 1


def test_the_generator_reproduces_the_fixture(tmp_path):
    assert_generator_reproduces("mindspore_fwk_tlv.py", TLV, tmp_path)


def test_discover_lists_the_memory_events_with_the_memory_source_and_op_range_as_a_source():
    found = sorted((s.family, s.rank, s.directory.name, sorted(s.files), sorted(s.slices)) for s in discover(TLV))
    assert found == [
        ("mindspore_memory", 2, F26.name, [], ["fwk_memory_usage", "output_operator"]),
        ("mindspore_op_range", 0, "profiler", ["op_range_2_4"], []),
        ("mindspore_op_range", 2, F26.name, ["op_range"], [])]


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tlv") / "out"
    run(TLV, folder)
    return folder


def test_op_range_host_events_hold_the_ground_truth(out):
    for rank, rows in EXPECTED["host_info_record"].items():
        got = query(out, "SELECT line, tid, pid, module, event, stage, level, kind, custom_info, ts_ns "
                         f"FROM host_info_record WHERE rank = {rank} ORDER BY line")
        assert list(map(list, got)) == rows
    assert query(out, "SELECT count(*) FROM host_info_record WHERE parent_pid IS NOT NULL OR memory_bytes IS NOT NULL") \
        == [(0,)]


def test_host_span_pairs_each_op_range_start_with_its_end(out):
    for rank, rows in EXPECTED["host_info_record"].items():
        starts = {r[0]: r for r in rows if r[7] == "start"}
        spans = sorted((r[4] + "::" + r[5], r[9] - starts[r[0] - 1][9]) for r in rows if r[7] == "end")
        got = query(out, f"SELECT name, dur_ns FROM host_span WHERE rank = {rank} AND kind = 'span' ORDER BY ALL")
        assert got == spans


def test_python_frames_nest_by_time_on_their_thread(out):
    got = query(out, "SELECT f.tid, f.name, f.start_ns, f.dur_ns, p.name FROM python_frame f "
                     "LEFT JOIN python_frame p ON p.rank = f.rank AND p.frame_index = f.parent_index ORDER BY ALL")
    assert list(map(list, got)) == EXPECTED["python_frame"]
    # the call tree mart works on them: each root's total time is its own duration
    roots = {(r[1], r[3]) for r in EXPECTED["python_frame"] if r[4] is None}
    tree = query(out, "SELECT frame, total_ns FROM python_call_tree WHERE depth = 0")
    assert {(name, int(total)) for name, total in tree} == roots


def test_memory_events_give_mindspores_blocks_and_the_allocator_totals(out):
    blocks = query(out, "SELECT owner, bytes, alloc_ns, release_ns, alloc_allocated_bytes, alloc_reserved_bytes, "
                        "release_allocated_bytes, release_reserved_bytes, stream FROM memory_block ORDER BY seq")
    assert list(map(list, blocks)) == EXPECTED["memory_block"]
    records = query(out, "SELECT ts_ns, allocated_bytes, reserved_bytes, active_bytes FROM memory_record ORDER BY seq")
    assert list(map(list, records)) == EXPECTED["memory_record"]
    peak = query(out, "SELECT peak_allocated_bytes, peak_reserved_bytes FROM memory_peak WHERE component = 'MindSpore'")
    assert peak == [(max(r[1] for r in EXPECTED["memory_record"]), max(r[2] for r in EXPECTED["memory_record"]))]
    stats = query(out, "SELECT owner, blocks FROM memory_op_stats ORDER BY owner")
    assert stats == sorted((b[0], 1) for b in EXPECTED["memory_block"])


def test_the_events_supersede_mindspores_operator_memory_csv_which_agrees_to_the_microsecond(out, tmp_path):
    health = query(out, "SELECT check_name, action, first_file FROM trace_health WHERE check_name = 'superseded'")
    assert health == [("superseded", "superseded", str(F26 / "ASCEND_PROFILER_OUTPUT" / "operator_memory.csv"))]
    # MindSpore's own CSV, read alone: the same blocks, its µs floats within a µs of the events' ns
    shutil.copytree(TLV, tmp_path / "in")
    (tmp_path / "in" / F26.relative_to(TLV) / "FRAMEWORK" / "mindspore.memory_usage").unlink()
    run(tmp_path / "in", tmp_path / "out")
    csv = query(tmp_path / "out", "SELECT owner, bytes, alloc_ns, release_ns FROM memory_block ORDER BY seq")
    assert [(c[0], c[1]) for c in csv] == [(b[0], b[1]) for b in EXPECTED["memory_block"]]
    for c, b in zip(csv, EXPECTED["memory_block"]):
        assert abs(c[2] - b[2]) <= 1000 and (c[3] is None) == (b[3] is None)
        assert c[3] is None or abs(c[3] - b[3]) <= 1000


def test_op_range_and_memory_of_one_folder_are_one_capture_on_the_epoch(out):
    assert query(out, "SELECT rank, capture, layout, clock, tick_hz FROM run_info ORDER BY ALL") == [
        (0, 0, "op_range", "unix_epoch", 100_000_000), (2, 0, "memory", "unix_epoch", None),
        (2, 0, "op_range", "unix_epoch", 2_600_000_000)]


def test_a_read_trace_view_supersedes_the_op_range_frames(tmp_path):
    shutil.copytree(TLV / "v2_6", tmp_path / "in")
    output = tmp_path / "in" / F26.name / "ASCEND_PROFILER_OUTPUT"
    (output / "kernel_details.csv").write_text("Name,Type,Accelerator Core,Start Time(us),Duration(us)\n")
    (output / "trace_view.json").write_text("[]")
    source = next(s for s in discover(tmp_path / "in") if s.family == "mindspore_op_range")
    assert source.files["trace_view"] == output / "trace_view.json"
    ledger = HealthLedger()
    tables = dict(mindspore_op_range.read(source, ledger.for_source("s", 2)))
    assert "python_frame" not in tables and tables["host_info_record"].num_rows == len(EXPECTED["host_info_record"]["2"])
    assert [(e.check, e.rows) for e in ledger.events if e.tables == "python_frame"] == [("superseded", 6)]


def test_without_clock_files_times_stay_on_the_counter_and_say_so(tmp_path):
    shutil.copytree(TLV / "v2_6", tmp_path / "in")
    shutil.rmtree(tmp_path / "in" / F26.name / "PROF_000001_20260101000000000_FIXTURETLVABCDEF")
    source = next(s for s in discover(tmp_path / "in") if s.family == "mindspore_op_range")
    ledger = HealthLedger()
    tables = dict(mindspore_op_range.read(source, ledger.for_source("s", 2)))
    assert tables["run_info"]["clock"].to_pylist() == ["host_syscnt"]
    assert sorted(e.check for e in ledger.events) == ["clock", "malformed_record"]  # the clock, the zero start
    records = np.fromfile(F26 / "FRAMEWORK" / "mindspore.op_range", dtype=np.uint8)
    first_start = int.from_bytes(records[6 + 24:6 + 32].tobytes(), "little")
    ts = sorted(tables["host_info_record"]["ts_ns"].to_pylist())
    assert first_start * 10 in ts  # 100 MHz: ticks x 10 ns


# --- MindSpore's counter conversions, written here in Decimal -------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(freq=st.sampled_from([100.0, 50.0, 2600.0, 1995.312, 3000.0, 19.2]), cntvct=st.integers(0, 2**40),
       delta=st.integers(-2**40, 2**50), offset=st.integers(-2**50, 2**60), round_sum=st.booleans())
@example(freq=2000.0, cntvct=0, delta=1, offset=1, round_sum=True)  # a half ns: the sum rounds to even
def test_counter_conversion_is_mindspores(freq, cntvct, delta, offset, round_sum):
    ticks = cntvct + delta
    if ticks < 0:
        return
    counter = HostCounter(freq, cntvct, offset, round_sum, True, "")
    got = int(counter.to_ns(np.array([ticks], dtype=np.uint64))[0])
    if round_sum:  # TimeConverter (2.5+)
        value = (Decimal(delta * 1000 / freq) + Decimal(offset)) * Decimal("1e-3")
        want = int(value.quantize(Decimal("0.000"), rounding=ROUND_HALF_EVEN) * 1000)
    else:  # ProfilerInfoParser (2.4)
        want = round(delta * (1000 / freq)) + offset
    assert got == want


# --- damage: memory_usage ---------------------------------------------------------------------------------------

def _event(addr: int, t: int, size: int, used: int, owner: bytes, extra: bytes = b"") -> tuple[bytes, tuple]:
    fixed = struct.pack("<i11QI4B", 0, 1, 2, t, addr, size, used, used, 1 << 20, 0, 0, 9, 0, 0, 0, 0, 0)
    field = struct.pack("<HI", 13, len(owner)) + owner if owner else b""
    value = fixed + field + extra
    return struct.pack("<HI", 1, len(value)) + value, (addr, t, size, used)


def _oracle(events: list[tuple]) -> tuple[list[tuple], int, int, int]:
    """Blocks (owner, bytes, alloc, release) by per-address pairing, and the replaced / leading / stray counts."""
    blocks, replaced, leading, stray = [], 0, 0, 0
    for addr in sorted({e[0] for e in events}):
        pending, first = None, True
        for e in sorted((e for e in events if e[0] == addr), key=lambda e: e[1]):
            if e[2] != FREE:
                replaced += pending is not None
                pending = e
            elif pending is not None:
                blocks.append((pending[4], pending[2], pending[1], e[1]))
                pending = None
            else:
                leading += first
                stray += not first
            first = False
        if pending is not None:
            blocks.append((pending[4], pending[2], pending[1], None))
    return sorted(blocks, key=lambda b: (b[2], b[0])), replaced, leading, stray


_DAMAGE = st.sampled_from(["none", "duplicate", "absurd", "bad_utf8", "unknown_field", "bad_field_length", "short",
                           "truncated"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.integers(0, 3), st.booleans(), st.integers(1, 10**6), _DAMAGE), min_size=1,
                      max_size=25))
def test_damaged_memory_usage(tmp_path_factory, steps):
    chunks, kept, counts = [], [], {}
    for i, (addr, is_free, size, damage) in enumerate(steps):
        t = 1_700_000_000_000_000_000 + 1000 * i
        size = FREE if is_free else size
        owner = b"" if is_free else f"op{i}".encode()
        name = owner.decode()
        extra = b""
        if damage == "absurd" and not is_free:
            size = 2**63
        if damage == "bad_utf8" and owner:
            owner, name = b"\xffop" + owner, "\ufffdop" + name
        if damage == "unknown_field":
            extra = struct.pack("<HI", 99, 3) + b"abc"
        if damage == "bad_field_length":
            extra, name = struct.pack("<HI", 13, 500) + b"x", name  # the owner before it is kept
        data, event = _event(addr, t, size, i, owner, extra)
        if damage == "short":
            data = struct.pack("<HI", 1, 10) + b"\0" * 10
            counts["short"] = counts.get("short", 0) + 1
        else:
            if damage == "absurd" and not is_free:
                counts["absurd"] = counts.get("absurd", 0) + 1
            else:
                kept.append((*event, name))
            for kind in ("bad_utf8", "unknown_field", "bad_field_length"):
                if damage == kind and (kind != "bad_utf8" or owner):
                    counts[kind] = counts.get(kind, 0) + 1
        chunks.append(data)
        if damage == "duplicate":
            chunks.append(data)
            counts["duplicate"] = counts.get("duplicate", 0) + 1
    cut = steps[-1][3] == "truncated"
    payload = b"".join(chunks) + (b"\x01\x00\xff\x00\x00\x00partial" if cut else b"")
    path = tmp_path_factory.mktemp("usage") / "mindspore.memory_usage"
    path.write_bytes(payload)
    ledger = HealthLedger()
    blocks, records = memory_usage_tlv.read(path, ledger.for_source("s", 0))
    want, replaced, leading, stray = _oracle(kept)
    got = [tuple(r) for r in blocks.select("owner", "bytes", "alloc_ns", "release_ns").iter_rows()]
    assert sorted(got, key=lambda b: (b[2], b[0])) == want
    assert sorted(records["ts_ns"].to_list()) == sorted(e[1] for e in kept)
    rows = {}
    for e in ledger.events:
        rows[e.check, e.action] = rows.get((e.check, e.action), 0) + (e.rows or 0)
    assert rows.get(("truncated", "dropped"), 0) == (1 if cut else 0)
    assert rows.get(("duplicate_record", "dropped"), 0) == counts.get("duplicate", 0)
    assert rows.get(("out_of_range", "dropped"), 0) == counts.get("absurd", 0)
    assert rows.get(("bad_encoding", "repaired"), 0) == counts.get("bad_utf8", 0)
    assert rows.get(("unknown_tag", "kept"), 0) == counts.get("unknown_field", 0)
    assert rows.get(("malformed_record", "repaired"), 0) == counts.get("bad_field_length", 0)
    assert rows.get(("malformed_record", "dropped"), 0) == counts.get("short", 0)
    assert rows.get(("unlinked", "dropped"), 0) == replaced + stray
    assert rows.get(("unlinked", "excluded"), 0) == leading
    for e in ledger.events:
        assert e.path == str(path) or e.path == path


# --- damage: op_range ---------------------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layout=st.sampled_from(["2.6", "2.4"]),
       spans=st.lists(st.tuples(st.sampled_from([0, 1, 10**9, 2**62, 2**63 - 2 * 10**6]), st.integers(-5, 10**6),
                                st.booleans(), st.booleans()), min_size=1, max_size=12),
       cut=st.integers(0, 3))
def test_damaged_op_range(tmp_path_factory, layout, spans, cut):
    """Records with a zero start, an end before the start, a time beyond 2^62 ns, bad UTF-8 names and a cut tail:
    the kept events' times are the counter at 100 MHz (no clock files: ticks x 10 ns), the rest counted."""
    folder = tmp_path_factory.mktemp("oprange") / "worker_1_20260101000000000_ascend_ms"
    chunks, want, counts = [], [], {"zero": 0, "bad": 0, "backwards": 0, "utf8": 0}
    for i, (base, length, bad_name, stack) in enumerate(spans):
        start = 0 if base == 0 else base + i
        end = start + length
        name = (b"\xff" if bad_name else b"") + f"op{i}".encode()
        if layout == "2.6":
            fixed = struct.pack("<5Qi3Hb3?", 7, FREE, 1, start, max(end, 0), 1, 2, 4, 0, 1, False, False, stack)
            fields = struct.pack("<HI", 14, len(name)) + name + struct.pack("<HI", 13, 2) + b"op"
        else:
            stack = False
            fixed = struct.pack("<3q6Qb?", start, max(end, 0), i, 1, 7, 7, 0, FREE, 1, 1, False)
            fields = struct.pack("<HI", 3, len(name) + 18) + b"RuntimeFramework::" + name
        chunks.append(struct.pack("<HI", 1, len(fixed) + len(fields)) + fixed + fields)
        counts["utf8"] += bad_name
        if start == 0:
            counts["zero"] += 1
        elif start * 10 > 2**62 or max(end, 0) * 10 > 2**62:
            counts["bad"] += 1
        elif max(end, 0) < start:
            counts["backwards"] += 1
        else:
            want.append((stack, start * 10, max(end, 0) * 10))
    tail = b"\x01\x00\xff\xff\x00\x00"[:cut + 2] if cut else b""
    name = "mindspore.op_range" if layout == "2.6" else "op_range_0"
    path = folder / "FRAMEWORK" / name
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(chunks) + tail)
    source = next(s for s in discover(folder.parent) if s.family == "mindspore_op_range")
    ledger = HealthLedger()
    tables = dict(mindspore_op_range.read(source, ledger.for_source("s", 0)))
    host = tables.get("host_info_record")
    got_host = sorted(host["ts_ns"].to_pylist()) if host is not None else []
    frames = tables.get("python_frame")
    got_frames = sorted((s, s + d) for s, d in zip(frames["start_ns"].to_pylist(), frames["dur_ns"].to_pylist())) \
        if frames is not None else []
    assert got_host == sorted(t for stack, s, e in want if not stack for t in ((s,) if s == e else (s, e)))
    assert got_frames == sorted((s, e) for stack, s, e in want if stack)
    rows = {}
    for e in ledger.events:
        rows[e.check, e.action] = rows.get((e.check, e.action), 0) + (e.rows or 0)
    assert rows.get(("malformed_record", "excluded"), 0) == counts["zero"]
    assert rows.get(("out_of_range", "dropped"), 0) == counts["bad"]
    assert rows.get(("negative_duration", "dropped"), 0) == counts["backwards"]
    assert rows.get(("bad_encoding", "repaired"), 0) == counts["utf8"]
    assert rows.get(("truncated", "dropped"), 0) == (1 if cut else 0)
    assert rows.get(("clock", "kept"), 0) == 0 and any(e.check == "clock" for e in ledger.events)
