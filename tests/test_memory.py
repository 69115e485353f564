"""MindSpore's Ascend memory files (profpipe/ingest/mindspore_memory.py) and the memory marts, against oracles:
the generator's ground truth (fixtures/ascend_memory/expected.json), MindSpore's own memory_record.csv in that
fixture (made by MindSpore's algorithm), msprof-analyze's peak rule, and a real MindSpore 2.10 CPU dump's
cpu_ms_memory_record file read in plain Python. Damage tests: hypothesis writes files with bad rows whose fate
is known, and checks the kept rows and the ledger's counts."""
from __future__ import annotations

import csv
import json
import shutil
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from conftest import FIXTURES, assert_generator_reproduces, query, run
from profpipe.discover import discover
from profpipe.health import HealthLedger
from profpipe.ingest import mindspore_memory

MEMORY = FIXTURES / "ascend_memory"
OUTPUT = MEMORY / "v2_4" / "profiler" / "host--1234_20260101000000000_ascend_ms" / "ASCEND_PROFILER_OUTPUT"
CPU = FIXTURES / "mindspore_cpu_memory"


def _bytes(text: str, scale: int) -> int:
    return int((Decimal(text) * scale).to_integral_value(rounding=ROUND_HALF_EVEN))


def test_the_generator_reproduces_the_fixture(tmp_path):
    assert_generator_reproduces("ascend_memory.py", MEMORY, tmp_path)


def test_discover_makes_one_memory_source_per_rank_and_profiler_folder():
    sources = [s for s in discover(MEMORY) if s.family == "mindspore_memory"]
    assert [(s.rank, s.directory.name, sorted(s.slices)) for s in sources] == [
        (0, "profiler", ["ms_operator", "ms_record", "msprof:memory_record", "msprof:npu_mem", "msprof:npu_module_mem",
                         "msprof:operator_memory", "msprof:static_op_mem", "output_module", "output_operator",
                         "output_record", "output_static"]),
        (1, "worker_7_20260101000000000_ascend_ms", ["output_operator"])]


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("memory") / "out"
    run(MEMORY, folder)
    return folder


@pytest.fixture(scope="module")
def raw_out(tmp_path_factory) -> Path:
    """The fixture without MindSpore's memory_record.csv: the records come from the files it was made from."""
    work = tmp_path_factory.mktemp("memory_raw")
    shutil.copytree(MEMORY, work / "in")
    (work / "in" / OUTPUT.relative_to(MEMORY) / "memory_record.csv").unlink()
    run(work / "in", work / "out")
    return work / "out"


def test_tables_hold_the_generators_ground_truth(out, raw_out):
    expected = json.loads((MEMORY / "expected.json").read_text())
    for folder in (out, raw_out):
        records = query(folder, "SELECT rank, component, ts_ns, allocated_bytes, reserved_bytes, active_bytes "
                                "FROM memory_record")
        assert sorted(map(list, records), key=str) == expected["memory_record"]
    assert list(map(list, query(out, "SELECT rank, component, ts_ns, reserved_bytes FROM memory_module ORDER BY seq"))) \
        == expected["memory_module"]
    assert list(map(list, query(out, "SELECT rank, op_name, model_name, graph_id, node_index_start, node_index_end, "
                                     "bytes FROM static_op_memory ORDER BY seq"))) == expected["static_op_memory"]
    blocks = query(out, "SELECT rank, component, owner, bytes, alloc_ns, release_ns, alloc_allocated_bytes, "
                        "alloc_reserved_bytes, release_allocated_bytes, release_reserved_bytes FROM memory_block")
    assert sorted(map(list, blocks), key=str) == expected["memory_block"]


def test_the_copies_supersede_what_they_were_made_from(out):
    # cpu_ms_memory_record, msprof's memory_record, npu_mem, npu_module_mem and static_op_mem, the flat
    # operator_memory_0.csv: one ledger row (per source, check and action) of six events
    assert query(out, "SELECT rank, action, events FROM trace_health WHERE check_name = 'superseded'") == [
        (0, "superseded", 6)]


