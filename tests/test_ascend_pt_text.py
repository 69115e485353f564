"""torch_npu's text export (`*_ascend_pt`, Level1, 2 ranks) against the tool's own derived files in the same folders
(../shared/realdata/Ascend-msinsight, PROVENANCE-ascend-today.md; formats-ascend-today.md §2 and §4).

* op_statistic.csv: per (OP Type, Core Type) the count and total time of the device tasks (kernel_details less its
  HCCL rows), within 0.01 µs (the tool sums its own µs floats, kernel_details prints them rounded to 0.001 µs);
* step_trace_time.csv: per step, step_overlap's computation, communication not overlapped, overlapped,
  communication and free within 0.03 µs (the tool sums trace_view's Overlap Analysis events made from float µs,
  profpipe merges kernel_details' rounded durations: formats-ascend-today.md §4.4 finds ≤0.03 µs), bubble exactly,
  stage and preparing within 0.25 µs (the tool's float quantisation at 1.7e15 µs);
* api_statistic.csv: per (level, API name) the count and total time of the CANN calls (host_api), within 0.01 µs;
* counts: device_exec = kernel_details rows, compute tasks = ΣCount of op_statistic, host cpu_ops = operator_details
  rows + 1 (ProfilerStep#N), Python frames = python_function events, every compute task linked to the op that
  launched it (torch_to_npu), HCCL tasks all under their op, memory rows in MB = 2^20 B, memory_record.csv's derived
  PTA+GE rows recomputed exactly by memory_curve;
* health: the analysis is complete (exit 0, nothing dropped) and every model's data tests hold.

The same on fixtures/ascend_pt_text_min (fixtures/generators/ascend_pt_text_min.py: its step_trace_time.csv worked
out by hand), and damage tests on copies of it (tests/fuzzing.py): a kernel_details.csv cut at any byte keeps exactly
its complete rows with their durations, and a start time or duration replaced by any decimal is read exactly, by
anything else is an error or a ledger row naming the file.
"""
from __future__ import annotations

import csv
import json
import shutil
from collections import Counter
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES, realdata, run
from fuzzing import BAD_NUMBERS, FUZZ, ReadOutcome, byte_flips, read_damaged, truncations
from profpipe.ingest.lines import MAX_NS
from profpipe.errors import EXIT_COMPLETE
from profpipe.health import LOSSY_ACTIONS
from profpipe.model_checks import check_models

LEVEL1 = "Ascend-msinsight/test/data/pytorch/text/level1"
RANKS = (0, 1)
US = Decimal(1000)


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory):
    """The analysis of the two-rank text folder (one run for the module)."""
    return run(realdata(LEVEL1), tmp_path_factory.mktemp("ascend_pt") / "out")


def _output(rank: int, name: str) -> Path:
    return realdata(LEVEL1) / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / name


def _rows(rank: int, name: str) -> list[dict[str, str]]:
    with open(_output(rank, name), newline="") as handle:
        return list(csv.DictReader(handle))


def _query(result, sql: str, *params) -> list[tuple]:
    with duckdb.connect(str(result.output / "profile.duckdb"), read_only=True) as con:
        return con.execute(sql, list(params)).fetchall()


def _us(ns: int) -> Decimal:
    return Decimal(ns) / US


def test_the_analysis_is_complete_and_its_models_hold(analysed) -> None:
    lossy = [(r["check_name"], r["action"], r["message"]) for r in analysed.health["rows"]
             if r["action"] in LOSSY_ACTIONS]
    assert lossy == [] and analysed.skipped == []
    assert analysed.exit_code == EXIT_COMPLETE
    assert analysed.ranks == list(RANKS)
    with duckdb.connect(str(analysed.output / "profile.duckdb"), read_only=True) as con:
        assert check_models(con) == []


