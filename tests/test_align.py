"""`profpipe diff --align ops` (profpipe/align.py): the MindSpore GPU fixture graph_2x (a LeNet-like training
step on a GPU) aligned op by op with the msprof export fixture msprof_timeline (a smaller net on an Ascend NPU,
device tasks only): the expected alignment is written out here by hand from the two generators
(fixtures/generators/mindspore_gpu.py NETWORK, fixtures/generators/msprof_timeline.py TASKS and REDUCE)."""
from __future__ import annotations

import json

import pyarrow.csv as pa_csv
import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, run
from profpipe.align import SCHEMA, Side, _Op, align_runs, align_sides, canonical_type
from profpipe.cli import app

GPU = FIXTURES / "mindspore_gpu" / "graph_2x"
NPU = FIXTURES / "msprof_timeline"

#: (status, canonical type, GPU op type, NPU op type) in alignment order: the GPU step is GetNext, Conv2D, ReLU,
#: MatMul, BiasAdd, MatMul (grad), ReluGrad, Conv2DBackpropFilter, AllReduce, ApplyMomentum; the NPU step is
#: Conv2D, Relu, Conv2DBackpropInput, the HCCL AllReduce (500.5 µs) and Add (800 µs).
EXPECTED = [
    ("only_a", "getnext", "GetNext", None),
    ("both", "conv2d", "Conv2D", "Conv2D"),
    ("both", "relu", "ReLU", "Relu"),
    ("only_a", "matmul", "MatMul", None),
    ("only_a", "bias_add", "BiasAdd", None),
    ("only_a", "matmul", "MatMul", None),
    ("only_a", "relu_backward", "ReluGrad", None),
    ("both", "conv2d_backward", "Conv2DBackpropFilter", "Conv2DBackpropInput"),
    ("both", "allreduce", "AllReduce", "AllReduce"),
    ("only_a", "applymomentum", "ApplyMomentum", None),
    ("only_b", "add", None, "Add"),
]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("align")
    run(GPU, root / "gpu", data_simplification=True)
    run(NPU, root / "npu", data_simplification=True)
    return root / "gpu", root / "npu"


@pytest.fixture(scope="module")
def alignment(outputs):
    import duckdb

    a, b = (duckdb.connect(str(out / "profile.duckdb"), read_only=True) for out in outputs)
    return align_runs(a, b)


def test_canonical_types():
    for spellings, canonical in [
        (("aten::conv2d", "Conv2D", "Conv2d"), "conv2d"),
        (("aten::mm", "aten::addmm", "aten::matmul", "MatMul", "MatMulV2", "BatchMatMul", "BatchMatMulV2"), "matmul"),
        (("aten::relu", "aten::relu_", "ReLU", "Relu"), "relu"),
        (("aten::softmax", "aten::_softmax", "Softmax", "SoftmaxV2"), "softmax"),
        (("aten::layer_norm", "aten::native_layer_norm", "LayerNorm", "LayerNormV3"), "layer_norm"),
        (("c10d::allreduce_", "nccl:all_reduce", "AllReduce", "HcomAllReduce", "hcom_allReduce_"), "allreduce"),
        (("aten::add", "aten::add_", "Add"), "add"),
        (("Default/network/fc1-Dense/MatMul-op3",), "matmul"),
    ]:
        assert {canonical_type(s) for s in spellings} == {canonical}, spellings


def test_alignment_of_the_gpu_and_npu_fixtures(alignment):
    ops = alignment["ops"]
    assert ops.schema == SCHEMA
    rows = ops.to_pylist()
    assert [(r["status"], r["canonical_type"], r["op_type_a"], r["op_type_b"]) for r in rows] == EXPECTED
    assert [r["position"] for r in rows] == list(range(1, 12))
    assert [r["index_a"] for r in rows] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, None]
    assert [r["index_b"] for r in rows] == [None, 0, 1, None, None, None, None, 2, 3, None, 4]
    assert alignment["a"]["source"] == "host_op" and alignment["b"]["source"] == "device_op"
    assert alignment["b"]["steps"] == 2 and alignment["a"]["steps"] == 5