@pytest.mark.parametrize("which", ["output", "raw"])
def test_memory_curve_is_mindspores_memory_record(out, raw_out, which):
    """Every row of MindSpore's memory_record.csv (MB = KB / 1000), MindSpore+GE included, is a memory_curve row,
    from MindSpore's own file or recomputed from the msprof and MindSpore files it was made from."""
    with open(OUTPUT / "memory_record.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    expected = sorted((r["Component"], _bytes(r["Timestamp(us)"], 1000), _bytes(r["Total Allocated(MB)"], 1024000),
                       _bytes(r["Total Reserved(MB)"], 1024000), _bytes(r["Total Active(MB)"], 1024000)) for r in rows)
    got = query(out if which == "output" else raw_out,
                "SELECT component, ts_ns, coalesce(allocated_bytes, 0), reserved_bytes, coalesce(active_bytes, 0) "
                "FROM memory_curve WHERE kind = 'component'")
    assert sorted(got) == expected


def test_memory_peak_gives_msprof_analyzes_memory_used(out):
    """msprof-analyze: the most Total Reserved(MB) over every row of memory_record.csv."""
    with open(OUTPUT / "memory_record.csv", newline="") as handle:
        most = max(Decimal(r["Total Reserved(MB)"]) for r in csv.DictReader(handle))
    got = query(out, "SELECT max(peak_reserved_bytes) FROM memory_peak WHERE rank = 0 AND kind = 'component'")
    assert got == [(_bytes(str(most), 1024000),)]


def test_memory_counters_are_in_the_timeline(out):
    trace = json.loads((out / "timeline" / "trace.json").read_text())
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name"}
    counters = {e["name"] for e in trace["traceEvents"] if e["ph"] == "C" and names[e["pid"]] == "rank 0"}
    assert {"Memory GE NPU:0 reserved", "Memory MindSpore allocated", "Memory MindSpore+GE reserved",
            "Memory APP reserved", "Memory RUNTIME NPU:0 reserved"} <= counters
    assert "Memory HCCL NPU:0 reserved" not in counters  # its only sample is msprof's -1: no value, no counter


def test_a_real_mindspore_cpu_dump(tmp_path):
    """MindSpore 2.10 CPU writes its allocator's totals (cpu_ms_memory_record_0.txt); read in plain Python, the
    file gives the curve and the peaks."""
    (record,) = CPU.glob("*/FRAMEWORK/cpu_ms_memory_record_0.txt")
    with open(record, newline="") as handle:
        rows = [tuple(int(v) for v in r.values()) for r in csv.DictReader(handle)]
    run(CPU, tmp_path / "out")
    got = query(tmp_path / "out", "SELECT ts_ns, allocated_bytes, reserved_bytes, active_bytes FROM memory_curve "
                                   "WHERE component = 'MindSpore' ORDER BY seq")
    assert got == rows
    peak_allocated = max(r[1] for r in rows)
    assert query(tmp_path / "out", "SELECT samples, peak_allocated_bytes, peak_allocated_ts_ns, peak_active_bytes, "
                                   "end_allocated_bytes, capture FROM memory_peak") == [
        (len(rows), peak_allocated, min(r[0] for r in rows if r[1] == peak_allocated), max(r[3] for r in rows),
         rows[-1][1], 0)]
    # one capture: the memory source joins the framework source of the same run
    assert query(tmp_path / "out", "SELECT DISTINCT capture FROM host_op") == [(0,)]


# --- damage -----------------------------------------------------------------------------------------------

_GOOD = st.tuples(st.integers(0, 2**50), st.integers(0, 2**40), st.integers(0, 2**40), st.integers(0, 2**40))
_BAD = st.sampled_from(["x", "-5", "nan", "", "1e30"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(_GOOD, st.one_of(st.none(), st.tuples(st.integers(0, 3), _BAD))), max_size=25),
       cut=st.booleans(), repeat=st.booleans())