@pytest.mark.parametrize("rank", RANKS)
def test_op_statistic_per_type_and_core(analysed, rank: int) -> None:
    expected = {(r["OP Type"], r["Core Type"]): (int(r["Count"]), Decimal(r["Total Time(us)"]))
                for r in _rows(rank, "op_statistic.csv")}
    got = {(op_type, core): (count, _us(total)) for op_type, core, count, total in _query(
        analysed, "SELECT t.op_type, t.task_type, count(*), sum(e.dur_ns) FROM device_exec e JOIN task_desc t "
                  "ON t.rank = e.rank AND t.op_name = e.name AND t.task_id = e.task_id AND t.stream_id = e.stream_id "
                  "WHERE e.rank = ? AND e.kind = 'task' GROUP BY ALL", rank)}
    assert got.keys() == expected.keys()
    for key, (count, total) in expected.items():
        assert got[key][0] == count, key
        assert abs(got[key][1] - total) <= Decimal("0.01"), key
    # the mart of op types adds the same tasks (over the core types of a type)
    by_type: dict[str, Decimal] = {}
    for (op_type, _), (_, total) in expected.items():
        by_type[op_type] = by_type.get(op_type, Decimal(0)) + total
    mart = dict(_query(analysed, "SELECT op_type, total_ns FROM device_op_type_stats WHERE rank = ?", rank))
    assert mart.keys() == by_type.keys()
    assert all(abs(_us(mart[t]) - by_type[t]) <= Decimal("0.01") * 2 for t in by_type)


@pytest.mark.parametrize("rank", RANKS)
def test_step_overlap_equals_step_trace_time(analysed, rank: int) -> None:
    expected = {int(r["Step"]): r for r in _rows(rank, "step_trace_time.csv")}
    got = {row[0]: row[1:] for row in _query(
        analysed, "SELECT step, computation_ns, pure_communication_ns, overlapped_communication_ns, communication_ns, "
                  "free_ns, total_ns - bubble_ns, bubble_ns, preparing_ns, stage_ns, total_ns FROM step_overlap "
                  "WHERE rank = ?", rank)}
    assert got.keys() == expected.keys() == {50}
    for step, row in expected.items():
        computing, not_overlapped, overlapped, communication, free, stage, bubble, preparing, ours, total = got[step]
        close = {"Computing": computing, "Communication(Not Overlapped)": not_overlapped, "Overlapped": overlapped,
                 "Communication": communication, "Free": free}
        for column, ns in close.items():
            assert abs(_us(ns) - Decimal(row[column])) <= Decimal("0.03"), column
        assert _us(bubble) == Decimal(row["Bubble"]) == 0
        assert abs(_us(not_overlapped - bubble)
                   - Decimal(row["Communication(Not Overlapped and Exclude Receive)"])) <= Decimal("0.03")
        assert abs(_us(stage) - Decimal(row["Stage"])) <= Decimal("0.25")
        assert abs(_us(preparing) - Decimal(row["Preparing"])) <= Decimal("0.25")
        # invariants: the window is computation, communication not hidden and free time; no Receive op here
        assert computing + not_overlapped + free == total == ours
        assert overlapped + not_overlapped == communication


