"""MindData (dataset pipeline) logs: readers, the pipeline tree, findings and MindSpore's MindData reports.

Oracles: MindSpore 2.10's own MindData parser and summary viewer on real profiled pipelines
(fixtures/minddata_mindspore, made by fixtures/generators/minddata_mindspore.py), MindInsight's
expected files and values in ../shared/realdata, and rules worked out by hand (algorithms.md §4).
"""
from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, assert_generator_reproduces, query, realdata, run
from fuzzing import read_damaged
from profpipe.discover import discover
from profpipe.options import ReportOptions

REAL_RUNS = FIXTURES / "minddata_mindspore"
MI = "mindinsight/tests/utils/resource"
MS_REPORTS = ("minddata_pipeline_raw_0.csv", "minddata_pipeline_summary_0.json", "minddata_pipeline_summary_0.csv")


@pytest.mark.parametrize("case", ["slow_map", "cpu_bound_map", "slow_generator", "idle_workers"])
def test_reports_equal_mindspore_on_real_pipelines(case: str, tmp_path: Path):
    result = run(REAL_RUNS / case, tmp_path / "out")
    assert result.exit_code == 0
    for name in MS_REPORTS:
        assert (tmp_path / "out" / "reports" / name).read_bytes() == \
            (REAL_RUNS / case / "expected" / name).read_bytes(), name


@pytest.mark.parametrize("case, slow_op, cpu_bound", [
    ("slow_map", "Map(id=1)", False), ("cpu_bound_map", "Map(id=1)", True), ("slow_generator", "Generator(id=2)", False)])
def test_slowest_stage_is_the_deliberately_slow_op(case: str, slow_op: str, cpu_bound: bool, tmp_path: Path):
    run(REAL_RUNS / case, tmp_path / "out")
    (op, finding, suggestion), = query(tmp_path / "out", "SELECT op, finding, suggestion FROM data_findings "
                                                          "WHERE analyzer = 'profpipe' AND rule = 'slowest_op'")
    assert op == slow_op and "It holds training back" in finding
    assert ("Raise its num_parallel_workers" in suggestion) == cpu_bound
    cpu_high = query(tmp_path / "out", "SELECT op FROM data_findings WHERE rule = 'cpu_high'")
    assert cpu_high == ([("Map(id=1)",)] if cpu_bound else [])


def test_pipeline_that_keeps_up_says_so(tmp_path: Path):
    run(REAL_RUNS / "idle_workers", tmp_path / "out")
    findings = dict(query(tmp_path / "out", "SELECT rule, finding FROM data_findings WHERE analyzer <> 'mindspore'"))
    assert "does not hold training back now" in findings["slowest_op"]
    assert "data is not the bottleneck" in findings["device_queue"]


def test_tables_hold_the_logs_as_written(tmp_path: Path):
    case = REAL_RUNS / "slow_map"
    run(case, tmp_path / "out")
    pipeline = json.loads((case / "pipeline_profiling_0.json").read_text())
    for op in pipeline["op_info"]:
        sizes = query(tmp_path / "out", f"SELECT list(size ORDER BY sample) FROM queue_sample "
                                        f"WHERE queue = 'op_output' AND op_id = {op['op_id']}")[0][0]
        assert sizes == op["metrics"]["output_queue"]["size"]
    records = [line.split() for line in (case / "dataset_iterator_profiling_0.txt").read_text().splitlines()]
    batch_times = query(tmp_path / "out", "SELECT batch, kind, dur_ns FROM data_batch_time ORDER BY batch, kind")
    expected = sorted((int(r[2]), ("pipeline", "push", "batch")[int(r[1])], int(r[3]) * 1_000_000)
                      for r in records if r[0] == "0")
    assert batch_times == expected
    cpu = json.loads((case / "minddata_cpu_utilization_0.json").read_text())
    (op_samples,), = query(tmp_path / "out", "SELECT count(*) FROM data_cpu_sample WHERE scope = 'op'")
    assert op_samples == sum(len(op["metrics"]["user_utilization"]) for op in cpu["op_info"])
    # MindSpore's MB are MiB (kB / 1024: 398.05859375 = 407612 kB), its percents of one CPU for the process
    process = query(tmp_path / "out", "SELECT memory_bytes, user_cpus FROM data_cpu_sample WHERE scope = 'process' "
                                      "ORDER BY sample")
    assert [m for m, _ in process] == [round(mib * 2**20) for mib in cpu["process_memory_info"]["rss_mbytes"]]
    assert [u for _, u in process if u is not None] == [pct / 100 for pct in cpu["process_info"]["user_utilization"]]
    assert all(m % 1024 == 0 for m, _ in process)


