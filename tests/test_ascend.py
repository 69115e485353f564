"""Raw Ascend dumps (eras A/B/C): round trip of the generated fixtures, MindSpore's own outputs
for the real JOB3 and the MindInsight fixtures, FP/BP points, and bad input."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, assert_generator_reproduces, query, realdata, run
from fuzzing import ReadOutcome, read_damaged
from profpipe.errors import InputError, ProfpipeError
from profpipe.ingest import binary_records
from profpipe.options import ReportOptions

ERA_A = FIXTURES / "ascend_raw" / "era_a"
ERA_C = FIXTURES / "ascend_raw" / "era_c"
RESOURCE = "mindinsight/tests/utils/resource"
R10_FORK = "mindspore-r1.0-fork/tests/ut/data/profiler_data"



def _expected(folder: Path) -> dict:
    return json.loads(next(folder.rglob("expected.json")).read_text())


# ---- generated fixtures: generate -> read -> same values -------------------------------------

@pytest.mark.parametrize("chunk_records", [1 << 20, 3], ids=["one_chunk", "3_record_chunks"])
@pytest.mark.parametrize("folder", [ERA_A, ERA_C], ids=["era_a", "era_c"])
def test_fixture_round_trip(folder: Path, chunk_records: int, tmp_path: Path,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Also with tiny read chunks, so start/end pairs and records straddle chunk boundaries."""
    monkeypatch.setattr(binary_records, "CHUNK_RECORDS", chunk_records)
    expected = _expected(folder)
    result = run(folder, tmp_path / "out")
    out = result.output
    ops = {name: (executions, tasks, total) for name, executions, tasks, total in query(
        out, "SELECT op_name, executions, tasks, total_ns FROM device_op_stats")}
    assert ops == {name: (o["executions"], o["tasks"], o["total_ns"]) for name, o in expected["ops"].items()}
    steps = query(out, "SELECT step, start_ns, fp_ns, bp_ns, end_ns, fp_op, bp_op FROM step_phases ORDER BY step")
    assert [s[:5] for s in steps] == [(s["step"], s["start_ns"], s["fp_ns"], s["bp_ns"], s["end_ns"])
                                      for s in expected["steps"]]
    assert {(s[5], s[6]) for s in steps} == {(expected["fp_op"], expected["bp_op"])}
    comm = query(out, "SELECT step, dur_ns, op_name FROM step_communication ORDER BY step")
    assert comm == [(s["step"], s["comm_ns"], expected["comm_op"]) for s in expected["steps"]]
    assert query(out, "SELECT op_type, total_ns // 1000, dispatch_ns // 1000, (run_end_ns - run_start_ns) // 1000 FROM aicpu_exec") == [
        ("DropoutGenMask" if folder == ERA_A else "Cast", 150, 20, 130)]
    warnings = json.loads((out / "manifest.json").read_text())["warnings"]
    assert any("1 of 43 task records have a task id with no op" in w for w in warnings)
    # the profiler's own tasks (no op) are left out as MindSpore leaves them: written down, not a partial run
    assert ("unlinked", "excluded", 1) in query(out, "SELECT check_name, action, rows FROM trace_health")
    assert not query(out, "SELECT * FROM trace_health WHERE action IN ('dropped', 'clamped', 'repaired', "
                          "'source_skipped')")
    if folder == ERA_C:
        assert query(out, "SELECT DISTINCT layout FROM run_info") == [("ascend_era_c",)]
        tensors = query(out, f"SELECT tensors_json FROM op_desc WHERE op_name = '{expected['fp_op']}'")
        assert json.loads(tensors[0][0]) == {"input_0": expected["tensor"]}


def test_generator_is_deterministic(tmp_path: Path) -> None:
    assert_generator_reproduces("ascend_raw.py", FIXTURES / "ascend_raw", tmp_path)


# ---- FP/BP points ----------------------------------------------------------------------------

def test_points_derived_from_op_order_without_point_file(tmp_path: Path) -> None:
    job = tmp_path / "JOB"
    shutil.copytree(ERA_A / "JOB1", job)
    (job / "Framework.host.vm.point.0.slice_0").unlink()
    expected = _expected(ERA_A)
    out = run(job, tmp_path / "out").output
    rows = query(out, "SELECT DISTINCT fp_op, bp_op, point_source FROM int_step WHERE end_ns IS NOT NULL")
    assert rows == [(expected["fp_op"], expected["bp_op"], "derived")]


