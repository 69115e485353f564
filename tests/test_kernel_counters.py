"""CUPTI range-profiler counters of Kineto traces (cuda_profiler_range events): the normalized kernel_counter table, its
trace_health rows, and kernel_counter_op against HolisticTraceAnalysis' own get_cupti_counter_data_with_operators
(fixtures/hta/counters_expected.json, written by fixtures/generators/hta_counters_expected.py)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import FIXTURES, query, realdata, run

HTA_TRACE = "HolisticTraceAnalysis/tests/data/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz"
FFMA = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
DRAM = "dram__bytes_read.sum"


def _tiny_trace(folder: Path) -> Path:
    """Two ops, each launching one kernel the range profiler measured (no correlation on the ranges, as Kineto writes
    them); the second kernel's DRAM counter is text, not a number."""
    def op(name, ts, dur):
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": {}}

    def launch(ts, correlation):
        return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts, "dur": 5,
                "args": {"correlation": correlation, "External id": correlation}}

    def measured(name, ts, counters):
        return {"ph": "X", "cat": "cuda_profiler_range", "name": name, "pid": 0, "tid": 0, "ts": ts, "dur": 100,
                "args": counters}

    events = [op("aten::linear", 1000, 100), op("aten::addmm", 1010, 50), launch(1020, 7),
              op("aten::relu", 1200, 30), launch(1210, 9),
              measured("gemm_kernel", 5000, {FFMA: 1024, DRAM: 4096}),
              measured("relu_kernel", 5100, {FFMA: 0, DRAM: "n/a"})]
    trace = folder / "rank-0.pt.trace.json"
    trace.write_text(json.dumps({"schemaVersion": 1, "distributedInfo": {"rank": 0}, "traceEvents": events}))
    return trace


def test_counters_of_a_tiny_trace_their_ops_and_the_malformed_value(tmp_path: Path):
    source = tmp_path / "in"
    source.mkdir()
    _tiny_trace(source)
    out = tmp_path / "out"
    run(source, out)
    assert query(out, "SELECT range_index, kernel_name, start_ns, dur_ns, launch_correlation, counter, value "
                      "FROM kernel_counter ORDER BY range_index, counter") == [
        (0, "gemm_kernel", 5_000_000, 100_000, 7, DRAM, 4096.0),
        (0, "gemm_kernel", 5_000_000, 100_000, 7, FFMA, 1024.0),
        (1, "relu_kernel", 5_100_000, 100_000, 9, FFMA, 0.0)]  # its DRAM value "n/a" is left out
    assert query(out, "SELECT range_index, launch_api, top_level_op, bottom_level_op, op_stack, counter, value "
                      "FROM kernel_counter_op ORDER BY range_index, counter") == [
        (0, "cudaLaunchKernel", "aten::linear", "aten::addmm", ["aten::linear", "aten::addmm"], DRAM, 4096.0),
        (0, "cudaLaunchKernel", "aten::linear", "aten::addmm", ["aten::linear", "aten::addmm"], FFMA, 1024.0),
        (1, "cudaLaunchKernel", "aten::relu", "aten::relu", ["aten::relu"], FFMA, 0.0)]
    assert query(out, "SELECT bottom_level_op, kernel_name, counter, kernels, total_value FROM kernel_counter_stats "
                      "ORDER BY bottom_level_op, counter") == [
        ("aten::addmm", "gemm_kernel", DRAM, 1, 4096.0), ("aten::addmm", "gemm_kernel", FFMA, 1, 1024.0),
        ("aten::relu", "relu_kernel", FFMA, 1, 0.0)]
    health = query(out, "SELECT check_name, action, rows, example, tables FROM trace_health WHERE tables = 'kernel_counter'")
    assert health == [("malformed_record", "dropped", 1, f'{DRAM}: "n/a"', "kernel_counter")]


def test_ranges_that_do_not_pair_with_launches_keep_their_counters_without_ops(tmp_path: Path):
    source = tmp_path / "in"
    source.mkdir()
    trace = _tiny_trace(source)
    data = json.loads(trace.read_text())
    data["traceEvents"] = [e for e in data["traceEvents"] if e.get("args", {}).get("correlation") != 9]
    trace.write_text(json.dumps(data))
    out = tmp_path / "out"
    run(source, out)
    assert query(out, "SELECT count(*), count(launch_correlation), count(bottom_level_op) FROM kernel_counter_op") == [
        (3, 0, 0)]
    assert query(out, "SELECT check_name, action, rows FROM trace_health WHERE check_name = 'unlinked' "
                      "AND tables = 'kernel_counter'") == [("unlinked", "kept", 2)]


def test_a_trace_without_counters_has_no_counter_rows(tmp_path: Path):
    out = tmp_path / "out"
    run(FIXTURES / "pytorch_cuda", out)
    assert query(out, "SELECT (SELECT count(*) FROM stg_kernel_counter), (SELECT count(*) FROM kernel_counter_op)") == [
        (0, 0)]


def test_counters_and_op_stacks_equal_htas(tmp_path: Path):
    trace = realdata(HTA_TRACE)
    expected = json.loads((FIXTURES / "hta" / "counters_expected.json").read_text())["traces"]["realdata/" + HTA_TRACE]
    source = tmp_path / "in"
    source.mkdir()
    shutil.copy(trace, source / "rank-0.pt.trace.json.gz")
    out = tmp_path / "out"
    run(source, out)
    rows = query(out, "SELECT range_index, any_value(kernel_name), any_value(top_level_op), any_value(bottom_level_op), "
                      "any_value(op_stack), map_from_entries(list((counter, value))) FROM kernel_counter_op "
                      "GROUP BY range_index ORDER BY range_index")
    assert len(rows) == len(expected) == 77
    for (index, name, top, bottom, stack, counters), hta in zip(rows, expected):
        assert (name, top, bottom, stack) == (hta["name"], hta["top_level_op"], hta["bottom_level_op"], hta["op_stack"]), index
        assert dict(counters) == hta["counters"], index
    assert query(out, "SELECT count(*) FROM trace_health WHERE tables = 'kernel_counter'") == [(0,)]


def test_the_report_has_a_counter_section_only_when_there_are_counters(tmp_path: Path):
    import duckdb

    from profpipe.report.pages import operators

    source = tmp_path / "in"
    source.mkdir()
    _tiny_trace(source)
    for folder, expected in ((source, True), (FIXTURES / "pytorch_cuda", False)):
        out = tmp_path / ("out" + str(expected))
        run(folder, out)
        with duckdb.connect(str(out / "profile.duckdb"), read_only=True) as con:
            ids = [s.get("id") for s in operators(con)["sections"]]
        assert ("kernel-counters" in ids) is expected