# --- MindInsight's fixtures ------------------------------------------------------------------------

@pytest.mark.parametrize("job", ["JOB1", "JOB2"])
def test_pipeline_raw_equals_mindinsight_expected(job: str, tmp_path: Path):
    """JOB1 has an inlined op (metrics null) whose child is promoted: Shuffle's children [2, 4] -> [2, 3].
    The root Batch has no queue metrics: MindSpore 1.x (style legacy) printed its usage as 0."""
    run(realdata(f"{MI}/{job}"), tmp_path / "out", report=ReportOptions(style="legacy"))
    assert (tmp_path / "out" / "reports" / "minddata_pipeline_raw_0.csv").read_bytes() == \
        realdata(f"{MI}/profiler/minddata_pipeline_raw_0.csv").read_bytes()


def test_run_2_device_queue_and_get_next_equal_mindinsight(tmp_path: Path):
    """algorithms.md §4.3: device queue [0] (1 empty, 0 full), total/push/get 4/4/0 ms; get_next queue
    [3, 2, 1] (none empty), times [0.001, 0, 0.001] ms."""
    folder = realdata(f"{MI}/run_2/normal_run/profiler")
    run(folder, tmp_path / "out")
    out = tmp_path / "out"
    assert (out / "reports" / "minddata_pipeline_raw_1.csv").read_bytes() == \
        (folder / "minddata_pipeline_raw_1.csv").read_bytes()
    assert query(out, "SELECT queue_size, queue_empty, queue_full, batch_ns, push_ns, pipeline_ns FROM data_batch_stats "
                      "WHERE trace = 'device_queue'") == [(0, True, False, 4_000_000, 4_000_000, 0)]
    assert query(out, "SELECT list(queue_size ORDER BY batch), list(get_next_wait_ns ORDER BY batch), "
                      "count(*) FILTER (WHERE queue_empty) FROM data_batch_stats WHERE trace = 'get_next'") == \
        [([3, 2, 1], [1_000, 0, 1_000], 0)]
    (status,), = query(out, "SELECT finding FROM data_findings WHERE rule = 'device_queue'")
    assert status.startswith("The host queue was empty for 1 of 1 batches (100")


def _pipeline_from_mindinsight_csv(path: Path) -> dict:
    """MindInsight's analyser fixtures are minddata_pipeline_raw CSVs; turn one back into the JSON it came from."""
    ops = []
    for row in csv.DictReader(path.open()):
        sizes = json.loads(row["output_queue_size"]) if row["output_queue_size"] else None
        ops.append({"op_id": int(row["op_id"]), "op_type": row["op_type"], "num_workers": int(row["num_workers"]),
                    "metrics": {"output_queue": {"size": sizes, "length": int(row["output_queue_length"])}} if sizes else None,
                    "children": json.loads(row["children_id"]) if row["children_id"] else None})
    return {"sampling_interval": int(row["sample_interval"]), "op_info": ops}


