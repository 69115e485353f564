"""Damage tests for the roofline's shape fields of a Kineto trace (issue 35): the Input Dims, Input type and Concrete
Inputs the Kineto reader keeps on host_op (input_dims, input_types, concrete_inputs) for macro op_roofline_cost.

A small trace holds one op of each perf model (GEMMs, conv2d, attention, norms, element-wise). Hypothesis damages
the fields of some of them the way a broken writer or a flipped byte would and a reader can see: a dim that is not a
whole number, a negative dim, a list nested one level too deep or too shallow or one entry short, an input type no
one knows, a number past 64 bits, a stride or padding that is not a whole number or is negative, a flag that is not
True / False. It then checks the NUMBERS: each op's FLOPs and bytes (op_roofline_cost) and the reader's own FLOPs
(host_op.flops, op_flops' count for mm, addmm, bmm, conv2d, add) either equal the clean trace's or are NULL (never a
guessed or changed figure), the ops left alone keep their exact clean values, and no op is lost.

A damage that stays plausible (a dim 64 read as 65, a stride 2 read as 1) is a changed value nothing can reveal and
is not drawn, as in the other damage suites.
"""
from __future__ import annotations

import json
import tempfile
from functools import cache
from pathlib import Path

import duckdb
from hypothesis import given
from hypothesis import strategies as st

from fuzzing import FUZZ, read_damaged
from profpipe.models import create_macros

#: (op, Input Dims, Input type, Concrete Inputs): one op per perf model, as PyTorch 2.x's Kineto writes them.
OPS = [
    ("aten::mm", [[64, 32], [32, 16]], ["float", "float"], ["", ""]),
    ("aten::addmm", [[16], [64, 32], [32, 16], [], []], ["float", "float", "float", "Scalar", "Scalar"],
     ["", "", "", "1", "1"]),
    ("aten::linear", [[8, 32], [16, 32], [16]], ["c10::BFloat16"] * 3, ["", "", ""]),
    ("aten::bmm", [[4, 8, 16], [4, 16, 8]], ["c10::Half", "c10::Half"], ["", ""]),
    ("aten::conv2d", [[2, 3, 16, 16], [8, 3, 3, 3], [8], [], [], [], []],
     ["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar"],
     ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "1"]),
    ("aten::scaled_dot_product_attention", [[2, 4, 32, 16], [2, 4, 32, 16], [2, 4, 32, 16], [], [], [], [], []],
     ["c10::Half"] * 3 + ["", "Scalar", "Scalar", "", ""], ["", "", "", "", "0.", "True", "", ""]),
    ("aten::layer_norm", [[4, 32, 64], [], [64], [64], [], []],
     ["float", "ScalarList", "float", "float", "Scalar", "Scalar"], ["", "[64]", "", "", "1e-05", "True"]),
    ("aten::batch_norm", [[4, 8, 6, 6], [8], [8], [8], [8], [], [], [], []], ["float"] * 5 + ["Scalar"] * 4,
     ["", "", "", "", "", "False", "0.1", "1e-05", "True"]),
    ("aten::add", [[64, 32], [64, 32], []], ["float", "float", "Scalar"], ["", "", "1"]),
    ("aten::relu", [[64, 32]], ["c10::Half"], [""]),
]
#: Concrete Inputs each formula reads (1-based positions): conv2d's stride, padding, dilation; the flags.
READ_CONCRETE = {"aten::conv2d": (4, 5, 6), "aten::scaled_dot_product_attention": (6,), "aten::batch_norm": (6,)}
HUGE = [2**62, 2**63, 2**64 + 3, 10**30]
UNKNOWN_TYPES = ["c10::Float7", "floatt", "Float", "tensor", "c10::BFloat32", "int128"]


def _trace(ops: list[tuple[str, object, object, object]]) -> bytes:
    events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1000.0,
               "dur": 1000.0 * (len(ops) + 2), "args": {}}]
    for i, (name, dims, types, concrete) in enumerate(ops):
        events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": 2000.0 + 1000 * i,
                       "dur": 500.0, "args": {"External id": 100 + i, "Input Dims": dims, "Input type": types,
                                              "Concrete Inputs": concrete}})
    return json.dumps({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
                       "baseTimeNanoseconds": 1_727_740_800_000_000_000, "traceEvents": events}).encode()


def _costs(ops: list[tuple[str, object, object, object]]) -> list[tuple[str, int | None, int | None, int | None]]:
    """Read the trace as the runner does and cost each op from host_op's kept fields (op_roofline's macro)."""
    with tempfile.TemporaryDirectory(prefix="fuzz-roofline-") as folder:
        (Path(folder) / "rank-0.pt.trace.json").write_bytes(_trace(ops))
        outcome = read_damaged(Path(folder))
    assert not outcome.errors, outcome.errors
    con = duckdb.connect()
    create_macros(con)
    con.register("host_op", outcome.tables["host_op"])
    return con.execute("""SELECT op_name, c.flop, c.bytes, flops FROM (
                              SELECT op_name, start_ns, flops, op_roofline_cost(op_name, input_dims, input_types,
                                                                                concrete_inputs) AS c
                              FROM host_op WHERE op_name LIKE 'aten::%') ORDER BY start_ns""").fetchall()