@pytest.mark.parametrize("rank", RANKS)
def test_counts_against_the_files(analysed, rank: int) -> None:
    kernels = _rows(rank, "kernel_details.csv")
    comm = [r for r in kernels if r["Accelerator Core"] in ("HCCL", "COMMUNICATION")]
    assert _query(analysed, "SELECT count(*) FROM device_exec WHERE rank = ?", rank) == [(len(kernels),)]
    tasks = sum(int(r["Count"]) for r in _rows(rank, "op_statistic.csv"))
    assert tasks == len(kernels) - len(comm) == 187
    # comm rows (whole HCCL ops) are no compute task; every compute task is linked to the op that launched it
    assert _query(analysed, "SELECT count(*), count(op_index) FROM device_exec WHERE rank = ? AND kind = 'task'",
                  rank) == [(tasks, tasks)]
    assert _query(analysed, "SELECT count(*) FROM device_exec WHERE rank = ? AND kind = 'task' "
                            "AND (name LIKE 'hcom_%')", rank) == [(0,)]
    launched = _query(analysed, "SELECT count(*) FROM device_exec e JOIN host_op h ON h.rank = e.rank "
                                "AND h.op_index = e.op_index AND e.start_ns >= h.start_ns WHERE e.rank = ? "
                                "AND e.kind = 'task'", rank)
    assert launched == [(tasks,)]  # a task starts after the op that launched it
    operators = _rows(rank, "operator_details.csv")
    cpu_ops = _query(analysed, "SELECT count(*), count(*) FILTER (WHERE op_name LIKE 'ProfilerStep#%'), "
                               "count(call_stack), count(input_dims) FROM host_op "
                               "WHERE rank = ? AND category = 'cpu_op'",
                     rank)[0]
    trace = json.loads(_output(rank, "trace_view.json").read_text())
    args = [e["args"] for e in trace if e.get("cat") == "cpu_op"]
    assert cpu_ops == (len(operators) + 1, 1, sum(bool(a.get("Call stack")) for a in args),
                       sum("Input Dims" in a for a in args))
    # Input Dims "32,3,224,224;\r\n64;\r\n" as Kineto's JSON lists [[32, 3, 224, 224], [64], []]
    expected = Counter(json.dumps([[int(d) for d in part.split(",")] if part else []
                                   for part in a["Input Dims"].replace("\r\n", "").split(";")])
                       for a in args if "Input Dims" in a)
    assert Counter(json.dumps(json.loads(d)) for (d,) in _query(
        analysed, "SELECT input_dims FROM host_op WHERE rank = ? AND input_dims IS NOT NULL", rank)) == expected
    frames = sum(1 for e in trace if e.get("cat") == "python_function")
    assert _query(analysed, "SELECT count(*), count(*) FILTER (WHERE parent_index = -1) FROM python_frame "
                            "WHERE rank = ?", rank) == [(frames, 1)]
    cann = sum(1 for e in trace if e.get("ph") == "X" and e["pid"] == next(
        m["pid"] for m in trace if m.get("name") == "process_name" and m["args"]["name"] == "CANN"))
    assert _query(analysed, "SELECT count(*) FROM host_api WHERE rank = ?", rank) == [(cann,)]


@pytest.mark.parametrize("rank", RANKS)
def test_task_shapes_types_and_formats(analysed, rank: int) -> None:
    """kernel_details' Input/Output Shapes, Data Types and Formats of each compute task in task_desc, unquoted."""
    columns = ["Input Shapes", "Input Data Types", "Input Formats", "Output Shapes", "Output Data Types",
               "Output Formats"]
    expected = {(r["Name"], int(r["Task ID"]), int(r["Stream ID"])):
                tuple(None if r[c] == "N/A" else r[c].strip('"') for c in columns)
                for r in _rows(rank, "kernel_details.csv") if r["Accelerator Core"] != "HCCL"}
    got = {(name, task, stream): tuple(rest) for name, task, stream, *rest in _query(
        analysed, "SELECT op_name, task_id, stream_id, input_shapes, input_types, input_formats, output_shapes, "
                  "output_types, output_formats FROM task_desc WHERE rank = ?", rank)}
    assert got == expected


@pytest.mark.parametrize("rank", RANKS)
def test_host_api_against_api_statistic(analysed, rank: int) -> None:
    """api_statistic.csv = the CANN calls grouped by level and the name after '@' (formats-ascend-today.md §4.9)."""
    expected = {(r["Level"], r["API Name"]): (int(r["Count"]), Decimal(r["Time(us)"]))
                for r in _rows(rank, "api_statistic.csv")}
    got = {(category.removeprefix("cann_"), name): (count, _us(total)) for category, name, count, total in _query(
        analysed, "SELECT category, split_part(name, '@', 2), count(*), sum(dur_ns) FROM host_api WHERE rank = ? "
                  "GROUP BY ALL", rank)}
    assert got.keys() == expected.keys()
    assert all(got[k][0] == expected[k][0] and abs(got[k][1] - expected[k][1]) <= Decimal("0.01") for k in expected)