@pytest.mark.parametrize("index, flagged", [(0, [2, 3, 4]), (1, [1]), (2, [0]), (3, [2, 3])])
def test_mindinsight_queue_usage_rule(index: int, flagged: list[int], tmp_path: Path):
    """§4.2 worked by hand on MindInsight's four analyser cases (usage of ops 4, 1, 2, 3):
    0: .16 .94 .31 .31 -> op 4 (child 1 fuller by > 0.1) and leaves 2, 3 (< 0.6); 1: .31 .16 .94 .94 ->
    op 1; 2: all .94 >= 0.8 -> the root alone; 3: all .16 -> leaves 2, 3."""
    source = realdata(f"mindinsight/tests/ut/profiler/analyser/resource/minddata_pipeline_raw_{index}.csv")
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "pipeline_profiling_0.json").write_text(json.dumps(_pipeline_from_mindinsight_csv(source)))
    run(folder, tmp_path / "out")
    rows = query(tmp_path / "out", "SELECT op_id FROM data_findings WHERE rule = 'queue_usage' ORDER BY op_id")
    assert [r[0] for r in rows] == flagged
    assert (tmp_path / "out" / "reports" / "minddata_pipeline_raw_0.csv").read_text().replace(",0,10,", ",,10,") \
        .splitlines()[1:] == source.read_text().replace(",0,10,", ",,10,").splitlines()[1:]


# --- discovery and bad input -----------------------------------------------------------------------