@cache
def _clean() -> list[tuple[str, int | None, int | None, int | None]]:
    """The costs of the undamaged trace, read once."""
    return _costs(OPS)


def test_the_clean_trace_costs_every_op() -> None:
    clean = _clean()
    assert [row[0] for row in clean] == [op[0] for op in OPS]
    assert all(flop and flop > 0 and size and size > 0 for _, flop, size, _ in clean), clean
    mm_flop = 2 * 64 * 32 * 16
    assert clean[0] == ("aten::mm", mm_flop, (64 * 32 + 32 * 16 + 64 * 16) * 4, mm_flop)  # by hand
    # the reader's own FLOPs (host_op.flops, for op_flops) for the ops PyTorch counts, the roofline's elsewhere
    assert [row[0] for row in clean if row[3] is not None] == ["aten::mm", "aten::addmm", "aten::bmm", "aten::conv2d",
                                                               "aten::add"]


def _tensor_slots(dims: list) -> list[int]:
    return [i for i, d in enumerate(dims) if d]


@st.composite
def _damaged_dims(draw: st.DrawFn, dims: list) -> object:
    dims = json.loads(json.dumps(dims))
    slot = draw(st.sampled_from(_tensor_slots(dims)))
    axis = draw(st.integers(0, len(dims[slot]) - 1))
    kind = draw(st.sampled_from(["fraction", "string", "negative", "huge", "too_deep", "flat", "bare", "short",
                                 "not_a_list", "float_huge"]))
    if kind == "fraction":
        dims[slot][axis] = dims[slot][axis] + draw(st.sampled_from([0.5, 0.25, 0.001]))
    elif kind == "string":
        dims[slot][axis] = str(dims[slot][axis])
    elif kind == "negative":
        dims[slot][axis] = -draw(st.integers(1, 1 << 20))
    elif kind == "huge":
        dims[slot][axis] = draw(st.sampled_from(HUGE))
    elif kind == "float_huge":
        dims[slot][axis] = draw(st.sampled_from([1e30, 1e300, 9.3e18]))
    elif kind == "too_deep":
        dims[slot] = [dims[slot]]
    elif kind == "flat":
        return [v for d in dims for v in d]
    elif kind == "bare":
        dims[slot] = dims[slot][axis]
    elif kind == "short":
        del dims[draw(st.integers(0, len(dims) - 1))]
    else:
        return json.dumps(dims)
    return dims


@st.composite
def _damaged_types(draw: st.DrawFn, types: list, dims: list) -> object:
    types = list(types)
    kind = draw(st.sampled_from(["unknown", "number", "nested", "not_a_list", "short"]))
    slot = draw(st.sampled_from(_tensor_slots(dims)))
    if kind == "unknown":
        types[slot] = draw(st.sampled_from(UNKNOWN_TYPES))
    elif kind == "number":
        types[slot] = draw(st.sampled_from([4, 2.0, None]))
    elif kind == "nested":
        types[slot] = [types[slot]]
    elif kind == "not_a_list":
        return types[0]
    else:
        del types[slot]
    return types


@st.composite
def _damaged_concrete(draw: st.DrawFn, name: str, concrete: list) -> object:
    concrete = list(concrete)
    slot = draw(st.sampled_from(READ_CONCRETE[name])) - 1
    given_ = concrete[slot]
    if given_ in ("True", "False"):
        concrete[slot] = draw(st.sampled_from(["Tru", "false", "1", "", "None", "TRUE"]))
    else:
        concrete[slot] = draw(st.sampled_from(["[1.5, 1]", "[-1, 1]", "[1, -2]", "[2, 0.5]", "same", "",
                                               f"[{2**63}, 1]", "[1e3, 1]", "[[1, 1]]"]))
    if draw(st.booleans()):
        return {"0": concrete} if draw(st.booleans()) else json.dumps(concrete)  # or the whole field mis-nested
    return concrete


@st.composite
def _damage(draw: st.DrawFn) -> tuple[list, set[int]]:
    """The trace's ops with the fields of some of them damaged, and which."""
    damaged = draw(st.sets(st.integers(0, len(OPS) - 1), min_size=1, max_size=4))
    ops = []
    for i, (name, dims, types, concrete) in enumerate(OPS):
        if i in damaged:
            fields = ["dims", "types"] + (["concrete"] if name in READ_CONCRETE else [])
            field_ = draw(st.sampled_from(fields))
            if field_ == "dims":
                dims = draw(_damaged_dims(dims))
            elif field_ == "types":
                types = draw(_damaged_types(types, dims))
            else:
                concrete = draw(_damaged_concrete(name, concrete))
        ops.append((name, dims, types, concrete))
    return ops, damaged


@FUZZ
@given(_damage())
def test_a_damaged_shape_field_gives_the_clean_cost_or_none(case: tuple[list, set[int]]) -> None:
    ops, damaged = case
    clean = _clean()
    got = _costs(ops)
    assert [row[0] for row in got] == [row[0] for row in clean]  # no op lost
    for i, ((name, *values), (_, *clean_values)) in enumerate(zip(got, clean)):
        if i in damaged:
            for value, clean_value, what in zip(values, clean_values, ("flop", "bytes", "reader flops")):
                assert value in (None, clean_value), (name, what, ops[i], value, clean_value)
        else:
            assert values == clean_values, (name, "not damaged")