@pytest.mark.parametrize("rank", RANKS)
def test_hccl_ops_and_their_tasks(analysed, rank: int) -> None:
    comm = {r["Name"]: Decimal(r["Duration(us)"]) for r in _rows(rank, "kernel_details.csv")
            if r["Accelerator Core"] == "HCCL"}
    ops = dict(_query(analysed, "SELECT op_name, end_ns - start_ns FROM comm_op_stats WHERE rank = ?", rank))
    assert ops.keys() == comm.keys()
    # an op's span over its tasks is the op itself (kernel_details rounds its start and length to 0.001 µs)
    assert all(abs(_us(ops[name]) - comm[name]) <= Decimal("0.002") for name in comm)
    assert _query(analysed, "SELECT count(*), count(iteration) FROM comm_task WHERE rank = ?", rank) == [(296, 296)]
    # each HCCL op is linked to the op that launched it (torch_to_npu), whose device time operator_details gives
    launched = _query(analysed, "SELECT h.op_name, sum(e.dur_ns) FROM device_exec e JOIN host_op h ON h.rank = e.rank "
                                "AND h.op_index = e.op_index WHERE e.rank = ? AND e.kind = 'sync' GROUP BY ALL", rank)
    device = {}
    for row in _rows(rank, "operator_details.csv"):
        device[row["Name"]] = device.get(row["Name"], Decimal(0)) + Decimal(row["Device Self Duration(us)"])
    assert [name for name, _ in launched] == ["HcclAllreduce"]
    assert abs(_us(launched[0][1]) - device["HcclAllreduce"]) <= Decimal("0.01")


@pytest.mark.parametrize("rank", RANKS)
def test_memory_files(analysed, rank: int) -> None:
    modules = _rows(rank, "npu_module_mem.csv")
    assert _query(analysed, "SELECT count(*) FROM memory_module WHERE rank = ?", rank) == [(len(modules),)]
    top = max(Decimal(r["Total Reserved(MB)"]) for r in modules)
    assert _query(analysed, "SELECT max(reserved_bytes) FROM memory_module WHERE rank = ?", rank) == [
        (int(top * 2**20),)]
    records = [r for r in _rows(rank, "memory_record.csv") if r["Component"] != "PTA+GE"]
    pta = max(Decimal(r["Total Reserved(MB)"]) for r in records if r["Component"] == "PTA")
    assert _query(analysed, "SELECT count(*), max(reserved_bytes) FILTER (WHERE component = 'PTA') FROM memory_record "
                            "WHERE rank = ?", rank) == [(len(records), int(pta * 2**20))]
    # the PTA+GE rows left out of memory_record are what memory_curve recomputes from the PTA and GE rows, exactly
    combined = Counter(tuple(int(Decimal(r[c].strip()) * (1000 if c.startswith("Time") else 2**20)) for c in
                             ("Timestamp(us)", "Total Allocated(MB)", "Total Reserved(MB)", "Total Active(MB)"))
                       for r in _rows(rank, "memory_record.csv") if r["Component"] == "PTA+GE")
    assert Counter(_query(analysed, "SELECT ts_ns, allocated_bytes, reserved_bytes, active_bytes FROM memory_curve "
                                    "WHERE rank = ? AND component = 'PTA+GE'", rank)) == combined