@example(rows=[((0, 0, 0, 0), None), ((0, 0, 0, 0), (3, "")), ((0, 0, 0, 0), (3, ""))], cut=False, repeat=False)
def test_damaged_mindspore_records_keep_every_good_row_and_count_the_rest(tmp_path_factory, rows, cut, repeat):
    """Rows with a bad field (not a number, negative, beyond 2^62, empty time) are dropped and counted; repeats are
    counted once; a cut last line is dropped and reported; every other row is kept with its exact values."""
    folder = tmp_path_factory.mktemp("damage")
    lines, kept, bad, seen = ["Timestamp(ns),Total Allocated(Byte),Total Reserved(Byte),Total Active(Byte)"], [], 0, set()
    for values, damage in rows:
        fields = [str(v) for v in values]
        if damage is not None:
            fields[damage[0]] = damage[1]
        line = ",".join(fields)
        if line in seen:
            continue  # an exact repeat (of any line) is written below on purpose only
        if damage is not None and damage[0] > 0 and damage[1] == "":
            kept.append((values[0], *[None if i == damage[0] else values[i] for i in range(1, 4)]))
            seen.add(line)
        elif damage is None:
            kept.append(values)
            seen.add(line)
        else:
            bad += 1
            seen.add(line)
        lines.append(line)
    whole = [",".join(map(str, v)) for v in kept if None not in v]
    repeats = 1 if repeat and whole else 0
    if repeats:
        lines.append(whole[0])  # an exact repeat of a kept row: counted once
    text = "\n".join(lines) + "\n" + ("123,4" if cut else "")
    path = folder / "cpu_ms_memory_record_0.txt"
    path.write_text(text)
    ledger = HealthLedger()
    warn = ledger.for_source("s", 0)
    frame = mindspore_memory._ms_record(path, warn)
    assert [tuple(r) for r in frame.select("ts_ns", "allocated_bytes", "reserved_bytes", "active_bytes").iter_rows()] \
        == [tuple(v) for v in kept]
    counted = {(e.check, e.action): 0 for e in ledger.events}
    for e in ledger.events:
        counted[e.check, e.action] += e.rows or 0
    dropped = sum(n for (check, action), n in counted.items() if action == "dropped" and check != "truncated"
                  and check != "duplicate_record")
    assert dropped == bad
    assert counted.get(("truncated", "dropped"), 0) == (1 if cut else 0)
    assert counted.get(("duplicate_record", "dropped"), 0) == repeats


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(blocks=st.lists(st.tuples(st.integers(0, 10**7), st.integers(0, 10**12), st.one_of(st.none(), st.integers(-5, 10**9))),
                       min_size=1, max_size=15))
def test_damaged_operator_memory_blocks(tmp_path_factory, blocks):
    """2.3-2.4 operator_memory: sizes and times exact (KB x 1024, µs x 1000); a negative duration is dropped and
    counted, an empty one is a block never released."""
    folder = tmp_path_factory.mktemp("blocks")
    header = ("Name,Size(KB),Allocation Time(us),Duration(us),Allocation Total Allocated(MB),Allocation Total "
              "Reserved(MB),Release Total Allocated(MB),Release Total Reserved(MB),Device,")
    lines, expected, negative = [header], [], 0
    for i, (size, alloc, dur) in enumerate(blocks):
        kb, alloc_us = Decimal(size) / 1024, Decimal(alloc) / 1000
        dur_text = "" if dur is None else str(Decimal(dur) / 1000)
        lines.append(f"op{i},{kb},{alloc_us},{dur_text},1,2,,,NPU:0,")
        if dur is not None and dur < 0:
            negative += 1
        else:
            expected.append((f"op{i}", size, alloc, None if dur is None else alloc + dur, MIB, 2 * MIB))
    path = folder / "operator_memory_0.csv"
    path.write_text("\n".join(lines) + "\n")
    ledger = HealthLedger()
    frame = mindspore_memory._operator(path, ledger.for_source("s", 0))
    got = [tuple(r) for r in frame.select("owner", "bytes", "alloc_ns", "release_ns", "alloc_allocated_bytes",
                                          "alloc_reserved_bytes").iter_rows()]
    assert got == expected
    assert sum(e.rows or 0 for e in ledger.events if e.check == "negative_duration") == negative


MIB = 1 << 20


def test_a_file_that_cannot_be_read_costs_only_its_rows(tmp_path):
    shutil.copytree(MEMORY / "v2_4", tmp_path / "in")
    msprof = next((tmp_path / "in").rglob("mindstudio_profiler_output"))
    (msprof / "npu_module_mem_20260101000000.csv").write_bytes(b"\xff\xfe not text\n")
    for copy in (tmp_path / "in").rglob("ASCEND_PROFILER_OUTPUT"):
        shutil.rmtree(copy)
    run(tmp_path / "in", tmp_path / "out")
    assert query(tmp_path / "out", "SELECT count(*) FROM memory_module") == [(0,)]
    assert query(tmp_path / "out", "SELECT count(*) FROM memory_record") == [(8,)]  # 3 GE + 3 MindSpore + 2 APP
    assert query(tmp_path / "out", "SELECT check_name, action FROM trace_health WHERE first_file LIKE "
                                   "'%npu_module_mem%'") == [("malformed_record", "dropped")]
