"""`profpipe diff --align ops` (profpipe/align.py): the MindSpore GPU fixture graph_2x (a LeNet-like training
step on a GPU) aligned op by op with the msprof export fixture msprof_timeline (a smaller net on an Ascend NPU,
device tasks only): the expected alignment is written out here by hand from the two generators
(fixtures/generators/mindspore_gpu.py NETWORK, fixtures/generators/msprof_timeline.py TASKS and REDUCE).
And a matched pair, one model on both devices: the real PyTorch trace fixtures/pytorch_cuda (SmallNet on an
H100) aligned with fixtures/msprof_smallnet (the same training step as MindSpore would run it on Ascend,
fixtures/generators/msprof_smallnet.py OPS), with fixtures/mindspore_cpu/smallnet_graph (the same net recorded by
MindSpore itself on a CPU), and with fixtures/ascend_pt_smallnet (the same script as torch_npu records it on Ascend,
fixtures/generators/ascend_pt_smallnet.py STEP; text and db export)."""
from __future__ import annotations

import importlib.util
import json
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pyarrow.csv as pa_csv
import pytest
from conftest import FIXTURES, assert_generator_reproduces, run
from typer.testing import CliRunner

from profpipe.align import SCHEMA, Side, _Op, align_runs, align_sides, canonical_type
from profpipe.cli import app

GPU = FIXTURES / "mindspore_gpu" / "graph_2x"
NPU = FIXTURES / "msprof_timeline"
PAIR_GPU = FIXTURES / "pytorch_cuda"
PAIR_NPU = FIXTURES / "msprof_smallnet"

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


def _analysed(tmp_path_factory, fixture: Path) -> Path:
    """The output folder of `fixture` analysed (as the tests' outputs: data simplification on)."""
    out = tmp_path_factory.mktemp("align") / fixture.name
    run(fixture, out, data_simplification=True)
    return out


def _aligned(outputs: tuple[Path, Path]) -> dict:
    """align_runs over the two outputs' profile.duckdb."""
    import duckdb

    a, b = (duckdb.connect(str(out / "profile.duckdb"), read_only=True) for out in outputs)
    return align_runs(a, b)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    return _analysed(tmp_path_factory, GPU), _analysed(tmp_path_factory, NPU)


@pytest.fixture(scope="module")
def alignment(outputs):
    return _aligned(outputs)


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
        (("AddmmBackward0", "MmBackward0", "Gradients/Default/MatMul-op18"), "matmul"),
        (("aten::convolution_backward", "ConvolutionBackward0", "Conv2DBackpropInput", "Conv2DBackpropFilterV2"),
         "conv2d_backward"),
        (("ReluBackward0", "aten::threshold_backward", "ReluGrad", "ReluGradV2"), "relu_backward"),
        (("aten::max_pool2d", "aten::max_pool2d_with_indices", "MaxPool", "MaxPoolWithArgmaxV2"), "max_pool2d"),
        (("MaxPool2DWithIndicesBackward0", "aten::max_pool2d_with_indices_backward", "MaxPoolGrad",
          "MaxPoolGradWithArgmaxV2"), "max_pool2d_backward"),
        (("aten::adaptive_avg_pool2d", "aten::avg_pool2d", "AdaptiveAvgPool2D", "AvgPool"), "avg_pool2d"),
        (("AdaptiveAvgPool2DBackward0", "aten::_adaptive_avg_pool2d_backward", "AdaptiveAvgPool2DGrad",
          "AvgPoolGrad"), "avg_pool2d_backward"),
        (("aten::cross_entropy_loss", "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits"),
         "cross_entropy"),
        (("aten::sum", "BiasAddGrad", "ReduceSum"), "sum"),
        (("aten::nll_loss", "aten::nll_loss_forward", "NLLLoss"), "nll_loss"),
        (("NllLossBackward0", "aten::nll_loss_backward", "NLLLossGrad"), "nll_loss_backward"),
        (("aten::log_softmax", "aten::_log_softmax", "LogSoftmaxV2"), "log_softmax"),
        (("LogSoftmaxBackward0", "aten::_log_softmax_backward_data", "LogSoftmaxGrad"), "log_softmax_backward"),
        (("aten::mul", "Mul", "Muls"), "mul"),
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