@pytest.mark.parametrize("rank", RANKS)
def test_pmu_and_l2_cache(analysed, rank: int) -> None:
    """kernel_details' PMU columns -> device_exec_metric (N/A cells of DSA_SQE and comm rows give none; µs -> ns);
    l2_cache.csv's rows are kernel_details' tasks (formats-ascend-today.md §4.9)."""
    kernels = _rows(rank, "kernel_details.csv")
    measured = [r for r in kernels if r["aicore_time(us)"] != "N/A"]
    metrics = [c for c in kernels[0] if c[:3] in ("aic", "aiv", "cub")]
    assert _query(analysed, "SELECT count(*) FROM device_exec_metric WHERE rank = ?", rank) == [
        (len(measured) * len(metrics),)]
    first = measured[0]
    got = dict(_query(analysed, "SELECT core || '_' || metric, value FROM device_exec_metric WHERE rank = ? AND "
                                "start_ns = ? AND metric IN ('mac_ratio', 'vec_time')", rank,
                      int(Decimal(first["Start Time(us)"].strip()) * US)))
    assert got == pytest.approx({"aic_mac_ratio": float(first["aic_mac_ratio"]),
                                 "aiv_vec_time": float(Decimal(first["aiv_vec_time(us)"]) * US)})
    l2 = _rows(rank, "l2_cache.csv")
    assert _query(analysed, "SELECT count(*), count(*) FILTER (WHERE e.name = l.op_name) FROM l2_cache_task l "
                            "JOIN device_exec e ON e.rank = l.rank AND e.stream_id = l.stream_id "
                            "AND e.task_id = l.task_id WHERE l.rank = ?", rank) == [(len(l2), len(l2))]


# --- the hand-made fixture ----------------------------------------------------------------------------------------

MIN = FIXTURES / "ascend_pt_text_min"
KERNELS = Path("rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv")


def _kernel_rows(data: bytes) -> list[dict[str, str]]:
    """The complete rows of a kernel_details.csv's bytes (a last line without its newline is no row)."""
    text = data[:data.rfind(b"\n") + 1].decode()
    return list(csv.DictReader(text.splitlines()))


def test_fixture_reads_as_its_step_trace_time(tmp_path: Path) -> None:
    result = run(MIN, tmp_path / "out")
    assert result.exit_code == EXIT_COMPLETE and result.skipped == []
    with duckdb.connect(str(result.output / "profile.duckdb"), read_only=True) as con:
        assert check_models(con) == []
    row = _rows_of(MIN / "rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/step_trace_time.csv")[0]
    got = _query(result, "SELECT step, computation_ns, pure_communication_ns, overlapped_communication_ns, "
                         "communication_ns, free_ns, total_ns - bubble_ns, bubble_ns, preparing_ns FROM step_overlap")
    columns = ["Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free", "Stage",
               "Bubble", "Preparing"]
    assert got == [(1, *[int(Decimal(row[c]) * US) for c in columns[1:]])]
    # the comm row is no compute task, DSA_SQE is one; each task is linked to the op that launched it
    assert _query(result, "SELECT e.name, e.kind, h.op_name FROM device_exec e LEFT JOIN host_op h "
                          "ON h.op_index = e.op_index ORDER BY e.start_ns") == [
        ("Conv2D1", "task", "aten::conv2d"), ("Add1", "task", "aten::add"),
        ("hcom_allReduce__1_0_1", "sync", "c10d::allreduce_"),
        ("aclnnDropoutGenMaskV2_DSAGenBitMask", "task", "aten::dropout"), ("MatMul1", "task", "aten::mm")]
    assert _query(result, "SELECT op_name, parent_index, input_dims, input_types, call_stack FROM host_op "
                          "WHERE op_name = 'aten::conv2d'") == [
        ("aten::conv2d", 0, "[[32,3,224,224],[64,3,11,11],[64]]", '["float","float","float"]',
         "main.py(12): forward;main.py(20): train")]
    assert _query(result, "SELECT count(*), count(iteration), min(op_name), sum(bytes) FROM comm_task") == [
        (3, 3, "hcom_allReduce__1_0_1", 4096)]
    assert _query(result, "SELECT name, parent_index FROM python_frame ORDER BY frame_index") == [
        ("<string>(1): <module>", -1), ("main.py(20): train", 0)]
    assert _query(result, "SELECT max(reserved_bytes), count(*) FROM memory_module") == [
        (int(Decimal("12.5") * 2**20), 3)]
    assert _query(result, "SELECT count(*), sum(reserved_bytes) FILTER (WHERE component = 'PTA') "
                          "FROM memory_record") == [(3, 1452 * 2**20)]
    assert _query(result, "SELECT count(*) FROM host_api") == [(2,)]
    assert _query(result, "SELECT DISTINCT framework FROM run_info") == [("pytorch",)]
    assert _query(result, "SELECT component, owner, bytes, release_ns - alloc_ns FROM memory_block "
                          "ORDER BY alloc_ns") == [
        ("PTA", "aten::empty_strided", int(Decimal("18816.5") * 1024), None),
        ("PTA", "aten::_convolution", int(Decimal("25009.5") * 1024), 430_000)]