def test_fp_bp_override_by_argument_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    matmul = "Default/network-Net/fc-Dense/MatMul-op3"
    out = run(ERA_A, tmp_path / "a", fp_op=matmul).output
    fp = query(out, "SELECT DISTINCT fp_op, point_source FROM int_step WHERE end_ns IS NOT NULL")
    assert fp == [(matmul, "override")]
    first_matmul = query(out, f"SELECT min(start_ns) FROM device_exec WHERE op_name = '{matmul}'")[0][0]
    assert query(out, "SELECT fp_ns FROM step_phases WHERE step = 1")[0][0] == first_matmul
    monkeypatch.setenv("PROFILING_BP_END", matmul)
    out = run(ERA_A, tmp_path / "b").output
    assert query(out, "SELECT DISTINCT bp_op FROM int_step WHERE end_ns IS NOT NULL") == [(matmul,)]


# ---- real data: MindSpore's committed outputs ------------------------------------------------

def _same_text(ours: Path, theirs: Path) -> None:
    assert ours.read_bytes().replace(b"\r\n", b"\n") == theirs.read_bytes().replace(b"\r\n", b"\n"), ours.name


def test_job3_reproduces_mindspore_outputs(tmp_path: Path) -> None:
    job = realdata(f"{RESOURCE}/JOB3")
    expected = realdata(f"{RESOURCE}/run_1/normal_run/profiler")
    out = run(job, tmp_path / "out", report=ReportOptions(style="legacy")).output / "reports"
    for name in ("output_timeline_data_1.txt", "output_op_compute_time_1.txt", "step_trace_raw_1_detail_time.csv",
                 "step_trace_point_info.json", "timeline_summary_1.json"):
        assert (out / name).read_bytes() == (expected / name).read_bytes(), name
    # MindSpore appended its detail report twice; one copy is the report
    title = "====================op compute time====================\n"
    first_copy = (expected / "output_op_compute_time_detail_1.txt").read_text().split(title)[1]
    assert (out / "output_op_compute_time_detail_1.txt").read_text() == title + first_copy
    ours = json.loads((out / "timeline_display_1.json").read_text())
    theirs = json.loads((expected / "timeline_display_1.json").read_text())
    assert len(ours) == 6359 and ours == theirs


def test_job3_latest_style_counts(tmp_path: Path) -> None:
    out = run(realdata(f"{RESOURCE}/JOB3"), tmp_path / "out").output
    assert query(out, "SELECT count(*), sum(executions) FROM device_op_stats") == [(199, 2817)]
    reports = out / "reports"
    step_csv = (reports / "step_trace_raw_1_detail_time.csv").read_text().splitlines()
    assert len(step_csv) == 324 and "stream_520_0_AllGather-op136" in step_csv[0]
    steps = [list(map(int, row.split(",")[1:])) for row in step_csv[1:-1]]
    average = [round(sum(col) / len(steps)) for col in zip(*steps)]
    assert [int(v) for v in step_csv[-1].split(",")[1:]] == average  # latest: mean over all steps
    summary = json.loads((reports / "ascend_timeline_summary_1.json").read_text())
    assert summary["op_exe_times"] == 2817 and summary["num_of_streams"] == 11
    assert json.loads((reports / "step_trace_point_info_1.json").read_text()) == {
        "fp_start": "Default/Cast-op6", "bp_end": "Default/TransData-op7"}


@pytest.mark.parametrize("job,device", [("JOB1", 0), ("ERROR_JOB", 10)])
def test_step_trace_fixtures(job: str, device: int, tmp_path: Path) -> None:
    out = run(realdata(f"{RESOURCE}/{job}"), tmp_path / "out", report=ReportOptions(style="legacy")).output
    name = f"step_trace_raw_{device}_detail_time.csv"
    _same_text(out / "reports" / name, realdata(f"{RESOURCE}/profiler/{name}"))


@pytest.mark.parametrize("job", ["JOB1", "container"])
def test_framework_raw_both_layouts(job: str, tmp_path: Path) -> None:
    source = realdata(f"{RESOURCE}/{job}")
    latest = run(source, tmp_path / "latest").output / "reports" / "framework_raw_0.csv"
    _same_text(latest, realdata(f"{RESOURCE}/profiler/framework_raw_0.csv"))
    legacy = run(source, tmp_path / "legacy", report=ReportOptions(style="legacy")).output
    _same_text(legacy / "reports" / "framework_raw_0.csv", realdata(f"{R10_FORK}/profiler/framework_raw_0.csv"))


