"""MindSpore 2.5+ result folders (Ascend era F): a parent folder with one *_ascend_ms per rank.

The generated fixture's step_trace_time.csv holds, per step, the overlap split MindSpore's step
trace time viewer gives for its task layout, worked out by hand in the generator; profpipe derives
the same split from the tasks in trace_view.json.
"""
from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

from conftest import FIXTURES, assert_generator_reproduces, load_trace, query, run

FIXTURE = FIXTURES / "ascend_ms_cluster"


def _rank_dirs(root: Path) -> list[Path]:
    return sorted(root.glob("*_ascend_ms"))


def _step_trace_time(rank_dir: Path) -> list[dict[str, float]]:
    with open(rank_dir / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv", newline="") as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def test_fixture_generator_is_deterministic(tmp_path: Path) -> None:
    assert_generator_reproduces("ascend_ms_cluster.py", FIXTURE, tmp_path)


def test_parent_folder_is_analysed_rank_by_rank(tmp_path: Path) -> None:
    result = run(FIXTURE, tmp_path / "out")
    out = result.output
    assert result.ranks == [0, 1] and not result.skipped
    manifest = json.loads((out / "manifest.json").read_text())
    assert not manifest["warnings"]
    # FRAMEWORK/ belongs to its *_ascend_ms source (trace_view.json holds its host ops): one source per rank, and the
    # tools' own step_trace_time.csv beside it (ascend_summary)
    assert [(s["family"], s["rank"]) for s in manifest["sources"]] == [
        ("msprof_export", 0), ("ascend_summary", 0), ("msprof_export", 1), ("ascend_summary", 1)]
    assert all("framework:cpu_op_timestamp" in {f["role"] for f in s["files"]} for s in manifest["sources"]
               if s["family"] == "msprof_export")
    assert query(out, "SELECT rank, layout, clock, metadata_json->>'$.rank_size' FROM run_info "
                      "WHERE layout <> 'ascend_summary' ORDER BY rank") == [
        (0, "ascend_era_f", "unix_epoch", "2"), (1, "ascend_era_f", "unix_epoch", "2")]
    # host ops: the "CPU OP" process only (framework launch events are not ops)
    assert query(out, "SELECT rank, op_name, dur_ns FROM host_op WHERE category IS DISTINCT FROM 'marker' "
                      "ORDER BY rank, start_ns") == [
        (r, "Default/network/TensorMove-op5", 30_000) for r in (0, 1) for _ in (1, 2)]
    for rank, rank_dir in enumerate(_rank_dirs(FIXTURE)):
        expected = _step_trace_time(rank_dir)
        ours = query(out, f"""
            SELECT o.step, o.computation_ns, o.pure_communication_ns, o.overlapped_communication_ns,
                   o.communication_ns, o.free_ns, p.iteration_interval_ns
            FROM step_overlap o JOIN step_phases p USING (rank, step) WHERE rank = {rank} ORDER BY step""")
        assert ours == [(int(row["Step"]), *(round(row[c] * 1000) for c in (
            "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free", "Preparing")))
            for row in expected]
        # pipeline parallel: rank 1 waits alone in its Receive (MindSpore's Bubble); the collective's
        # stretch not hidden by computation is the Not Overlapped time without the Receive
        assert query(out, f"SELECT receive_alone_ns, collective_alone_ns, stage_ns FROM step_overlap WHERE rank = {rank}") == [
            (round(row["Bubble"] * 1000), round(row["Communication(Not Overlapped and Exclude Receive)"] * 1000),
             10_000_000 - round(row["Bubble"] * 1000)) for row in expected]
    assert query(out, "SELECT rank, receive_alone_ns, stage, is_slow FROM cluster_step_phases ORDER BY rank, step") == [
        (0, 0, 1, False), (0, 0, 1, False), (1, 1_000_000, 1, False), (1, 1_000_000, 1, False)]
    # MindSpore 2.x names HCCL ops hcom_<type>__<id>_<n>_<m>: the collective type comes from the name
    assert query(out, "SELECT DISTINCT op_name, op_type FROM comm_task ORDER BY 1") == [
        ("hcom_allReduce__123_0_1", "AllReduce"), ("hcom_receive__456_0_1", "Receive")]
    # the AllReduce: SDMA Memcpy 1 ms (cost) and Notify Wait 1 ms (wait) per step and rank
    assert query(out, """SELECT rank, step, communication_cost_ns / 1e6, wait_cost_ns / 1e6 FROM comm_op_stats
                          WHERE op_name = 'hcom_allReduce__123_0_1' ORDER BY rank, step""") == [
        (r, s, 1.0, 1.0) for r in (0, 1) for s in (1, 2)]
    assert query(out, "SELECT src_rank, dst_rank, bytes FROM comm_matrix ORDER BY src_rank") == [
        (0, 1, 2 * 1_048_576), (1, 0, 2 * 1_048_576)]


def test_trace_view_alone_gives_the_same_tasks(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    shutil.copytree(FIXTURE, folder)
    for details in folder.glob("*/ASCEND_PROFILER_OUTPUT/kernel_details.csv"):
        details.unlink()
    sql = "SELECT rank, kind, name, op_name, stream_id, task_id, start_ns, dur_ns FROM device_exec ORDER BY ALL"
    assert query(run(folder, tmp_path / "trace").output, sql) == query(run(FIXTURE, tmp_path / "csv").output, sql)


def test_ranks_share_the_epoch_clock_in_the_timeline(tmp_path: Path) -> None:
    trace = load_trace(run(FIXTURE, tmp_path / "out").output)
    assert trace["otherData"]["clock"].startswith("Unix epoch")
    first_step = {e["pid"] - 1: e["ts"] for e in trace["traceEvents"]
                  if e.get("cat") == "step" and e["name"] == "Step 1"}
    assert first_step == {0: 0.0, 1: 50.0}  # rank 1 started 50 µs later


def test_broken_trace_view_skips_that_rank_only(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    shutil.copytree(FIXTURE, folder)
    broken = _rank_dirs(folder)[1] / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    broken.write_bytes(broken.read_bytes()[:3000])
    result = run(folder, tmp_path / "out")
    assert result.ranks == [0, 1]  # rank 1 keeps the tools' own step trace (its ascend_summary source)
    assert len(result.skipped) == 1 and str(broken) in result.skipped[0]["error"]
    assert "unexpected end of data" in result.skipped[0]["error"]


def test_empty_trace_view_is_named_not_read_as_no_events(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    shutil.copytree(FIXTURE, folder)
    empty = _rank_dirs(folder)[0] / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    empty.write_bytes(b"")
    result = run(folder, tmp_path / "out")
    assert result.ranks == [0, 1]  # rank 0 keeps the tools' own step trace (its ascend_summary source)
    assert len(result.skipped) == 1
    assert result.skipped[0]["error"] == f"{empty}: empty file, expected an msprof Chrome-trace JSON array"


def test_profiler_info_that_is_not_an_object_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    shutil.copytree(FIXTURE, folder)
    info = _rank_dirs(folder)[0] / "profiler_info_0.json"
    info.write_text("[1, 2]")
    result = run(folder, tmp_path / "out")
    assert result.ranks == [0, 1]  # rank 0 keeps the tools' own step trace (its ascend_summary source)
    assert len(result.skipped) == 1 and result.skipped[0]["error"] == f"{info}: expected MindSpore's profiler_info JSON object"


def test_hccl_stragglers_across_ranks(tmp_path: Path) -> None:
    """collective_straggler on Ascend (same table as NCCL): the generator starts rank 1 50 µs after rank 0
    (RANK_DELAY_US) and each step's AllReduce 4000 µs into the step, so in both steps rank 1 arrives last and
    rank 0 waits 50 µs; two ranks are too few for a statistical slow-rank test."""
    out = run(FIXTURE, tmp_path / "out").output
    epoch_us, delay_us, step_us = 1_767_225_600_000_000, 50, 10_000  # fixtures/generators/ascend_ms_cluster.py
    expected = [(step, rank, 2, (epoch_us + delay_us * rank + step_us * (step - 1) + 4_000) * 1000, 1,
                 (delay_us - delay_us * rank) * 1000, rank == 1, False)
                for step in (1, 2) for rank in (0, 1)]
    assert query(out, "SELECT occurrence, rank, ranks, start_ns, last_rank, wait_ns, is_last_arrival, is_slow "
                      "FROM collective_straggler WHERE family = 'hccl' AND name = 'hcom_allReduce__123_0_1' "
                      "ORDER BY occurrence, rank") == expected