def _rows_of(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def _damaged_copy(tmp_path: Path, data: bytes) -> tuple[Path, Path]:
    folder = tmp_path / "input"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(MIN, folder)
    (folder / KERNELS).write_bytes(data)
    return folder, folder / KERNELS


def _lossy_about(outcome: ReadOutcome, target: Path) -> bool:
    return any(str(target) in str(e) for e in outcome.errors) or any(
        e.lossy and (e.path == str(target) or str(target) in e.message) for e in outcome.health)


def _durations(outcome: ReadOutcome) -> list[tuple[str, int]]:
    execs = outcome.tables.get("device_exec")
    return [] if execs is None else sorted(zip(execs.column("name").to_pylist(), execs.column("dur_ns").to_pylist()))


@FUZZ
@given(data=st.data())
def test_kernel_details_cut_at_any_byte_keeps_its_complete_rows(data: st.DataObject, tmp_path: Path) -> None:
    original = (MIN / KERNELS).read_bytes()
    damaged = data.draw(truncations(original))
    folder, target = _damaged_copy(tmp_path, damaged)
    outcome = read_damaged(folder)
    kept = _kernel_rows(damaged)
    if outcome.errors:
        assert _lossy_about(outcome, target)
        return
    assert _durations(outcome) == sorted((r["Name"], int(Decimal(r["Duration(us)"]) * US)) for r in kept)
    partial = damaged[damaged.rfind(b"\n") + 1:]
    if partial.strip():  # a row cut short is left out and said so
        assert _lossy_about(outcome, target)


@FUZZ
@given(row=st.integers(0, 4), column=st.sampled_from(["Start Time(us)", "Duration(us)"]),
       value=st.one_of(st.decimals(0, 10**7, places=3, allow_nan=False).map(lambda d: str(d).encode()),
                       st.sampled_from(BAD_NUMBERS)))
def test_kernel_details_time_replaced_is_read_exactly_or_reported(row: int, column: str, value: bytes,
                                                                  tmp_path: Path) -> None:
    original = (MIN / KERNELS).read_bytes()
    lines = original.split(b"\r\n")
    header = lines[0].decode().split(",")
    cells = lines[row + 1].split(b",")
    cells[header.index(column)] = value + (b"\t" if column.startswith("Start") else b"")
    lines[row + 1] = b",".join(cells)
    damaged = b"\r\n".join(lines)
    folder, target = _damaged_copy(tmp_path, damaged)
    outcome = read_damaged(folder)
    names = [r["Name"] for r in _kernel_rows(original)]
    text = value.decode(errors="replace")
    try:
        number: Decimal | None = Decimal(text)
    except ArithmeticError:
        number = None
    plain = number is not None and number.is_finite() and 0 <= number <= 10**7 and text == text.strip()
    if plain and "e" in text.lower():
        return  # an exponent form of a valid time: either reading is fair
    if not plain:  # never a valid time: an error or a lossy ledger row names the file, nothing changes in silence
        assert _lossy_about(outcome, target), (value, outcome.errors, outcome.health)
        return
    execs = outcome.tables["device_exec"]
    got = dict(zip(execs.column("name").to_pylist(),
                   execs.column("start_ns" if column.startswith("Start") else "dur_ns").to_pylist()))
    assert set(got) == set(names)
    assert got[names[row]] == int(number * US)


def _rewritten(tmp_path: Path, header: list[str], rows: list[list[str]]) -> Path:
    """A copy of the fixture whose kernel_details.csv holds `rows` under `header` (CRLF; the cells as given: the
    starts keep their tab)."""
    folder, target = _damaged_copy(tmp_path, b"")
    with open(target, "w", newline="") as handle:
        csv.writer(handle, lineterminator="\r\n").writerows([header, *rows])
    return folder


def test_level0_kernel_details_without_ids_or_types(tmp_path: Path) -> None:
    """Level0's 8 columns: Type N/A everywhere, Accelerator Core N/A but on comm rows, no task or stream ids."""
    rows = _kernel_rows((MIN / KERNELS).read_bytes())
    header = ["Step Id", "Name", "Type", "Accelerator Core", "Start Time(us)", "Duration(us)", "Wait Time(us)",
              "Block Dim"]
    folder = _rewritten(tmp_path, header, [
        [r["Step Id"], r["Name"], "N/A", "HCCL" if r["Accelerator Core"] == "HCCL" else "N/A", r["Start Time(us)"],
         r["Duration(us)"], r["Wait Time(us)"], "0"] for r in rows])
    outcome = read_damaged(folder)
    assert not outcome.lossy, outcome.health
    execs = outcome.tables["device_exec"]
    assert sorted(zip(execs.column("name").to_pylist(), execs.column("kind").to_pylist(),
                      execs.column("dur_ns").to_pylist())) == sorted(
        (r["Name"], "sync" if r["Accelerator Core"] == "HCCL" else "task", int(Decimal(r["Duration(us)"]) * US))
        for r in rows)
    assert outcome.rows("task_desc") == 0


def test_device_id_column_communication_core_and_mix_aic(tmp_path: Path) -> None:
    """torch_npu 2.7's kernel_details: a Device_id column after Step Id, comm rows of core COMMUNICATION, MIX_AIC."""
    rows = _kernel_rows((MIN / KERNELS).read_bytes())
    header = list(rows[0])
    renamed = {"HCCL": "COMMUNICATION", "AI_CORE": "MIX_AIC"}
    folder = _rewritten(tmp_path, [header[0], "Device_id", *header[1:]], [
        [r[header[0]], "0", *[renamed.get(r[c], r[c]) if c == "Accelerator Core" else r[c] for c in header[1:]]]
        for r in rows])
    outcome = read_damaged(folder)
    assert not outcome.lossy, outcome.health
    execs = outcome.tables["device_exec"]
    assert sorted(zip(execs.column("name").to_pylist(), execs.column("kind").to_pylist())) == sorted(
        (r["Name"], "sync" if r["Accelerator Core"] == "HCCL" else "task") for r in rows)
    tasks = outcome.tables["task_desc"]
    assert sorted(zip(tasks.column("op_name").to_pylist(), tasks.column("task_type").to_pylist(),
                      tasks.column("graph_id").to_pylist())) == sorted(
        (r["Name"], renamed.get(r["Accelerator Core"], r["Accelerator Core"]), None) for r in rows
        if r["Accelerator Core"] != "HCCL")


TRACE = Path("rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json")
MODULES = Path("rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/npu_module_mem.csv")


def _copy_with(tmp_path: Path, relative: Path, data: bytes) -> tuple[Path, Path]:
    folder, _ = _damaged_copy(tmp_path, (MIN / KERNELS).read_bytes())
    (folder / relative).write_bytes(data)
    return folder, folder / relative


@FUZZ
@given(op=st.integers(0, 5), key=st.sampled_from(["ts", "dur"]),
       value=st.one_of(st.decimals(0, 10**6, places=3, allow_nan=False).map(str),
                       st.sampled_from(["nan", "-1", "1e400", "abc", "", "99999999999999999999999"])))
def test_trace_cpu_op_time_replaced_is_read_exactly_or_reported(op: int, key: str, value: str, tmp_path: Path) -> None:
    """A torch_npu cpu_op's ts (a string of µs) or dur (a number) replaced: a plain decimal is read exactly into
    host_op; anything else is left out with a ledger row naming the trace, never read as another number."""
    events = json.loads((MIN / TRACE).read_text())
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    target_op = ops[op]
    name = target_op["name"]
    target_op[key] = value if key == "ts" else ("__RAW__" + value)
    text = json.dumps(events).replace(f'"__RAW__{value}"', value if value not in ("", "abc") else json.dumps(value))
    folder, target = _copy_with(tmp_path, TRACE, text.encode())
    outcome = read_damaged(folder)
    try:
        number: Decimal | None = Decimal(value)
    except ArithmeticError:
        number = None
    plain = number is not None and number.is_finite() and 0 <= number <= 10**6 and "e" not in value.lower()
    hosts = outcome.tables.get("host_op")
    rows = [] if hosts is None else [r for r in hosts.to_pylist() if r["op_name"] == name and r["category"] == "cpu_op"]
    if plain:
        assert len(rows) == 1
        assert rows[0]["start_ns" if key == "ts" else "dur_ns"] == int(number * US)
    else:
        assert rows == [] and _lossy_about(outcome, target), (value, outcome.errors, outcome.health)


@FUZZ
@given(data=st.data())
def test_npu_module_mem_cut_at_any_byte_keeps_its_complete_rows(data: st.DataObject, tmp_path: Path) -> None:
    original = (MIN / MODULES).read_bytes()
    damaged = data.draw(truncations(original))
    folder, target = _copy_with(tmp_path, MODULES, damaged)
    outcome = read_damaged(folder)
    complete = damaged[:damaged.rfind(b"\n") + 1].decode()
    kept = [(r["Component"], int(Decimal(r["Total Reserved(MB)"]) * 2**20))
            for r in csv.DictReader(complete.splitlines())]
    modules = outcome.tables.get("memory_module")
    got = [] if modules is None else list(zip(modules.column("component").to_pylist(),
                                              modules.column("reserved_bytes").to_pylist()))
    assert sorted(got) == sorted(kept)
    if damaged[damaged.rfind(b"\n") + 1:].strip() or (damaged and b"\n" not in damaged):
        assert _lossy_about(outcome, target)


@pytest.mark.parametrize("relative", [KERNELS, TRACE, MODULES], ids=["kernel_details", "trace_view", "npu_module_mem"])
@FUZZ
@given(data=st.data())
def test_bytes_flipped_in_a_torch_npu_file(relative: Path, data: st.DataObject, tmp_path: Path) -> None:
    """Any bytes of kernel_details.csv, trace_view.json or npu_module_mem.csv flipped: no traceback (read_damaged), no
    negative or out-of-range time, and no more rows than the file holds."""
    original = (MIN / relative).read_bytes()
    folder, _ = _copy_with(tmp_path, relative, data.draw(byte_flips(original)))
    outcome = read_damaged(folder)
    for table in ("device_exec", "host_op", "comm_task", "python_frame", "host_api"):
        if table in outcome.tables:
            times = outcome.tables[table]
            assert all(d is None or 0 <= d <= MAX_NS for d in times.column("dur_ns").to_pylist())
            assert all(t is None or 0 <= t <= MAX_NS for t in times.column("start_ns").to_pylist())
    assert outcome.rows("device_exec") <= len(_kernel_rows((MIN / KERNELS).read_bytes()))
    assert outcome.rows("memory_module") <= 3