def test_job4_small_task_ids_keyed_by_stream(tmp_path: Path) -> None:
    out = run(realdata(f"{RESOURCE}/JOB4"), tmp_path / "out").output
    ours = (out / "reports" / "framework_raw_0.csv").read_text().splitlines()
    theirs = realdata(f"{RESOURCE}/profiler/framework_raw_0.csv").read_text().splitlines()
    assert [r.split(",", 1)[1] for r in ours] == [r.split(",", 1)[1] for r in theirs]
    assert [r.split(",")[0] for r in ours[1:]] == ["1", "2", "3", "4"]


def test_aicpu_text_both_layouts(tmp_path: Path) -> None:
    source = realdata(f"{RESOURCE}/JOB_AICPU")
    name = "output_data_preprocess_aicpu_0.txt"
    _same_text(run(source, tmp_path / "latest").output / "reports" / name, source / "expect" / name)
    legacy = run(source, tmp_path / "legacy", report=ReportOptions(style="legacy")).output
    _same_text(legacy / "reports" / name, realdata(f"{R10_FORK}/JOB_AICPU/expect/{name}"))


# ---- bad input -------------------------------------------------------------------------------

def _copy_era_c(tmp_path: Path) -> Path:
    target = tmp_path / "in"
    shutil.copytree(ERA_C, target)
    return target


def _data(folder: Path) -> Path:
    return next(folder.rglob("data"))


def test_cut_short_last_record_is_dropped_with_a_warning(tmp_path: Path) -> None:
    folder = _copy_era_c(tmp_path)
    hwts = _data(folder) / "hwts.data.0.slice_1"
    hwts.write_bytes(hwts.read_bytes()[:-64] + hwts.read_bytes()[-64:-20])  # last record: 44 of 64 bytes
    out = run(folder, tmp_path / "out").output
    warnings = json.loads((out / "manifest.json").read_text())["warnings"]
    size = hwts.stat().st_size
    assert any(f"hwts.data.0.slice_1: byte offset {size - 44}: last record is cut short (44 of 64 bytes)" in w
               for w in warnings)


def test_missing_middle_slice_is_an_error(tmp_path: Path) -> None:
    folder = _copy_era_c(tmp_path)
    data = _data(folder)
    (data / "hwts.data.0.slice_1").rename(data / "hwts.data.0.slice_2")
    with pytest.raises(InputError, match=r"hwts\.data\.0\.slice_1: slice 1 is missing"):
        run(folder, tmp_path / "out", strict=True)


def test_unknown_ts_track_tag_is_reported(tmp_path: Path) -> None:
    folder = _copy_era_c(tmp_path)
    track = _data(folder) / "ts_track.data.0.slice_0"
    raw = bytearray(track.read_bytes())
    raw[36:38] = (777).to_bytes(2, "little")  # first record: FP tag 2 -> 777
    track.write_bytes(bytes(raw))
    out = run(folder, tmp_path / "out").output
    warnings = json.loads((out / "manifest.json").read_text())["warnings"]
    assert any("ts_track.data.0.slice_0: byte offset 0: 1 step-trace records have a tag" in w and "777" in w
               for w in warnings)


def test_corrupted_framework_record_names_file_and_offset(tmp_path: Path) -> None:
    folder = _copy_era_c(tmp_path)
    desc = _data(folder) / "Framework.task_desc_info.0.slice_0"
    raw = bytearray(desc.read_bytes())
    raw[512:514] = b"\0\0"
    desc.write_bytes(bytes(raw))
    with pytest.raises(InputError, match=r"task_desc_info\.0\.slice_0, byte offset 512: record without the 0x5A5A"):
        run(folder, tmp_path / "out", strict=True)


def test_unknown_hash_names_file_and_offset(tmp_path: Path) -> None:
    folder = _copy_era_c(tmp_path)
    (_data(folder) / "Framework.hash_dic.0.slice_0").write_text("1:x\n")
    with pytest.raises(InputError, match=r"byte offset \d+: name hash \d+ is not in Framework.hash_dic"):
        run(folder, tmp_path / "out", strict=True)


@pytest.mark.parametrize("name", ["hwts.log.data.45.dev.profiler_default_tag.0.slice_0",
                                  "Framework.host.vm.task_desc_info.0.slice_0"])