def test_npu_side_times_and_differences(alignment):
    """The NPU side's times are the generator's constants (every iteration the same): Conv2D 100.5 µs, Relu
    20.25 µs, Conv2DBackpropInput 300 µs, the AllReduce 499.5 µs (500.5 to 1000), Add 300 µs."""
    rows = {(r["canonical_type"], r["status"]): r for r in alignment["ops"].to_pylist()}
    for key, ns in [(("conv2d", "both"), 100_500), (("relu", "both"), 20_250),
                    (("conv2d_backward", "both"), 300_000), (("allreduce", "both"), 499_500),
                    (("add", "only_b"), 300_000)]:
        assert rows[key]["time_b_ns"] == pytest.approx(ns)
    conv = rows[("conv2d", "both")]
    assert conv["op_name_a"] == "Default/network/conv1-Conv2d/Conv2D-op1" and conv["op_name_b"] == "Default/Conv2D-op1"
    assert conv["difference_ns"] == pytest.approx(conv["time_b_ns"] - conv["time_a_ns"])
    assert conv["kernels_a"] == 1 and conv["top_kernel_a"].startswith("void implicit_convolve_sgemm")
    assert conv["kernels_b"] == 1 and conv["top_kernel_b"] == "Default/Conv2D-op1"
    matmul = alignment["ops"].to_pylist()[3]
    assert matmul["kernels_a"] == 2 and matmul["difference_ns"] is None and matmul["time_b_ns"] is None
    add = rows[("add", "only_b")]
    assert add["op_name_a"] is None and add["time_a_ns"] is None and add["difference_ns"] is None


def test_op_type_and_collective_summaries(alignment):
    types = {r["canonical_type"]: r for r in alignment["op_types"].to_pylist()}
    assert (types["matmul"]["ops_a"], types["matmul"]["ops_b"], types["matmul"]["matched"]) == (2, 0, 0)
    assert (types["add"]["ops_a"], types["add"]["ops_b"], types["add"]["time_b_ns"]) == (0, 1, 300_000)
    ops = alignment["ops"].to_pylist()
    assert types["matmul"]["time_a_ns"] == pytest.approx(ops[3]["time_a_ns"] + ops[5]["time_a_ns"])
    assert [r["canonical_type"] for r in alignment["collectives"].to_pylist()] == ["allreduce"]
    assert alignment["collectives"].to_pylist()[0]["time_b_ns"] == 499_500


def test_one_sided_op_inside_a_sequence():
    """An op present on one side only, between matched ops, is reported as such and does not shift the rest."""
    def side(types):
        return Side(0, "host_op", 1, (0, 1), [_Op(f"{t}-{i}", t, canonical_type(t), 10.0) for i, t in enumerate(types)],
                    None, None)

    result = align_sides(side(["aten::conv2d", "aten::relu", "aten::dropout", "aten::addmm", "aten::softmax"]),
                         side(["Conv2D", "ReLU", "MatMul", "LayerNorm", "SoftmaxV2"]))
    assert [(r["status"], r["canonical_type"]) for r in result["ops"].to_pylist()] == [
        ("both", "conv2d"), ("both", "relu"), ("only_a", "dropout"), ("both", "matmul"), ("only_b", "layer_norm"),
        ("both", "softmax")]


def test_cli(outputs, tmp_path):
    gpu, npu = outputs
    runner = CliRunner()
    result = runner.invoke(app, ["diff", str(gpu), str(npu), "--align", "ops", "-o", str(tmp_path / "al.csv"),
                                 "--report", str(tmp_path / "al.html")])
    assert result.exit_code == 0, result.output
    assert "11 aligned positions, 4 matched, 6 only in A, 1 only in B" in result.output
    assert "per collective type" in result.output
    assert pa_csv.read_csv(tmp_path / "al.csv").num_rows == 11
    assert "Op alignment of" in (tmp_path / "al.html").read_text()
    result = runner.invoke(app, ["diff", str(gpu), str(npu), "--align", "ops", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert [r["status"] for r in document["ops"]] == [e[0] for e in EXPECTED]
    assert document["side_b"]["peak_allocated_bytes"] is None
    assert runner.invoke(app, ["diff", str(gpu), str(npu), "--align", "ops", "--fail-above", "5"]).exit_code == 2
    assert runner.invoke(app, ["diff", str(gpu), str(npu), "--align", "kernels"]).exit_code == 2


def test_runs_on_different_devices_are_aligned_by_default(outputs):
    """Without --align, a GPU run and an NPU run are aligned op by op (and say so on stderr); --fail-above, which
    compares by name, is refused for them; two runs on one device type are still compared by name."""
    gpu, npu = outputs
    runner = CliRunner()
    result = runner.invoke(app, ["diff", str(gpu), str(npu), "--json"])
    assert result.exit_code == 0, result.output
    assert "A ran on gpu and B on ascend: aligned op by op" in result.stderr
    assert [r["status"] for r in json.loads(result.stdout)["ops"]] == [e[0] for e in EXPECTED]
    refused = runner.invoke(app, ["diff", str(gpu), str(npu), "--fail-above", "5"])
    assert refused.exit_code == 2 and "--fail-above compares runs by name" in refused.output
    same = runner.invoke(app, ["diff", str(gpu), str(gpu), "--json"])
    assert same.exit_code == 0 and "rows" in json.loads(same.stdout) and "aligned" not in same.stderr
