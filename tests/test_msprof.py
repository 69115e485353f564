"""msprof timeline exports (Ascend era D): the two real devices of MindInsight's sample, bad input."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, assert_generator_reproduces, query, realdata, run
from profpipe.errors import ProfpipeError

SAMPLE = "mindinsight/tests/utils/resource/profiler"
FIXTURE = FIXTURES / "msprof_timeline"



def _copy_devices(tmp_path: Path) -> Path:
    """The two PROF_* folders alone (their parent also holds MindSpore 1.x result files of rank 0)."""
    folder = tmp_path / "in"
    for prof in sorted(realdata(SAMPLE).glob("PROF_000001_*")):
        shutil.copytree(prof, folder / prof.name)
    return folder


def _events(device_dir: Path) -> list[dict]:
    return [e for f in sorted((device_dir / "timeline").glob("msprof_*.json")) for e in json.loads(f.read_text())]


def test_two_devices_tasks_and_steps_match_msprof(tmp_path: Path) -> None:
    folder = _copy_devices(tmp_path)
    result = run(folder, tmp_path / "out")
    out = result.output
    assert result.ranks == [0, 1] and result.exit_code == 0
    # what the manifest warns of: the 0 ns tasks msprof writes (legitimate, counted; see the zero-length tests)
    assert all("device tasks last 0 ns" in w for w in json.loads((out / "manifest.json").read_text())["warnings"])
    # the models MindInsight's tests expect: device 0 ran model 2, device 1 model 0
    assert query(out, "SELECT rank, json_extract(metadata_json, '$.model_id')::INT FROM run_info ORDER BY rank") == [
        (0, 2), (1, 0)]
    for rank, device_dir in enumerate(sorted(folder.glob("PROF_*/device_*"))):
        events = _events(device_dir)
        hardware = {e["pid"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"
                    and e["args"]["name"] == "Ascend Hardware"}
        tasks = [e for e in events if e.get("ph") == "X" and e["pid"] in hardware and "Task Type" in e.get("args", {})]
        assert query(out, f"SELECT count(*) FROM device_exec WHERE rank = {rank}") == [(len(tasks),)]
        iterations = {e["args"]["Iteration ID"]: e for e in events if e.get("cat") == "Iteration Time"}
        fp_bp = {e["args"]["Iteration ID"]: e["args"]["FP_BP Time(ns)"] for e in events if e.get("cat") == "FP_BP Time"}
        refresh = {e["args"]["Iteration ID"]: e["args"]["Iteration Refresh(ns)"] for e in events
                   if e.get("cat") == "Iteration Refresh"}
        steps = query(out, f"SELECT step, total_ns, fp_and_bp_ns, tail_ns FROM step_phases WHERE rank = {rank} ORDER BY step")
        assert [s[0] for s in steps] == sorted(iterations) == list(range(1, 11))
        for step, total, fp_and_bp, tail in steps:  # msprof's own phase figures, to the ns it rounds to
            assert total == pytest.approx(iterations[step]["args"]["Iteration Time(ns)"], abs=2)
            assert fp_and_bp == pytest.approx(fp_bp[step], abs=2)
            assert tail == pytest.approx(refresh[step], abs=2)
    # every HCCL plane task sits under a communication op; one AllReduce span per step and rank
    assert query(out, "SELECT count(*) FROM comm_task WHERE op_name = 'unknown'") == [(0,)]
    assert query(out, "SELECT rank, count(DISTINCT step) FROM step_communication GROUP BY rank ORDER BY rank") == [
        (0, 10), (1, 10)]
    assert query(out, "SELECT DISTINCT op_type FROM comm_task") == [("AllReduce",)]
    # the overlap split covers each step exactly once; every step communicates
    for total, computation, communication, overlapped, pure, free in query(out, """
            SELECT total_ns, computation_ns, communication_ns, overlapped_communication_ns, pure_communication_ns,
                   free_ns FROM step_overlap"""):
        assert computation + pure + free == total and overlapped + pure == communication
        assert communication > 0 and 0 <= overlapped <= communication


def test_bad_timeline_names_the_file_and_other_rank_goes_on(tmp_path: Path) -> None:
    folder = _copy_devices(tmp_path)
    device_0 = next(folder.glob("PROF_*/device_0"))
    broken = device_0 / "timeline" / "msprof_0_2_7.json"
    broken.write_text(broken.read_text()[:5000])
    result = run(folder, tmp_path / "out")
    assert result.ranks == [1]
    assert result.skipped[0]["rank"] == 0 and "msprof_0_2_7.json: not an msprof Chrome-trace JSON array" in \
        result.skipped[0]["error"]


def test_other_models_and_missing_info_are_reported(tmp_path: Path) -> None:
    folder = _copy_devices(tmp_path)
    device_1 = next(folder.glob("PROF_*/device_1"))
    shutil.copy(device_1 / "timeline" / "msprof_1_0_1.json", device_1 / "timeline" / "msprof_1_5_1.json")
    (device_1 / "info.json.1").unlink()
    result = run(folder, tmp_path / "out")
    warnings = json.loads((result.output / "manifest.json").read_text())["warnings"]
    assert any("exports of models [0, 5]; model 0 (most files) is analysed, models [5] are left out" in w
               for w in warnings)
    assert any("no info.json.1; the rank is numbered by the device id (1)" in w for w in warnings)
    assert query(result.output, "SELECT count(*) FROM step_phases WHERE rank = 1") == [(10,)]


def test_fixture_tables_hold_the_generated_values(tmp_path: Path) -> None:
    out = run(FIXTURE, tmp_path / "out").output
    assert query(out, "SELECT layout, clock, metadata_json FROM run_info") == [
        ("ascend_era_d", "host_monotonic_raw", '{"model_id": 1, "models": [1], "epoch_offset_ns": 1699996000000000000}')]
    # device tasks come from op_summary (exact decimal µs), with GE's op types; runtime tasks have no op
    tasks = query(out, "SELECT name, stream_id, start_ns, dur_ns FROM device_exec WHERE kind = 'task' ORDER BY start_ns")
    assert tasks[:3] == [("Default/Conv2D-op1", 2, 5_000_010_000, 100_500), ("Default/ReLU-op2", 2, 5_000_120_000, 20_250),
                         ("Gradients/Default/Conv2DBackpropInput-op3", 3, 5_000_150_000, 300_000)]
    assert len(tasks) == 8 and tasks[4][2] == 5_020_010_000
    assert query(out, "SELECT name, op_name, dur_ns FROM device_exec WHERE kind = 'sync'") == [("NOTIFY_WAIT", None, 500)] * 2
    assert query(out, "SELECT op_type, executions FROM device_op_stats WHERE short_name = 'ReLU-op2'") == [("Relu", 2)]
    assert query(out, "SELECT step, start_ns, fp_ns, bp_ns, end_ns FROM step_phases ORDER BY step") == [
        (1, 5_000_000_000, 5_000_010_000, 5_000_450_000, 5_019_000_000),
        (2, 5_020_000_000, 5_020_010_000, 5_020_450_000, 5_039_000_000)]
    assert query(out, "SELECT step, dur_ns FROM step_communication ORDER BY step") == [(1, 1_000_000), (2, 1_000_000)]
    # HCCL: the SDMA link 0-1 (Reduce Inline + Memcpy, both planes); cost counts the main (highest) plane only
    assert query(out, """SELECT iteration, step, op_name, link, transport, time_ns / 1e6, bytes FROM comm_link_stats
                          ORDER BY iteration""") == [
        (1, 1, "Default/AllReduce-op9_0", "0-1", "SDMA", 0.499, 1_572_864),
        (2, 2, "Default/AllReduce-op9_0", "0-1", "SDMA", 0.499, 1_572_864)]
    assert query(out, "SELECT communication_cost_ns / 1e6, wait_cost_ns / 1e6 FROM comm_op_stats") == [(0.0, 0.0005)] * 2
    # overlap: compute 100.5 + 20.25 + 300 + 300 µs; the AllReduce runs 500.5-1000 µs, Add-op4 800-1100 µs
    assert query(out, """SELECT computation_ns, communication_ns, overlapped_communication_ns, pure_communication_ns,
                                 free_ns FROM step_overlap ORDER BY step""") == [
        (720_750, 499_500, 200_000, 299_500, 19_000_000 - 1_020_250)] * 2


def test_fixture_generator_is_deterministic(tmp_path: Path) -> None:
    assert_generator_reproduces("msprof_timeline.py", FIXTURE, tmp_path)


def test_timeline_lanes_are_named_as_msprof_and_summary_keeps_steps_and_overlap(tmp_path: Path) -> None:
    full = json.loads((run(FIXTURE, tmp_path / "full").output / "timeline" / "trace.json").read_text())
    processes = {e["args"]["name"] for e in full["traceEvents"] if e["name"] == "process_name"}
    assert processes == {"profpipe", "rank 0"}
    threads = {e["args"]["name"] for e in full["traceEvents"] if e["name"] == "thread_name"}
    assert threads == {"Step Trace: iterations", "Ascend Hardware: Stream 2", "Ascend Hardware: Stream 3",
                       "Ascend Hardware: Stream 12", "HCCL: Communication Kernel", "HCCL: Plane 0", "HCCL: Plane 1",
                       "Overlap Analysis: Computing", "Overlap Analysis: Communication",
                       "Overlap Analysis: Communication(Not Overlapped)", "Overlap Analysis: Free",
                       # an era D export is MindSpore <= 2.2: its scope timeline is 1.3-2.2's Scope Name, per level
                       "Scope Name: Level 0", "Scope Name: Level 1"}
    communication = [e for e in full["traceEvents"] if e.get("cat") == "communication"]
    assert [(e["name"], e["dur"]) for e in communication] == [("Default/AllReduce-op9_0", 499.5)] * 2
    # msprof's start_info puts the rank on the Unix epoch
    assert full["otherData"]["clock"].startswith("Unix epoch")
    assert full["baseTimeNanoseconds"] == 1_699_996_000_000_000_000 + 5_000_000_000
    summary = json.loads((run(FIXTURE, tmp_path / "summary", timeline="summary").output / "timeline" /
                          "trace.json").read_text())
    cats = {e.get("cat") for e in summary["traceEvents"] if e["ph"] == "X"}
    assert cats == {"step", "step_phase", "overlap"}
    # the overlap stretches add up to step_overlap's split (two equal steps, values in the test above)
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in summary["traceEvents"] if e["name"] == "thread_name"}
    totals: dict[str, float] = {}
    for event in summary["traceEvents"]:
        if event.get("cat") == "overlap":
            thread = names[event["pid"], event["tid"]].removeprefix("Overlap Analysis: ")
            totals[thread] = totals.get(thread, 0) + event["dur"]
    assert {k: round(v, 3) for k, v in totals.items()} == {
        "Computing": 2 * 720.75, "Communication": 2 * 499.5, "Communication(Not Overlapped)": 2 * 299.5,
        "Free": 2 * (19_000 - 1_020.25)}


def test_two_devices_share_one_clock_in_the_timeline(tmp_path: Path) -> None:
    out = run(_copy_devices(tmp_path), tmp_path / "out").output
    trace = json.loads((out / "timeline" / "trace.json").read_text())
    assert trace["otherData"]["clock"].startswith("Unix epoch")
    first_step = {}
    for event in trace["traceEvents"]:
        if event.get("cat") == "step" and event["name"] == "Step 1":
            first_step[event["pid"] - 1] = event["ts"]
    # both devices ran the same job: on the common clock their first steps are seconds apart, not hours
    assert set(first_step) == {0, 1} and abs(first_step[0] - first_step[1]) < 60e6


def test_timeline_only_export_gives_the_same_tasks_and_steps(tmp_path: Path) -> None:
    """Without summary CSVs the timelines give the tasks (ts written as strings too) and steps."""
    folder = tmp_path / "in"
    shutil.copytree(FIXTURE, folder)
    for csv_file in folder.rglob("summary/*.csv"):
        csv_file.unlink()
    out = run(folder, tmp_path / "out").output
    assert query(out, "SELECT count(*), min(start_ns), max(start_ns) FROM device_exec WHERE kind = 'task'") == [
        (8, 5_000_010_000, 5_020_800_000)]
    assert query(out, "SELECT step, start_ns, end_ns FROM step_phases ORDER BY step") == [
        (1, 5_000_000_000, 5_019_000_000), (2, 5_020_000_000, 5_039_000_000)]


def test_bad_op_summary_value_names_file_and_line(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    shutil.copytree(FIXTURE, folder)
    csv_file = next(folder.rglob("op_summary_0_1_2.csv"))
    csv_file.write_text(csv_file.read_text().replace("5020150.000", "5020x150.000"))
    with pytest.raises(ProfpipeError, match=r"op_summary_0_1_2\.csv, line 4: column 'Task Start Time\(us\)': "
                                            r"expected a number, got '5020x150.000'"):
        run(folder, tmp_path / "out")


def test_era_e_output_folder_reads_the_newest_export(tmp_path: Path) -> None:
    """Era E keeps one export per kind in PROF_*/mindstudio_profiler_output, named by timestamp."""
    device = next(FIXTURE.glob("PROF_*/device_0"))
    prof = tmp_path / "in" / "PROF_000001_20260101000000000_ERAEERAEERAEERAE"
    output = prof / "mindstudio_profiler_output"
    output.mkdir(parents=True)
    shutil.copytree(device, prof / "device_0", ignore=shutil.ignore_patterns("summary", "timeline"))
    summaries = [(device / "summary" / f"op_summary_0_1_{i}.csv").read_text().splitlines() for i in (1, 2)]
    (output / "op_summary_20260101120000.csv").write_text("\n".join(summaries[0] + summaries[1][1:]) + "\n")
    (output / "op_summary_20250101120000.csv").write_text(summaries[0][0] + "\n")  # older: no tasks
    steps = [(device / "summary" / f"step_trace_0_1_{i}.csv").read_text().splitlines() for i in (1, 2)]
    (output / "step_trace_20260101120000.csv").write_text("\n".join(steps[0] + steps[1][1:]) + "\n")
    events = [e for i in (1, 2) for e in json.loads((device / "timeline" / f"msprof_0_1_{i}.json").read_text())]
    (output / "msprof_20260101120000.json").write_text(json.dumps(events))
    out = run(tmp_path / "in", tmp_path / "out").output
    assert query(out, "SELECT rank, layout, metadata_json FROM run_info") == [
        (0, "ascend_era_e", '{"epoch_offset_ns": 1699996000000000000}')]
    assert query(out, "SELECT count(*) FROM device_exec WHERE kind = 'task'") == [(8,)]
    assert query(out, "SELECT step, start_ns, end_ns FROM step_phases ORDER BY step") == [
        (1, 5_000_000_000, 5_019_000_000), (2, 5_020_000_000, 5_039_000_000)]
    assert query(out, "SELECT count(*) FROM comm_op_stats") == [(2,)]


def test_era_f_kernel_details(tmp_path: Path) -> None:
    """MindSpore 2.5+ *_ascend_ms: kernel_details.csv gives the device tasks and op types (hand-written fixture)."""
    out = run(FIXTURES / "ascend_ms_era_f", tmp_path / "out").output
    assert query(out, "SELECT rank, layout, json_extract(metadata_json, '$.stage_num')::INT FROM run_info") == [
        (3, "ascend_era_f", 2)]
    assert query(out, "SELECT kind, name, start_ns, dur_ns FROM device_exec ORDER BY start_ns LIMIT 3") == [
        ("task", "Default/network/Conv2D-op1", 1_767_225_600_000_010_125, 100_500),
        ("task", "Default/network/ReLU-op2", 1_767_225_600_000_120_000, 20_250),
        ("sync", "hcom_allReduce__123_0_1", 1_767_225_600_000_200_000, 300_000)]
    assert query(out, "SELECT short_name, op_type, executions, total_ns FROM device_op_stats ORDER BY short_name") == [
        ("Conv2D-op1", "Conv2D", 2, 202_000), ("ReLU-op2", "Relu", 2, 41_000)]


def test_missing_iteration_is_reported(tmp_path: Path) -> None:
    folder = _copy_devices(tmp_path)
    device_0 = next(folder.glob("PROF_*/device_0"))
    for kind in ("msprof", "task_time", "hccl", "step_trace"):
        (device_0 / "timeline" / f"{kind}_0_2_5.json").unlink()
    result = run(folder, tmp_path / "out")
    warnings = json.loads((result.output / "manifest.json").read_text())["warnings"]
    assert any("msprof files of iterations [5] are missing (found 1..10)" in w for w in warnings)
    assert result.ranks == [0, 1]


def _names(trace: dict, kind: str) -> list[str]:
    return sorted(e["args"]["name"] for e in trace["traceEvents"]
                  if e["ph"] == "M" and e["name"] == kind and e["pid"] != 0)


def test_two_devices_merge_as_mindinsight_expects(tmp_path: Path) -> None:
    """MindInsight's msprof timeline tests (algorithms.md §5.3): ranks [0, 1], models [0, 2], and these
    process and thread names in the summary and detail views (theirs spell "OverLapped"; msprof and
    profpipe write "Overlapped")."""
    folder = _copy_devices(tmp_path)
    summary = run(folder, tmp_path / "summary", timeline="summary")
    assert summary.ranks == [0, 1]
    assert sorted({m for rank in summary.summary["ranks"] for m in rank["models"]}) == [0, 2]
    trace = json.loads((summary.output / "timeline" / "trace.json").read_text())
    # one process per rank; MindInsight's process names are the lanes its threads are named by
    assert _names(trace, "process_name") == ["rank 0", "rank 1"]
    overlap_threads = [f"Overlap Analysis: {name}" for name in (
        "Communication", "Communication", "Communication(Not Overlapped)", "Communication(Not Overlapped)",
        "Computing", "Computing", "Free", "Free")]
    steps = ["Step Trace: iterations"] * 2
    assert _names(trace, "thread_name") == overlap_threads + steps
    detail = json.loads((run(folder, tmp_path / "detail").output / "timeline" / "trace.json").read_text())
    assert _names(detail, "process_name") == ["rank 0", "rank 1"]
    assert _names(detail, "thread_name") == sorted(overlap_threads + steps + [
        f"HCCL: {name}" for name in ("Communication Kernel", "Communication Kernel", "Plane 0", "Plane 0", "Plane 1",
                                     "Plane 1", "Plane 2", "Plane 2", "Plane 3", "Plane 3")] + [
        f"Ascend Hardware: Stream {stream}" for stream in (1, 10, 10, 12, 12, 13, 2, 3, 4, 4, 8, 9)] + [
        # MindSpore <= 2.2's Scope Name lanes, one per level and rank; a level whose spans cross (tasks of parallel
        # streams) also gets its "(overlapping)" track
        f"Scope Name: Level {level}" for level in (0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5)] + [
        f"Scope Name: Level {level} (overlapping)" for level in (1, 1, 2, 2, 3, 3)])


def test_model_selection_keeps_the_ranks_that_ran_it(tmp_path: Path) -> None:
    folder = _copy_devices(tmp_path)
    result = run(folder, tmp_path / "out", msprof_models=[0])
    assert result.ranks == [1]
    assert "no exports of models [0] (this rank has models [2])" in result.skipped[0]["error"]
    assert [(r["rank"], r["model_id"], r["models"]) for r in result.summary["ranks"]] == [(1, 0, [0])]


@pytest.mark.parametrize("copies", [0, 1, 3])
def test_a_repeated_timeline_event_is_counted_once(copies: int, tmp_path: Path) -> None:
    """An event that repeats an earlier one of its file exactly is left out and counted (duplicate_record), the
    tables keep what the file without the copies gives; with no copy, nothing is reported."""
    folder = tmp_path / "in"
    shutil.copytree(FIXTURE, folder)
    timeline = next(folder.rglob("msprof_0_1_1.json"))
    events = json.loads(timeline.read_text())
    task = next(e for e in events if e.get("ph") == "X")
    timeline.write_text(json.dumps(events + [task] * copies))
    result = run(folder, tmp_path / "out")
    baseline = run(FIXTURE, tmp_path / "baseline")
    found = query(result.output, "SELECT action, rows FROM trace_health WHERE check_name = 'duplicate_record'")
    assert found == ([("dropped", copies)] if copies else [])
    for table in ("device_exec", "step_point", "comm_task"):
        assert query(result.output, f"SELECT count(*) FROM {table}") == query(baseline.output, f"SELECT count(*) FROM {table}")


@pytest.mark.parametrize("source", ["summary", "timeline"])
def test_a_zero_length_task_is_kept_and_counted(source: str, tmp_path: Path) -> None:
    """A task of 0 µs is legitimate (msprof's µs resolution; the real era D export below holds 256): kept as recorded,
    counted (out_of_range, kept), the run complete. From op_summary CSVs, or from the timeline alone."""
    folder = tmp_path / "in"
    shutil.copytree(FIXTURE, folder)
    if source == "summary":
        table = next(folder.rglob("op_summary_0_1_1.csv"))
        table.write_text(table.read_text().replace("5000120.000,20.25,", "5000120.000,0,"))
    else:
        for csv_file in folder.rglob("summary/*.csv"):
            csv_file.unlink()
        timeline = next(folder.rglob("msprof_0_1_1.json"))
        timeline.write_text(timeline.read_text().replace('"dur": 20.25', '"dur": 0'))
    result = run(folder, tmp_path / "out")
    assert result.exit_code == 0
    found = query(result.output, "SELECT check_name, action, rows, first_file FROM trace_health")
    assert [(c, a, r, Path(f).name) for c, a, r, f in found] == [
        ("out_of_range", "kept", 1, "op_summary_0_1_1.csv" if source == "summary" else "msprof_0_1_1.json")]
    assert query(result.output, "SELECT start_ns, dur_ns FROM device_exec WHERE name = 'Default/ReLU-op2' "
                                "ORDER BY start_ns LIMIT 1") == [(5_000_120_000, 0)]


def test_the_real_exports_zero_length_tasks_are_counted(tmp_path: Path) -> None:
    result = run(_copy_devices(tmp_path), tmp_path / "out")
    zero = query(result.output, "SELECT count(*) FROM device_exec WHERE dur_ns = 0")[0][0]
    assert zero > 0 and result.exit_code == 0
    assert query(result.output, "SELECT sum(rows) FROM trace_health WHERE check_name = 'out_of_range' "
                                "AND action = 'kept'") == [(zero,)]
