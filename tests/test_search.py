"""`profpipe search` / profpipe.api.search: ranked, case-insensitive search of ops and kernels over the marts.

Expectations are worked out by hand from what the fixtures hold: LeNet's convolutions (two Conv2D forward ops, their
backward filter ops and one backward input op: the first layer needs no input gradient), the Kineto fixture's one
GEMM kernel and aten::addmm op per rank, the era A Ascend net's Conv2D and its filter gradient. Counts are checked
against the normalized tables (another path than the marts the search reads).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, query, run
from profpipe import api
from profpipe.cli import app
from profpipe.op_search import fuzzy_pattern


@pytest.fixture(scope="module")
def outs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("search")
    found = {}
    for name in ("mindspore_cpu/lenet_graph", "kineto", "ascend_raw/era_a"):
        found[name] = root / name.replace("/", "_")
        run(FIXTURES / name, found[name], data_simplification=True)
    return found


def _short(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def test_exact_then_prefix_each_by_time_and_case_does_not_matter(outs):
    lenet = outs["mindspore_cpu/lenet_graph"]
    rows = api.search(lenet, "conv2d")
    assert api.search(lenet, "CONV2D") == rows == api.search(lenet, "  Conv2D ")
    # exact: the two Conv2D ops (their type); prefix: their short names start with Conv2D (the three backward ops)
    assert [(r["match"], r["type"]) for r in rows[:2]] == [("exact", "Conv2D")] * 2
    assert [r["match"] for r in rows] == ["exact"] * 2 + ["prefix"] * 3
    assert sorted(r["type"] for r in rows[2:]) == ["Conv2DBackpropFilter"] * 2 + ["Conv2DBackpropInput"]
    # within a class: device time (none on a CPU run), then the op's own time, most first
    for group in (rows[:2], rows[2:]):
        assert [r["total_ns"] for r in group] == sorted((r["total_ns"] for r in group), reverse=True)
    totals = dict(query(lenet, "SELECT op_name, total_ns FROM op_detail_stats"))
    assert all(r["total_ns"] == totals[r["name"]] and r["calls"] == 18 for r in rows)
    # MindSpore's ops are in op_detail_stats and host_op_stats: one row each, typed by the first
    assert {r["source"] for r in rows} == {"op_detail_stats+host_op_stats"}


def test_substring_and_fuzzy_come_after_and_fuzzy_is_a_subsequence(outs):
    lenet = outs["mindspore_cpu/lenet_graph"]
    fuzzy = api.search(lenet, "cv2d", limit=0)
    # no name or type holds "cv2d", five hold c..v..2..d in order: the convolutions
    assert {r["match"] for r in fuzzy} == {"fuzzy"}
    assert sorted(r["type"] for r in fuzzy) == ["Conv2D"] * 2 + ["Conv2DBackpropFilter"] * 2 + ["Conv2DBackpropInput"]
    # "backprop" is inside the three backward convolutions' names and types, at the start of neither; and it is
    # a subsequence of the max-pool gradients' names: _BACKbone-LeNet/Pool-MaxPool2d/gRad_MaxPool/MaxPoolGrad-OP
    inside = api.search(lenet, "backprop", limit=0)
    assert [(r["match"], r["type"]) for r in inside[:3]] == [("substring", "Conv2DBackpropInput")] + \
        [("substring", "Conv2DBackpropFilter")] * 2  # by time: the input gradient is the slowest
    assert [(r["match"], r["type"]) for r in inside[3:]] == [("fuzzy", "MaxPoolGrad")] * 2
    # the Ascend net: Conv2D (exact, by type) before Conv2DBackpropFilter (prefix)
    era_a = api.search(outs["ascend_raw/era_a"], "conv2d")
    assert [(r["match"], _short(r["name"]).split("-")[0], r["source"]) for r in era_a] == [
        ("exact", "Conv2D", "device_op_stats"), ("prefix", "Conv2DBackpropFilter", "device_op_stats")]
    assert era_a[0]["calls"] == query(outs["ascend_raw/era_a"],
                                      "SELECT executions FROM device_op_stats WHERE op_type = 'Conv2D'")[0][0]


def test_kinds_and_kernels_summed_over_streams(outs):
    kineto = outs["kineto"]
    kernels = api.search(kineto, "GEMM", kind="kernel")
    launched = dict(query(kineto, "SELECT rank, count(*) FROM device_exec WHERE name = 'ampere_sgemm_64x64_nn' GROUP BY rank"))
    assert [(r["kind"], r["name"], r["rank"], r["calls"], r["match"]) for r in kernels] == [
        ("kernel", "ampere_sgemm_64x64_nn", 0, launched[0], "substring"),
        ("kernel", "ampere_sgemm_64x64_nn", 1, launched[1], "substring")]
    # no op name holds "gemm"; autoGrad::Engine::evaluate_function: AddMMbackward0 holds it as a subsequence
    assert {(r["kind"], r["match"], r["name"]) for r in api.search(kineto, "gemm", kind="op", limit=0)} == \
        {("op", "fuzzy", "autograd::engine::evaluate_function: AddmmBackward0")}
    # a kernel is not found through the op it belongs to (its type column)
    assert {r["kind"] for r in api.search(kineto, "addmm", limit=0)} == {"op"}
    ops = api.search(kineto, "aten::addmm", kind="op")
    assert [(r["match"], r["name"], r["rank"]) for r in ops[:2]] == [("exact", "aten::addmm", 0),
                                                                     ("exact", "aten::addmm", 1)]
    # ranked by the device time it launched (host_op_stats), most first
    assert ops[0]["device_ns"] == query(kineto, "SELECT device_total_ns FROM host_op_stats "
                                                "WHERE rank = 0 AND op_name = 'aten::addmm'")[0][0] > 0


def test_the_term_is_data_not_sql_and_like_wildcards_are_literal(outs):
    kineto = outs["kineto"]
    assert api.search(kineto, "'; DROP TABLE host_op_stats; --") == []
    assert query(kineto, "SELECT count(*) > 0 FROM host_op_stats") == [(True,)]
    # "a_m": '_' is a character, not LIKE's any-one: aten::addmm (no '_') is no fuzzy match, ampere_sgemm is
    names = {r["name"] for r in api.search(kineto, "a_m", limit=0)}
    assert "ampere_sgemm_64x64_nn" in names and "aten::addmm" not in names
    assert api.search(kineto, "%") == []
    assert fuzzy_pattern("a%_\\") == "%a%\\%%\\_%\\\\%"


def test_limit_and_bad_arguments(outs):
    lenet = outs["mindspore_cpu/lenet_graph"]
    assert len(api.search(lenet, "conv", limit=1)) == 1
    assert len(api.search(lenet, "e", limit=0)) > 20 == len(api.search(lenet, "e"))
    for bad in ({"term": " "}, {"term": "x", "kind": "ops"}, {"term": "x", "limit": -1}):
        with pytest.raises(ValueError):
            api.search(lenet, **{"term": "x", **bad})


def test_cli_prints_a_table_and_json(outs):
    lenet = outs["mindspore_cpu/lenet_graph"]
    runner = CliRunner()
    table = runner.invoke(app, ["search", str(lenet), "conv2d", "-n", "2"])
    assert table.exit_code == 0, table.output
    lines = table.output.splitlines()
    assert lines[0].split()[:4] == ["match", "kind", "name", "type"] and len(lines) == 4
    assert lines[2].split()[:2] == ["exact", "op"]
    as_json = runner.invoke(app, ["search", str(lenet), "conv2d", "--json", "--kind", "op"])
    assert json.loads(as_json.output) == api.search(lenet, "conv2d")
    assert runner.invoke(app, ["search", str(lenet), "x", "--kind", "nope"]).exit_code == 2
    assert runner.invoke(app, ["search", str(lenet / "missing"), "x"]).exit_code == 2


def test_a_warehouse_is_searched_over_its_runs(tmp_path: Path):
    import shutil

    root = tmp_path / "root"
    for run_name, fixture in (("a", "lenet_graph"), ("b", "mlp_graph")):
        shutil.copytree(FIXTURES / "mindspore_cpu" / fixture, root / run_name)
    warehouse = tmp_path / "wh"
    assert CliRunner().invoke(app, ["batch", str(root), "-w", str(warehouse), "--workers", "1"]).exit_code == 0
    rows = api.search(warehouse, "matmul", limit=0)
    # every MatMul op of both runs is an exact match (by type), each row naming its run
    from profpipe.warehouse import connect

    with connect(warehouse) as con:
        per_run = dict(con.execute("SELECT run, count(*) FROM op_detail_stats WHERE op_type = 'MatMul' GROUP BY run")
                       .fetchall())
    exact = [r for r in rows if r["match"] == "exact"]
    assert {run_name: sum(r["run"] == run_name for r in exact) for run_name in ("a", "b")} == per_run
    assert set(per_run) == {"a", "b"} and all(n > 0 for n in per_run.values())
    assert exact == sorted(exact, key=lambda r: (-r["total_ns"], r["name"], r["rank"], r["run"]))