def _logs(folder: Path, pipeline: dict | str | None = None, **files: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if pipeline is not None:
        text = pipeline if isinstance(pipeline, str) else json.dumps(pipeline)
        (folder / "pipeline_profiling_0.json").write_text(text)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def _op(op_id: int, op_type: str, sizes: list | None, children: list | None = None, workers: int = 2) -> dict:
    return {"op_id": op_id, "op_type": op_type, "num_workers": workers, "children": children,
            "metrics": {"output_queue": {"size": sizes, "length": 10}} if sizes is not None else None}


@pytest.mark.parametrize("interval, ns, printed", [(10, 10_000_000, "10"), (12.3, 12_300_000, "12.3"),
                                                     (0.1234565, 123_456, "0.123456"), (2.675, 2_675_000, "2.675")])
def test_sampling_interval_is_ns_in_the_tables_and_ms_in_the_report(interval, ns, printed, tmp_path: Path):
    """The file's ms rounded to the nearest ns (half to even on the decimal written: 0.1234565 -> 123456),
    printed back in MindSpore's raw CSV as the ms that ns make, without float noise (12.3, not 12.299999)."""
    out = run(_logs(tmp_path / "logs", {"sampling_interval": interval, "op_info": [_op(0, "BatchOp", [1, 3])]}),
              tmp_path / "out").output
    assert query(out, "SELECT sampling_interval_ns FROM data_op_stats") == [(ns,)]
    [row] = list(csv.DictReader((out / "reports" / "minddata_pipeline_raw_0.csv").open()))
    assert row["sample_interval"] == printed and row["output_queue_usage_rate"] == "0.2"


def test_logs_join_the_rank_source_beside_them(tmp_path: Path):
    folder = _logs(tmp_path / "prof", {"sampling_interval": 10, "op_info": [_op(0, "BatchOp", [1])]})
    (folder / "cpu_op_execute_timestamp_0.txt").write_text("Add-op1;HostCpuOps;1000,0.002,1 \n")
    sources = discover(folder)
    assert [(s.family, s.rank) for s in sources] == [("mindspore_framework", 0)]
    assert sources[0].files["minddata:pipeline"].name == "pipeline_profiling_0.json"
    result = run(folder, tmp_path / "out")
    assert result.exit_code == 0
    assert query(tmp_path / "out", "SELECT count(*) FROM host_op")[0][0] == 1
    assert query(tmp_path / "out", "SELECT op_name FROM data_op_stats")[0][0] == "Batch"


def test_missing_child_and_cycle_are_reported_and_the_tree_kept(tmp_path: Path):
    ops = [_op(0, "BatchOp", [5, 5], [1]), _op(1, "MapOp", [2, 4], [2, 7]), _op(2, "GeneratorOp", [9, 9], [1])]
    result = run(_logs(tmp_path / "logs", {"sampling_interval": 10, "op_info": ops}), tmp_path / "out")
    warnings = json.loads((tmp_path / "out" / "manifest.json").read_text())["warnings"]
    assert any("op 1 lists children [7] that are not in op_info" in w for w in warnings)
    assert any("op 1 is reached again below op 2 (a cycle in children)" in w for w in warnings)
    assert result.exit_code == 0
    assert query(tmp_path / "out", "SELECT op_id, pipeline_parent_id FROM data_op ORDER BY pipeline_order") == \
        [(0, None), (1, 0), (2, 1)]


def test_non_numeric_sizes_leave_out_that_queue_only(tmp_path: Path):
    ops = [_op(0, "BatchOp", [1, 3], [1]), _op(1, "MapOp", [1, "x"])]
    run(_logs(tmp_path / "logs", {"sampling_interval": 10, "op_info": ops}), tmp_path / "out")
    warnings = json.loads((tmp_path / "out" / "manifest.json").read_text())["warnings"]
    assert any("op 1 output_queue.size: expected a list of numbers" in w and "queue samples are left out" in w
               for w in warnings)
    assert query(tmp_path / "out", "SELECT op_id, queue_average_size FROM data_op_stats ORDER BY op_id") == \
        [(0, 2.0), (1, None)]


@pytest.mark.parametrize("text, message", [
    ("", "empty file"),
    ('{"sampling_interval": 10, "op_info": [', "line 1"),
    ('{"sampling_interval": 10, "op_info": [{"op_id": 1, "op_type": "MapOp"}]}', "no op 0"),
    ('[1, 2]', "got a JSON list"),
])
def test_bad_pipeline_file_is_left_out_with_the_rest_analysed(text: str, message: str, tmp_path: Path):
    folder = _logs(tmp_path / "logs", text, **{"dataset_iterator_profiling_0.txt": "0 2 1 5 100\n1 8 1 3 100\n"})
    result = run(folder, tmp_path / "out")
    assert result.exit_code == 3  # partial: a log was left out (a trace_health row)
    [row] = result.summary["health"]["rows"]
    assert (row["action"], row["first_file"]) == ("dropped", str(folder / "pipeline_profiling_0.json"))
    warnings = json.loads((tmp_path / "out" / "manifest.json").read_text())["warnings"]
    assert any("pipeline_profiling_0.json" in w and message in w and "pipeline tree" in w for w in warnings), warnings
    assert query(tmp_path / "out", "SELECT count(*) FROM data_op")[0][0] == 0
    assert query(tmp_path / "out", "SELECT queue_size, batch_ns FROM data_batch_stats") == [(3, 5_000_000)]


def test_empty_and_bad_device_queue_files_are_named(tmp_path: Path):
    ops = {"sampling_interval": 10, "op_info": [_op(0, "BatchOp", [1])]}
    run(_logs(tmp_path / "a", ops, **{"device_queue_profiling_0.txt": ""}), tmp_path / "out_a")
    warnings = json.loads((tmp_path / "out_a" / "manifest.json").read_text())["warnings"]
    assert any("device_queue_profiling_0.txt: empty file" in w and "per-batch times" in w for w in warnings)
    run(_logs(tmp_path / "b", ops, **{"device_queue_profiling_0.txt": "0 1 1 4 10\n0 1 x 4 10\n"}), tmp_path / "out_b")
    warnings = json.loads((tmp_path / "out_b" / "manifest.json").read_text())["warnings"]
    assert any("device_queue_profiling_0.txt, line 2: expected `type extra batch value" in w for w in warnings)


def test_different_op_counts_skip_mindspore_cpu_rules_and_say_so(tmp_path: Path):
    ops = {"sampling_interval": 10, "op_info": [_op(0, "BatchOp", [1], [1]), _op(1, "MapOp", [0])]}
    cpu = {"cpu_processor_num": 2, "op_info": [{"op_id": 0, "metrics": {"user_utilization": [90], "sys_utilization": [5]}}]}
    folder = _logs(tmp_path / "logs", ops, **{"minddata_cpu_utilization_0.json": json.dumps(cpu),
                                               "dataset_iterator_profiling_0.txt": "1 8 1 3 100\n1 8 2 0 150\n"})
    run(folder, tmp_path / "out")
    rules = query(tmp_path / "out", "SELECT rule, finding FROM data_findings WHERE analyzer = 'mindspore'")
    assert [r for r, _ in rules if r.startswith("cpu") or r == "bottleneck"] == []
    skipped = [f for r, f in rules if r == "rules_skipped"]
    assert skipped == ["The CPU file lists 1 ops, the pipeline 2: MindSpore's CPU rules and single bottleneck were not run."]
    summary = json.loads((tmp_path / "out" / "reports" / "minddata_pipeline_summary_0.json").read_text())
    assert "avg_cpu_pct_per_worker" not in summary and summary["avg_cpu_pct"] == [95.0]


# --- joined with the steps, the timeline and the summary ------------------------------------------

def test_steps_waiting_for_data_are_input_bound(tmp_path: Path):
    """Non-sink: step n waits the iterator's pipeline time of batch n; its length is the time since batch n - 1."""
    case = REAL_RUNS / "slow_map"
    run(case, tmp_path / "out")
    records = [list(map(int, line.split())) for line in (case / "dataset_iterator_profiling_0.txt").read_text().splitlines()]
    pipeline_ms = {r[2]: r[3] for r in records if r[0] == 0 and r[1] == 0}
    stamps = [r[4] for r in records if r[0] == 1]
    rows = query(tmp_path / "out", "SELECT step, wait_ns, step_ns, input_bound FROM step_input_wait ORDER BY step")
    assert [(s, w) for s, w, _, _ in rows] == sorted((b, ms * 1_000_000) for b, ms in pipeline_ms.items())
    assert [m for _, _, m, _ in rows[1:]] == [(b - a) * 1_000_000 for a, b in zip(stamps, stamps[1:])]
    summary = json.loads((tmp_path / "out" / "reports" / "summary.json").read_text())["ranks"][0]["input_pipeline"]
    assert summary["input_bound"] == "highly" and summary["slowest_op"] == "Map(id=1)"
    assert summary["avg_wait_share"] == pytest.approx(
        sum(w / m for _, w, m, _ in rows[1:]) / (len(rows) - 1))


def test_queue_sizes_are_counter_tracks(tmp_path: Path):
    case = REAL_RUNS / "slow_map"
    run(case, tmp_path / "out")
    trace = json.loads((tmp_path / "out" / "timeline" / "trace.json").read_text())
    counters = [e for e in trace["traceEvents"] if e.get("ph") == "C"]
    by_name: dict[str, list[int]] = {}
    for event in sorted(counters, key=lambda e: e["ts"]):
        by_name.setdefault(event["name"], []).append(event["args"]["size"])
    pipeline = json.loads((case / "pipeline_profiling_0.json").read_text())
    names = {op["op_id"]: op["op_type"].removesuffix("Op") for op in pipeline["op_info"]}
    for op in pipeline["op_info"]:
        assert by_name[f"{names[op['op_id']]}(id={op['op_id']}) output queue"] == op["metrics"]["output_queue"]["size"]
    records = [line.split() for line in (case / "dataset_iterator_profiling_0.txt").read_text().splitlines()]
    assert by_name["iterator queue"] == [int(r[3]) for r in records if r[0] == "1"]
    assert {e["pid"] for e in counters} == {1}  # on rank 0's process


# --- data-sink mode: device queue and the device's get_next queue (fixtures/minddata_sink) ---------

SINK = FIXTURES / "minddata_sink"
#: fixtures/generators/minddata_sink.py: get_next dequeues (start, end µs, queue size), device-queue sizes.
GET_NEXT = [(5_000_100, 5_000_105, 2), (5_000_120, 5_000_150, 0), (5_000_160, 5_000_161, 1), (5_000_180, 5_000_240, 0)]
DEVICE_QUEUE = [0, 0, 0, 4, 0, 6, 0, 0, 8, 0]


def test_sink_generator_reproduces(tmp_path: Path):
    assert_generator_reproduces("minddata_sink.py", SINK, tmp_path)


def test_sink_reports_equal_mindspore(tmp_path: Path):
    """Worked by hand and equal to MindSpore 2.10's files: Map 2 workers at 170 % -> 85 % per worker (high);
    TFReader 4 at 40 % -> 10 % (low); DeviceQueue's input (Batch) empty 4 of 5 samples = 80 % > 60 %; Map's
    input 93.75 % vs output round(100 * 2.0 / 64, 2) = 3.12 (the tie 3.125 rounds to even); the walk from
    TFReader to Batch ends on Batch (5 % per worker, input queue 3.12 % < 10 %)."""
    run(SINK / "ascend", tmp_path / "out")
    for name in MS_REPORTS:
        assert (tmp_path / "out" / "reports" / name).read_bytes() == (SINK / "ascend" / "expected" / name).read_bytes()
    summary = json.loads((tmp_path / "out" / "reports" / "minddata_pipeline_summary_0.json").read_text())
    assert summary["queue_utilization_pct"] == [-1, 1.25, 3.12, 93.75]
    assert summary["avg_cpu_pct_per_worker"] == [2.0, 5.0, 85.0, 10.0]
    assert summary["bottleneck_warning"] == ["Batch(id=1)"]
    assert summary["per_pipeline_time"] == [16.0]  # mean of 12..20 ms over batches 2..10
    rules = query(tmp_path / "out", "SELECT rule, op FROM data_findings WHERE analyzer <> 'mindinsight' ORDER BY rule, op")
    assert rules == [("bottleneck", "Batch(id=1)"), ("cpu_high", "Map(id=2)"), ("cpu_low", "TFReader(id=3)"),
                     ("queue_device", "DeviceQueue(id=0)"), ("queue_internal", "Map(id=2)"), ("slowest_op", "Map(id=2)")]


def test_sink_device_queue_status_and_input_wait(tmp_path: Path):
    out = run(SINK / "ascend", tmp_path / "out").output
    (finding,), = query(out, "SELECT finding FROM data_findings WHERE rule = 'device_queue'")
    assert finding.startswith("The host queue was empty for 7 of 10 batches (70")
    assert query(out, "SELECT list(queue_size ORDER BY batch), count(*) FILTER (WHERE queue_full) FROM data_batch_stats "
                      "WHERE trace = 'device_queue'") == [(DEVICE_QUEUE, 0)]
    rows = query(out, "SELECT step, wait_source, wait_ns, step_ns FROM step_input_wait ORDER BY step")
    starts = [s for s, _, _ in GET_NEXT]
    assert rows == [(n + 1, "get_next", (e - s) * 1000, (b - s) * 1000 if b else None)
                    for n, ((s, e, _), b) in enumerate(zip(GET_NEXT, starts[1:] + [None]))]


@pytest.mark.parametrize("folder", ["ascend", "gpu", "era_a"])
def test_get_next_queue_in_every_encoding(folder: str, tmp_path: Path):
    """minddata_aicpu (µs, no header, an InitData row to skip), GPU minddata_getnext_profiling (ns) and era A's
    raw NUL-separated AICPUMI records (both field orders) give the same dequeues."""
    out = run(SINK / folder, tmp_path / "out").output
    rows = query(out, "SELECT batch, get_next_wait_ns, queue_size, queue_empty, ts_ns FROM data_batch_stats "
                      "WHERE trace = 'get_next' ORDER BY batch")
    assert rows == [(n + 1, (e - s) * 1000, q, q == 0, s * 1000) for n, (s, e, q) in enumerate(GET_NEXT)]


def test_queue_counts_and_host_cpu(tmp_path: Path):
    out = run(SINK / "ascend", tmp_path / "out").output
    assert query(out, "SELECT queue, batches, empty_batches, full_batches, capacity FROM data_queue_stats ORDER BY queue") == \
        [("device_queue", 10, 7, 0, 32), ("get_next", 4, 2, 0, None)]
    assert query(out, "SELECT count(*) FROM data_findings WHERE rule = 'cpu_usage'") == [(0,)]  # 59 % on average
    cpu = json.loads((SINK / "ascend" / "minddata_cpu_utilization_0.json").read_text())
    cpu["device_info"]["user_utilization"] = [80, 82, 84, 86, 88]  # + 5 % sys: 89 % on average
    folder = _logs(tmp_path / "busy", pipeline=(SINK / "ascend" / "pipeline_profiling_0.json").read_text(),
                   **{"minddata_cpu_utilization_0.json": json.dumps(cpu)})
    (finding,), = query(run(folder, tmp_path / "busy_out").output, "SELECT finding FROM data_findings WHERE rule = 'cpu_usage'")
    assert finding == "The host CPU was 89.0% busy on average (over 80%) while the pipeline ran."


def test_device_queue_without_time_stamps(tmp_path: Path):
    out = run(SINK / "gpu", tmp_path / "out").output
    assert query(out, "SELECT list(size ORDER BY batch), count(ts_ns), any_value(capacity) FROM queue_sample "
                      "WHERE queue = 'device_queue'") == [(DEVICE_QUEUE, 0, 32)]
    assert query(out, "SELECT count(*), count(ts_ns) FROM data_batch_time WHERE trace = 'device_queue'") == [(30, 0)]


def test_get_next_file_with_its_header_line(tmp_path: Path):
    text = (SINK / "ascend" / "minddata_aicpu_0.txt").read_text()
    folder = _logs(tmp_path / "logs", **{"minddata_aicpu_0.txt": "node_name start_time end_time queue_size\n" + text})
    out = run(folder, tmp_path / "out").output
    assert query(out, "SELECT list(queue_size ORDER BY batch) FROM data_batch_stats WHERE trace = 'get_next'") == \
        [([q for _, _, q in GET_NEXT],)]


def test_input_wait_uses_the_step_trace_where_there_is_one(tmp_path: Path):
    """run_2 has a step trace of one step (its average row, written as step 0 by that MindInsight version, is
    not a step) and the device's get_next queue: step 1 waits get_next 1, for a step of step_phases' length;
    later dequeues have no step trace and last until the next dequeue."""
    out = run(realdata(f"{MI}/run_2/normal_run/profiler"), tmp_path / "out").output
    assert query(out, "SELECT step, total_ns FROM step_phases") == [(1, 2370905 * 10)]
    assert query(out, "SELECT step, wait_source, wait_ns, step_ns FROM step_input_wait ORDER BY step") == \
        [(1, "get_next", 1_000, 23_709_050), (2, "get_next", 0, 1_306_000), (3, "get_next", 1_000, None)]
    assert query(out, "SELECT queue_size, queue_capacity FROM data_batch_stats WHERE trace = 'iterator'") == [(3, 64)]


_AICPUMI = "JOB/data/DATA_PREPROCESS.dev.AICPUMI.0.slice_0"


def test_aicpumi_file_of_no_records_is_kept_not_malformed(tmp_path: Path):
    """The real JOB3 has an empty AICPUMI file and MindSpore reads it as no get_next samples: no rows, a
    `kept` row naming the file, and the run stays complete."""
    folder = tmp_path / "era_a"
    shutil.copytree(SINK / "era_a", folder)
    for content in (b"", b"\x00\x00"):
        (folder / _AICPUMI).write_bytes(content)
        outcome = read_damaged(folder)
        assert outcome.rows("queue_sample") == 0 and not outcome.lossy
        assert [(e.check, e.action, e.rows) for e in outcome.health] == [("ambiguous", "kept", 0)]


def test_aicpumi_cut_anywhere_keeps_the_whole_records_and_counts_the_cut_one(tmp_path: Path):
    """Every cut of the AICPUMI file: the records ended by their NUL are kept; a cut inside a record drops that
    record, counted. A cut exactly after a NUL leaves a well-formed shorter file, which nothing in the file or
    beside it tells from a shorter recording (MindSpore reads it the same): that loss is not detectable."""
    folder = tmp_path / "era_a"
    shutil.copytree(SINK / "era_a", folder)
    data = (SINK / "era_a" / _AICPUMI).read_bytes()
    for cut in range(len(data) + 1):
        (folder / _AICPUMI).write_bytes(data[:cut])
        outcome = read_damaged(folder)
        whole = data[:cut].count(b"\x00")
        assert outcome.rows("queue_sample") == outcome.rows("data_batch_time") == whole, cut
        lossy = [(e.check, e.action, e.rows) for e in outcome.health if e.lossy]
        at_boundary = cut == 0 or data[:cut].endswith(b"\x00")
        assert lossy == ([] if at_boundary else [("truncated", "dropped", 1)]), cut


def _aicpumi_rows(outcome) -> list[tuple]:
    return sorted(zip(outcome.tables["data_batch_time"].column("ts_ns").to_pylist(),
                      outcome.tables["data_batch_time"].column("dur_ns").to_pylist(),
                      outcome.tables["queue_sample"].column("size").to_pylist()))


def test_aicpumi_records_run_on_from_one_slice_into_the_next(tmp_path: Path):
    """MindSpore joins the slices of a raw file in slice order before reading them: a record cut at the end of
    .slice_0 goes on in .slice_1. Every split point: the same rows as the whole file, numbered once, no ledger row."""
    data = (SINK / "era_a" / _AICPUMI).read_bytes()
    whole = read_damaged(SINK / "era_a")
    second = (SINK / "era_a" / _AICPUMI).with_name(_AICPUMI.rsplit("/", 1)[1].replace("slice_0", "slice_1"))
    for split in range(1, len(data)):
        folder = tmp_path / f"split{split}"
        shutil.copytree(SINK / "era_a", folder)
        (folder / _AICPUMI).write_bytes(data[:split])
        (folder / second.relative_to(SINK / "era_a")).write_bytes(data[split:])
        outcome = read_damaged(folder)
        assert not outcome.health and not outcome.errors, (split, outcome.health, outcome.errors)
        assert _aicpumi_rows(outcome) == _aicpumi_rows(whole), split
        assert outcome.tables["queue_sample"].column("sample").to_pylist() == list(range(data.count(b"\x00")))


def test_aicpumi_record_cut_before_nul_padding_is_counted_as_truncated(tmp_path: Path):
    """A record cut short and the rest of the file NUL bytes (a block written whole): a last record that lacks a
    field is dropped and counted (truncated), the records before it kept. A cut inside the last number leaves a
    complete record: no check can tell (the limit of the format)."""
    folder = tmp_path / "era_a"
    shutil.copytree(SINK / "era_a", folder)
    data = (SINK / "era_a" / _AICPUMI).read_bytes()
    for cut in range(1, len(data)):
        if data[:cut].endswith(b"\x00"):
            continue
        (folder / _AICPUMI).write_bytes(data[:cut] + b"\x00" * 64)
        outcome = read_damaged(folder)
        part = data[:cut].rsplit(b"\x00", 1)[-1].decode()
        complete = "Node:" in part and all(re.search(label + r"\s*\d", part)
                                           for label in ("queue size:", "Run start:", "Run end:"))
        whole = data[:cut].count(b"\x00")
        lossy = [(e.check, e.action, e.rows) for e in outcome.health if e.lossy]
        if complete:  # kept, unless its cut number is impossible (an end before its start: counted)
            assert outcome.rows("queue_sample") == whole + 1 - sum(rows for _, _, rows in lossy), (cut, lossy)
        else:
            assert lossy == [("truncated", "dropped", 1)], (cut, part, outcome.health)
            assert outcome.rows("queue_sample") == whole, cut