def test_empty_or_wrong_text_file(name: str, tmp_path: Path) -> None:
    job = tmp_path / "JOB"
    shutil.copytree(ERA_A / "JOB1", job)
    (job / name).write_bytes(b"")
    with pytest.raises(InputError, match="empty file"):
        run(job, tmp_path / "out", strict=True)
    (job / "Framework.host.vm.task_desc_info.0.slice_0").write_text("Default/Op-op1 1 notanumber 0\n")
    if name.startswith("hwts"):
        (job / name).write_bytes((ERA_A / "JOB1" / name).read_bytes())
    with pytest.raises(InputError, match=r"task_desc_info\.0\.slice_0, line 1: expected integer block dim"):
        run(job, tmp_path / "out", strict=True)


def test_bad_report_options() -> None:
    with pytest.raises(ProfpipeError, match="report style"):
        ReportOptions(style="newest")


# ---- what MindSpore leaves out, and damage it would not see (issue 33) ------------------------

_AICPU_TEXT = "DATA_PREPROCESS.dev.AICPU.0.slice_0"


def _events(outcome: ReadOutcome, table: str) -> list[tuple[str, str, int | None]]:
    return [(e.check, e.action, e.rows) for e in outcome.health if e.tables and table in e.tables.split(",")]


def test_thread_records_without_their_node_are_excluded_not_dropped(tmp_path: Path) -> None:
    """MindSpore reads AI CPU Node/Thread pairs only and some profilers write Thread records alone (the real
    JOB3): such records are `excluded`; a damaged Node record still costs a `dropped` row."""
    job = tmp_path / "JOB"
    shutil.copytree(ERA_A / "JOB1", job)
    node, thread, _ = (ERA_A / "JOB1" / _AICPU_TEXT).read_bytes().split(b"\x00")
    (job / _AICPU_TEXT).write_bytes(thread + b"\x00" + thread + b"\x00")
    outcome = read_damaged(job)
    assert outcome.rows("aicpu_exec") == 0 and not outcome.lossy
    assert _events(outcome, "aicpu_exec") == [("unlinked", "excluded", 2)]
    (job / _AICPU_TEXT).write_bytes(node.replace(b"Node:", b"Nxde:") + b"\x00" + thread + b"\x00")
    outcome = read_damaged(job)
    assert outcome.rows("aicpu_exec") == 0 and outcome.lossy
    assert _events(outcome, "aicpu_exec") == [("malformed_record", "dropped", 1), ("unlinked", "excluded", 1)]


@pytest.mark.parametrize("folder", [ERA_A, ERA_C], ids=["era_a_text", "era_c_binary"])
def test_empty_aicpu_file_is_named_in_the_ledger(folder: Path, tmp_path: Path) -> None:
    """An empty AI CPU file is what the profiler writes when no AI CPU kernel ran (MindSpore reads it as none),
    and what a file cut to nothing looks like: no rows, and a `kept` row that names the file."""
    target = tmp_path / "in"
    shutil.copytree(folder, target)
    aicpu = next(p for p in target.rglob("*") if "AICPU" in p.name or p.name.startswith("aicpu."))
    assert read_damaged(folder).rows("aicpu_exec") == 1
    aicpu.write_bytes(b"")
    outcome = read_damaged(target)
    assert outcome.rows("aicpu_exec") == 0 and not outcome.lossy
    assert _events(outcome, "aicpu_exec") == [("ambiguous", "kept", 0)]
    assert [e.path for e in outcome.health if e.check == "ambiguous"] == [str(aicpu)]


@pytest.mark.parametrize("value", [b"garbage", str(2**70).encode(), "\u00b2".encode(), b""])
def test_graph_desc_data_type_no_enum_names_is_counted(value: bytes, tmp_path: Path) -> None:
    """A data type that is not a number of the backend's enum (damage: garbage, 2^70, a non-ASCII digit) is
    kept as written in op_desc (and framework_raw), and the line is counted: never a silent change."""
    job = tmp_path / "JOB"
    shutil.copytree(ERA_A / "JOB1", job)
    desc = job / "Framework.host.vm.graph_desc_info.0.slice_0"
    clean = read_damaged(ERA_A)
    assert _events(clean, "op_desc") == []
    desc.write_bytes(desc.read_bytes().replace(b"input_data_type:40", b"input_data_type:" + value, 1))
    outcome = read_damaged(job)
    assert outcome.rows("op_desc") == clean.rows("op_desc") and not outcome.lossy
    assert _events(outcome, "op_desc") == [("unknown_tag", "kept", 1)]
    (event,) = [e for e in outcome.health if e.check == "unknown_tag"]
    assert (event.path, event.line) == (str(desc), 1)
    tensors = json.loads(outcome.tables["op_desc"].column("tensors_json")[0].as_py())
    assert tensors["input_0"]["data_type"] == value.decode()