#: The matched pair, written out by hand from the two op sequences and difflib.SequenceMatcher's rule (the
#: longest matching block first, on a tie the earliest in A, then the same on each side of it).
#: A, the PyTorch step's 55 top-level ops (representative step 2 of 3): to, to, matmul, sum (the side stream's
#: auxiliary product), conv2d, relu, max_pool2d, conv2d, relu, adaptive_avg_pool2d, flatten, linear, relu, linear,
#: cross_entropy_loss, mul, add (loss + 0 * auxiliary), zero_ x8 (zero_grad), ones_like, AddBackward0,
#: NllLossBackward0, LogSoftmaxBackward0, AddmmBackward0, sum, view, AccumulateGrad, TBackward0, AccumulateGrad,
#: ReluBackward0, AddmmBackward0, sum, view, AccumulateGrad, TBackward0, AccumulateGrad, ViewBackward0,
#: AdaptiveAvgPool2DBackward0, ReluBackward0, ConvolutionBackward0, AccumulateGrad x2,
#: MaxPool2DWithIndicesBackward0, ReluBackward0, ConvolutionBackward0, AccumulateGrad x2, _foreach_add_, item.
#: B, the 40 GE ops of msprof_smallnet.py OPS.
#: The longest block is the forward conv2d ... flatten, linear/MatMul (8 ops); right of it the blocks are single
#: ops or pairs (relu, matmul; avg_pool2d_backward, relu_backward; max_pool2d_backward, relu_backward), taken
#: earliest in A first. Consequences: aten::mul (0 * auxiliary, PyTorch only) pairs with the loss gradient's Mul,
#: a type coincidence. PyTorch sums fc2's bias gradient (aten::sum, A 30) after AddmmBackward0 (A 29) while the
#: NPU runs BiasAddGrad before the MatMuls, so fc2's BiasAddGrad (B 16) lies before the matched AddmmBackward0 /
#: MatMul (A 29, B 17) and A 30 pairs with fc1's BiasAddGrad (B 20): pairs follow type and order, not layers; that
#: pair, found first (earliest in A), leaves fc2's ReluBackward0 (A 35) and ReluGrad (B 19) apart (pairing those
#: instead would be no longer). Where one PyTorch node does what two NPU ops do (AddmmBackward0: two MatMuls;
#: ConvolutionBackward0: Conv2DBackpropInput and Conv2DBackpropFilter), it pairs with the first.
_ZERO = [("only_a", "zero", "aten::zero_", None)] * 8
_ACCUMULATE = ("only_a", "autogradaccumulategrad", "torch::autograd::AccumulateGrad", None)
EXPECTED_PAIR = [
    ("only_a", "to", "aten::to", None),
    ("only_a", "to", "aten::to", None),
    ("only_a", "matmul", "aten::matmul", None),
    ("only_a", "sum", "aten::sum", None),
    ("both", "conv2d", "aten::conv2d", "Conv2D"),
    ("both", "relu", "aten::relu", "Relu"),
    ("both", "max_pool2d", "aten::max_pool2d", "MaxPool"),
    ("both", "conv2d", "aten::conv2d", "Conv2D"),
    ("both", "relu", "aten::relu", "Relu"),
    ("both", "avg_pool2d", "aten::adaptive_avg_pool2d", "AdaptiveAvgPool2D"),
    ("both", "flatten", "aten::flatten", "Flatten"),
    ("both", "matmul", "aten::linear", "MatMulV2"),
    ("only_b", "bias_add", None, "BiasAdd"),
    ("both", "relu", "aten::relu", "Relu"),
    ("both", "matmul", "aten::linear", "MatMulV2"),
    ("only_b", "bias_add", None, "BiasAdd"),
    ("only_b", "onehot", None, "OneHot"),
    ("both", "cross_entropy", "aten::cross_entropy_loss", "SoftmaxCrossEntropyWithLogits"),
    ("only_b", "reducemean", None, "ReduceMean"),
    ("both", "mul", "aten::mul", "Mul"),
    ("only_a", "add", "aten::add", None),
    *_ZERO,
    ("only_a", "oneslike", "aten::ones_like", None),
    ("only_a", "addbackward", "AddBackward0", None),
    ("only_a", "nll_loss_backward", "NllLossBackward0", None),
    ("only_a", "log_softmax_backward", "LogSoftmaxBackward0", None),
    ("only_b", "sum", None, "BiasAddGrad"),
    ("both", "matmul", "AddmmBackward0", "MatMulV2"),
    ("only_b", "matmul", None, "MatMulV2"),
    ("only_b", "relu_backward", None, "ReluGrad"),
    ("both", "sum", "aten::sum", "BiasAddGrad"),
    ("only_a", "view", "aten::view", None),
    _ACCUMULATE,
    ("only_a", "tbackward", "TBackward0", None),
    _ACCUMULATE,
    ("only_a", "relu_backward", "ReluBackward0", None),
    ("both", "matmul", "AddmmBackward0", "MatMulV2"),
    ("only_a", "sum", "aten::sum", None),
    ("only_a", "view", "aten::view", None),
    _ACCUMULATE,
    ("only_a", "tbackward", "TBackward0", None),
    _ACCUMULATE,
    ("only_a", "viewbackward", "ViewBackward0", None),
    ("only_b", "matmul", None, "MatMulV2"),
    ("both", "avg_pool2d_backward", "AdaptiveAvgPool2DBackward0", "AdaptiveAvgPool2DGrad"),
    ("both", "relu_backward", "ReluBackward0", "ReluGrad"),
    ("only_b", "sum", None, "BiasAddGrad"),
    ("both", "conv2d_backward", "ConvolutionBackward0", "Conv2DBackpropInput"),
    _ACCUMULATE,
    _ACCUMULATE,
    ("only_b", "conv2d_backward", None, "Conv2DBackpropFilter"),
    ("both", "max_pool2d_backward", "MaxPool2DWithIndicesBackward0", "MaxPoolGrad"),
    ("both", "relu_backward", "ReluBackward0", "ReluGrad"),
    ("only_b", "sum", None, "BiasAddGrad"),
    ("both", "conv2d_backward", "ConvolutionBackward0", "Conv2DBackpropFilter"),
    _ACCUMULATE,
    _ACCUMULATE,
    ("only_a", "foreachadd", "aten::_foreach_add_", None),
    ("only_a", "item", "aten::item", None),
    *[("only_b", "sgd", None, "SGD")] * 8,
]


