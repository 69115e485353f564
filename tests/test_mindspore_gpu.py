"""MindSpore GPU (CUPTI) folders against the generator's ground truth (fixtures/mindspore_gpu/*/expected.json).

The generator builds each run from a known timeline and computes its statistics itself, so
every number here is derived independently of profpipe.
"""
from __future__ import annotations

import csv
import json

import duckdb
import pytest

from conftest import FIXTURES, load_trace, run

SCENARIOS = ["graph_2x", "async_1x", "pynative", "two_ranks"]


@pytest.fixture(scope="module", params=SCENARIOS)
def analysed(request, tmp_path_factory):
    folder = FIXTURES / "mindspore_gpu" / request.param
    out = tmp_path_factory.mktemp(request.param) / "out"
    result = run(folder, out)
    expected = json.loads((folder / "expected.json").read_text())["ranks"]
    con = duckdb.connect(str(out / "profile.duckdb"), read_only=True)
    yield request.param, result, expected, con, out
    con.close()


def _rows(con, sql, *params):
    cursor = con.execute(sql, list(params))
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r)) for r in cursor.fetchall()]


def test_every_rank_is_read(analysed):
    _, result, expected, con, _ = analysed
    assert result.ranks == sorted(int(r) for r in expected)
    assert result.skipped == []
    assert {r["clock"] for r in _rows(con, "SELECT clock FROM run_info")} == {"cupti"}


def test_op_statistics(analysed):
    _, _, expected, con, _ = analysed
    for rank, truth in expected.items():
        rows = {r["op_name"]: r for r in _rows(con, "SELECT * FROM op_detail_stats WHERE rank = ? AND side = 'Device'",
                                               int(rank))}
        assert rows.keys() == truth["ops"].keys()
        for name, op in truth["ops"].items():
            assert rows[name]["occurrences"] == op["count"], name
            assert rows[name]["total_ns"] == op["total_ns"], name
            assert rows[name]["op_type"] == op["type"], name
            assert rows[name]["device_exec_count"] == op["device_exec_count"], name
            assert rows[name]["device_exec_total_ns"] == op["device_exec_total_ns"], name
        types = {r["op_type"]: r for r in _rows(con, "SELECT * FROM op_type_stats WHERE rank = ? AND side = 'Device'",
                                                int(rank))}
        for op_type, entry in truth["op_types"].items():
            assert (types[op_type]["occurrences"], types[op_type]["total_ns"], types[op_type]["instances"]) == (
                entry["count"], entry["total_ns"], entry["instances"]), op_type
        assert sum(r["share"] for r in types.values()) == pytest.approx(1.0)


def test_kernel_statistics(analysed):
    _, _, expected, con, _ = analysed
    for rank, truth in expected.items():
        rows = {r["name"]: r for r in _rows(con, "SELECT * FROM kernel_stats WHERE rank = ?", int(rank))}
        assert rows.keys() == truth["kernels"].keys()
        for name, kernel in truth["kernels"].items():
            row = rows[name]
            assert (row["instances"], row["total_ns"], row["min_ns"], row["max_ns"]) == (
                kernel["count"], kernel["total_ns"], kernel["min_ns"], kernel["max_ns"]), name
        assert sum(r["share"] for r in rows.values()) == pytest.approx(1.0)
        per_op = _rows(con, "SELECT name, list(DISTINCT op_name ORDER BY op_name) AS ops FROM op_kernel_stats "
                            "WHERE rank = ? GROUP BY name", int(rank))
        assert {r["name"]: r["ops"] for r in per_op} == {n: k["ops"] for n, k in truth["kernels"].items()}


def test_cpu_ops_are_shifted_onto_the_cupti_clock(analysed):
    _, _, expected, con, _ = analysed
    for rank, truth in expected.items():
        for name, op in truth["cpu_ops"].items():
            starts = [r["start_ns"] for r in _rows(
                con, "SELECT start_ns FROM host_op WHERE rank = ? AND op_name = ? ORDER BY start_ns", int(rank), name)]
            assert starts == sorted(op["starts_ns"]), name


def test_step_phases(analysed):
    scenario, _, expected, con, _ = analysed
    for rank, truth in expected.items():
        rows = _rows(con, "SELECT step, start_ns, fp_ns, bp_ns, end_ns, iteration_interval_ns, fp_and_bp_ns, "
                          "tail_ns, total_ns FROM step_phases WHERE rank = ? ORDER BY step", int(rank))
        assert rows == truth["steps"], scenario
        if scenario == "pynative":
            assert rows == []


def test_gpu_activity_data_report(analysed):
    _, _, expected, _, out = analysed
    for rank, truth in expected.items():
        with open(out / "reports" / f"gpu_activity_data_{rank}.csv", newline="") as handle:
            rows = {r["name"]: r for r in csv.DictReader(handle)}
        assert rows.keys() == truth["kernels"].keys()
        for name, kernel in truth["kernels"].items():
            assert rows[name]["op_full_name"] == kernel["first_op"]
            assert int(rows[name]["occurrences"]) == kernel["count"]
            assert float(rows[name]["total_duration(us)"]) == pytest.approx(kernel["total_ns"] / 1e3, rel=1e-6)
            assert (rows[name]["block_dim"], rows[name]["grid_dim"]) == ("128,1,1", "64,1,1")


def test_gpu_op_detail_report(analysed):
    _, _, expected, _, out = analysed
    for rank, truth in expected.items():
        with open(out / "reports" / f"gpu_op_detail_info_{rank}.csv", newline="") as handle:
            rows = {r["op_full_name"]: r for r in csv.DictReader(handle)}
        for name, op in truth["ops"].items():
            assert int(rows[name]["op_occurrences"]) == op["count"]
            assert float(rows[name]["op_total_time(us)"]) == pytest.approx(op["total_ns"] / 1e3, rel=1e-5)
            assert int(rows[name]["cuda_activity_call_count"]) == op["device_exec_count"]
            assert float(rows[name]["cuda_activity_cost_time(us)"]) == pytest.approx(
                op["device_exec_total_ns"] / 1e3, rel=1e-5)


def test_timeline_kernels_carry_their_op(analysed):
    _, _, expected, _, out = analysed
    trace = load_trace(out)
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    assert len(kernels) + len([e for e in trace["traceEvents"] if e.get("cat") == "memcpy"]) == sum(
        t["kernel_executions"] for t in expected.values())
    assert all(e["args"]["op_name"] for e in kernels)
    steps = [e for e in trace["traceEvents"] if e.get("cat") == "step"]
    assert len(steps) == sum(len(t["steps"]) for t in expected.values())


def test_rank_selection(tmp_path):
    result = run(FIXTURES / "mindspore_gpu" / "two_ranks", tmp_path / "out", ranks=[1])
    assert result.ranks == [1]
    assert [r["rank"] for r in result.summary["ranks"]] == [1]