def _smallnet_generator():
    spec = importlib.util.spec_from_file_location("msprof_smallnet", FIXTURES / "generators" / "msprof_smallnet.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def pair_gpu_output(tmp_path_factory):
    return _analysed(tmp_path_factory, PAIR_GPU)


@pytest.fixture(scope="module")
def pair_outputs(tmp_path_factory, pair_gpu_output):
    return pair_gpu_output, _analysed(tmp_path_factory, PAIR_NPU)


@pytest.fixture(scope="module")
def pair_alignment(pair_outputs):
    return _aligned(pair_outputs)


def test_smallnet_generator_is_deterministic(tmp_path):
    assert_generator_reproduces("msprof_smallnet.py", PAIR_NPU, tmp_path)


def test_alignment_of_a_matched_gpu_and_npu_pair(pair_alignment):
    """PyTorch SmallNet on a GPU against the same step on an NPU: every forward op of the net meets its
    counterpart, and so do the gradient ops (EXPECTED_PAIR)."""
    rows = pair_alignment["ops"].to_pylist()
    assert len(EXPECTED_PAIR) == 74 and sum(e[0] == "both" for e in EXPECTED_PAIR) == 21
    assert [(r["status"], r["canonical_type"], r["op_type_a"], r["op_type_b"]) for r in rows] == EXPECTED_PAIR
    assert [r["index_a"] for r in rows if r["index_a"] is not None] == list(range(55))
    assert [r["index_b"] for r in rows if r["index_b"] is not None] == list(range(40))
    assert pair_alignment["a"]["source"] == "host_op" and pair_alignment["b"]["source"] == "device_op"
    assert (pair_alignment["a"]["steps"], pair_alignment["b"]["steps"]) == (3, 2)
    assert pair_alignment["collectives"].num_rows == 0


def test_matched_pair_times(pair_alignment):
    """The NPU side's time per step of an op is the generator's duration (both iterations alike); a matched op's
    difference is B - A."""
    durations = {name: dur * 1000 for name, _, dur in _smallnet_generator().OPS}
    rows = pair_alignment["ops"].to_pylist()
    for row in rows:
        if row["op_name_b"] is not None:
            assert row["time_b_ns"] == pytest.approx(durations[row["op_name_b"]]), row["op_name_b"]
            assert row["kernels_b"] == 1 and row["top_kernel_b"] == row["op_name_b"]
    conv = rows[4]
    assert (conv["op_name_a"], conv["op_name_b"]) == ("aten::conv2d", "Default/Conv2D-op1")
    assert conv["time_b_ns"] == 18_500 and conv["kernels_a"] == 2
    assert conv["difference_ns"] == pytest.approx(conv["time_b_ns"] - conv["time_a_ns"])
    filter_grad = rows[61]
    assert filter_grad["op_name_b"] == "Gradients/Default/Conv2DBackpropFilter-op32" and filter_grad["time_b_ns"] == 24_250
    assert filter_grad["difference_ns"] == pytest.approx(24_250 - filter_grad["time_a_ns"])
    assert all(r["difference_ns"] is None for r in rows if r["status"] != "both")
    bias = rows[37]  # fc2's bias gradient on the GPU with fc1's on the NPU (EXPECTED_PAIR)
    assert (bias["status"], bias["index_a"], bias["op_name_b"]) == ("both", 30, "Gradients/Default/BiasAddGrad-op21")
    types = {r["canonical_type"]: r for r in pair_alignment["op_types"].to_pylist()}
    assert (types["conv2d_backward"]["ops_a"], types["conv2d_backward"]["ops_b"],
            types["conv2d_backward"]["matched"]) == (2, 3, 2)
    assert types["conv2d_backward"]["time_b_ns"] == pytest.approx(26_750 + 31_500 + 24_250)
    assert (types["sgd"]["ops_b"], types["sgd"]["time_b_ns"]) == (8, 8 * 2_250)


def test_matched_pair_is_aligned_by_default(pair_outputs):
    """`profpipe diff GPU NPU` without --align: op by op, as above."""
    gpu, npu = pair_outputs
    result = CliRunner().invoke(app, ["diff", str(gpu), str(npu), "--json"])
    assert result.exit_code == 0, result.output
    assert "A ran on gpu and B on ascend: aligned op by op" in result.stderr
    document = json.loads(result.stdout)
    assert [(r["status"], r["canonical_type"]) for r in document["ops"]] == [e[:2] for e in EXPECTED_PAIR]


CPU_SMALLNET = FIXTURES / "mindspore_cpu" / "smallnet_graph"

#: The same SmallNet recorded by MindSpore 2.10 itself on a CPU (fixtures/mindspore_cpu/smallnet_graph: graph mode,
#: SGD, the last of three steps profiled, fixtures/generators/mindspore_cpu_train.py SmallNet), aligned with the
#: PyTorch GPU step (A, the 55 ops listed above EXPECTED_PAIR), written out by hand with the same rule.
#: B, the 40 host ops of the MindSpore step: Conv2D, BiasAdd, ReLU, MaxPool, Conv2D, BiasAdd, ReLU,
#: AdaptiveAvgPool2D, MatMul, BiasAdd, ReLU, MatMul, BiasAdd (fc1, fc2: Dense is MatMul + BiasAdd, and so is a
#: convolution with a bias), SparseSoftmaxCrossEntropyWithLogits (the loss) and again
#: SparseSoftmaxCrossEntropyWithLogits (its gradient: MindSpore runs the same primitive with is_grad, one type),
#: fc2's MatMul, BiasAddGrad, MatMul, ReluGrad, fc1's MatMul, BiasAddGrad, MatMul, AdaptiveAvgPool2DGrad, ReluGrad,
#: conv2's Conv2DBackpropFilter, BiasAddGrad, Conv2DBackpropInput, MaxPoolGrad, ReluGrad, conv1's BiasAddGrad,
#: Conv2DBackpropFilter (no input gradient for the first layer), AssignAdd (the global step), SGD x8.
#: No common run is longer than 3: the longest blocks, earliest in A first, are relu, max_pool2d, conv2d (A 5-7,
#: B 2-4), then right of it relu_backward, matmul, sum (A 35-37, fc1's ReluBackward0, AddmmBackward0 and bias
#: sum; B 18-20) and avg_pool2d_backward, relu_backward, conv2d_backward (A 43-45, B 22-24); between them pairs
#: and single ops. Every BiasAdd stays one-sided (PyTorch adds the bias inside addmm / the convolution), so the
#: forward pairs one op at a time around them; the loss pairs with the forward SparseSoftmaxCrossEntropyWithLogits,
#: its gradient twin is only_b (PyTorch's NllLossBackward0 / LogSoftmaxBackward0 have other types). Unlike the
#: msprof pair, the bias gradients pair layer by layer here (MindSpore runs a Dense layer's BiasAddGrad between
#: its two gradient MatMuls, where PyTorch's bias sum follows AddmmBackward0), except the convolutions', which
#: PyTorch computes inside ConvolutionBackward0. ConvolutionBackward0 pairs with Conv2DBackpropFilter, the first
#: conv2d_backward of each layer here. Program and derivation agree.
_ACC = _ACCUMULATE
EXPECTED_CPU_PAIR = [
    ("only_a", "to", "aten::to", None),
    ("only_a", "to", "aten::to", None),
    ("only_a", "matmul", "aten::matmul", None),
    ("only_a", "sum", "aten::sum", None),
    ("both", "conv2d", "aten::conv2d", "Conv2D"),
    ("only_b", "bias_add", None, "BiasAdd"),
    ("both", "relu", "aten::relu", "ReLU"),
    ("both", "max_pool2d", "aten::max_pool2d", "MaxPool"),
    ("both", "conv2d", "aten::conv2d", "Conv2D"),
    ("only_b", "bias_add", None, "BiasAdd"),
    ("both", "relu", "aten::relu", "ReLU"),
    ("both", "avg_pool2d", "aten::adaptive_avg_pool2d", "AdaptiveAvgPool2D"),
    ("only_a", "flatten", "aten::flatten", None),
    ("both", "matmul", "aten::linear", "MatMul"),
    ("only_b", "bias_add", None, "BiasAdd"),
    ("both", "relu", "aten::relu", "ReLU"),
    ("both", "matmul", "aten::linear", "MatMul"),
    ("only_b", "bias_add", None, "BiasAdd"),
    ("both", "cross_entropy", "aten::cross_entropy_loss", "SparseSoftmaxCrossEntropyWithLogits"),
    ("only_a", "mul", "aten::mul", None),
    ("only_a", "add", "aten::add", None),
    *_ZERO,
    ("only_a", "oneslike", "aten::ones_like", None),
    ("only_a", "addbackward", "AddBackward0", None),
    ("only_a", "nll_loss_backward", "NllLossBackward0", None),
    ("only_a", "log_softmax_backward", "LogSoftmaxBackward0", None),
    ("only_b", "cross_entropy", None, "SparseSoftmaxCrossEntropyWithLogits"),
    ("both", "matmul", "AddmmBackward0", "MatMul"),
    ("both", "sum", "aten::sum", "BiasAddGrad"),
    ("only_a", "view", "aten::view", None),
    _ACC,
    ("only_a", "tbackward", "TBackward0", None),
    _ACC,
    ("only_b", "matmul", None, "MatMul"),
    ("both", "relu_backward", "ReluBackward0", "ReluGrad"),
    ("both", "matmul", "AddmmBackward0", "MatMul"),
    ("both", "sum", "aten::sum", "BiasAddGrad"),
    ("only_a", "view", "aten::view", None),
    _ACC,
    ("only_a", "tbackward", "TBackward0", None),
    _ACC,
    ("only_a", "viewbackward", "ViewBackward0", None),
    ("only_b", "matmul", None, "MatMul"),
    ("both", "avg_pool2d_backward", "AdaptiveAvgPool2DBackward0", "AdaptiveAvgPool2DGrad"),
    ("both", "relu_backward", "ReluBackward0", "ReluGrad"),
    ("both", "conv2d_backward", "ConvolutionBackward0", "Conv2DBackpropFilter"),
    _ACC,
    _ACC,
    ("only_b", "sum", None, "BiasAddGrad"),
    ("only_b", "conv2d_backward", None, "Conv2DBackpropInput"),
    ("both", "max_pool2d_backward", "MaxPool2DWithIndicesBackward0", "MaxPoolGrad"),
    ("both", "relu_backward", "ReluBackward0", "ReluGrad"),
    ("only_b", "sum", None, "BiasAddGrad"),
    ("both", "conv2d_backward", "ConvolutionBackward0", "Conv2DBackpropFilter"),
    _ACC,
    _ACC,
    ("only_a", "foreachadd", "aten::_foreach_add_", None),
    ("only_a", "item", "aten::item", None),
    ("only_b", "assignadd", None, "AssignAdd"),
    *[("only_b", "sgd", None, "SGD")] * 8,
]


@pytest.fixture(scope="module")
def cpu_pair_outputs(tmp_path_factory, pair_gpu_output):
    return pair_gpu_output, _analysed(tmp_path_factory, CPU_SMALLNET)


def test_alignment_of_a_gpu_run_and_a_mindspore_cpu_run(cpu_pair_outputs):
    """PyTorch SmallNet on a GPU against MindSpore's own CPU recording of it: aligned op by op by default (gpu and
    cpu differ), as EXPECTED_CPU_PAIR; the MindSpore side's time of an op is its host time, MindSpore's own figure
    (trace_view.json's dur in µs, cpu_op_detail_info_0.csv's op_total_time in ms, one execution in the step)."""
    import csv
    from decimal import Decimal

    gpu, cpu = cpu_pair_outputs
    result = CliRunner().invoke(app, ["diff", str(gpu), str(cpu), "--json"])
    assert result.exit_code == 0, result.output
    assert "A ran on gpu and B on cpu: aligned op by op" in result.stderr
    document = json.loads(result.stdout)
    rows = document["ops"]
    assert len(EXPECTED_CPU_PAIR) == 74 and sum(e[0] == "both" for e in EXPECTED_CPU_PAIR) == 21
    assert [(r["status"], r["canonical_type"], r["op_type_a"], r["op_type_b"]) for r in rows] == EXPECTED_CPU_PAIR
    assert [r["index_a"] for r in rows if r["index_a"] is not None] == list(range(55))
    assert [r["index_b"] for r in rows if r["index_b"] is not None] == list(range(40))
    assert document["side_a"]["source"] == "host_op" and document["side_b"]["source"] == "host_op"
    assert (document["side_a"]["steps"], document["side_b"]["steps"]) == (3, 1)  # the CPU dump marks no steps

    folder = next(CPU_SMALLNET.glob("*_ascend_ms"))
    events = json.loads((folder / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_text())
    cpu_ops = [e for e in events if e["ph"] == "X" and e["pid"] == 2]  # process "CPU OP"
    dur_ns = {e["name"]: Decimal(e["dur"]) * 1000 for e in cpu_ops}
    assert len(cpu_ops) == len(dur_ns) == 40  # each op once
    for row in rows:
        if row["op_name_b"] is not None:
            assert row["kernels_b"] == 0 and row["device_b_ns"] == 0
            assert row["time_b_ns"] == row["host_b_ns"] == dur_ns[row["op_name_b"]], row["op_name_b"]
    with open(folder / "FRAMEWORK" / "cpu_op_detail_info_0.csv", newline="") as handle:
        detail = {r["full_op_name"]: r for r in csv.DictReader(handle)}
    conv1, filter_grad = rows[4], rows[60]
    assert conv1["op_name_b"] == "Default/network-WithLossCell/_backbone-SmallNet/conv1-Conv2d/Conv2D-op0"
    assert filter_grad["op_name_b"] == ("Gradients/Default/network-WithLossCell/_backbone-SmallNet/conv1-Conv2d/"
                                        "Grad_Conv2D/Conv2DBackpropFilter-op0")
    for row in (conv1, filter_grad):
        expected = detail[row["op_name_b"]]
        assert expected["op_occurrences"] == "1"
        # MindSpore prints 6 significant digits
        assert row["time_b_ns"] == pytest.approx(float(expected["op_total_time(ms)"]) * 1e6, rel=2e-5)
        assert row["difference_ns"] == pytest.approx(row["time_b_ns"] - row["time_a_ns"])


TORCH_NPU = FIXTURES / "ascend_pt_smallnet"

#: The third matched pair: the PyTorch GPU step (A, the 55 top-level ops listed above EXPECTED_PAIR) against the
#: same script run by torch_npu on Ascend (fixtures/ascend_pt_smallnet, fixtures/generators/ascend_pt_smallnet.py
#: STEP), written out by hand: both sides are PyTorch host ops of the same names (the autograd engine's
#: evaluate_function wrappers left out on both), so every op pairs with its namesake and nothing is one-sided.
#: (canonical type, op type of both sides).
EXPECTED_TORCH_NPU = [
    ("to", "aten::to"), ("to", "aten::to"), ("matmul", "aten::matmul"), ("sum", "aten::sum"),
    ("conv2d", "aten::conv2d"), ("relu", "aten::relu"), ("max_pool2d", "aten::max_pool2d"),
    ("conv2d", "aten::conv2d"), ("relu", "aten::relu"), ("avg_pool2d", "aten::adaptive_avg_pool2d"),
    ("flatten", "aten::flatten"), ("matmul", "aten::linear"), ("relu", "aten::relu"), ("matmul", "aten::linear"),
    ("cross_entropy", "aten::cross_entropy_loss"), ("mul", "aten::mul"), ("add", "aten::add"),
    *[("zero", "aten::zero_")] * 8,
    ("oneslike", "aten::ones_like"), ("addbackward", "AddBackward0"), ("nll_loss_backward", "NllLossBackward0"),
    ("log_softmax_backward", "LogSoftmaxBackward0"),
    ("matmul", "AddmmBackward0"), ("sum", "aten::sum"), ("view", "aten::view"),
    ("autogradaccumulategrad", "torch::autograd::AccumulateGrad"), ("tbackward", "TBackward0"),
    ("autogradaccumulategrad", "torch::autograd::AccumulateGrad"), ("relu_backward", "ReluBackward0"),
    ("matmul", "AddmmBackward0"), ("sum", "aten::sum"), ("view", "aten::view"),
    ("autogradaccumulategrad", "torch::autograd::AccumulateGrad"), ("tbackward", "TBackward0"),
    ("autogradaccumulategrad", "torch::autograd::AccumulateGrad"), ("viewbackward", "ViewBackward0"),
    ("avg_pool2d_backward", "AdaptiveAvgPool2DBackward0"), ("relu_backward", "ReluBackward0"),
    ("conv2d_backward", "ConvolutionBackward0"),
    *[("autogradaccumulategrad", "torch::autograd::AccumulateGrad")] * 2,
    ("max_pool2d_backward", "MaxPool2DWithIndicesBackward0"), ("relu_backward", "ReluBackward0"),
    ("conv2d_backward", "ConvolutionBackward0"),
    *[("autogradaccumulategrad", "torch::autograd::AccumulateGrad")] * 2,
    ("foreachadd", "aten::_foreach_add_"), ("item", "aten::item"),
]


def _torch_npu_generator():
    spec = importlib.util.spec_from_file_location("ascend_pt_smallnet",
                                                  FIXTURES / "generators" / "ascend_pt_smallnet.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def torch_npu_alignments(tmp_path_factory, pair_gpu_output):
    """The GPU step aligned with the torch_npu step, per export (text, db), and the analysed outputs."""
    outputs = {export: _analysed(tmp_path_factory, TORCH_NPU / export / "rank0_ascend_pt") for export in ("text", "db")}
    return {export: _aligned((pair_gpu_output, out)) for export, out in outputs.items()}, outputs


def test_torch_npu_smallnet_generator_is_deterministic(tmp_path):
    assert_generator_reproduces("ascend_pt_smallnet.py", TORCH_NPU, tmp_path)


@pytest.mark.parametrize("export", ["text", "db"])
def test_alignment_of_a_gpu_trace_and_a_torch_npu_result(torch_npu_alignments, export):
    """Both sides PyTorch host ops: the aten ops and autograd nodes pair by name, op by op (EXPECTED_TORCH_NPU)."""
    alignment = torch_npu_alignments[0][export]
    rows = alignment["ops"].to_pylist()
    assert len(EXPECTED_TORCH_NPU) == 55
    assert [(r["status"], r["canonical_type"], r["op_type_a"], r["op_type_b"]) for r in rows] == \
        [("both", canonical, op, op) for canonical, op in EXPECTED_TORCH_NPU]
    assert [r["index_a"] for r in rows] == [r["index_b"] for r in rows] == list(range(55))
    assert (alignment["a"]["source"], alignment["b"]["source"]) == ("host_op", "host_op")
    assert (alignment["a"]["steps"], alignment["b"]["steps"]) == (3, 2)


def _top_level(node):
    """The ops the alignment sees of one top-level node of the generator's STEP (a wrapper gives its children)."""
    name, _, children = node
    return list(children) if name.startswith("autograd::engine::evaluate_function:") else [node]


def _kernels(node) -> list[tuple[str, str, int]]:
    name, kernels, children = node
    return list(kernels) + [k for child in children for k in _kernels(child)]


@pytest.mark.parametrize("export", ["text", "db"])
def test_torch_npu_side_times(torch_npu_alignments, export):
    """The torch_npu side's figures per op against the generator's description: its kernels are those launched
    from inside it (through the launching op, device_exec.op_index), its device time their summed durations
    (both steps alike); an op that launched none is timed by its host span."""
    generator = _torch_npu_generator()
    ops = [op for _, node in generator.STEP for op in _top_level(node)]
    assert len(ops) == 55
    events = generator.capture()
    step1 = [o for o in events["ops"] if o["step"] == 1]
    rows = torch_npu_alignments[0][export]["ops"].to_pylist()
    for row, op in zip(rows, ops):
        kernels = _kernels(op)
        assert row["op_name_b"] == op[0]
        assert row["kernels_b"] == len(kernels), op[0]
        if kernels:
            assert row["time_b_ns"] == row["device_b_ns"] == sum(dur for *_, dur in kernels), op[0]
            per_name = Counter()
            for api, op_type, dur in kernels:
                per_name[f"{api}_{op_type}"] += dur
            assert row["top_kernel_b"] == max(per_name, key=per_name.get)  # the first of the longest
        else:
            assert row["time_b_ns"] == row["host_b_ns"]
        assert row["difference_ns"] == pytest.approx(row["time_b_ns"] - row["time_a_ns"])
    host = {(o["name"], o["start"]): o["end"] - o["start"] for o in step1}
    item = rows[-1]  # aten::item: no kernel on the NPU, its host span (the same in both steps)
    assert item["kernels_b"] == 0 and item["time_b_ns"] == next(d for (n, _), d in host.items() if n == "aten::item")
    conv_grad = rows[45]  # conv2's ConvolutionBackward0: input, filter and bias gradients
    assert (conv_grad["op_type_b"], conv_grad["kernels_b"], conv_grad["time_b_ns"]) == \
        ("ConvolutionBackward0", 3, 26_750 + 31_480 + 4_260)


def test_torch_npu_text_and_db_align_identically(torch_npu_alignments):
    """The text export and the db export of one capture give the same alignment, every column."""
    alignments = torch_npu_alignments[0]
    assert alignments["text"]["ops"].equals(alignments["db"]["ops"])
    assert alignments["text"]["op_types"].equals(alignments["db"]["op_types"])
    assert alignments["text"]["b"] == alignments["db"]["b"]


def test_torch_npu_pair_is_aligned_by_default(torch_npu_alignments, pair_gpu_output):
    """`profpipe diff GPU NPU` without --align: a gpu run and an ascend run, op by op."""
    result = CliRunner().invoke(app, ["diff", str(pair_gpu_output), str(torch_npu_alignments[1]["db"]), "--json"])
    assert result.exit_code == 0, result.output
    assert "A ran on gpu and B on ascend: aligned op by op" in result.stderr
    document = json.loads(result.stdout)
    assert [(r["status"], r["op_type_a"], r["op_type_b"]) for r in document["ops"]] == \
        [("both", op, op) for _, op in EXPECTED_TORCH_NPU]


@pytest.mark.parametrize("export", ["text", "db"])
def test_torch_npu_smallnet_is_healthy_and_its_steps_are_the_tools(torch_npu_alignments, export):
    """The fixture reads without a health row, and profpipe's step overlap is its step_trace_time.csv (§4.4, the
    generator's own oracle: computing, free and preparing per step, µs to the ns)."""
    import duckdb

    con = duckdb.connect(str(torch_npu_alignments[1][export] / "profile.duckdb"), read_only=True)
    assert con.sql("SELECT count(*) FROM trace_health").fetchall() == [(0,)]
    got = con.sql("SELECT step, computation_ns, free_ns, preparing_ns FROM step_overlap ORDER BY step").fetchall()
    table = pa_csv.read_csv(TORCH_NPU / "text" / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv",
                            convert_options=pa_csv.ConvertOptions(strings_can_be_null=False,
                                                                  column_types={c: "string" for c in (
                                                                      "Computing", "Free", "Preparing")}))
    ns = lambda text: int(Decimal(text) * 1000)  # noqa: E731
    assert got == [(row["Step"], ns(row["Computing"]), ns(row["Free"]), ns(row["Preparing"]))
                   for row in table.to_pylist()]
    assert len(got) == 2
