"""Unit tests per model: a handful of hand-made normalized rows in, the exact expected rows out, for
every mart (tests/model_harness.py runs the whole library in an in-memory DuckDB). The arithmetic of each
expected value is written beside it. The interval_sweep macro has one of its own. Marts left to their own
tests for now: comm_link_stats, comm_op_stats, comm_matrix, data_batch_stats, data_op_stats, data_queue_stats,
data_findings and step_input_wait."""
from __future__ import annotations

import json
import math
from pathlib import Path

import duckdb

from model_harness import build, model_rows, rows
from profpipe.models import create_macros, load_models

MARTS = sorted(m.name for m in load_models() if m.layer == "marts")


def _rounded(value):
    return round(value, 9) if isinstance(value, float) else value


def same(actual: list[dict], expected: list[dict]) -> None:
    """`actual` rows equal `expected` (floats to 9 decimals); expected rows may name only some columns."""
    assert len(actual) == len(expected), actual
    for got, want in zip(actual, expected):
        assert {k: _rounded(got[k]) for k in want} == {k: _rounded(v) for k, v in want.items()}, got


def points(step: int, start=None, fp=None, bp=None, end=None, capture: int = 0, rank: int = 0, **ops) -> list[dict]:
    """step_point rows of one step (None: that point is absent); ops: fp_op=..., bp_op=... name the op."""
    kinds = {"step_start": start, "fp_start": fp, "bp_end": bp, "step_end": end}
    names = {"fp_start": ops.get("fp_op"), "bp_end": ops.get("bp_op"), "step_end": ops.get("end_op")}
    return [{"rank": rank, "capture": capture, "step": step, "kind": kind, "op_name": names.get(kind), "seq": i,
             "ts_ns": ts} for i, (kind, ts) in enumerate(kinds.items()) if ts is not None]


def kernel(name: str, start: int, dur: int, **more) -> dict:
    return {"kind": "kernel", "name": name, "start_ns": start, "dur_ns": dur, **more}


# ---------------------------------------------------------------------------------------------- harness

# Every model on empty inputs: test_model_library.py (run, not skipped). Speed: benchmarks/, not a timed test.


# ---------------------------------------------------------------------------------------------- steps

def test_step_phases_split_a_training_step_and_an_inference_step():
    step_point = (points(1, start=100, fp=150, bp=400, end=500, fp_op="F", bp_op="B")
                  + points(2, start=500, fp=520, end=700)   # inference: no BP point
                  + points(3, start=700, end=900))          # no FP point: kept, its phases NULL
    same(model_rows({"step_point": step_point}, "step_phases"), [
        # total 500-100 = 400; iteration interval 150-100 = 50; fp_and_bp 400-150 = 250; tail 500-400 = 100
        {"step": 1, "start_ns": 100, "fp_ns": 150, "bp_ns": 400, "end_ns": 500, "fp_op": "F", "bp_op": "B",
         "total_ns": 400, "iteration_interval_ns": 50, "fp_and_bp_ns": 250, "tail_ns": 100},
        # no BP: fp_and_bp = end - fp = 700-520 = 180, tail NULL; total 200, interval 20
        {"step": 2, "start_ns": 500, "fp_ns": 520, "bp_ns": None, "end_ns": 700,
         "total_ns": 200, "iteration_interval_ns": 20, "fp_and_bp_ns": 180, "tail_ns": None},
        # no FP point: total 900-700 = 200; the phases it bounds cannot be told
        {"step": 3, "start_ns": 700, "fp_ns": None, "bp_ns": None, "end_ns": 900, "fp_op": None,
         "total_ns": 200, "iteration_interval_ns": None, "fp_and_bp_ns": None, "tail_ns": None},
    ])


def test_step_phases_keep_two_captures_of_one_rank_apart():
    # the same step number in two profiling cycles of rank 0: two rows, not one merged step
    step_point = points(1, start=0, fp=10, end=100, capture=0) + points(1, start=5000, fp=5030, end=5200, capture=1)
    same(model_rows({"step_point": step_point}, "step_phases"), [
        {"capture": 0, "step": 1, "start_ns": 0, "total_ns": 100, "iteration_interval_ns": 10, "fp_and_bp_ns": 90},
        {"capture": 1, "step": 1, "start_ns": 5000, "total_ns": 200, "iteration_interval_ns": 30, "fp_and_bp_ns": 170},
    ])


def _device_ops(*spans):
    return [{"side": "Device", "op_name": name, "start_ns": start, "dur_ns": end - start} for name, start, end in spans]


def test_int_step_derives_fp_and_bp_ops_from_op_order_when_the_trace_names_none():
    # ops A 100-120, B 130-200, C 210-380, D 390-450; FP point 135, BP point 385 (first step)
    # FP = last op starting at or before 135: B.  BP: ops ending before 385 are A, B, C (3): the op at
    # position 3 in start order: C
    host_op = _device_ops(("A", 100, 120), ("B", 130, 200), ("C", 210, 380), ("D", 390, 450))
    same(model_rows({"host_op": host_op, "step_point": points(1, start=90, fp=135, bp=385, end=500)}, "int_step"), [
        {"step": 1, "start_ns": 90, "fp_ns": 135, "bp_ns": 385, "end_ns": 500, "fp_op": "B", "bp_op": "C",
         "point_source": "derived"},
    ])


def test_int_step_prefers_the_op_the_trace_names():
    host_op = _device_ops(("A", 100, 120), ("B", 130, 200))
    step_point = points(1, start=90, fp=135, bp=385, end=500, fp_op="TraceFP", bp_op="TraceBP")
    same(model_rows({"host_op": host_op, "step_point": step_point}, "int_step"), [
        {"fp_ns": 135, "bp_ns": 385, "fp_op": "TraceFP", "bp_op": "TraceBP", "point_source": "trace"},
    ])


def test_int_step_run_option_override_measures_from_the_ops_first_start_and_last_end_in_each_step():
    # step 1 window 0-500: B runs 130-200, C runs 210-300 and 310-380: fp = 130, bp = 380
    # step 2 window 500-900: B 530-600, C 610-780: fp = 530, bp = 780 (the trace's points are ignored)
    host_op = _device_ops(("B", 130, 200), ("C", 210, 300), ("C", 310, 380), ("B", 530, 600), ("C", 610, 780))
    step_point = (points(1, start=0, fp=10, bp=490, end=500, fp_op="TraceFP")
                  + points(2, start=500, fp=510, bp=890, end=900))
    result = model_rows({"host_op": host_op, "step_point": step_point}, "int_step", {"fp_op": "B", "bp_op": "C"})
    same(result, [
        {"step": 1, "fp_ns": 130, "bp_ns": 380, "fp_op": "B", "bp_op": "C", "point_source": "override"},
        {"step": 2, "fp_ns": 530, "bp_ns": 780, "fp_op": "B", "bp_op": "C", "point_source": "override"},
    ])
    # step_phases then measures from them: step 2 interval 530-500 = 30, fp_and_bp 780-530 = 250, tail 120
    phases = model_rows({"host_op": host_op, "step_point": step_point}, "step_phases", {"fp_op": "B", "bp_op": "C"})
    same(phases[1:], [{"step": 2, "iteration_interval_ns": 30, "fp_and_bp_ns": 250, "tail_ns": 120}])


def test_int_step_override_op_starting_at_the_step_boundary_belongs_to_the_next_step():
    # steps [0, 500) and [500, 900); C runs 310-380 and 500-560: the second run starts at step 2's start, so
    # step 1's BP is 380 (tail 500 - 380 = 120), not 560 (which would give a tail of -60)
    host_op = _device_ops(("B", 130, 200), ("C", 310, 380), ("B", 500, 520), ("C", 500, 560))
    step_point = points(1, start=0, fp=10, bp=490, end=500) + points(2, start=500, fp=510, bp=890, end=900)
    same(model_rows({"host_op": host_op, "step_point": step_point}, "step_phases", {"fp_op": "B", "bp_op": "C"}), [
        {"step": 1, "fp_ns": 130, "bp_ns": 380, "iteration_interval_ns": 130, "fp_and_bp_ns": 250, "tail_ns": 120},
        {"step": 2, "fp_ns": 500, "bp_ns": 560, "iteration_interval_ns": 0, "fp_and_bp_ns": 60, "tail_ns": 340},
    ])


# ---------------------------------------------------------------------------------------------- attribution

def test_int_device_exec_attributes_by_source_then_time_then_profiler():
    host_op = _device_ops(("Op1", 100, 110), ("Op2", 240, 245)) + [
        {"side": "Host", "op_name": "HostOnly", "start_ns": 55, "dur_ns": 1}]  # host ops own no kernels
    device_exec = [
        kernel("k1", 200, 5, op_name="Named"),  # the source names it: source, though Op1 precedes it
        kernel("k2", 250, 5),                   # last Device op started at or before 250: Op2 (time)
        kernel("k3", 50, 5),                    # no op before it: the profiler's op for the name (kernel_meta)
        kernel("k4", 60, 5),                    # nothing: NULL
    ]
    kernel_meta = [{"name": "k3", "op_name": "Meta"}]
    result = model_rows({"host_op": host_op, "device_exec": device_exec, "kernel_meta": kernel_meta}, "int_device_exec")
    got = sorted((r["name"], r["op_name"], r["op_attribution"], r["end_ns"]) for r in result)
    assert got == [("k1", "Named", "source", 205), ("k2", "Op2", "time", 255), ("k3", "Meta", "profiler", 55),
                   ("k4", None, None, 65)]


def test_int_device_exec_attributes_by_time_only_within_the_capture():
    # capture 0's op Op1 started at 100; capture 1's kernel at 150 has no op of its own capture before it
    host_op = [dict(r, capture=0) for r in _device_ops(("Op1", 100, 110))]
    device_exec = [kernel("k", 150, 5, capture=1), kernel("k", 150, 5, capture=0)]
    result = model_rows({"host_op": host_op, "device_exec": device_exec}, "int_device_exec")
    assert sorted((r["capture"], r["op_name"], r["op_attribution"]) for r in result) == [(0, "Op1", "time"),
                                                                                          (1, None, None)]


def test_op_kernel_stats_groups_kernels_by_their_op():
    device_exec = [kernel("k", 0, 10, op_name="A"), kernel("k", 20, 30, op_name="A"), kernel("m", 60, 60, op_name="A"),
                   kernel("k", 200, 100, op_name="B"), kernel("k", 400, 5),
                   {"kind": "memcpy", "name": "Memcpy HtoD", "start_ns": 500, "dur_ns": 50, "op_name": "A"}]
    same(model_rows({"device_exec": device_exec}, "op_kernel_stats"), [
        # op A: k 10 + 30 = 40 (avg 20), m 60; A's kernel time 100: shares 40/100, 60/100; the memcpy is no kernel
        {"op_name": "A", "name": "k", "instances": 2, "total_ns": 40, "avg_ns": 20.0, "min_ns": 10, "max_ns": 30,
         "share_of_op": 40 / 100},
        {"op_name": "A", "name": "m", "instances": 1, "total_ns": 60, "avg_ns": 60.0, "min_ns": 60, "max_ns": 60,
         "share_of_op": 60 / 100},
        {"op_name": "B", "name": "k", "instances": 1, "total_ns": 100, "share_of_op": 1.0},
        {"op_name": None, "name": "k", "instances": 1, "total_ns": 5, "share_of_op": 1.0},  # unattributed
    ])


# ---------------------------------------------------------------------------------------------- kernels

def test_kernel_sequence_stats_counts_each_ops_sequence_with_its_nested_ops():
    # step 0-1000 holds linear 10-100 (addmm 15-90: gemm 20+30, bias 60+5), linear 200-300 (addmm 205-295: gemm
    # 210+40, bias 260+5), relu 400-420 (relu_k 410+10), linear 500-600 (its own memset 505+2; addmm 508-590: gemm
    # 510+30, bias 550+5); a kernel no op launched (800+10) counts only in the rank's device time (137 ns)
    def op(index, parent, name, start, end):
        return {"op_index": index, "parent_index": parent, "op_name": name, "start_ns": start, "dur_ns": end - start}

    host_op = [op(0, -1, "step", 0, 1000), op(1, 0, "linear", 10, 100), op(2, 1, "addmm", 15, 90),
               op(3, 0, "linear", 200, 300), op(4, 3, "addmm", 205, 295), op(5, 0, "relu", 400, 420),
               op(6, 0, "linear", 500, 600), op(7, 6, "addmm", 508, 590)]
    device_exec = [kernel("gemm", 20, 30, op_index=2), kernel("bias", 60, 5, op_index=2),
                   kernel("gemm", 210, 40, op_index=4), kernel("bias", 260, 5, op_index=4),
                   kernel("relu_k", 410, 10, op_index=5),
                   {"kind": "memset", "name": "Memset", "start_ns": 505, "dur_ns": 2, "op_index": 6},
                   kernel("gemm", 510, 30, op_index=7), kernel("bias", 550, 5, op_index=7), kernel("k", 800, 10)]
    same(model_rows({"host_op": host_op, "device_exec": device_exec}, "kernel_sequence_stats"), [
        # the three addmm launch the same pair: 30+5 + 40+5 + 30+5 = 115 ns; host 75 + 90 + 82
        {"op_name": "addmm", "op_depth": 2, "sequence": "gemm|bias", "activities": 2, "kernels": 2, "instances": 3,
         "device_ns": 115, "kernel_ns": 115, "op_ns": 247, "avg_device_ns": 115 / 3, "device_share": 115 / 137},
        # one linear also launched a memset itself, first; the other two launch the pair through their addmm
        {"op_name": "linear", "op_depth": 1, "sequence": "Memset|gemm|bias", "activities": 3, "kernels": 2,
         "instances": 1, "device_ns": 37, "kernel_ns": 35, "op_ns": 100},
        {"op_name": "linear", "op_depth": 1, "sequence": "gemm|bias", "activities": 2, "instances": 2,
         "device_ns": 80, "op_ns": 190},
        {"op_name": "relu", "op_depth": 1, "sequence": "relu_k", "activities": 1, "instances": 1, "device_ns": 10},
        {"op_name": "step", "op_depth": 0, "sequence": "gemm|bias|gemm|bias|relu_k|Memset|gemm|bias",
         "activities": 8, "kernels": 7, "instances": 1, "device_ns": 127, "kernel_ns": 125, "op_ns": 1000,
         "device_share": 127 / 137},
    ])


def test_kernel_sequence_stats_leaves_out_an_op_whose_parents_never_reach_the_top_level():
    # op 2's parent (99) is missing: it has no depth, so no row, yet its kernels count in the rank's device time;
    # two kernels of one op start together and are ordered by stream
    def op(index, parent, name, start, end):
        return {"op_index": index, "parent_index": parent, "op_name": name, "start_ns": start, "dur_ns": end - start}

    host_op = [op(0, -1, "step", 0, 100), op(1, 0, "a", 10, 50), op(2, 99, "orphan", 60, 90)]
    device_exec = [kernel("z", 20, 5, op_index=1, stream_id=8), kernel("y", 20, 5, op_index=1, stream_id=7),
                   kernel("k", 70, 10, op_index=2)]
    same(model_rows({"host_op": host_op, "device_exec": device_exec}, "kernel_sequence_stats"), [
        {"op_name": "a", "op_depth": 1, "sequence": "y|z", "instances": 1, "device_ns": 10, "device_share": 0.5},
        {"op_name": "step", "op_depth": 0, "sequence": "y|z", "instances": 1, "device_ns": 10, "device_share": 0.5},
    ])



def test_kernel_stats_nsight_columns_with_sample_stddev_and_main_op():
    device_exec = [kernel("k", 0, 10, stream_id=7, op_name="A"), kernel("k", 100, 20, stream_id=7, op_name="A"),
                   kernel("k", 200, 60, stream_id=7, op_name="B"),
                   kernel("j", 300, 10, stream_id=7),                  # a single execution: stddev 0
                   kernel("k", 400, 100, stream_id=8, op_name="B"),    # another stream: its own row
                   {"kind": "memset", "name": "Memset", "start_ns": 0, "dur_ns": 1000, "stream_id": 7}]
    same(model_rows({"device_exec": device_exec}, "kernel_stats"), [
        # the rank's kernel time: 10+20+60 + 10 + 100 = 200 (the memset is no kernel)
        {"name": "j", "stream_id": 7, "instances": 1, "total_ns": 10, "avg_ns": 10.0, "median_ns": 10.0,
         "min_ns": 10, "max_ns": 10, "stddev_ns": 0.0, "share": 10 / 200, "op_name": None},
        # 10, 20, 60: total 90, avg 30, median 20; sample variance ((-20)^2 + (-10)^2 + 30^2) / 2 = 700;
        # two of three executions belong to A
        {"name": "k", "stream_id": 7, "instances": 3, "total_ns": 90, "avg_ns": 30.0, "median_ns": 20.0,
         "min_ns": 10, "max_ns": 60, "stddev_ns": math.sqrt(700), "share": 90 / 200, "op_name": "A"},
        {"name": "k", "stream_id": 8, "instances": 1, "total_ns": 100, "stddev_ns": 0.0, "share": 100 / 200,
         "op_name": "B"},
    ])


def test_kernel_stats_main_op_tie_goes_to_more_kernel_time_then_name():
    # one execution each: B has more time (30 > 10); C and D tie on both: the first by name, C
    device_exec = [kernel("k", 0, 10, op_name="A"), kernel("k", 100, 30, op_name="B"),
                   kernel("m", 0, 5, op_name="D"), kernel("m", 100, 5, op_name="C")]
    got = {r["name"]: r["op_name"] for r in model_rows({"device_exec": device_exec}, "kernel_stats")}
    assert got == {"k": "B", "m": "C"}


def test_kernel_shape_stats_split_by_grid_and_block():
    device_exec = [kernel("k", 0, 10, grid="1,1,1", block="128,1,1"), kernel("k", 100, 30, grid="1,1,1", block="128,1,1"),
                   kernel("k", 200, 60, grid="2,1,1", block="128,1,1"), kernel("n", 300, 100)]
    same(model_rows({"device_exec": device_exec}, "kernel_shape_stats"), [
        # 10 and 30: total 40, avg 20, median 20, sample stddev sqrt((10^2 + 10^2) / 1) = sqrt(200); share 40/200
        {"name": "k", "grid": "1,1,1", "block": "128,1,1", "instances": 2, "total_ns": 40, "avg_ns": 20.0,
         "median_ns": 20.0, "min_ns": 10, "max_ns": 30, "stddev_ns": math.sqrt(200), "share": 40 / 200},
        {"name": "k", "grid": "2,1,1", "block": "128,1,1", "instances": 1, "total_ns": 60, "stddev_ns": 0.0,
         "share": 60 / 200},
        # no launch shape recorded: NULL grid and block, one row
        {"name": "n", "grid": None, "block": None, "instances": 1, "total_ns": 100, "share": 100 / 200},
    ])


def test_cuda_api_stats_cut_only_a_four_digit_version_suffix_and_keep_cuda_calls():
    def call(name, dur, category="cuda_runtime", rank=0):
        return {"rank": rank, "name": name, "category": category, "start_ns": 0, "dur_ns": dur}
    host_api = [call("cudaLaunchKernel_v7000", 10), call("cudaLaunchKernel", 30), call("cudaLaunchKernel", 50),
                call("cuGetProcAddress_v2", 5, "cuda_driver"), call("cudaGetDriverEntryPoint_v11030", 5),
                call("mtiaLaunch", 1000, "mtia_runtime"), call("cudaLaunchKernel_v7000", 7, rank=1)]
    same(model_rows({"host_api": host_api}, "cuda_api_stats"), [
        # nsys's rule: "_v" + 4 digits cut; "_v2" and "_v11030" kept; the MTIA call left out.
        # rank 0 total 10 + 30 + 50 + 5 + 5 = 100
        {"rank": 0, "name": "cuGetProcAddress_v2", "category": "cuda_driver", "calls": 1, "total_ns": 5,
         "stddev_ns": 0.0, "time_share": 5 / 100},
        {"rank": 0, "name": "cudaGetDriverEntryPoint_v11030", "calls": 1, "time_share": 5 / 100},
        # 10, 30, 50: avg 30, median 30, sample stddev sqrt((400 + 0 + 400) / 2) = 20
        {"rank": 0, "name": "cudaLaunchKernel", "category": "cuda_runtime", "calls": 3, "total_ns": 90,
         "avg_ns": 30.0, "median_ns": 30.0, "min_ns": 10, "max_ns": 50, "stddev_ns": 20.0, "time_share": 90 / 100},
        {"rank": 1, "name": "cudaLaunchKernel", "calls": 1, "total_ns": 7, "time_share": 1.0},
    ])


def test_gpu_memory_op_stats_label_every_readers_names_in_nsys_style():
    def op(kind, name, dur, size=None):
        return {"kind": kind, "name": name, "start_ns": 0, "dur_ns": dur, "bytes": size}
    device_exec = [op("memcpy", "[CUDA memcpy Host-to-Device]", 10, 100),     # nsys reader
                   op("memcpy", "Memcpy HtoD (Pageable -> Device)", 30, 300),  # Kineto
                   op("memcpy", "MemcpyH2D", 20),                              # MindSpore: no size
                   op("memcpy", "Memcpy PtoP (Device -> Device)", 5, 8),
                   op("memcpy", "[CUDA memcpy Unified Device-to-Host]", 5, 8),
                   op("memcpy", "[CUDA memcpy kind 14]", 5, 8),
                   op("memcpy", "dma_request", 5, 8),                          # MTIA: kept as it is
                   op("memset", "Memset (Device)", 10, 4), op("memset", "[CUDA memset]", 5, 4),
                   op("memset", "MemorySet", 5),
                   kernel("k", 0, 1000)]
    same(model_rows({"device_exec": device_exec}, "gpu_memory_op_stats"), [
        # total memory time: 60 + 5 * 4 + 20 = 100; kernels are not memory operations
        {"operation": "[CUDA memcpy HtoD]", "count": 3, "total_ns": 60, "median_ns": 20.0, "time_share": 0.6,
         # sizes of the two sized copies: 100 and 300, sample stddev sqrt(2 * 100^2 / 1)
         "sized_count": 2, "total_bytes": 400, "avg_bytes": 200.0, "median_bytes": 200.0, "min_bytes": 100,
         "max_bytes": 300, "stddev_bytes": math.sqrt(20000)},
        {"operation": "[CUDA memcpy PtoP]", "count": 1, "total_bytes": 8, "stddev_bytes": 0.0},
        {"operation": "[CUDA memcpy Unified DtoH]", "count": 1},
        {"operation": "[CUDA memcpy kind 14]", "count": 1},
        {"operation": "[CUDA memset]", "count": 3, "total_ns": 20, "time_share": 0.2, "sized_count": 2,
         "total_bytes": 8},
        {"operation": "dma_request", "count": 1, "time_share": 0.05},
    ])
    unsized = model_rows({"device_exec": [op("memcpy", "MemcpyD2H", 10)]}, "gpu_memory_op_stats")
    same(unsized, [{"operation": "[CUDA memcpy DtoH]", "count": 1, "sized_count": 0, "total_bytes": None,
                    "avg_bytes": None, "stddev_bytes": None, "time_share": 1.0}])


# ---------------------------------------------------------------------------------------------- ops

def _ops(side, *runs):
    """host_op rows: (op_name, [durations]) executions one after another."""
    rows_, at = [], 0
    for name, durations in runs:
        for dur in durations:
            rows_.append({"side": side, "op_name": name, "start_ns": at, "dur_ns": dur})
            at += dur + 1
    return rows_


OPS = _ops("Device", ("Default/net/Conv2D-op1", [10, 30]), ("Default/net/Conv2D-op2", [20, 20]),
           ("Gradients/net/ReLU-op3", [5, 15]))


def test_op_detail_stats_per_op_instance():
    host_op = OPS + _ops("Host", ("Default/net/Conv2D-op1", [4]))
    device_exec = [{"kind": "task", "name": "t", "op_name": "Default/net/Conv2D-op1", "start_ns": 0, "dur_ns": 7}]
    same(model_rows({"host_op": host_op, "device_exec": device_exec}, "op_detail_stats"), [
        # Device side total 40 + 40 + 20 = 100
        {"side": "Device", "op_name": "Default/net/Conv2D-op1", "short_name": "Conv2D-op1", "op_type": "Conv2D",
         "subgraph": "Default", "occurrences": 2, "total_ns": 40, "avg_ns": 20.0, "min_ns": 10, "max_ns": 30,
         "share": 40 / 100, "device_exec_count": 1, "device_exec_total_ns": 7},
        {"side": "Device", "op_name": "Default/net/Conv2D-op2", "occurrences": 2, "total_ns": 40, "share": 40 / 100,
         "device_exec_count": 0, "device_exec_total_ns": 0},
        {"side": "Device", "op_name": "Gradients/net/ReLU-op3", "op_type": "ReLU", "subgraph": "Gradients",
         "occurrences": 2, "total_ns": 20, "avg_ns": 10.0, "share": 20 / 100},
        # the host side is its own population (share 4/4) and has no device executions
        {"side": "Host", "op_name": "Default/net/Conv2D-op1", "occurrences": 1, "total_ns": 4, "share": 1.0,
         "device_exec_count": 0, "device_exec_total_ns": 0},
    ])


def test_user_range_stats_sum_ranges_as_nvtx_sum_and_keep_markers_out_of_op_stats():
    host_op = [
        {"side": "Host", "op_name": "train_step", "category": "marker", "start_ns": 100, "dur_ns": 40},
        {"side": "Host", "op_name": "train_step", "category": "marker", "start_ns": 200, "dur_ns": 60},
        {"side": "Host", "op_name": "fwd", "category": "marker", "start_ns": 110, "dur_ns": 20},  # nested: in full
        {"side": "Host", "op_name": "saved", "category": "marker", "start_ns": 300, "dur_ns": 0},  # a mark
        {"side": "Device", "op_name": "train_step", "category": "marker", "start_ns": 150, "dur_ns": 10},
        {"side": "Host", "op_name": "aten::mm", "category": "cpu_op", "start_ns": 0, "dur_ns": 5},  # an op: not here
        {"side": "Host", "op_name": "Default/MatMul-op1", "start_ns": 0, "dur_ns": 7},  # MindSpore op: no category
    ]
    same(model_rows({"host_op": host_op}, "user_range_stats"), [
        # host ranges total 40 + 60 + 20 + 0 = 120; the device record is its own population (10)
        {"side": "Device", "category": "marker", "name": "train_step", "instances": 1, "total_ns": 10, "marks": 0,
         "share": 1.0, "first_start_ns": 150},
        {"side": "Host", "name": "fwd", "instances": 1, "total_ns": 20, "stddev_ns": 0.0, "share": 20 / 120},
        {"side": "Host", "name": "saved", "instances": 1, "total_ns": 0, "marks": 1, "share": 0.0},
        # 40, 60: mean 50, median 50, sample variance (10^2 + 10^2) / 1 = 200
        {"side": "Host", "name": "train_step", "instances": 2, "total_ns": 100, "avg_ns": 50.0, "median_ns": 50.0,
         "min_ns": 40, "max_ns": 60, "stddev_ns": math.sqrt(200), "marks": 0, "share": 100 / 120,
         "first_start_ns": 100},
    ])
    # op_detail_stats keeps the ops and leaves the markers out
    assert sorted(r["op_name"] for r in model_rows({"host_op": host_op}, "op_detail_stats")) == [
        "Default/MatMul-op1", "aten::mm"]


def test_op_type_stats_without_step_trace_take_the_modal_execution_count_as_steps():
    # every instance ran twice: steps = 2.  Conv2D: 2 instances, 4 executions, 40 + 40 = 80 ns, avg 80/4 = 20,
    # executions_per_step 4 // 2 = 2, share 80/100.  ReLU: 2 executions, 20 ns, avg 10, 2 // 2 = 1, share 20/100
    same(model_rows({"host_op": OPS}, "op_type_stats"), [
        {"side": "Device", "op_type": "Conv2D", "instances": 2, "occurrences": 4, "steps": 2, "executions_per_step": 2,
         "total_ns": 80, "avg_ns": 20.0, "min_ns": 10, "max_ns": 30, "share": 80 / 100},
        {"side": "Device", "op_type": "ReLU", "instances": 1, "occurrences": 2, "steps": 2, "executions_per_step": 1,
         "total_ns": 20, "avg_ns": 10.0, "min_ns": 5, "max_ns": 15, "share": 20 / 100},
    ])


def test_op_type_stats_count_steps_from_the_step_trace_and_floor_the_division():
    # three steps in the trace: Conv2D 4 // 3 = 1, ReLU 2 // 3 = 0 (integer division, as MindSpore)
    step_point = points(1, start=0, fp=0, end=10) + points(2, start=10, fp=10, end=20) + points(3, start=20, fp=20, end=30)
    same(model_rows({"host_op": OPS, "step_point": step_point}, "op_type_stats"), [
        {"op_type": "Conv2D", "steps": 3, "executions_per_step": 1},
        {"op_type": "ReLU", "steps": 3, "executions_per_step": 0},
    ])


def test_op_type_stats_modal_steps_without_step_trace_on_a_tie_take_the_larger_count():
    # instances run 2, 2, 3 and 3 times: counts 2 and 3 are equally common; steps = 3.
    # A: 2 + 3 = 5 executions, 5 // 3 = 1; B: 2 + 3 = 5, 1
    host_op = _ops("Device", ("x/A-op1", [1, 1]), ("x/A-op2", [1, 1, 1]), ("x/B-op3", [1, 1]), ("x/B-op4", [1, 1, 1]))
    same(model_rows({"host_op": host_op}, "op_type_stats"), [
        {"op_type": "A", "instances": 2, "occurrences": 5, "steps": 3, "executions_per_step": 1, "share": 0.5},
        {"op_type": "B", "instances": 2, "occurrences": 5, "steps": 3, "executions_per_step": 1, "share": 0.5},
    ])


def _tasks():
    # op X: two tasks (ids 1, 2) run twice; op Y: one task
    x = "Default/net/MatMul-op5"
    return [{"kind": "task", "name": x, "op_name": x, "task_id": 1, "stream_id": 5, "start_ns": 100, "dur_ns": 10},
            {"kind": "task", "name": x, "op_name": x, "task_id": 2, "stream_id": 5, "start_ns": 110, "dur_ns": 20},
            {"kind": "task", "name": x, "op_name": x, "task_id": 1, "stream_id": 5, "start_ns": 200, "dur_ns": 30},
            {"kind": "task", "name": x, "op_name": x, "task_id": 2, "stream_id": 5, "start_ns": 230, "dur_ns": 40},
            {"kind": "task", "name": "Y", "op_name": "Default/Add-op1", "task_id": 3, "stream_id": 6, "start_ns": 50,
             "dur_ns": 100},
            {"kind": "sync", "name": "notify", "op_name": None, "task_id": 9, "stream_id": 6, "start_ns": 0, "dur_ns": 999}]


def test_device_op_stats_count_one_execution_per_run_of_the_first_task():
    op_desc = [{"seq": 0, "op_name": "Default/net/MatMul-op5", "op_type": "MatMulV2"}]
    same(model_rows({"device_exec": _tasks(), "op_desc": op_desc}, "device_op_stats"), [
        # Add-op1: one task of 100 ns; the op type from its name
        {"op_name": "Default/Add-op1", "short_name": "Add-op1", "op_type": "Add", "subgraph": "Default", "stream_id": 6,
         "first_task_id": 3, "executions": 1, "tasks": 1, "total_ns": 100, "avg_ns": 100.0, "min_ns": 100,
         "max_ns": 100, "first_start_ns": 50, "share": 100 / 200},
        # MatMul-op5: task 1 ran twice (executions 2), 4 tasks of 10+20+30+40 = 100 ns, avg 100/2 = 50;
        # its type from op_desc; first execution: task 1 on stream 5 at 100; share 100 / 200 (sync tasks excluded)
        {"op_name": "Default/net/MatMul-op5", "short_name": "MatMul-op5", "op_type": "MatMulV2", "stream_id": 5,
         "first_task_id": 1, "executions": 2, "tasks": 4, "total_ns": 100, "avg_ns": 50.0, "min_ns": 10, "max_ns": 40,
         "first_start_ns": 100, "share": 100 / 200},
    ])


def test_device_op_type_stats_sum_instances_and_per_step_averages():
    op_desc = [{"seq": 0, "op_name": "Default/net/MatMul-op5", "op_type": "MatMulV2"}]
    same(model_rows({"device_exec": _tasks(), "op_desc": op_desc}, "device_op_type_stats"), [
        # per_step_ns = sum of instance averages: Add 100, MatMulV2 50; per_step_share 100/150 and 50/150
        {"op_type": "Add", "instances": 1, "executions": 1, "total_ns": 100, "per_step_ns": 100.0, "share": 100 / 200,
         "per_step_share": 100 / 150},
        {"op_type": "MatMulV2", "instances": 1, "executions": 2, "total_ns": 100, "per_step_ns": 50.0,
         "share": 100 / 200, "per_step_share": 50 / 150},
    ])


def test_device_op_shares_are_null_not_nan_when_the_rank_has_no_task_time():
    # one task of 0 ns: 0 / 0 is no share (NULL, as every other mart's share), not NaN
    tasks = [{"kind": "task", "name": "x", "op_name": "a/B-op1", "task_id": 1, "start_ns": 0, "dur_ns": 0}]
    same(model_rows({"device_exec": tasks}, "device_op_stats"), [{"executions": 1, "total_ns": 0, "share": None}])
    same(model_rows({"device_exec": tasks}, "device_op_type_stats"), [{"total_ns": 0, "share": None,
                                                                      "per_step_share": None}])


def test_ascend_task_exec_lists_each_task_execution_in_time_order():
    # the sync task (kind 'sync') is no op task; the rest by start: Add 50, MatMul 100, 110, 200, 230
    same(model_rows({"device_exec": _tasks()}, "ascend_task_exec"), [
        {"seq": 1, "op_name": "Default/Add-op1", "task_id": 3, "stream_id": 6, "start_ns": 50, "dur_ns": 100},
        {"seq": 2, "op_name": "Default/net/MatMul-op5", "task_id": 1, "start_ns": 100, "dur_ns": 10},
        {"seq": 3, "task_id": 2, "start_ns": 110, "dur_ns": 20},
        {"seq": 4, "task_id": 1, "start_ns": 200, "dur_ns": 30},
        {"seq": 5, "task_id": 2, "start_ns": 230, "dur_ns": 40},
    ])


def test_ascend_framework_task_joins_tasks_and_ops_and_keeps_ops_without_a_task_last():
    a, b, c = "Default/net/Conv2D-op1", "Gradients/Default/ReLU-op2", "Default/Cast-op3"
    task_desc = [{"seq": 0, "op_name": a, "task_id": 10, "stream_id": 1, "block_dim": 32, "task_type": "AI_CORE"},
                 {"seq": 1, "op_name": a, "task_id": 11, "stream_id": 1, "block_dim": 32},
                 {"seq": 2, "op_name": b, "task_id": 12, "stream_id": 2, "block_dim": 1, "op_type": "ReluGrad"}]
    op_desc = [{"seq": 0, "op_name": c, "op_type": "Cast", "tensors_json": "{}"},
               {"seq": 1, "op_name": a, "op_type": "Conv2D", "tensors_json": '{"input_0": {}}'}]
    same(model_rows({"task_desc": task_desc, "op_desc": op_desc}, "ascend_framework_task"), [
        # a's two tasks each carry op_desc's type and tensors; b's type from task_desc; c (no task) last
        {"position": 1, "task_id": 10, "op_name": a, "short_name": "Conv2D-op1", "op_type": "Conv2D",
         "subgraph": "Default", "task_type": "AI_CORE", "tensors_json": '{"input_0": {}}'},
        {"position": 2, "task_id": 11, "op_name": a, "op_type": "Conv2D", "task_type": None},
        {"position": 3, "task_id": 12, "op_name": b, "op_type": "ReluGrad", "subgraph": "Gradients", "tensors_json": None},
        {"position": 4, "task_id": None, "stream_id": None, "op_name": c, "op_type": "Cast", "tensors_json": "{}"},
    ])


def test_aicpu_op_exec_keeps_each_execution_in_device_order():
    aicpu = [{"seq": 1, "op_name": "GetNext-op2", "op_type": "GetNext", "run_start_ns": 9_000, "run_end_ns": 12_000,
              "total_ns": 4_000, "dispatch_ns": 1_000},
             {"seq": 0, "op_name": "DropoutGenMask-op1", "op_type": "DropoutGenMask", "run_start_ns": 1_000,
              "run_end_ns": 3_000, "total_ns": 2_000, "dispatch_ns": 0}]
    same(model_rows({"aicpu_exec": aicpu}, "aicpu_op_exec"), [
        {"seq": 0, "op_type": "DropoutGenMask", "run_start_ns": 1_000, "total_ns": 2_000, "dispatch_ns": 0},
        {"seq": 1, "op_type": "GetNext", "run_end_ns": 12_000, "total_ns": 4_000, "dispatch_ns": 1_000},
    ])


def test_ascend_rank_lists_device_counter_ranks_with_their_device_and_clock():
    info = [{"rank": 0, "capture": 0, "device_id": 5, "device_type": "ascend", "tick_hz": 100_000_000},
            {"rank": 0, "capture": 1, "device_id": 3, "device_type": "ascend", "tick_hz": 100_000_000},
            {"rank": 1, "device_id": 0, "device_type": "ascend"},            # msprof export: host clock, no ticks
            {"rank": 2, "device_id": 0, "device_type": "gpu", "tick_hz": 1_000}]
    # rank 0 only, named by the smallest device id of its sources
    same(model_rows({"run_info": info}, "ascend_rank"), [{"rank": 0, "device_id": 3, "tick_hz": 100_000_000}])


def test_host_op_stats_self_and_total_times_of_nested_ops():
    # P (0) 0-100 holds C (1) 10-40 and C (2) 50-70; C (1) holds G (3) 15-25.  Kernels: 7 ns launched by P,
    # 5 by G, 4 by the second C
    host_op = [{"op_name": "P", "op_index": 0, "parent_index": -1, "start_ns": 0, "dur_ns": 100},
               {"op_name": "C", "op_index": 1, "parent_index": 0, "start_ns": 10, "dur_ns": 30},
               {"op_name": "C", "op_index": 2, "parent_index": 0, "start_ns": 50, "dur_ns": 20},
               {"op_name": "G", "op_index": 3, "parent_index": 1, "start_ns": 15, "dur_ns": 10}]
    host_op = [dict(r, side="Host", category="cpu_op") for r in host_op]
    device_exec = [kernel("a", 20, 7, op_index=0), kernel("b", 30, 5, op_index=3), kernel("c", 60, 4, op_index=2)]
    same(model_rows({"host_op": host_op, "device_exec": device_exec}, "host_op_stats"), [
        # C: 30 + 20 = 50 total; self (30 - 10) + 20 = 40; device self 0 + 4; total 5 (G's, nested) + 4 = 9
        {"op_name": "C", "category": "cpu_op", "calls": 2, "host_total_ns": 50, "host_self_ns": 40,
         "device_self_ns": 4, "device_total_ns": 9, "host_self_share": 40 / 100},
        {"op_name": "G", "calls": 1, "host_total_ns": 10, "host_self_ns": 10, "device_self_ns": 5,
         "device_total_ns": 5, "host_self_share": 10 / 100},
        # P: self 100 - 30 - 20 = 50; device self 7, total 7 + 5 + 4 = 16; self times sum to 50 + 40 + 10 = 100
        {"op_name": "P", "calls": 1, "host_total_ns": 100, "host_self_ns": 50, "device_self_ns": 7,
         "device_total_ns": 16, "host_self_share": 50 / 100},
    ])


def test_host_op_stats_keep_the_op_trees_of_two_captures_apart():
    # op_index 0 and 1 exist in both captures; capture 1's Q (1) is nested in nothing but has the same index
    host_op = [{"capture": 0, "op_name": "P", "op_index": 0, "parent_index": -1, "start_ns": 0, "dur_ns": 100},
               {"capture": 0, "op_name": "C", "op_index": 1, "parent_index": 0, "start_ns": 10, "dur_ns": 30},
               {"capture": 1, "op_name": "P", "op_index": 0, "parent_index": -1, "start_ns": 0, "dur_ns": 10},
               {"capture": 1, "op_name": "Q", "op_index": 1, "parent_index": -1, "start_ns": 20, "dur_ns": 5},
               {"op_name": "flat", "op_index": None, "parent_index": None, "start_ns": 200, "dur_ns": 8}]
    host_op = [dict(r, side="Host") for r in host_op]
    device_exec = [kernel("k", 15, 3, op_index=1, capture=1)]  # launched by capture 1's Q, not capture 0's C
    same(model_rows({"host_op": host_op, "device_exec": device_exec}, "host_op_stats"), [
        {"op_name": "C", "calls": 1, "host_self_ns": 30, "device_self_ns": 0, "device_total_ns": 0},
        # P: capture 0 self 100 - 30 = 70, capture 1 self 10 (Q is not its child): 80 of 110 total
        {"op_name": "P", "calls": 2, "host_total_ns": 110, "host_self_ns": 80, "device_total_ns": 0},
        {"op_name": "Q", "calls": 1, "host_self_ns": 5, "device_self_ns": 3, "device_total_ns": 3},
        # no nesting recorded: its own self
        {"op_name": "flat", "calls": 1, "host_total_ns": 8, "host_self_ns": 8},
    ])


# ---------------------------------------------------------------------------------------------- memory

def test_memory_stats_peak_and_end_in_use():
    memory_event = [
        # no Total Allocated: in use is the running sum 100, 150 (peak at 20), 50, 130
        {"ts_ns": 10, "seq": 0, "device_type": "cuda", "device_id": 0, "bytes": 100},
        {"ts_ns": 20, "seq": 1, "device_type": "cuda", "device_id": 0, "bytes": 50},
        {"ts_ns": 30, "seq": 2, "device_type": "cuda", "device_id": 0, "bytes": -100},
        {"ts_ns": 40, "seq": 3, "device_type": "cuda", "device_id": 0, "bytes": 80},
        # Total Allocated given: in use is the allocator's figure (1000 before the trace began); two events at
        # one time are ordered by seq: the end is 1040, the later by seq
        {"ts_ns": 10, "seq": 0, "device_type": "cuda", "device_id": 1, "bytes": 64, "total_allocated": 1064,
         "total_reserved": 2048},
        {"ts_ns": 20, "seq": 2, "device_type": "cuda", "device_id": 1, "bytes": -24, "total_allocated": 1040,
         "total_reserved": 4096},
        {"ts_ns": 20, "seq": 1, "device_type": "cuda", "device_id": 1, "bytes": -64, "total_allocated": 1000,
         "total_reserved": 4096},
    ]
    same(model_rows({"memory_event": memory_event}, "memory_stats"), [
        # allocated 100 + 50 + 80 = 230, freed 100; peak 150 at 20; end 130
        {"device_type": "cuda", "device_id": 0, "allocations": 3, "frees": 1, "allocated_bytes": 230,
         "freed_bytes": 100, "peak_in_use_bytes": 150, "peak_ts_ns": 20, "end_in_use_bytes": 130,
         "peak_reserved_bytes": None, "in_use_from_trace_start": True},
        {"device_type": "cuda", "device_id": 1, "allocations": 1, "frees": 2, "allocated_bytes": 64,
         "freed_bytes": 88, "peak_in_use_bytes": 1064, "peak_ts_ns": 10, "end_in_use_bytes": 1040,
         "peak_reserved_bytes": 4096, "in_use_from_trace_start": False},
    ])



def test_memory_curve_combines_mindspore_and_ge_as_mindspore_does_and_maps_every_vendor():
    record = [  # GE (active 0 as MindSpore reads it), MindSpore, APP; seq is file order (GE first at a tie)
        {"seq": 0, "component": "GE", "device": "NPU:0", "ts_ns": 10, "allocated_bytes": 100, "reserved_bytes": 800,
         "active_bytes": 0},
        {"seq": 1, "component": "GE", "device": "NPU:0", "ts_ns": 30, "allocated_bytes": 300, "reserved_bytes": 800,
         "active_bytes": 0},
        {"seq": 2, "component": "MindSpore", "ts_ns": 10, "allocated_bytes": 5, "reserved_bytes": 50, "active_bytes": 6},
        {"seq": 3, "component": "MindSpore", "ts_ns": 20, "allocated_bytes": 7, "reserved_bytes": 50, "active_bytes": 9},
        {"seq": 4, "component": "APP", "ts_ns": 15, "reserved_bytes": 2000},
    ]
    module = [{"seq": 0, "component": "HCCL", "device": "NPU:0", "ts_ns": 12, "reserved_bytes": None}]
    event = [{"ts_ns": 40, "seq": 0, "device_type": "cuda", "device_id": 0, "bytes": 64, "total_reserved": 128}]
    got = model_rows({"memory_record": record, "memory_module": module, "memory_event": event}, "memory_curve")
    combined = [(r["ts_ns"], r["allocated_bytes"], r["reserved_bytes"], r["active_bytes"]) for r in got
                if r["component"] == "MindSpore+GE"]
    # time order (ts, seq): GE@10 + nothing of MindSpore yet; MindSpore@10 + GE@10; MindSpore@20 + GE@10;
    # GE@30 + MindSpore@20; APP rows take no part
    assert sorted(combined) == [(10, 100, 800, 0), (10, 105, 850, 6), (20, 107, 850, 9), (30, 307, 850, 9)]
    assert len([r for r in got if r["kind"] == "component"]) == 5 + 4
    assert [(r["kind"], r["component"], r["device"], r["reserved_bytes"]) for r in got if r["kind"] != "component"] == [
        ("allocator", "allocator", "cuda:0", 128), ("module", "HCCL", "NPU:0", None)]
    assert [r["allocated_bytes"] for r in got if r["kind"] == "allocator"] == [64]  # the running sum
    # without GE rows there is no MindSpore+GE curve (it would repeat MindSpore's)
    alone = model_rows({"memory_record": record[2:4]}, "memory_curve")
    assert {r["component"] for r in alone} == {"MindSpore"}


def test_memory_peak_per_curve_with_when_and_the_end():
    record = [
        {"seq": 0, "component": "MindSpore", "ts_ns": 10, "allocated_bytes": 5, "reserved_bytes": 50, "active_bytes": 6},
        {"seq": 1, "component": "MindSpore", "ts_ns": 20, "allocated_bytes": 9, "reserved_bytes": 70, "active_bytes": 9},
        {"seq": 2, "component": "MindSpore", "ts_ns": 30, "allocated_bytes": 9, "reserved_bytes": 60, "active_bytes": 12},
        {"seq": 3, "component": "MindSpore", "ts_ns": 40, "allocated_bytes": 2, "reserved_bytes": 60, "active_bytes": 2},
    ]
    same(model_rows({"memory_record": record}, "memory_peak"), [
        # peak allocated 9 first reached at 20 (again at 30); reserved 70 at 20; active 12; the end at 40: 2, 60
        {"kind": "component", "component": "MindSpore", "device": None, "samples": 4, "first_ts_ns": 10,
         "last_ts_ns": 40, "peak_allocated_bytes": 9, "peak_allocated_ts_ns": 20, "peak_reserved_bytes": 70,
         "peak_reserved_ts_ns": 20, "peak_active_bytes": 12, "end_allocated_bytes": 2, "end_reserved_bytes": 60}])


def test_memory_node_curve_graph_stats_and_summary_of_a_1x_memory_usage_file():
    graph = [{"seq": 0, "graph_id": 7, "static_bytes": 100, "capacity_bytes": 10**6},
             {"seq": 1, "graph_id": 8, "static_bytes": 5, "capacity_bytes": 10**6},
             {"rank": 1, "seq": 0, "graph_id": 0, "static_bytes": 0}]
    node = [{"seq": i, "graph_id": 7, "node_index": i, "node_id": 20 + i, "node_name": f"Op{i}"} for i in range(4)]
    node += [{"seq": 4 + i, "graph_id": 8, "node_index": i, "node_id": i, "node_name": f"Assign{i}"} for i in range(2)]
    node += [{"rank": 1, "seq": i, "graph_id": 0, "node_index": i, "node_id": i, "node_name": "N"} for i in range(4001)]
    tensor = [  # a: all nodes; b: 1..2; c: 2..2; d: not located (left off the curve, still counted by MindSpore)
        {"seq": 0, "graph_id": 7, "tensor_id": 1, "bytes": 10, "life_long": "LifeLongGraphAll", "life_start": 0,
         "life_end": 0, "first_node": 0, "last_node": 3},
        {"seq": 1, "graph_id": 7, "tensor_id": 2, "bytes": 20, "life_long": "LifeLongNone", "life_start": 1,
         "life_end": 2, "first_node": 1, "last_node": 2},
        {"seq": 2, "graph_id": 7, "tensor_id": 3, "bytes": 40, "life_long": "LifeLongNone", "life_start": 2,
         "life_end": 2, "first_node": 2, "last_node": 2},
        {"seq": 3, "graph_id": 7, "tensor_id": 4, "bytes": 1000, "life_long": "LifeLongNone", "life_start": 3,
         "life_end": 1},
        {"rank": 1, "seq": 0, "graph_id": 0, "tensor_id": 0, "bytes": 1, "life_long": "LifeLongGraphAll",
         "life_start": 0, "life_end": 0, "first_node": 0, "last_node": 4000}]
    node_tensor = [  # node 1 writes b as output and (MindSpore 1.5+) again as workspace: one allocation
        {"seq": 0, "graph_id": 7, "node_index": 1, "role": "output", "tensor_id": 2},
        {"seq": 1, "graph_id": 7, "node_index": 1, "role": "workspace", "tensor_id": 2},
        {"seq": 2, "graph_id": 7, "node_index": 2, "role": "input", "tensor_id": 2},
        {"seq": 3, "graph_id": 7, "node_index": 2, "role": "output", "tensor_id": 3}]
    con = build({"memory_graph": [{"rank": 0, **g} for g in graph[:2]] + graph[2:],
                 "memory_node": [{"rank": 0, **n} for n in node if "rank" not in n] + [n for n in node if "rank" in n],
                 "memory_tensor": [{"rank": 0, **t} for t in tensor[:4]] + tensor[4:],
                 "memory_node_tensor": [{"rank": 0, **r} for r in node_tensor]})
    curve = rows(con, "memory_node_curve")
    # graph 7: 100 static + 10 (a) at 0; + 20 (b) at 1; + 40 (c) at 2; b and c gone at 3: 110
    same([r for r in curve if r["rank"] == 0], [
        {"graph_id": 7, "node_index": 0, "bytes": 110, "change_bytes": 10, "live_tensors": 1, "allocated_tensors": 0,
         "allocated_bytes": 0, "in_mindspore_lines": True},
        {"graph_id": 7, "node_index": 1, "bytes": 130, "change_bytes": 20, "live_tensors": 2, "allocated_tensors": 1,
         "allocated_bytes": 20, "in_mindspore_lines": True},
        {"graph_id": 7, "node_index": 2, "bytes": 170, "change_bytes": 40, "live_tensors": 3, "allocated_tensors": 1,
         "allocated_bytes": 40, "in_mindspore_lines": True},
        {"graph_id": 7, "node_index": 3, "bytes": 110, "change_bytes": -60, "live_tensors": 1, "in_mindspore_lines": True},
        # graph 8 has no tensors: its static memory at each node, and MindSpore has no line for it
        {"graph_id": 8, "node_index": 0, "bytes": 5, "change_bytes": 0, "in_mindspore_lines": False},
        {"graph_id": 8, "node_index": 1, "bytes": 5, "change_bytes": 0, "in_mindspore_lines": False}])
    # rank 1: 4001 nodes, so MindSpore keeps every 4001 // 2000 = 2nd point: nodes 0, 2, ..., 4000
    kept = [r["node_index"] for r in curve if r["rank"] == 1 and r["in_mindspore_lines"]]
    assert kept == list(range(0, 4001, 2)) and {r["bytes"] for r in curve if r["rank"] == 1} == {1}
    same(rows(con, "memory_graph_stats"), [
        {"rank": 0, "graph_id": 7, "nodes": 4, "tensors": 4, "located_tensors": 3, "static_bytes": 100,
         "peak_bytes": 170, "peak_node_index": 2, "peak_node_name": "Op2", "in_mindspore_summary": True},
        {"rank": 0, "graph_id": 8, "nodes": 2, "tensors": 0, "located_tensors": 0, "static_bytes": 5, "peak_bytes": 5,
         "peak_node_index": 0, "in_mindspore_summary": False},
        {"rank": 1, "graph_id": 0, "nodes": 4001, "tensors": 1, "peak_bytes": 1, "peak_node_index": 0}])
    # graph 8 is not counted: static 100 (not 105), 4 tensors, peak 170 in graph 7; rank 1's file had no total_mem
    same(rows(con, "memory_usage_summary"), [
        {"rank": 0, "capacity_bytes": 10**6, "graphs": 1, "peak_bytes": 170, "peak_graph_id": 7, "static_bytes": 100,
         "allocations": 4, "deallocations": 4},
        {"rank": 1, "capacity_bytes": None, "graphs": 1, "peak_bytes": 1, "peak_graph_id": 0, "static_bytes": 0,
         "allocations": 1, "deallocations": 1}])
    con.close()


def test_memory_op_stats_blocks_sizes_and_lifetimes_across_vendors():
    block = [
        {"seq": 0, "component": "MindSpore", "owner": "Default/Conv2D-op1", "bytes": 4096, "alloc_ns": 100,
         "release_ns": 350},
        {"seq": 1, "component": "MindSpore", "owner": "Default/Conv2D-op1", "bytes": 1024, "alloc_ns": 400,
         "release_ns": 450},
        {"seq": 2, "component": "MindSpore", "owner": "Default/Conv2D-op1", "bytes": 512, "alloc_ns": 500,
         "release_ns": None},
    ]
    # a Kineto allocation at address 7 freed at 90 (the next event there frees the same bytes), owned by the op
    # running on its thread; one at address 8 never freed, outside every op
    host_op = [{"side": "Host", "tid": 1, "op_name": "aten::empty", "start_ns": 10, "dur_ns": 50}]
    event = [{"ts_ns": 20, "seq": 0, "tid": 1, "device_type": "cuda", "device_id": 0, "addr": 7, "bytes": 256},
             {"ts_ns": 90, "seq": 1, "tid": 1, "device_type": "cuda", "device_id": 0, "addr": 7, "bytes": -256},
             {"ts_ns": 95, "seq": 2, "tid": 1, "device_type": "cuda", "device_id": 0, "addr": 8, "bytes": 64}]
    same(model_rows({"memory_block": block, "memory_event": event, "host_op": host_op}, "memory_op_stats"), [
        {"component": "MindSpore", "owner": "Default/Conv2D-op1", "blocks": 3, "total_bytes": 5632, "max_bytes": 4096,
         "avg_bytes": 5632 / 3, "released_blocks": 2, "avg_lifetime_ns": (250 + 50) / 2, "max_lifetime_ns": 250,
         "first_alloc_ns": 100},
        {"component": "allocator", "owner": "aten::empty", "blocks": 1, "total_bytes": 256, "released_blocks": 1,
         "avg_lifetime_ns": 70, "max_lifetime_ns": 70, "first_alloc_ns": 20},
        {"component": "allocator", "owner": None, "blocks": 1, "total_bytes": 64, "released_blocks": 0,
         "avg_lifetime_ns": None},
    ])


# ---------------------------------------------------------------------------------------------- overlap

def test_gpu_datasheet_and_peak_tflops_give_each_part_its_data_sheet_figures():
    """Each deviceProperties name to its part and dense data-sheet figures (sparsity halved), as the sheets give
    them: V100S PCIe is not a V100 PCIe (1,134 GB/s, 130 TFLOPS), H100 PCIe's FP16 is 1,513 / 2, the NVL boards are
    not SXM; a GH200 is not guessed."""
    con = duckdb.connect()
    create_macros(con)
    sheet = {  # name: part, FP64, TF32 (else FP32), FP16, BF16, GB/s
        "Tesla V100S-PCIE-32GB": ("V100S PCIe", 8.2, 16.4, 130.0, None, 1134),
        "Tesla V100-PCIE-16GB": ("V100 PCIe", 7.0, 14.0, 112.0, None, 900),
        "Tesla V100-SXM2-32GB": ("V100 SXM2", 7.8, 15.7, 125.0, None, 900),
        "NVIDIA H100 PCIe": ("H100 PCIe", 51.0, 378.0, 756.5, 756.5, 2000),
        "NVIDIA H100 NVL": ("H100 NVL", 60.0, 417.5, 835.5, 835.5, 3900),
        "NVIDIA H100 80GB HBM3": ("H100 SXM5", 67.0, 494.7, 989.4, 989.4, 3350),
        "NVIDIA H200 NVL": ("H200 NVL", 60.0, 417.5, 835.5, 835.5, 4800),
        "NVIDIA H200": ("H200 SXM", 67.0, 494.7, 989.4, 989.4, 4800),
        "NVIDIA A100-SXM4-80GB": ("A100 80GB SXM4", 19.5, 156.0, 312.0, 312.0, 2039),
        "NVIDIA A100 80GB PCIe": ("A100 80GB PCIe", 19.5, 156.0, 312.0, 312.0, 1935),
        "NVIDIA A100-SXM4-40GB": ("A100 40GB", 19.5, 156.0, 312.0, 312.0, 1555),
        "NVIDIA L40S": ("L40S", None, 183.0, 362.0, 362.0, 864),
        "NVIDIA L4": ("L4", None, 60.0, 121.0, 121.0, 300),
        "NVIDIA A10": ("A10", None, 62.5, 125.0, 125.0, 600),
        "Tesla T4": ("T4", None, 8.1, 65.0, None, 320),
    }
    for name, (part, fp64, tf32, fp16, bf16, gbps) in sheet.items():
        got = con.execute("SELECT gpu_datasheet(?)", [name]).fetchone()[0]
        scaled = [None if v is None else round(v / 1e12, 6) for v in (got["fp64_flop_per_second"],
                  got["tf32_flop_per_second"], got["fp16_flop_per_second"], got["bf16_flop_per_second"])]
        assert (got["device"], *scaled, got["memory_bytes_per_second"] / 1e9) == (part, fp64, tf32, fp16, bf16, gbps), name
    assert con.execute("SELECT gpu_datasheet('NVIDIA GH200 480GB')").fetchone() == (None,)
    peaks = {("Tesla V100S-PCIE-32GB", "float"): 16.4, ("Tesla V100-PCIE-16GB", "c10::Half"): 112.0,
             ("Tesla V100-SXM2-32GB", "double"): 7.8, ("NVIDIA H100 PCIe", "c10::BFloat16"): 756.5,
             ("NVIDIA H100 NVL", "float"): 60.0, ("NVIDIA H200 NVL", "c10::Half"): 835.5,
             ("NVIDIA H100 80GB HBM3", "double"): 34.0, ("NVIDIA A100-SXM4-80GB", "float"): 19.5,
             ("Tesla V100-SXM2-32GB", "c10::BFloat16"): None}
    for (name, dtype), peak in peaks.items():
        got = con.execute("SELECT gpu_peak_tflops(?, ?)::DOUBLE", [name, dtype]).fetchone()[0]
        assert got == peak, (name, dtype)


def test_interval_sweep_macro_cuts_at_every_edge_and_names_what_covers_each_stretch():
    con = duckdb.connect()
    create_macros(con)
    found = con.execute("""
        WITH given(grp, category, start_ns, end_ns) AS (VALUES
            (1, 'a', 0, 10), (1, 'a', 2, 5),     -- nested in a: cuts at 2 and 5, a counts once
            (1, 'b', 5, 12), (1, 'b', 5, 12),   -- identical twice, touching the nested a at 5
            (1, 'a', 10, 20),                   -- touches the first a at 10
            (1, 'c', 7, 7),                     -- zero-length: cuts at 7, never active
            (1, 'b', 30, 40), (1, 'b', NULL, 50),  -- a gap 20-30; a NULL bound is left out
            (2, 'a', 0, 1), (2, 'b', 5, 3))     -- another timeline; an end before its start is left out
        SELECT * FROM interval_sweep(given) ORDER BY grp, start_ns""").fetchall()
    assert found == [(1, 0, 2, ["a"]), (1, 2, 5, ["a"]), (1, 5, 7, ["a", "b"]), (1, 7, 10, ["a", "b"]),
                     (1, 10, 12, ["a", "b"]), (1, 12, 20, ["a"]), (1, 20, 30, []), (1, 30, 40, ["b"]),
                     (2, 0, 1, ["a"])]


def _overlap_inputs() -> dict:
    # step 1 window 100-200 (fp 100, bp 190), step 2 200-300 (fp 200).  Computing: stream 1 90-130 and stream 2
    # 120-150 (merged: 100-150 inside step 1), stream 1 180-220 (cut at the step edge 200).  NCCL 140-170.
    device_exec = [kernel("gemm", 90, 40, stream_id=1), kernel("relu", 120, 30, stream_id=2, correlation=1),
                   kernel("ncclAllReduce", 140, 30, stream_id=3), kernel("gemm", 180, 40, stream_id=1)]
    step_point = points(1, start=100, fp=100, bp=190, end=200) + points(2, start=200, fp=200, end=300)
    return {"device_exec": device_exec, "step_point": step_point}


def test_overlap_segment_merges_parallel_streams_and_clips_to_the_step_window():
    same(model_rows(_overlap_inputs(), "overlap_segment"), [
        # step 1: computation 100-150 (90-130 and 120-150 merged, clipped at 100) and 180-200 (clipped at 200);
        # communication 140-170, of it 150-170 with nothing computing (pure, collective alone); free 170-180
        {"step": 1, "category": "collective_alone", "start_ns": 150, "end_ns": 170, "dur_ns": 20},
        {"step": 1, "category": "communication", "start_ns": 140, "end_ns": 170, "dur_ns": 30},
        {"step": 1, "category": "computation", "start_ns": 100, "end_ns": 150, "dur_ns": 50},
        {"step": 1, "category": "computation", "start_ns": 180, "end_ns": 200, "dur_ns": 20},
        {"step": 1, "category": "free", "start_ns": 170, "end_ns": 180, "dur_ns": 10},
        {"step": 1, "category": "pure_communication", "start_ns": 150, "end_ns": 170, "dur_ns": 20},
        # step 2: the rest of 180-220, then free to the end of the window
        {"step": 2, "category": "computation", "start_ns": 200, "end_ns": 220, "dur_ns": 20},
        {"step": 2, "category": "free", "start_ns": 220, "end_ns": 300, "dur_ns": 80},
    ])


def test_overlap_segment_memcpy_and_memset_compute_sync_tasks_do_not():
    # window 0-100: memcpy 10-20 and memset 20-30 touch (one computation stretch 10-30); a sync task 40-90 is
    # no computation: free 0-10 and 30-100
    device_exec = [{"kind": "memcpy", "name": "Memcpy HtoD", "start_ns": 10, "dur_ns": 10},
                   {"kind": "memset", "name": "Memset", "start_ns": 20, "dur_ns": 10},
                   {"kind": "sync", "name": "cudaDeviceSynchronize", "start_ns": 40, "dur_ns": 50}]
    same(model_rows({"device_exec": device_exec, "step_point": points(1, start=0, fp=0, end=100)}, "overlap_segment"), [
        {"category": "computation", "start_ns": 10, "end_ns": 30, "dur_ns": 20},
        {"category": "free", "start_ns": 0, "end_ns": 10, "dur_ns": 10},
        {"category": "free", "start_ns": 30, "end_ns": 100, "dur_ns": 70},
    ])


def test_step_overlap_sums_the_segments_of_each_step():
    same(model_rows(_overlap_inputs(), "step_overlap"), [
        # step 1: computation 50 + 20 = 70; communication 30 of which pure 20, overlapped 30 - 20 = 10;
        # free 10; no Receive: stage = total 100
        {"step": 1, "start_ns": 100, "end_ns": 200, "total_ns": 100, "computation_ns": 70, "communication_ns": 30,
         "overlapped_communication_ns": 10, "pure_communication_ns": 20, "free_ns": 10, "receive_alone_ns": 0,
         "collective_alone_ns": 20, "stage_ns": 100},
        {"step": 2, "total_ns": 100, "computation_ns": 20, "communication_ns": 0, "overlapped_communication_ns": 0,
         "pure_communication_ns": 0, "free_ns": 80, "stage_ns": 100},
    ])


def test_step_overlap_receive_alone_is_not_stage_time():
    # a pipeline Receive 120-160 alone in step 1 (nothing computes): receive_alone 40, stage 100 - 40 = 60
    tables = {"device_exec": [kernel("gemm", 100, 20)],
              "step_point": points(1, start=100, fp=100, end=200)
              + [{"step": 1, "kind": "comm_start", "op_name": "Default/Receive-op1", "seq": 5, "stream_id": 9, "ts_ns": 120},
                 {"step": 1, "kind": "comm_end", "op_name": "Default/Receive-op1", "seq": 6, "stream_id": 9, "ts_ns": 160}]}
    same(model_rows(tables, "step_overlap"), [
        {"step": 1, "computation_ns": 20, "communication_ns": 40, "pure_communication_ns": 40, "receive_alone_ns": 40,
         "collective_alone_ns": 0, "free_ns": 40, "stage_ns": 60},
    ])


def _gpu_overlap_inputs() -> dict:
    tables = _overlap_inputs()
    tables["run_info"] = [{"device_id": 0, "device_type": "gpu", "framework": "pytorch", "layout": "kineto",
                           "source_dir": "x", "clock": "host"}]
    tables["host_api"] = [{"name": "cudaLaunchKernel", "category": "cuda_runtime", "correlation": 1, "start_ns": 110,
                           "dur_ns": 3}]
    return tables


def test_step_gpu_time_splits_device_work_and_idle_time_in_the_steps_gpu_window():
    tables = _gpu_overlap_inputs()
    tables["host_op"] = [{"side": "Host", "op_name": "dl", "category": "dataloader", "start_ns": 100, "dur_ns": 10},
                         {"side": "Host", "op_name": "bw", "category": "backward", "start_ns": 160, "dur_ns": 20},
                         {"side": "Host", "op_name": "opt", "category": "optimizer", "start_ns": 195, "dur_ns": 5}]
    same(model_rows(tables, "step_gpu_time"), [
        # step 1 launched relu (call at 110, started 120: delay 10) and, without calls, the NCCL kernel (140) and the
        # gemm starting at 180 (the gemm at 90 precedes every step): its GPU window is their span, 120-220.  In it:
        # compute 120-130 (the gemm from 90, cut) + relu 120-150 merged = 120-150, and 180-220: 30 + 40 = 70; NCCL
        # 140-170 = 30, of it 140-150 under compute; busy 120-170 + 180-220 = 90; idle 100 - 90 = 10.
        # forward = backward start 160 - fp 100 = 60; backward = bp 190 - 160 = 30
        {"step": 1, "step_ns": 100, "gpu_window_start_ns": 120, "gpu_window_end_ns": 220, "gpu_window_ns": 100,
         "compute_ns": 70, "communication_ns": 30, "memcpy_ns": 0, "memset_ns": 0,
         "busy_ns": 90, "idle_ns": 10, "overlapped_communication_ns": 10, "kernels": 3, "launch_delay_avg_ns": 10,
         "launch_delay_max_ns": 10, "dataloader_ns": 10, "forward_ns": 60, "backward_ns": 30, "optimizer_ns": 5,
         "host_sync_ns": 0, "host_sync_calls": 0},
        # step 2 launched nothing: no GPU window, nothing in it
        {"step": 2, "step_ns": 100, "gpu_window_start_ns": None, "gpu_window_ns": 0, "compute_ns": 0,
         "communication_ns": 0, "busy_ns": 0, "idle_ns": 0, "kernels": 0, "launch_delay_avg_ns": None,
         "dataloader_ns": None, "forward_ns": None},
    ])


def test_step_gpu_time_takes_the_steps_copies_on_the_device_as_its_window_and_cuts_at_the_next():
    """Steps' copies on the GPU streams (device_step_start / device_step_end points, two streams for step 1) give the
    window, not what the host step launched; a window reaching past the next one's start ends there."""
    tables = _gpu_overlap_inputs()
    device = [{"rank": 0, "capture": 0, "step": step, "kind": kind, "seq": 4, "stream_id": stream, "ts_ns": ts}
              for step, stream, kind, ts in ((1, 1, "device_step_start", 150), (1, 1, "device_step_end", 210),
                                             (1, 3, "device_step_start", 140), (1, 3, "device_step_end", 175),
                                             (2, 1, "device_step_start", 200), (2, 1, "device_step_end", 260))]
    tables["step_point"] += device
    same(model_rows(tables, "step_gpu_time"), [
        # step 1: 140 (stream 3's copy) to 210, cut at step 2's start 200: 140-200.  compute 140-150 (relu) and
        # 180-200 (gemm, cut) = 30; NCCL 140-170 = 30, under compute 140-150 = 10; busy 140-170 + 180-200 = 50
        {"step": 1, "gpu_window_start_ns": 140, "gpu_window_end_ns": 200, "gpu_window_ns": 60, "compute_ns": 30,
         "communication_ns": 30, "busy_ns": 50, "idle_ns": 10, "overlapped_communication_ns": 10, "kernels": 3},
        # step 2: 200-260, the gemm's tail 200-220 in it, though step 1 launched it
        {"step": 2, "gpu_window_start_ns": 200, "gpu_window_end_ns": 260, "gpu_window_ns": 60, "compute_ns": 20,
         "busy_ns": 20, "idle_ns": 40, "kernels": 0},
    ])


def test_step_gpu_time_counts_a_sync_wait_only_inside_its_step():
    """A cudaStreamSynchronize_v3020 from 190 to 230 crosses the step 1/2 edge at 200: 10 in step 1, 30 in step 2,
    where a cudaDeviceSynchronize on another thread (210-240) overlaps it: merged, 200-240 = 40. A sync after the
    last step (300-900) and a call that does not wait (cudaLaunchKernel) count in no step."""
    tables = _gpu_overlap_inputs()
    tables["host_api"] += [
        {"tid": 1, "name": "cudaStreamSynchronize_v3020", "category": "cuda_runtime", "start_ns": 190, "dur_ns": 40},
        {"tid": 2, "name": "cudaDeviceSynchronize", "category": "cuda_runtime", "start_ns": 210, "dur_ns": 30},
        {"tid": 1, "name": "cudaDeviceSynchronize", "category": "cuda_runtime", "start_ns": 300, "dur_ns": 600}]
    same(model_rows(tables, "step_gpu_time"), [
        {"step": 1, "step_ns": 100, "host_sync_ns": 10, "host_sync_calls": 1,
         "host_sync_apis": "cudaStreamSynchronize_v3020"},
        {"step": 2, "step_ns": 100, "host_sync_ns": 40, "host_sync_calls": 2,
         "host_sync_apis": "cudaDeviceSynchronize, cudaStreamSynchronize_v3020"},
    ])


def test_step_gpu_time_only_for_gpu_ranks():
    assert model_rows(_overlap_inputs(), "step_gpu_time") == []  # no run_info saying gpu


# ---------------------------------------------------------------------------------------------- cluster

def test_cluster_step_phases_marks_ranks_more_than_five_percent_slower():
    meta = json.dumps({"rank_size": 4, "stage_num": 2})
    run_info = [{"rank": r, "device_id": r, "device_type": "ascend", "framework": "mindspore", "layout": "x",
                 "source_dir": "x", "clock": "x", "metadata_json": meta} for r in range(4)]
    # step 1 totals: rank 0 100, rank 1 104, rank 2 110, rank 3 110; capture 1 has rank 0 alone
    step_point = (points(1, start=0, fp=10, end=100, rank=0) + points(1, start=0, fp=10, end=104, rank=1)
                  + points(1, start=0, fp=10, end=110, rank=2) + points(1, start=0, fp=10, end=110, rank=3)
                  + points(1, start=0, fp=10, end=300, rank=0, capture=1))
    same(model_rows({"run_info": run_info, "step_point": step_point}, "cluster_step_phases"), [
        # fastest 100, slowest 110 (ranks 2 and 3 tie: the lower, 2); spread (110 - 100) / 100
        # slowdown 104/100 - 1 = 0.04: not slow; 110/100 - 1 = 0.1: slow.  stage = rank // (4 // 2) + 1
        {"rank": 0, "capture": 0, "total_ns": 100, "stage": 1, "ranks": 4, "fastest_total_ns": 100,
         "slowest_total_ns": 110, "slowest_rank": 2, "spread": 10 / 100, "slowdown": 0.0, "is_slow": False,
         "pure_communication_ns": None},
        {"rank": 0, "capture": 1, "total_ns": 300, "ranks": 1, "fastest_total_ns": 300, "slowest_rank": 0,
         "spread": 0.0, "is_slow": False},
        {"rank": 1, "capture": 0, "stage": 1, "slowdown": 104 / 100 - 1, "is_slow": False},
        {"rank": 2, "capture": 0, "stage": 2, "slowdown": 110 / 100 - 1, "is_slow": True},
        {"rank": 3, "capture": 0, "stage": 2, "is_slow": True},
    ])


def test_cluster_step_phases_exactly_five_percent_slower_is_not_slow():
    # 105 / 100 - 1 is 0.05 exactly, not more than 5 %
    step_point = points(1, start=0, fp=10, end=100, rank=0) + points(1, start=0, fp=10, end=105, rank=1)
    result = model_rows({"step_point": step_point}, "cluster_step_phases")
    assert [(r["rank"], r["is_slow"]) for r in result] == [(0, False), (1, False)]


# ---------------------------------------------------------------------------------------------- communication

def test_step_communication_pairs_points_in_order_per_stream():
    comm = [  # stream 3: two spans; stream 4: three points (odd): no rows
        {"step": 1, "kind": "comm_start", "op_name": "Default/AllReduce-op1", "seq": 1, "stream_id": 3, "tag": 5, "ts_ns": 10},
        {"step": 1, "kind": "comm_end", "op_name": "Default/AllReduce-op1", "seq": 2, "stream_id": 3, "tag": 6, "ts_ns": 30},
        {"step": 1, "kind": "comm_start", "op_name": None, "seq": 3, "stream_id": 3, "tag": 7, "ts_ns": 40},
        {"step": 1, "kind": "comm_end", "op_name": None, "seq": 4, "stream_id": 3, "tag": 8, "ts_ns": 45},
        {"step": 1, "kind": "comm_start", "op_name": None, "seq": 5, "stream_id": 4, "tag": 9, "ts_ns": 50},
        {"step": 1, "kind": "comm_end", "op_name": None, "seq": 6, "stream_id": 4, "tag": 10, "ts_ns": 60},
        {"step": 1, "kind": "comm_start", "op_name": None, "seq": 7, "stream_id": 4, "tag": 11, "ts_ns": 70},
    ]
    same(model_rows({"step_point": comm}, "step_communication"), [
        # 30 - 10 = 20; 45 - 40 = 5; an unnamed span is labelled 'parallel'
        {"step": 1, "stream_id": 3, "pair": 0, "start_ns": 10, "end_ns": 30, "dur_ns": 20, "start_tag": 5, "end_tag": 6,
         "op_name": "Default/AllReduce-op1", "op_label": "AllReduce-op1"},
        {"step": 1, "stream_id": 3, "pair": 1, "start_ns": 40, "end_ns": 45, "dur_ns": 5, "start_tag": 7, "end_tag": 8,
         "op_name": None, "op_label": "parallel"},
    ])


def test_kernel_name_stats_takes_the_profilers_record_else_the_first_execution():
    tables = {
        "device_exec": [kernel("gemm", 100, 20, stream_id=7, op_name="Default/MatMul-op1", correlation=2,
                               grid="8,4,1", block="256,1,1"),
                        kernel("gemm", 50, 40, stream_id=8, op_name="Default/MatMul-op2", correlation=1),
                        kernel("relu", 10, 5, stream_id=9, correlation=3, grid="1,1,1", block="32,1,1")],
        "host_api": [{"name": "cuLaunchKernel", "category": "cuda_driver", "correlation": 1, "start_ns": 40, "dur_ns": 5},
                     {"name": "cudaLaunchKernel", "category": "cuda_runtime", "correlation": 2, "start_ns": 90,
                      "dur_ns": 5},
                     {"name": "cudaLaunchKernelExC", "category": "cuda_runtime", "correlation": 3, "start_ns": 5,
                      "dur_ns": 2}],
        "kernel_meta": [{"name": "relu", "launch_api": "cudaLaunchKernel", "op_name": "Default/ReLU-op3",
                         "stream_id": 4, "block_dim": "128,1,1", "grid_dim": "4,1,1"}],
    }
    same(model_rows(tables, "kernel_name_stats"), [
        # gemm: no record, so the first execution's op, stream and launching call (the one at 50, correlation 1:
        # cuLaunchKernel), and the shape of the first execution that has one (the one at 100); 2 runs, 20 + 40 = 60
        {"name": "gemm", "launch_api": "cuLaunchKernel", "op_name": "Default/MatMul-op2", "stream_id": 8,
         "block_dim": "256,1,1", "grid_dim": "8,4,1", "instances": 2, "total_ns": 60, "max_ns": 40, "min_ns": 20},
        # relu: the profiler's record wins
        {"name": "relu", "launch_api": "cudaLaunchKernel", "op_name": "Default/ReLU-op3", "stream_id": 4,
         "block_dim": "128,1,1", "grid_dim": "4,1,1", "instances": 1, "total_ns": 5},
    ])


def test_rank_info_is_run_info_without_the_raw_metadata():
    info = [{"rank": 1, "capture": 0, "device_id": 3, "device_type": "gpu", "framework": "pytorch",
             "layout": "kineto", "source_dir": "/x", "clock": "unix_epoch", "pid": 42, "metadata_json": "{}"}]
    same(model_rows({"run_info": info}, "rank_info"), [
        {"rank": 1, "capture": 0, "device_id": 3, "device_type": "gpu", "clock": "unix_epoch", "pid": 42}])


def test_data_op_stats_keeps_two_captures_of_a_rank_apart():
    ops = [{"capture": c, "op_id": 0, "op_type": "BatchOp", "num_workers": 2, "child_index": 0, "has_queue": True,
            "queue_capacity": 10, "pipeline_order": 0} for c in (0, 1)]
    queue = [{"capture": c, "queue": "op_output", "op_id": 0, "sample": i, "size": size}
             for c, sizes in ((0, (2, 4)), (1, (10, 0))) for i, size in enumerate(sizes)]
    cpu = [{"capture": 1, "scope": "op", "op_id": 0, "sample": 0, "user_cpus": 0.3, "sys_cpus": 0.1}]
    same(model_rows({"data_op": ops, "queue_sample": queue, "data_cpu_sample": cpu}, "data_op_stats"), [
        # capture 0: sizes 2, 4 -> average 3, usage 3/10, never empty, no CPU samples
        {"capture": 0, "op_name": "Batch", "queue_samples": 2, "queue_average_size": 3.0, "queue_usage_share": 0.3,
         "queue_empty_samples": 0, "queue_empty_share": 0.0, "cpu_samples": None},
        # capture 1: sizes 10, 0 -> average 5, empty 1 of 2 samples; CPU 0.3 + 0.1 = 0.4 CPUs over 2 workers
        {"capture": 1, "op_name": "Batch", "queue_samples": 2, "queue_average_size": 5.0, "queue_usage_share": 0.5,
         "queue_empty_samples": 1, "queue_empty_share": 0.5, "cpu_samples": 1, "avg_cpus": 0.4,
         "avg_cpus_per_worker": 0.2},
    ])


def _comm(task_type: str, seq: int, start: int, dur: int, transport: str, dst: int, bytes_: int | None = None,
          plane: int = 0) -> dict:
    return {"op_name": "allReduce_1_1", "op_type": "AllReduce", "op_ordinal": 0, "iteration": 1, "step": 1,
            "seq": seq, "plane": plane, "stream_id": 5, "task_id": seq, "task_type": task_type, "src_rank": 0,
            "dst_rank": dst, "transport": transport, "bytes": bytes_, "start_ns": start, "dur_ns": dur}


#: One AllReduce execution of rank 0: an SDMA link 0-1 (Memcpy + Reduce Inline, then a Notify Wait) and an
#: RDMA link 0-2 (RDMASend, RDMASend, Notify Wait: MindSpore's RDMA triple).
COMM_TASKS = [
    _comm("Memcpy", 0, 0, 1_000, "SDMA", 1, 4_000),
    _comm("Reduce Inline", 1, 1_000, 3_000, "SDMA", 1, 4_000),
    _comm("Notify Wait", 2, 4_000, 500, "SDMA", 1),
    _comm("RDMASend", 3, 5_000, 100, "RDMA", 2, 1_000),
    _comm("RDMASend", 4, 5_100, 200, "RDMA", 2, 24),
    _comm("Notify Wait", 5, 5_300, 300, "RDMA", 2),
]


def test_comm_link_task_sdma_tasks_and_rdma_triples_are_the_units_of_link_time():
    same(model_rows({"comm_task": COMM_TASKS}, "comm_link_task"), [
        # SDMA: the Memcpy and the Reduce Inline, each a unit; the Notify Wait is none
        {"link": "0-1", "transport": "SDMA", "seq": 0, "dur_ns": 1_000, "first_ns": 1_000, "wait_ns": None,
         "bytes": 4_000},
        {"link": "0-1", "transport": "SDMA", "seq": 1, "dur_ns": 3_000, "bytes": 4_000},
        # RDMA: the send, send, wait triple: 100 + 200 + 300; bytes 1000 + 24
        {"link": "0-2", "transport": "RDMA", "seq": 3, "dur_ns": 600, "first_ns": 100, "second_send_ns": 200,
         "wait_ns": 300, "bytes": 1_024, "main_plane": True},
    ])


def test_comm_op_task_keeps_every_task_with_its_link_and_main_plane():
    tasks = COMM_TASKS + [_comm("Notify Wait", 6, 5_600, 50, "SDMA", 1, plane=1)]
    found = model_rows({"comm_task": tasks}, "comm_op_task")
    # seven tasks; plane 1 is the execution's highest, so only the last task is on the main plane
    assert [(t["seq"], t["link"], t["main_plane"]) for t in found] == [
        (0, "0-1", False), (1, "0-1", False), (2, "0-1", False), (3, "0-2", False), (4, "0-2", False),
        (5, "0-2", False), (6, "0-1", True)]
    assert {t["step"] for t in found} == {1} and {t["op_label"] for t in found} == {"allReduce_1_1"}


def test_comm_link_stats_sdma_and_rdma_links():
    same(model_rows({"comm_task": COMM_TASKS}, "comm_link_stats"), [
        # SDMA: Memcpy 1000 + Reduce Inline 3000 = 4000 ns; 8000 bytes in 4 µs = 2e9 bytes/s; no wait on SDMA
        {"link": "0-1", "transport": "SDMA", "first_seq": 0, "time_ns": 4_000, "main_time_ns": 4_000, "bytes": 8_000,
         "bandwidth_bytes_per_second": 2e9, "wait_ns": None},
        # RDMA: the triple 100 + 200 + 300 = 600 ns, the wait 300; bytes of the two sends 1000 + 24
        {"link": "0-2", "transport": "RDMA", "first_seq": 3, "time_ns": 600, "main_time_ns": 600, "bytes": 1_024,
         "bandwidth_bytes_per_second": 1_024 / 600e-9, "wait_ns": 300, "main_wait_ns": 300},
    ])


def test_comm_op_stats_costs_of_an_execution():
    same(model_rows({"comm_task": COMM_TASKS}, "comm_op_stats"), [
        # cost: the main-plane link times 4000 + 600; wait: main-plane Notify Waits 500 + 300 less the RDMA
        # triple's wait 300 (counted in its link time); spans 0 .. 5600
        {"op_name": "allReduce_1_1", "iteration": 1, "step": 1, "start_ns": 0, "end_ns": 5_600,
         "communication_cost_ns": 4_600, "wait_cost_ns": 500, "links": 2},
    ])


def test_comm_matrix_bytes_and_time_per_rank_pair():
    same(model_rows({"comm_task": COMM_TASKS}, "comm_matrix"), [
        # Notify Waits carry no bytes and are left out; RDMA: the two sends, 300 ns
        {"src_rank": 0, "dst_rank": 1, "transport": "SDMA", "executions": 1, "tasks": 2, "bytes": 8_000,
         "time_ns": 4_000, "bandwidth_bytes_per_second": 2e9},
        {"src_rank": 0, "dst_rank": 2, "transport": "RDMA", "executions": 1, "tasks": 2, "bytes": 1_024,
         "time_ns": 300, "bandwidth_bytes_per_second": 1_024 / 300e-9},
    ])


def _batch_time(batch: int, kind: str, dur: int, ts: int, trace: str = "device_queue") -> dict:
    return {"trace": trace, "batch": batch, "kind": kind, "dur_ns": dur, "ts_ns": ts}


def test_data_batch_and_queue_stats_from_the_device_queue_trace():
    times = [_batch_time(1, "pipeline", 4_000_000, 1_000_000), _batch_time(1, "push", 1_000_000, 1_000_000),
             _batch_time(2, "pipeline", 6_000_000, 3_000_000), _batch_time(2, "push", 2_000_000, 3_000_000)]
    queue = [{"queue": "device_queue", "batch": 1, "sample": 0, "ts_ns": 1_000_000, "size": 0, "capacity": 2},
             {"queue": "device_queue", "batch": 2, "sample": 1, "ts_ns": 3_500_000, "size": 2, "capacity": 2}]
    tables = {"data_batch_time": times, "queue_sample": queue}
    same(model_rows(tables, "data_batch_stats"), [
        # batch 1: the queue was empty; batch 2: full, 3_500_000 - 1_000_000 = 2_500_000 ns after the previous record
        {"trace": "device_queue", "batch": 1, "pipeline_ns": 4_000_000, "push_ns": 1_000_000, "since_previous_ns": None,
         "queue_size": 0, "queue_empty": True, "queue_full": False},
        {"trace": "device_queue", "batch": 2, "pipeline_ns": 6_000_000, "push_ns": 2_000_000,
         "since_previous_ns": 2_500_000, "queue_size": 2, "queue_empty": False, "queue_full": True},
    ])
    same(model_rows(tables, "data_queue_stats"), [
        # 2 batches: 1 empty (1 / 2 = 0.5), 1 full; average size (0 + 2) / 2
        {"queue": "device_queue", "batches": 2, "empty_batches": 1, "full_batches": 1, "empty_share": 0.5,
         "avg_size": 1.0, "max_size": 2, "capacity": 2},
    ])


def test_step_input_wait_takes_the_get_next_wait_and_classifies_the_step():
    waits = [_batch_time(1, "get_next_wait", 3_000_000, 0, trace="get_next"),
             _batch_time(2, "get_next_wait", 500_000, 10_000_000, trace="get_next")]
    steps = points(1, start=0, fp=1_000_000, end=10_000_000) + points(2, start=10_000_000, fp=11_000_000, end=20_000_000)
    same(model_rows({"data_batch_time": waits, "step_point": steps}, "step_input_wait"), [
        # step 1: 3 ms of a 10 ms step = 0.3 > 0.2: highly; step 2: 0.5 / 10 = 0.05: moderately (>= 0.05)
        {"step": 1, "wait_source": "get_next", "wait_ns": 3_000_000, "step_ns": 10_000_000, "wait_share": 0.3,
         "input_bound": "highly"},
        {"step": 2, "wait_source": "get_next", "wait_ns": 500_000, "step_ns": 10_000_000, "wait_share": 0.05,
         "input_bound": "moderately"},
    ])


def test_data_findings_flags_a_leaf_op_with_an_empty_output_queue():
    ops = [{"op_id": 0, "op_type": "BatchOp", "num_workers": 1, "child_index": 0, "parent_id": None,
            "has_queue": True, "queue_capacity": 10, "pipeline_order": 0},
           {"op_id": 1, "op_type": "GeneratorOp", "num_workers": 4, "child_index": 0, "parent_id": 0,
            "has_queue": True, "queue_capacity": 10, "pipeline_order": 1, "pipeline_parent_id": 0}]
    queue = [{"queue": "op_output", "op_id": 0, "sample": 0, "size": 9},
             {"queue": "op_output", "op_id": 1, "sample": 0, "size": 2}]
    found = model_rows({"data_op": ops, "queue_sample": queue}, "data_findings")
    leaf = [f for f in found if f["analyzer"] == "mindspore" and f["rule"] == "queue_leaf"]
    # the Generator (a leaf: no input op) uses 2 / 10 = 20 % (0.2) <= 50 % (0.5) of its output queue
    assert [(f["op_id"], f["op"], f["value"], f["threshold"]) for f in leaf] == [(1, "Generator(id=1)", 0.2, 0.5)]
    assert "is using 20.0% of its output queue" in leaf[0]["finding"]
    assert "Setting num_parallel_workers>4" in leaf[0]["suggestion"]


def test_every_mart_but_the_ones_left_has_a_unit_test():
    """Each mart is run on rows written by hand (model_rows) here or in a test file of its own analysis."""
    left: set[str] = set()
    texts = (path.read_text(encoding="utf-8") for path in Path(__file__).parent.glob("test_*.py"))
    source = "\n".join(text for text in texts if "model_rows(" in text)
    untested = [m for m in MARTS if m not in left and f'"{m}")' not in source]
    assert untested == []


# ---------------------------------------------------------------------------------------------- GPU breakdowns

def _launched(corr: int, start: int, dur: int, call_start: int, call_dur: int = 1000, kind: str = "kernel",
              name: str = "gemm", stream: int = 7) -> tuple[dict, dict]:
    """A device activity and the cudaLaunchKernel (or memcpy/memset) call that launched it."""
    api = {"kernel": "cudaLaunchKernel", "memcpy": "cudaMemcpyAsync", "memset": "cudaMemsetAsync"}[kind]
    return ({"kind": kind, "name": name, "stream_id": stream, "correlation": corr, "start_ns": start, "dur_ns": dur},
            {"tid": 1, "name": api, "category": "cuda_runtime", "correlation": corr, "start_ns": call_start,
             "dur_ns": call_dur})


def _gpu_tables(*launched: tuple[dict, dict], **more) -> dict:
    return {"run_info": [{"device_type": "gpu", "layout": "kineto"}], "device_exec": [d for d, _ in launched],
            "host_api": [a for _, a in launched], **more}


def test_gpu_time_breakdown_by_hta_and_by_profpipe():
    """Two kernels overlapping, a copy after them, and a 0.4 µs memset that HTA's µs rounding (start up, end down)
    makes -1 µs long, alone: HTA counts it so (busy 59 µs, its window ending at the memset's rounded end, 80 µs);
    the hta row gives it 0 µs at 81 µs (busy 60 µs, window 10 to 81 µs), profpipe counts its 400 ns. profpipe's
    window is the GPU's own span of the step (what the step, 0-100 µs, launched: 10 µs to the memset's end at
    80.9 µs)."""
    tables = _gpu_tables(_launched(1, 10_000, 30_000, 0), _launched(2, 30_000, 30_000, 1_000),
                         _launched(3, 50_000, 20_000, 2_000, kind="memcpy", name="Memcpy HtoD (Pageable -> Device)"),
                         _launched(4, 80_500, 400, 3_000, kind="memset", name="Memset (Device)"),
                         step_point=points(1, start=0, fp=5_000, end=100_000))
    same(model_rows(tables, "gpu_time_breakdown"), [
        {"definition": "hta", "window_ns": 71_000, "busy_ns": 60_000, "idle_ns": 11_000, "compute_ns": 50_000,
         "non_compute_ns": 10_000, "memory_busy_ns": 20_000, "exposed_memory_ns": 10_000, "idle_share": 11 / 71},
        {"definition": "profpipe", "window_ns": 70_900, "busy_ns": 60_400, "idle_ns": 10_500, "compute_ns": 50_000,
         "non_compute_ns": 10_400, "memory_busy_ns": 20_400, "exposed_memory_ns": 10_400,
         "exposed_communication_ns": 0, "compute_share": 50_000 / 70_900}])


def test_gpu_time_breakdown_splits_non_compute_into_exposed_kinds():
    """A compute kernel 0-50 µs, an NCCL kernel 40-80 µs, a copy 70-100 µs: communication runs alone 50-80 µs (30 µs;
    its 10 µs under compute are not exposed), the copy alone 80-100 µs (20 µs; its 10 µs beside communication count
    as communication's). compute + the exposed parts + idle = the window; the kinds' unions (40 and 30 µs) overlap."""
    tables = _gpu_tables(_launched(1, 0, 50_000, -1_000),
                         _launched(2, 40_000, 40_000, 0, name="ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
                         _launched(3, 70_000, 30_000, 1_000, kind="memcpy", name="Memcpy DtoH (Device -> Pageable)"),
                         step_point=points(1, start=-2_000, fp=0, end=120_000))
    row = next(r for r in model_rows(tables, "gpu_time_breakdown") if r["definition"] == "profpipe")
    assert (row["window_ns"], row["compute_ns"], row["non_compute_ns"], row["idle_ns"]) == (100_000, 50_000, 50_000, 0)
    assert (row["exposed_communication_ns"], row["exposed_memory_ns"], row["exposed_other_ns"]) == (30_000, 20_000, 0)
    assert (row["communication_busy_ns"], row["memory_busy_ns"]) == (40_000, 30_000)


def test_gpu_idle_breakdown_by_hta_and_by_profpipe():
    """A gap the host caused (the next launch call started after the stream went idle), an overlap (HTA counts a
    -2 µs kernel_wait gap; both definitions here count no gap: an idle time cannot be negative), and a long gap with
    the launch made in time (other)."""
    tables = _gpu_tables(_launched(1, 0, 10_000, -5_000), _launched(2, 15_000, 5_000, 12_000),
                         _launched(3, 18_000, 7_000, 13_000), _launched(4, 100_000, 10_000, 20_000))
    got = {(r["definition"], r["category"]): (r["gaps"], r["idle_ns"]) for r in model_rows(tables, "gpu_idle_breakdown")}
    assert got == {("hta", "host_wait"): (1, 5_000), ("hta", "kernel_wait"): (0, 0), ("hta", "other"): (1, 75_000),
                   ("profpipe", "host_wait"): (1, 5_000), ("profpipe", "kernel_wait"): (0, 0),
                   ("profpipe", "other"): (1, 75_000)}



def _device_steps(*windows: tuple[int, int, int]) -> list[dict]:
    """device_step_start / device_step_end points: the steps' copies on the GPU (gpu_user_annotation ProfilerStep#N)."""
    return [{"step": step, "kind": kind, "seq": 4 + i, "stream_id": 7, "ts_ns": ts}
            for step, start, end in windows for i, (kind, ts) in enumerate((("device_step_start", start),
                                                                          ("device_step_end", end)))]


def test_step_gpu_idle_clips_each_gap_to_its_step():
    """Steps whose copies on the GPU are [0, 50 µs) and [50, 200 µs); stream 7 gaps: 10-15 µs (host_wait: the call
    came at 12 µs), 25-100 µs (other: launched in time, crossing the step boundary: 25 µs in step 1, 50 µs in step
    2), 110-112 µs (kernel_wait)."""
    tables = _gpu_tables(_launched(1, 0, 10_000, 0), _launched(2, 15_000, 10_000, 12_000),
                         _launched(3, 100_000, 10_000, 20_000), _launched(4, 112_000, 1_000, 21_000),
                         step_point=points(1, start=0, fp=1_000, end=50_000) + points(2, start=50_000, fp=51_000,
                                                                                      end=200_000)
                         + _device_steps((1, 0, 50_000), (2, 50_000, 200_000)))
    same(model_rows(tables, "step_gpu_idle"), [
        {"step": 1, "stream_id": 7, "category": "host_wait", "gaps": 1, "idle_ns": 5_000, "step_share": 0.1},
        {"step": 1, "stream_id": 7, "category": "kernel_wait", "gaps": 0, "idle_ns": 0, "step_share": 0.0},
        {"step": 1, "stream_id": 7, "category": "other", "gaps": 1, "idle_ns": 25_000, "step_share": 0.5},
        {"step": 2, "stream_id": 7, "category": "host_wait", "gaps": 0, "idle_ns": 0, "step_share": 0.0},
        {"step": 2, "stream_id": 7, "category": "kernel_wait", "gaps": 1, "idle_ns": 2_000, "step_share": 0.02 / 1.5},
        {"step": 2, "stream_id": 7, "category": "other", "gaps": 1, "idle_ns": 50_000, "step_share": 1 / 3}])

def _async_gpu_tables() -> dict:
    """Host steps [0, 10 µs) and [10, 20 µs) on a GPU far behind them: step 1 launched gemms at 100-110 µs and
    115-120 µs (calls at 1 and 2 µs: a 5 µs kernel_wait gap), step 2 one at 150-160 µs (call at 12 µs: the 30 µs
    gap before it, 'other', lies between the two steps' GPU windows 100-120 µs and 150-160 µs)."""
    return _gpu_tables(_launched(1, 100_000, 10_000, 1_000), _launched(2, 115_000, 5_000, 2_000),
                       _launched(3, 150_000, 10_000, 12_000),
                       step_point=points(1, start=0, fp=500, end=10_000) + points(2, start=10_000, fp=10_500, end=20_000))


def test_step_gpu_idle_takes_the_gpu_window_of_a_host_step():
    """In the host's steps the stream has no gap (it ran nothing there); in step 1's GPU window 100-120 µs it idled
    5 µs (a quarter), step 2's window 150-160 µs holds no gap."""
    same(model_rows(_async_gpu_tables(), "step_gpu_idle"), [
        {"step": 1, "stream_id": 7, "category": "host_wait", "gaps": 0, "idle_ns": 0, "step_share": 0.0},
        {"step": 1, "stream_id": 7, "category": "kernel_wait", "gaps": 1, "idle_ns": 5_000, "step_share": 0.25},
        {"step": 1, "stream_id": 7, "category": "other", "gaps": 0, "idle_ns": 0, "step_share": 0.0}])


def test_step_overlap_and_overlap_segment_take_the_gpu_window_of_a_host_step():
    """The host's steps hold no kernel (all free, 100 %); their GPU windows: step 1 100-120 µs, computing 15 µs and
    free 5 µs; step 2 150-160 µs, computing throughout."""
    tables = _async_gpu_tables()
    same(model_rows(tables, "step_overlap"), [
        {"step": 1, "start_ns": 100_000, "end_ns": 120_000, "total_ns": 20_000, "computation_ns": 15_000,
         "free_ns": 5_000, "stage_ns": 20_000},
        {"step": 2, "start_ns": 150_000, "end_ns": 160_000, "total_ns": 10_000, "computation_ns": 10_000,
         "free_ns": 0, "stage_ns": 10_000}])
    same(model_rows(tables, "overlap_segment"), [
        {"step": 1, "category": "computation", "start_ns": 100_000, "end_ns": 110_000},
        {"step": 1, "category": "computation", "start_ns": 115_000, "end_ns": 120_000},
        {"step": 1, "category": "free", "start_ns": 110_000, "end_ns": 115_000},
        {"step": 2, "category": "computation", "start_ns": 150_000, "end_ns": 160_000}])


def test_a_device_side_step_trace_keeps_its_own_window():
    """A MindSpore GPU step trace (layout flat) is on the device's clock already: its steps are its windows, whatever
    the kernels' launch calls say."""
    tables = _async_gpu_tables()
    tables["run_info"] = [{"device_type": "gpu", "framework": "mindspore", "layout": "flat"}]
    same(model_rows(tables, "step_overlap"), [
        {"step": 1, "start_ns": 0, "end_ns": 10_000, "total_ns": 10_000, "computation_ns": 0, "free_ns": 10_000},
        {"step": 2, "start_ns": 10_000, "end_ns": 20_000, "total_ns": 10_000, "computation_ns": 0, "free_ns": 10_000}])


def test_kernel_launch_delays_and_outliers():
    """Delays from the call's start and end; a 60 µs call is a runtime outlier, a kernel starting 139 µs after its
    call ended a launch-delay outlier, a 2 µs kernel behind a 5 µs call a short kernel."""
    tables = _gpu_tables(_launched(1, 200_000, 5_000, 1_000, call_dur=60_000), _launched(2, 300_000, 2_000, 290_000,
                                                                                          call_dur=5_000))
    same(model_rows(tables, "kernel_launch"), [
        {"correlation": 1, "api_name": "cudaLaunchKernel", "delay_from_call_start_ns": 199_000,
         "delay_from_call_end_ns": 139_000, "runtime_outlier": True, "launch_delay_outlier": True, "short_kernel": False},
        {"correlation": 2, "delay_from_call_start_ns": 10_000, "delay_from_call_end_ns": 5_000, "runtime_outlier": False,
         "launch_delay_outlier": False, "short_kernel": True, "in_hta_launch_stats": True}])


def test_gpu_queue_length_and_the_launch_stats_of_a_stream():
    """Two launches queued before the first starts: 1, 2, 1, 0; the mean over time (10 ns at each length) 4/3."""
    tables = _gpu_tables(_launched(1, 20, 5, 0, call_dur=3), _launched(2, 30, 5, 10, call_dur=3))
    same(model_rows(tables, "gpu_queue_length"), [
        {"ts_ns": 0, "queue_length": 1, "held_ns": 10}, {"ts_ns": 10, "queue_length": 2, "held_ns": 10},
        {"ts_ns": 20, "queue_length": 1, "held_ns": 10}, {"ts_ns": 30, "queue_length": 0, "held_ns": None}])
    same(model_rows(tables, "kernel_launch_stats"), [
        {"stream_id": 7, "launches": 2, "max_queue_length": 2, "mean_queue_length": 4 / 3,
         "avg_delay_from_call_start_ns": 20, "avg_delay_from_call_end_ns": 17, "short_kernels": 0}])


def test_memory_bandwidth_series_and_stats_of_two_overlapping_copies():
    """Two HtoD copies on two streams: 1 MB in 100 µs from 0 (10 GB/s = 1e10 B/s) and 4 MB in 200 µs from 50 µs
    (2e10 B/s): 1e10 from 0, 3e10 from 50 µs (both), 2e10 from 100 µs, 0 from 250 µs. Their points above 0:
    1e10, 3e10, 2e10 (mean 2e10, sample std 1e10, quartiles 1.5e10 and 2.5e10); 5 MB over the 250 µs busy: 2e10.
    HTA's whole µs change nothing there. An 800 ns memset of 8 kB from 1000.1 µs (1e10 B/s): HTA reads it as
    starting at 1001 µs (rounded up) and ending at 1000 µs (rounded down), a negative point, none above 0; a copy
    of no duration is left out of both."""
    copy = {"kind": "memcpy", "name": "Memcpy HtoD (Pageable -> Device)"}
    tables = {"run_info": [{"metadata_json": "{}"}], "device_exec": [
        {**copy, "stream_id": 7, "start_ns": 0, "dur_ns": 100_000, "bytes": 1_000_000},
        {**copy, "stream_id": 8, "start_ns": 50_000, "dur_ns": 200_000, "bytes": 4_000_000},
        {"kind": "memset", "name": "Memset (Device)", "stream_id": 7, "start_ns": 1_000_100, "dur_ns": 800, "bytes": 8_000},
        {**copy, "stream_id": 7, "start_ns": 2_000_000, "dur_ns": 0, "bytes": 64}]}
    same(model_rows(tables, "memory_bandwidth_series"), [
        {"direction": "HtoD", "ts_ns": 0, "active_copies": 1, "bytes_per_second": 1e10, "held_ns": 50_000},
        {"direction": "HtoD", "ts_ns": 50_000, "active_copies": 2, "bytes_per_second": 3e10, "held_ns": 50_000},
        {"direction": "HtoD", "ts_ns": 100_000, "active_copies": 1, "bytes_per_second": 2e10, "held_ns": 150_000},
        {"direction": "HtoD", "ts_ns": 250_000, "active_copies": 0, "bytes_per_second": 0, "held_ns": None},
        {"direction": "memset", "ts_ns": 1_000_100, "active_copies": 1, "bytes_per_second": 1e10, "held_ns": 800},
        {"direction": "memset", "ts_ns": 1_000_900, "active_copies": 0, "bytes_per_second": 0, "held_ns": None}])
    overlap = {"copies": 2, "total_bytes": 5_000_000, "points": 3, "mean_bytes_per_second": 2e10,
               "stddev_bytes_per_second": 1e10, "min_bytes_per_second": 1e10, "p25_bytes_per_second": 1.5e10,
               "median_bytes_per_second": 2e10, "p75_bytes_per_second": 2.5e10, "max_bytes_per_second": 3e10}
    same(model_rows(tables, "memory_bandwidth_stats"), [
        {"direction": "HtoD", "definition": "hta", **overlap, "busy_ns": None},
        {"direction": "HtoD", "definition": "profpipe", **overlap, "busy_ns": 250_000, "busy_avg_bytes_per_second": 2e10},
        {"direction": "memset", "definition": "hta", "copies": 1, "total_bytes": 8_000, "points": None,
         "mean_bytes_per_second": None},
        {"direction": "memset", "definition": "profpipe", "copies": 1, "total_bytes": 8_000, "busy_ns": 800, "points": 1,
         "mean_bytes_per_second": 1e10, "stddev_bytes_per_second": None, "median_bytes_per_second": 1e10}])


def test_op_flops_achieved_over_the_device_time_launched_and_the_peak():
    """2e12 FLOPs of aten::mm over the 1 s of kernels it launched (one through a nested op): 2 TFLOP/s, a share of an
    A100's 19.5 TFLOP/s for float inputs; bfloat16 inputs on the same device compare with 312."""
    meta = json.dumps({"deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}]})
    tables = {"run_info": [{"device_type": "gpu", "layout": "kineto", "metadata_json": meta}],
              "host_op": [{"side": "Host", "op_name": "aten::mm", "start_ns": 0, "dur_ns": 100, "op_index": 0,
                           "parent_index": -1, "flops": 2 * 10**12, "flops_dtype": "float"},
                          {"side": "Host", "op_name": "aten::matmul_inner", "start_ns": 10, "dur_ns": 50, "op_index": 1,
                           "parent_index": 0},
                          {"side": "Host", "op_name": "aten::bmm", "start_ns": 200, "dur_ns": 100, "op_index": 2,
                           "parent_index": -1, "flops": 312 * 10**9, "flops_dtype": "c10::BFloat16"}],
              "device_exec": [kernel("gemm", 1_000, 600_000_000, op_index=0), kernel("gemm", 700_000_000, 400_000_000, op_index=1),
                              kernel("bgemm", 2_000_000_000, 10_000_000, op_index=2)]}
    same(model_rows(tables, "op_flops"), [
        {"op_name": "aten::bmm", "device_ns": 10_000_000, "achieved_flops_per_second": 31.2e12,
         "peak_flops_per_second": 312e12, "peak_share": 0.1},
        {"op_name": "aten::mm", "flops": 2 * 10**12, "device_ns": 10**9, "achieved_flops_per_second": 2e12,
         "peak_flops_per_second": 19.5e12, "peak_source": "device", "peak_share": 2 / 19.5}])



def test_op_roofline_bytes_intensity_and_bound_of_a_gemm_and_an_element_wise_op():
    """On an H100 SXM (989.4 TFLOP/s bf16, 494.7 TF32, 3.35 TB/s): a bf16 4096^3 GEMM is compute-bound, a float add
    memory-bound; an addmm nested in a linear is the linear's row; a rank on an unknown GPU gets no peak and no bound.
    Bytes, FLOPs and roofs computed here independently of the SQL."""
    def device(name: str) -> str:
        return json.dumps({"deviceProperties": [{"id": 0, "name": name}]})

    def op(index: int, name: str, dims: str, types: list[str], parent: int = -1, rank: int = 0, concrete=None) -> dict:
        return {"rank": rank, "side": "Host", "op_name": name, "start_ns": index * 1000, "dur_ns": 500, "op_index": index,
                "parent_index": parent, "input_dims": dims, "input_types": json.dumps(types),
                "concrete_inputs": json.dumps(concrete or [""] * len(types))}

    m = k = n = 4096
    gemm_flop, gemm_bytes = 2 * m * k * n, (m * k + k * n + m * n) * 2       # bf16: 2 bytes an element
    elems = 1024 * 1024
    add_flop, add_bytes = elems, (elems + elems + elems) * 4                 # two float inputs read, one output written
    lin_flop, lin_bytes = 2 * 32 * 512 * 64, (32 * 512 + 64 * 512 + 64 + 32 * 64) * 4  # x, weight, bias, output
    peak_bf16, peak_tf32, bandwidth = 989.4e12, 494.7e12, 3.35e12
    tables = {
        "run_info": [{"rank": 0, "device_type": "gpu", "layout": "kineto", "metadata_json": device("NVIDIA H100 80GB HBM3")},
                     {"rank": 1, "device_type": "gpu", "layout": "kineto", "metadata_json": device("Some GPU X")}],
        "host_op": [op(0, "aten::mm", f"[[{m}, {k}], [{k}, {n}]]", ["c10::BFloat16", "c10::BFloat16"]),
                    op(1, "aten::add", "[[1024, 1024], [1024, 1024], []]", ["float", "float", "Scalar"]),
                    op(2, "aten::linear", "[[32, 512], [64, 512], [64]]", ["float", "float", "float"]),
                    op(3, "aten::addmm", "[[64], [32, 512], [512, 64], [], []]",
                       ["float", "float", "float", "Scalar", "Scalar"], parent=2),
                    op(4, "aten::mm", f"[[{m}, {k}], [{k}, {n}]]", ["c10::BFloat16", "c10::BFloat16"], rank=1),
                    op(5, "aten::mm", "[[2, 2], [2, 2]]", ["float", "float"])],      # no kernel: no row
        "device_exec": [kernel("gemm", 0, 200_000, op_index=0), kernel("add", 1_000, 10_000, op_index=1),
                        kernel("gemm", 3_000, 40_000, op_index=3),
                        {**kernel("gemm", 0, 200_000, op_index=4), "rank": 1}]}
    gemm_achieved = gemm_flop / 200e-6
    add_achieved, add_intensity = add_flop / 10e-6, add_flop / add_bytes
    lin_achieved, lin_intensity = lin_flop / 40e-6, lin_flop / lin_bytes
    same(model_rows(tables, "op_roofline"), [
        {"rank": 0, "op_name": "aten::add", "op_class": "elementwise", "dtype": "float", "executions": 1,
         "device_ns": 10_000, "flop": add_flop, "bytes": add_bytes, "intensity_flop_per_byte": 1 / 12,
         "achieved_flop_per_second": add_achieved, "achieved_bytes_per_second": add_bytes / 10e-6,
         "peak_flop_per_second": peak_tf32, "peak_bytes_per_second": bandwidth,
         "ridge_flop_per_byte": peak_tf32 / bandwidth, "bound": "memory",
         "attainable_flop_per_second": add_intensity * bandwidth,
         "roof_ratio": add_achieved / (add_intensity * bandwidth)},
        {"rank": 0, "op_name": "aten::linear", "op_class": "gemm", "executions": 1, "device_ns": 40_000,
         "flop": lin_flop, "bytes": lin_bytes, "bound": "memory",
         "roof_ratio": lin_achieved / (lin_intensity * bandwidth)},
        {"rank": 0, "op_name": "aten::mm", "op_class": "gemm", "dtype": "c10::BFloat16", "device_ns": 200_000,
         "device_share": 200_000 / 250_000, "flop": gemm_flop, "bytes": gemm_bytes,
         "intensity_flop_per_byte": gemm_flop / gemm_bytes, "peak_flop_per_second": peak_bf16,
         "ridge_flop_per_byte": peak_bf16 / bandwidth, "bound": "compute", "attainable_flop_per_second": peak_bf16,
         "roof_ratio": gemm_achieved / peak_bf16, "peak_source": "NVIDIA H100 Tensor Core GPU data sheet"},
        {"rank": 1, "op_name": "aten::mm", "flop": gemm_flop, "bytes": gemm_bytes, "device_name": "Some GPU X",
         "achieved_flop_per_second": gemm_achieved, "peak_flop_per_second": None, "peak_bytes_per_second": None,
         "ridge_flop_per_byte": None, "bound": None, "roof_ratio": None, "peak_source": None}])
    assert gemm_flop / gemm_bytes > peak_bf16 / bandwidth > add_intensity   # the bounds above, by hand


def test_op_roofline_cost_of_attention_norm_conv_and_an_out_tensor():
    """The macro's other formulas, by hand: causal bf16 attention (Q, K, V, O; 2 B H Nq Nkv (d + dv), halved), a half
    layer_norm (input, weight, bias, output; 5 per element), conv2d with stride 2 and padding 1, and mul.out, whose
    third tensor is written, not read; an input type it does not know gives no cost."""
    con = build({})

    def cost(name: str, dims: str, types: list[str], concrete: list[str]) -> dict:
        return con.execute("SELECT op_roofline_cost(?, ?, ?, ?)", [name, dims, json.dumps(types), json.dumps(concrete)]
                           ).fetchone()[0]

    b, h, nq, d = 2, 8, 128, 64
    assert cost("aten::scaled_dot_product_attention", f"[[{b}, {h}, {nq}, {d}], [{b}, {h}, {nq}, {d}], [{b}, {h}, {nq}, {d}], [], [], [], []]",
                ["c10::BFloat16"] * 3 + ["", "Scalar", "Scalar", ""], ["", "", "", "", "0.", "True", ""]) == {
        "op_class": "attention", "flop": 2 * b * h * nq * nq * (d + d) // 2, "bytes": 4 * b * h * nq * d * 2,
        "dtype": "c10::BFloat16"}
    tokens, hidden = 4 * 128, 768
    assert cost("aten::layer_norm", f"[[4, 128, {hidden}], [], [{hidden}], [{hidden}], [], []]",
                ["c10::Half", "ScalarList", "c10::Half", "c10::Half", "Scalar", "Scalar"],
                ["", f"[{hidden}]", "", "", "1e-05", "True"])["bytes"] == (2 * tokens * hidden + 2 * hidden) * 2
    out_h = (32 + 2 * 1 - 1 * (3 - 1) - 1) // 2 + 1                         # 16
    conv = cost("aten::conv2d", "[[8, 3, 32, 32], [16, 3, 3, 3], [16], [], [], [], []]",
                ["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar"],
                ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "1"])
    assert conv["flop"] == 2 * 8 * 16 * out_h * out_h * 3 * 3 * 3
    assert conv["bytes"] == (8 * 3 * 32 * 32 + 16 * 3 * 3 * 3 + 16 + 8 * 16 * out_h * out_h) * 4
    assert cost("aten::mul", "[[100, 10], [], [100, 10]]", ["float", "double", "float"], ["", "", ""]) == {
        "op_class": "elementwise", "flop": 1000, "bytes": 1000 * 4 + 8 + 1000 * 4, "dtype": "float"}
    assert cost("aten::add", "[[4], [4], []]", ["float", "c10::Float4_weird", "Scalar"], ["", "", "1"])["bytes"] is None

def test_op_roofline_cost_gives_a_damaged_input_no_cost_never_a_changed_one():
    """The defects tests/test_fuzz_roofline_fields.py found, each pinned: a negative dim gave a negative FLOP count, a
    dim product past 64 bits stopped the whole model (a cast error), a stride of 1.5 was rounded to 2, a negative
    stride or padding gave a changed output size, 'Float' was read as float, a flag other than True / False was read
    as the other value, dims one short read the missing input as a 0-d tensor; old Kineto's scalar markers (Int,
    Double, Bool) are not tensors."""
    con = build({})

    def cost(name: str, dims: str, types: list, concrete: list) -> tuple:
        got = con.execute("SELECT op_roofline_cost(?, ?, ?, ?)", [name, dims, json.dumps(types), json.dumps(concrete)]
                          ).fetchone()[0]
        return got["flop"], got["bytes"]

    ff = ["float", "float"]
    assert cost("aten::mm", "[[4, 8], [8, 16]]", ff, ["", ""]) == (2 * 4 * 8 * 16, (32 + 128 + 64) * 4)
    assert cost("aten::mm", "[[-4, 8], [8, 16]]", ff, ["", ""]) == (None, None)
    for huge in ("[[4611686018427387904, 8], [4, 8], []]", "[[4294967296, 4294967296], [4, 8], []]"):
        assert cost("aten::add", huge, ["float", "float", "Scalar"], ["", "", "1"]) == (None, None)
    conv_dims = "[[2, 3, 8, 8], [4, 3, 3, 3], [4], [], [], [], []]"
    conv_types = ["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar"]
    assert cost("aten::conv2d", conv_dims, conv_types, ["", "", "", "[1, 1]", "[0, 0]", "[1, 1]", "1"])[0] == \
        2 * 2 * 4 * 6 * 6 * 3 * 3 * 3
    for stride, padding in (("[1.5, 1]", "[0, 0]"), ("[-1, 1]", "[0, 0]"), ("[1, 1]", "[-3, 0]"), ("[0, 0]", "[0, 0]")):
        assert cost("aten::conv2d", conv_dims, conv_types, ["", "", "", stride, padding, "[1, 1]", "1"]) == (None, None)
    assert cost("aten::relu", "[[64, 32]]", ["Float"], [""]) == (None, None)
    norm = ("aten::batch_norm", "[[4, 8, 2, 2], [8], [8], [8], [8], [], [], [], []]", ["float"] * 5 + ["Scalar"] * 4)
    assert cost(*norm, ["", "", "", "", "", "False", "0.1", "1e-05", "True"])[0] == 2 * 128
    assert cost(*norm, ["", "", "", "", "", "Fals", "0.1", "1e-05", "True"]) == (None, (128 * 2 + 4 * 8) * 4)
    assert cost("aten::linear", "[[8, 32], [16, 32]]", ["float"] * 3, ["", "", ""]) == (None, None)
    assert cost("aten::add_", "[[4, 8], [4, 8], []]", ["float", "float", "Int"], ["", "", ""]) == (32, 3 * 32 * 4)


# ---------------------------------------------------------------------------------------------- timeline

def test_timeline_span_puts_every_event_on_its_lane_and_thread():
    tables = {"run_info": [{"device_type": "gpu"}],
              "step_point": points(1, start=0, fp=10, bp=80, end=100, fp_op="Default/Conv2D-op1", bp_op="Gradients/Add-op2"),
              "host_op": [{"side": "Host", "tid": 7, "op_name": "Default/Conv2D-op1", "start_ns": 5, "dur_ns": 20}],
              "device_exec": [kernel("gemm", 12, 30, stream_id=3, correlation=4, grid="8,1,1", block="128,1,1",
                                     registers_per_thread=32, shared_memory_bytes=4096)],
              "host_api": [{"tid": 7, "name": "cudaLaunchKernel", "category": "runtime", "correlation": 4,
                            "start_ns": 8, "dur_ns": 3}],
              "memory_event": [{"device_type": "cuda", "device_id": 0, "ts_ns": 15, "bytes": 512, "seq": 0}],
              "queue_sample": [{"queue": "get_next", "ts_ns": 50, "size": 2}]}
    step = {"lane": 0, "process": "Step Trace", "tid": 0, "thread": "iterations", "clock_domain": "main"}
    overlap = {"lane": 5, "process": "Overlap Analysis", "category": "overlap", "args": None}
    in_drawing_order = sorted(model_rows(tables, "timeline_span"), key=lambda r: tuple(
        (r[k] is not None, r[k]) for k in ("rank", "capture", "lane", "tid", "category", "name", "start_ns")))
    same(in_drawing_order, [
        # lane 0: the step 0-100 with its fp and bp ops, its phases 0-10, 10-80, 80-100 (ordered by name)
        {**step, "name": "Step 1", "category": "step", "start_ns": 0, "dur_ns": 100,
         "args": '{"fp_op":"Default/Conv2D-op1","bp_op":"Gradients/Add-op2"}'},
        {**step, "name": "fp_and_bp", "category": "step_phase", "start_ns": 10, "dur_ns": 70, "args": None},
        {**step, "name": "iteration_interval", "category": "step_phase", "start_ns": 0, "dur_ns": 10, "args": None},
        {**step, "name": "tail", "category": "step_phase", "start_ns": 80, "dur_ns": 20, "args": None},
        # lane 1: the host thread: the op, with the op type parsed from its name, the API call made in it, and the start
        # of the flow arrow to the kernel the call launched
        {"lane": 1, "process": "Host", "tid": 7, "thread": "Thread 7", "name": "launch", "category": "flow",
         "start_ns": 8, "dur_ns": None, "args": '{"id":4,"phase":"s"}'},
        {"lane": 1, "process": "Host", "tid": 7, "thread": "Thread 7", "name": "Default/Conv2D-op1",
         "category": "op", "start_ns": 5, "dur_ns": 20, "args": '{"op_type":"Conv2D"}', "clock_domain": "main"},
        {"lane": 1, "process": "Host", "tid": 7, "thread": "Thread 7", "name": "cudaLaunchKernel",
         "category": "runtime", "start_ns": 8, "dur_ns": 3, "args": '{"correlation":4}'},
        # lane 3 on a GPU rank: GPU kernels, one thread per stream (no op started before the kernel), with their
        # launch args, and the end of the flow arrow from the call that launched the kernel
        {"lane": 3, "process": "GPU kernels", "tid": 3, "thread": "Stream 3", "name": "launch", "category": "flow",
         "start_ns": 12, "dur_ns": None, "args": '{"id":4,"phase":"f"}'},
        {"lane": 3, "process": "GPU kernels", "tid": 3, "thread": "Stream 3", "name": "gemm", "category": "kernel",
         "start_ns": 12, "dur_ns": 30,
         "args": '{"op_name":null,"stream":3,"correlation":4,"grid":"8,1,1","block":"128,1,1",'
                 '"registers_per_thread":32,"shared_memory_bytes":4096,"bytes":null}'},
        # lane 5: overlap_segment's stretches: computing 12-42, free 0-12 and 42-100
        {**overlap, "tid": 0, "thread": "Computing", "name": "computation", "start_ns": 12, "dur_ns": 30},
        {**overlap, "tid": 3, "thread": "Free", "name": "free", "start_ns": 0, "dur_ns": 12},
        {**overlap, "tid": 3, "thread": "Free", "name": "free", "start_ns": 42, "dur_ns": 58},
        # lane 7: a counter sample (no duration) of the bytes in use after the allocation
        {"lane": 7, "process": "Memory", "tid": 0, "thread": "Allocator", "name": "Memory in use cuda:0",
         "category": "counter", "start_ns": 15, "dur_ns": None, "args": '{"bytes":512}', "clock_domain": "main"},
        # lane 8: the get_next queue, on its own clock domain
        {"lane": 8, "process": "MindData get_next", "tid": 0, "thread": "Queues", "name": "get next queue",
         "category": "counter", "start_ns": 50, "dur_ns": None, "args": '{"size":2}', "clock_domain": "get_next"},
    ])


def test_timeline_draws_a_stretch_two_overlapping_steps_share_once():
    """Steps 0-100 and 50-150 (a MindSpore GPU step trace may overlap its steps): overlap_segment gives the kernel
    60-70 to both; the Overlap Analysis lane draws it once, and the free time 0-60 and 70-150 once."""
    tables = {"run_info": [{"device_type": "gpu", "framework": "mindspore", "layout": "flat"}],
              "step_point": points(1, start=0, fp=0, end=100) + points(2, start=50, fp=50, end=150),
              "device_exec": [kernel("gemm", 60, 10)]}
    assert len([r for r in model_rows(tables, "overlap_segment") if r["category"] == "computation"]) == 2
    same([r for r in model_rows(tables, "timeline_span") if r["lane"] == 5], [
        {"thread": "Computing", "name": "computation", "start_ns": 60, "dur_ns": 10},
        {"thread": "Free", "name": "free", "start_ns": 0, "dur_ns": 60},
        {"thread": "Free", "name": "free", "start_ns": 70, "dur_ns": 80}])


# ---------------------------------------------------------------------------------------------- summary

def test_rank_summary_describes_a_rank_by_its_first_device_source_and_counts_all_captures():
    tables = {"run_info": [{"rank": 0, "capture": 0, "device_type": "cpu", "layout": "framework"},
                           {"rank": 0, "capture": 0, "device_type": "gpu", "layout": "msprof",
                            "metadata_json": '{"model_id": 3, "models": [3, 4]}'},
                           {"rank": 0, "capture": 1, "device_type": "ascend", "layout": "later"},
                           {"rank": 1, "device_type": "ascend", "layout": "ascend_ms"}],
              "step_point": points(1, start=0, fp=10, bp=80, end=100) + points(2, start=100, fp=130, bp=170, end=200),
              "host_op": [{"side": "Host", "op_name": "A-op0", "start_ns": 5, "dur_ns": 20},
                          {"capture": 1, "side": "Host", "op_name": "A-op0", "start_ns": 5, "dur_ns": 20}],
              "device_exec": [kernel("gemm", 12, 30)],
              "data_op": [{"rank": 1, "op_id": 0}]}
    same(model_rows(tables, "rank_summary"), [
        # rank 0: capture 0's gpu source before its cpu one (and before capture 1); host ops of both captures;
        # steps 100 and 100 long, intervals 10 and 30, fp+bp 70 and 40, tails 20 and 30; no MindData logs
        {"rank": 0, "device_type": "gpu", "layout": "msprof", "model_id": 3, "models": [3, 4], "host_ops": 2,
         "device_execs": 1, "steps": 2, "avg_total_ns": 100.0, "avg_iteration_interval_ns": 20.0,
         "avg_fp_and_bp_ns": 55.0, "avg_tail_ns": 25.0, "input_logs": False, "input_steps_measured": None,
         "input_bound": None},
        # rank 1: MindData logs but no step measured: no input_bound
        {"rank": 1, "device_type": "ascend", "layout": "ascend_ms", "model_id": None, "models": None, "host_ops": 0,
         "device_execs": 0, "steps": 0, "avg_total_ns": None, "input_logs": True, "input_steps_measured": 0,
         "input_wait_source": None, "avg_input_wait_share": None, "input_bound": None},
    ])


def test_op_shape_stats_sums_the_instances_of_a_type_launched_with_the_same_shapes():
    tables = {"op_meta": [{"side": "Host", "short_name": "MatMul-op0", "input_shapes": "input_1:[2];input_2:[3]"},
                          {"side": "Host", "short_name": "MatMul-op0", "input_shapes": "input_1:[1];input_2:[3]"}],
              "host_op": [{"side": "Host", "op_name": "Default/MatMul-op0", "start_ns": 0, "dur_ns": 10},
                          {"side": "Host", "op_name": "Default/MatMul-op0", "start_ns": 20, "dur_ns": 30},
                          {"side": "Host", "op_name": "Gradients/MatMul-op0", "start_ns": 60, "dur_ns": 5},
                          {"side": "Host", "op_name": "Default/MatMul-op1", "start_ns": 70, "dur_ns": 7},
                          {"side": "Device", "op_name": "Default/MatMul-op0", "start_ns": 0, "dur_ns": 4}]}
    same(model_rows(tables, "op_shape_stats"), [
        # the device op: op_meta has Host launches only, so no shapes
        {"side": "Device", "op_type": "MatMul", "input_shape": "", "instances": 1, "occurrences": 1, "total_ns": 4},
        {"side": "Host", "op_type": "MatMul", "input_shape": "", "instances": 1, "occurrences": 1, "total_ns": 7},
        # both instances with short name MatMul-op0 (Default/ and Gradients/): 10 + 30 + 5, under both shapes, sorted
        {"side": "Host", "op_type": "MatMul", "input_shape": "input_1:[1],input_2:[3] | input_1:[2],input_2:[3]",
         "instances": 2, "occurrences": 3, "total_ns": 45},
    ])


def test_op_instance_shape_gives_each_instance_the_shapes_of_its_short_name():
    tables = {"op_meta": [{"side": "Host", "short_name": "MatMul-op0", "input_shapes": "input_1:[2];input_2:[3]"},
                          {"side": "Host", "short_name": "MatMul-op0", "input_shapes": "input_1:[2];input_2:[3]"},
                          {"side": "Host", "short_name": "ReLU-op1", "input_shapes": "input_1:[4]"}],
              "host_op": [{"side": "Host", "op_name": "Default/MatMul-op0", "start_ns": 0, "dur_ns": 10},
                          {"side": "Host", "op_name": "Default/MatMul-op0", "start_ns": 20, "dur_ns": 30},
                          {"side": "Host", "op_name": "Gradients/MatMul-op0", "start_ns": 60, "dur_ns": 5},
                          {"side": "Host", "op_name": "Default/ReLU-op1", "start_ns": 70, "dur_ns": 7},
                          {"side": "Host", "op_name": "Default/Cast-op2", "start_ns": 80, "dur_ns": 1}]}
    same(model_rows(tables, "op_instance_shape"), [
        {"side": "Host", "op_name": "Default/Cast-op2", "short_name": "Cast-op2", "op_type": "Cast", "input_shape": "",
         "occurrences": 1, "total_ns": 1},
        # the repeated launch signature counts once; both scoped instances of MatMul-op0 get it
        {"side": "Host", "op_name": "Default/MatMul-op0", "short_name": "MatMul-op0", "op_type": "MatMul",
         "input_shape": "input_1:[2],input_2:[3]", "occurrences": 2, "total_ns": 40},
        {"side": "Host", "op_name": "Default/ReLU-op1", "short_name": "ReLU-op1", "op_type": "ReLU",
         "input_shape": "input_1:[4]", "occurrences": 1, "total_ns": 7},
        {"side": "Host", "op_name": "Gradients/MatMul-op0", "short_name": "MatMul-op0", "op_type": "MatMul",
         "input_shape": "input_1:[2],input_2:[3]", "occurrences": 1, "total_ns": 5},
    ])


# ---------------------------------------------------------------------------------------------- GPU collectives

def _collective(rank: int, name: str, start: int, dur: int, **args) -> dict:
    return {"rank": rank, "event_index": args.pop("event_index", 0), "name": name, "timed_by": "kernel",
            "args_from": "kernel", "kernel_name": "ncclDevKernel_" + name, "stream_id": 20, "start_ns": start,
            "dur_ns": dur, "group_name": "0", **args}


def test_collective_exec_sizes_and_bandwidths_by_nccl_tests():
    event = [
        # AllReduce of 1000 Float on 4 ranks in 2 us: S = 4000 B, algbw = 4000 / 2e-6 = 2e9 B/s, busbw x 2*3/4 = 3e9
        _collective(0, "allreduce", 100, 2000, dtype="Float", element_bytes=4, in_nelems=1000, out_nelems=1000,
                    group_size=4, group_seq=1),
        # AllGather: S = Out msg nelems (4000) x 2 B = 8000 B in 4 us: 2e9, busbw x 3/4 = 1.5e9
        _collective(0, "_allgather_base", 5000, 4000, dtype="BFloat16", element_bytes=2, in_nelems=1000,
                    out_nelems=4000, group_size=4, group_seq=2, event_index=1),
        # a wait op without a kernel: timed by the cpu op, no bandwidth
        {**_collective(0, "wait", 9000, 50, dtype="Byte", element_bytes=1, in_nelems=0, out_nelems=0, group_size=1,
                       event_index=2), "timed_by": "cpu_op", "kernel_name": None, "stream_id": None},
    ]
    same(model_rows({"collective_event": event}, "collective_exec"), [
        {"collective_type": "AllReduce", "occurrence": 1, "message_bytes": 4000, "bus_factor": 1.5,
         "algorithm_bandwidth_bytes_per_second": 2e9, "bus_bandwidth_bytes_per_second": 3e9},
        {"collective_type": "AllGather", "occurrence": 2, "message_bytes": 8000, "bus_factor": 0.75,
         "algorithm_bandwidth_bytes_per_second": 2e9, "bus_bandwidth_bytes_per_second": 1.5e9},
        {"collective_type": "Other", "occurrence": 0, "message_bytes": None, "algorithm_bandwidth_bytes_per_second": None}])
    # two AllReduces of one size: the bandwidth of the mean time (2 us and 6 us: 4 us -> 4000 / 4e-6 = 1e9, busbw 1.5e9)
    event[1] = _collective(0, "allreduce", 5000, 6000, dtype="Float", element_bytes=4, in_nelems=1000, out_nelems=1000,
                           group_size=4, group_seq=2, event_index=1)
    same(model_rows({"collective_event": event}, "collective_size_stats"), [
        {"collective_type": "AllReduce", "message_bytes": 4000, "instances": 2, "total_ns": 8000, "avg_ns": 4000.0,
         "algorithm_bandwidth_bytes_per_second": 1e9, "bus_bandwidth_bytes_per_second": 1.5e9}])


def test_comm_comp_overlap_is_htas_share_of_communication_hidden_by_computation():
    device_exec = [kernel("gemm", 0, 100), kernel("gemm", 50, 100, stream_id=3),   # computation 0-150
                   kernel("ncclDevKernel_AllReduce", 120, 80, stream_id=20),       # communication 120-200
                   kernel("ncclKernel_SendRecv", 300, 20, stream_id=21),           # 300-320
                   {**kernel("Memcpy DtoD (Device -> Device)", 310, 50), "kind": "memcpy"}]  # memory: neither
    # |U_comm| = 80 + 20 = 100, overlap 120-150 = 30, share 0.3
    same([r for r in model_rows({"device_exec": device_exec}, "comm_comp_overlap") if r["definition"] == "profpipe"], [
        {"computation_kernels": 2, "communication_kernels": 2, "computation_ns": 150, "communication_ns": 100,
         "overlap_ns": 30, "exposed_communication_ns": 70, "overlap_share": 0.3}])


def test_collective_straggler_last_arrival_and_waits():
    # two ranks, one allreduce (Seq 5): rank 1 starts at 400, rank 0 at 100 and waits 300
    event = [_collective(0, "allreduce", 100, 700, group_seq=5), _collective(1, "allreduce", 400, 400, group_seq=5)]
    same(model_rows({"collective_event": event}, "collective_straggler"), [
        {"rank": 0, "occurrence": 5, "ranks": 2, "last_rank": 1, "is_last_arrival": False, "wait_ns": 300,
         "slow_test": "too_few_ranks", "is_slow": False},
        {"rank": 1, "occurrence": 5, "ranks": 2, "last_rank": 1, "is_last_arrival": True, "wait_ns": 0,
         "slow_test": "too_few_ranks", "is_slow": False}])


# ---------------------------------------------------------------------------------------------- AI Core PMU

def _pmu_exec(task_id: int, start: int, dur: int, name: str) -> dict:
    return {"kind": "task", "name": name, "op_name": name, "stream_id": 1, "task_id": task_id, "start_ns": start,
            "dur_ns": dur}


def _pmu_metric(task_id: int, start: int, metric: str, value: float, core=None, unit: str = "share") -> dict:
    return {"stream_id": 1, "task_id": task_id, "start_ns": start, "core": core, "metric": metric, "value": value,
            "unit": unit}


def test_op_type_pmu_stats_average_each_metric_over_executions_with_a_value():
    # two MatMul ops (types from task_desc), one run twice; a metric row without its execution is left out
    execs = [_pmu_exec(1, 0, 100, "n/MatMul-op1"), _pmu_exec(1, 1000, 100, "n/MatMul-op1"),
             _pmu_exec(2, 2000, 50, "n/MatMul-op2")]
    task_desc = [{"seq": i, "op_name": f"n/MatMul-op{i}", "task_id": i, "stream_id": 1, "op_type": "MatMulV2"}
                 for i in (1, 2)]
    metrics = [_pmu_metric(1, 0, "mac_ratio", 0.5, "aic"), _pmu_metric(1, 1000, "mac_ratio", 0.7, "aic"),
               _pmu_metric(2, 2000, "mac_ratio", 0.9, "aic"),
               _pmu_metric(1, 0, "time", 100_000.0, "aiv", "ns"),  # another metric of the type: its own row
               _pmu_metric(9, 9, "mac_ratio", 1.0, "aic")]  # no execution (9, 9): not counted
    same(model_rows({"device_exec": execs, "task_desc": task_desc, "device_exec_metric": metrics},
                    "op_type_pmu_stats"), [
        # mac_ratio: (0.5 + 0.7 + 0.9) / 3 = 0.7 over 3 executions of 2 ops
        {"op_type": "MatMulV2", "core": "aic", "metric": "mac_ratio", "unit": "share", "ops": 2, "executions": 3,
         "avg_value": 0.7, "min_value": 0.5, "max_value": 0.9},
        {"op_type": "MatMulV2", "core": "aiv", "metric": "time", "unit": "ns", "ops": 1, "executions": 1,
         "avg_value": 100_000.0},
    ])


def test_op_bound_names_the_busiest_pipe_and_counts_msprof_analyzes_no_bound():
    # Atlas training layout (no core): op A runs twice, mte2 0.9 / 0.7 -> mean 0.8, not above 0.8: bound none;
    # msprof-analyze: execution 1 (30 us) has mte2 0.9 > 0.8: bound; execution 2 (30 us) max 0.7: "no bound"
    execs = [_pmu_exec(1, 0, 30_000, "n/A-op1"), _pmu_exec(1, 100_000, 30_000, "n/A-op1"),
             _pmu_exec(2, 200_000, 10_000, "n/B-op2"), _pmu_exec(3, 300_000, 50_000, "n/C-op3")]
    metrics = [_pmu_metric(1, 0, "mte2_ratio", 0.9), _pmu_metric(1, 0, "vec_ratio", 0.5),
               _pmu_metric(1, 100_000, "mte2_ratio", 0.7), _pmu_metric(1, 100_000, "vec_ratio", 0.5),
               # B (10 us, under msprof-analyze's 20 us): A2 cores; scalar on aic 0.1, aiv 0.85 -> the busier 0.85
               _pmu_metric(2, 200_000, "scalar_ratio", 0.1, "aic"), _pmu_metric(2, 200_000, "scalar_ratio", 0.85, "aiv"),
               _pmu_metric(2, 200_000, "vec_ratio", 0.6, "aiv"),
               # C: mac 0.9 on aic; an aiv mac_ratio (which msprof-analyze never reads) of 0.1 lowers nothing;
               # mte2: aic 0.5 read by msprof-analyze before aiv 0.95 -> its max is 0.9 (mac): bound
               _pmu_metric(3, 300_000, "mac_ratio", 0.9, "aic"), _pmu_metric(3, 300_000, "mac_ratio", 0.1, "aiv"),
               _pmu_metric(3, 300_000, "mte2_ratio", 0.5, "aic"), _pmu_metric(3, 300_000, "mte2_ratio", 0.95, "aiv"),
               _pmu_metric(3, 300_000, "total_cycles", 9e9, "aic", "count")]  # not a pipe ratio
    same(model_rows({"device_exec": execs, "device_exec_metric": metrics}, "op_bound"), [
        {"op_name": "n/A-op1", "op_type": "A", "executions": 2, "avg_dur_ns": 30_000.0, "mac_share": None,
         "vec_share": 0.5, "mte2_share": 0.8, "busiest_pipe": "mte2", "busiest_share": 0.8, "bound": "none",
         "no_bound_executions": 1, "msprof_no_bound": True,
         # the roof chart: under the memory roof (mte2 0.8 > vec 0.5) even below the 0.8 threshold, 0.2 from it
         "roof_bound": "memory", "compute_share": 0.5, "memory_share": 0.8, "roof_distance": 0.2},
        {"op_name": "n/B-op2", "executions": 1, "scalar_share": 0.85, "vec_share": 0.6, "busiest_pipe": "scalar",
         "bound": "scalar", "no_bound_executions": 0, "msprof_no_bound": False,
         # no data mover measured: memory_share null; scalar 0.85 is the compute side
         "roof_bound": "compute", "compute_share": 0.85, "memory_share": None, "roof_distance": 0.15},
        # C: mac 0.9 (the busier core's: aic 0.9 > aiv 0.1), mte2 0.95 (aiv) -> busiest mte2: memory
        {"op_name": "n/C-op3", "executions": 1, "mac_share": 0.9, "mte2_share": 0.95, "busiest_pipe": "mte2",
         "busiest_share": 0.95, "bound": "memory", "no_bound_executions": 0,
         "roof_bound": "memory", "compute_share": 0.9, "memory_share": 0.95, "roof_distance": 0.05},
    ])


def test_op_bound_breaks_a_tie_by_pipe_order_and_leaves_ops_without_pipe_ratios_out():
    execs = [_pmu_exec(1, 0, 100, "n/T-op1"), _pmu_exec(2, 1000, 100, "n/M-op2")]
    metrics = [_pmu_metric(1, 0, "vec_ratio", 0.9), _pmu_metric(1, 0, "mte3_ratio", 0.9),
               _pmu_metric(2, 1000, "main_mem_read_bw", 1e9, "aic", "bytes_per_second")]
    same(model_rows({"device_exec": execs, "device_exec_metric": metrics}, "op_bound"), [
        # vec 0.9 ties mte3 0.9: the compute pipe wins, as a GPU op at the ridge is compute-bound
        {"op_name": "n/T-op1", "busiest_pipe": "vec", "busiest_share": 0.9, "bound": "vector", "roof_bound": "compute",
         "compute_share": 0.9, "memory_share": 0.9, "roof_distance": 0.1}])


def test_l2_cache_stats_average_hit_shares_and_victim_ratios_per_op():
    rows_ = [{"seq": 0, "stream_id": 1, "task_id": 1, "op_name": None, "hit_share": 0.9, "victim_ratio": 0.1},
             {"seq": 1, "stream_id": 1, "task_id": 2, "op_name": "a", "hit_share": 0.5, "victim_ratio": 1.5},
             {"seq": 2, "stream_id": 1, "task_id": 2, "op_name": "a", "hit_share": 0.7, "victim_ratio": None}]
    same(model_rows({"l2_cache_task": rows_}, "l2_cache_stats"), [
        # a: hit (0.5 + 0.7) / 2 = 0.6; victim: the one present, 1.5
        {"op_name": "a", "tasks": 2, "avg_hit_share": 0.6, "min_hit_share": 0.5, "max_hit_share": 0.7,
         "avg_victim_ratio": 1.5, "max_victim_ratio": 1.5},
        {"op_name": None, "tasks": 1, "avg_hit_share": 0.9, "avg_victim_ratio": 0.1}])  # the rows without a name


def test_hbm_stats_give_each_memory_unit_its_bandwidths():
    bw = [{"seq": 0, "memory": "hbm", "metric": "0", "read_bytes_per_second": 2e9, "write_bytes_per_second": 1e9},
          {"seq": 1, "memory": "hbm", "metric": "0", "read_bytes_per_second": 4e9, "write_bytes_per_second": 3e9},
          {"seq": 2, "memory": "ddr", "metric": "Average", "read_bytes_per_second": None,
           "write_bytes_per_second": 5e8}]
    same(model_rows({"memory_bandwidth": bw}, "hbm_stats"), [
        {"memory": "ddr", "metric": "Average", "samples": 1, "read_bytes_per_second": None,
         "write_bytes_per_second": 5e8, "total_bytes_per_second": None},
        # unit 0 given twice: means (2 + 4) / 2 = 3 GB/s read, (1 + 3) / 2 = 2 write, total (3 + 7) / 2 = 5
        {"memory": "hbm", "metric": "0", "samples": 2, "read_bytes_per_second": 3e9, "write_bytes_per_second": 2e9,
         "total_bytes_per_second": 5e9}])


def test_pcie_stats_keep_the_extremes_and_average_the_averages():
    pcie = [{"seq": 0, "mode": "Tx_p_avg(MB/s)", "metric": "tx_p_avg", "unit": "bytes_per_second", "min_value": 1e6,
             "max_value": 9e6, "avg_value": 4e6},
            {"seq": 1, "mode": "Tx_p_avg(MB/s)", "metric": "tx_p_avg", "unit": "bytes_per_second", "min_value": 2e6,
             "max_value": 12e6, "avg_value": 6e6},
            {"seq": 2, "mode": "Tx_latency_avg(us)", "metric": "tx_latency_avg", "unit": "ns", "min_value": 800.0,
             "max_value": 900.0, "avg_value": 850.0}]
    same(sorted(model_rows({"pcie_bandwidth": pcie}, "pcie_stats"), key=lambda r: r["metric"]), [
        {"metric": "tx_latency_avg", "mode": "Tx_latency_avg(us)", "unit": "ns", "samples": 1, "avg_value": 850.0},
        # min of mins 1e6, max of maxes 12e6, mean of averages (4 + 6) / 2 = 5e6
        {"metric": "tx_p_avg", "mode": "Tx_p_avg(MB/s)", "unit": "bytes_per_second", "samples": 2, "min_value": 1e6,
         "max_value": 12e6, "avg_value": 5e6}])


# ---------------------------------------------------------------------------------------------- Python call stacks

def _python_stack_rows() -> dict:
    """main 0-100 > step 10-60 > mm (a C call) 20-30, and step again 70-90; an op in mm launches 100 ns, an op in the
    second step 50 ns; an op with only a Call stack arg (innermost first) launches 7 ns."""
    frame = [{"frame_index": 0, "parent_index": -1, "tid": 1, "name": "a.py(1): main", "start_ns": 0, "dur_ns": 100},
             {"frame_index": 1, "parent_index": 0, "tid": 1, "name": "a.py(5): step", "start_ns": 10, "dur_ns": 50},
             {"frame_index": 2, "parent_index": 1, "tid": 1, "name": "<built-in method mm>", "start_ns": 20, "dur_ns": 10},
             {"frame_index": 3, "parent_index": 0, "tid": 1, "name": "a.py(5): step", "start_ns": 70, "dur_ns": 20}]
    host_op = [{"op_index": 0, "frame_index": 2, "op_name": "aten::mm", "side": "Host", "start_ns": 21, "dur_ns": 5},
               {"op_index": 1, "frame_index": 3, "op_name": "aten::add", "side": "Host", "start_ns": 71, "dur_ns": 5},
               {"op_index": 2, "call_stack": "x.py(3): g;x.py(1): main", "op_name": "aten::mul", "side": "Host",
                "start_ns": 200, "dur_ns": 5}]
    device_exec = [kernel("mm", 30, 100, op_index=0), kernel("add", 80, 50, op_index=1), kernel("mul", 210, 7, op_index=2)]
    return {"python_frame": frame, "host_op": host_op, "device_exec": device_exec}


def test_python_call_tree_sums_calls_self_time_and_launched_device_time_per_path():
    tree = sorted(model_rows(_python_stack_rows(), "python_call_tree"), key=lambda r: r["call_path"])
    same(tree, [
        # main: 100 - step 50 - step 20 = 30 self; its paths' ops launched 100 + 50
        {"call_path": "a.py(1): main", "depth": 0, "calls": 1, "total_ns": 100, "self_ns": 30, "self_ops": 0,
         "total_ops": 2, "device_self_ns": 0, "device_total_ns": 150},
        # step twice: 50 + 20 = 70, minus mm's 10; the second call holds the add op (50 ns)
        {"call_path": "a.py(1): main;a.py(5): step", "depth": 1, "calls": 2, "total_ns": 70, "self_ns": 60,
         "self_ops": 1, "total_ops": 2, "device_self_ns": 50, "device_total_ns": 150},
        {"call_path": "a.py(1): main;a.py(5): step;<built-in method mm>", "depth": 2, "frame_kind": "c", "calls": 1,
         "total_ns": 10, "self_ns": 10, "self_ops": 1, "total_ops": 1, "device_self_ns": 100, "device_total_ns": 100}])
    assert tree[1]["parent_path_id"] == tree[0]["path_id"] and tree[2]["parent_path_id"] == tree[1]["path_id"]


def test_python_frame_device_time_gives_each_source_line_the_device_time_launched_under_it():
    rows = {r["frame"]: r for r in model_rows(_python_stack_rows(), "python_frame_device_time")}
    assert sorted(rows) == ["<built-in method mm>", "a.py(1): main", "a.py(5): step", "x.py(1): main", "x.py(3): g"]
    total = 157  # all device time of the capture
    # step is the innermost Python code frame of both timed ops (mm is a C call): self 100 + 50
    same([rows["a.py(5): step"]], [{"frame_kind": "python", "source_file": "a.py", "source_line": 5, "function": "step",
                                    "stack_from": "python_function", "calls": 2, "host_total_ns": 70, "total_ops": 2,
                                    "self_ops": 2, "device_total_ns": 150, "device_self_ns": 150,
                                    "device_total_share": 150 / total}])
    same([rows["<built-in method mm>"]], [{"frame_kind": "c", "source_line": None, "calls": 1, "total_ops": 1,
                                           "self_ops": 0, "device_total_ns": 100, "device_self_ns": 0}])
    same([rows["a.py(1): main"]], [{"calls": 1, "host_total_ns": 100, "total_ops": 2, "self_ops": 0,
                                    "device_total_ns": 150, "device_self_ns": 0}])
    # the Call stack op: g (innermost) is its source line, main is above it; no timed calls
    same([rows["x.py(3): g"], rows["x.py(1): main"]], [
        {"stack_from": "call_stack", "calls": None, "host_total_ns": None, "total_ops": 1, "self_ops": 1,
         "device_total_ns": 7, "device_self_ns": 7, "device_self_share": 7 / total},
        {"stack_from": "call_stack", "calls": None, "total_ops": 1, "self_ops": 0, "device_total_ns": 7,
         "device_self_ns": 0}])


# ------------------------------------------------------------------------------------ host info (profile_framework)

def _host(line: int, kind: str, ts_us: int | None, event: str = "RunGraph", stage: str = "RunGraph", tid: int = 1,
          module: str = "Runtime", custom: str = "", kb: int | None = None) -> dict:
    return {"line": line, "tid": tid, "pid": 9, "parent_pid": 8, "module": module, "event": event, "stage": stage,
            "level": 1, "kind": kind, "custom_info": custom, "memory_bytes": None if kb is None else kb * 1024,
            "ts_ns": None if ts_us is None else ts_us * 1000}


def test_host_span_pairs_as_mindspore_does():
    records = [_host(2, "start", 100), _host(3, "start", 150),  # the second start replaces the first
               _host(4, "start", 160, tid=2), _host(5, "instant", 170),  # another thread; an instant between
               _host(6, "end", 400), _host(7, "end", 500),  # closes 150..400; then an end with no start held
               _host(8, "end", 600, tid=2, module="GPU", custom="{{k:v}}"),  # module and custom info of the end row
               _host(9, "start", None), _host(10, "end", 700),  # a start without a time takes no part
               _host(11, "start", 800)]  # never ended
    same(model_rows({"host_info_record": records}, "host_span"), [
        {"line": 5, "kind": "instant", "start_ns": 170_000, "dur_ns": 0},
        {"line": 6, "kind": "span", "start_ns": 150_000, "end_ns": 400_000, "dur_ns": 250_000, "start_line": 3},
        {"line": 7, "kind": "orphan_end", "start_ns": None, "end_ns": 500_000, "dur_ns": None},
        {"line": 8, "kind": "span", "tid": 2, "module": "GPU", "custom_info": "{{k:v}}", "dur_ns": 440_000,
         "name": "RunGraph::RunGraph"},
        {"line": 10, "kind": "orphan_end", "end_ns": 700_000},
        {"line": 11, "kind": "open_start", "start_ns": 800_000, "end_ns": None},
    ])


def test_host_stage_stats_count_spans_and_what_did_not_pair():
    records = [_host(1, "start", 0), _host(2, "end", 30), _host(3, "start", 40), _host(4, "end", 50),
               _host(5, "start", 60), _host(6, "end", 70, stage="Run"), _host(7, "start", 80, stage="Run"),
               _host(8, "end", 120, stage="Run"), _host(9, "instant", 130, stage="Run")]
    same(model_rows({"host_info_record": records}, "host_stage_stats"), [
        # Run: one span of 40 µs, an end without start, an instant; 40 / (40 + 40) of the module
        {"stage": "Run", "spans": 1, "total_ns": 40_000, "orphan_ends": 1, "instants": 1, "open_starts": 0,
         "module_share": 0.5},
        # RunGraph: 30 and 10 µs, the start at 60 µs never ended
        {"stage": "RunGraph", "spans": 2, "total_ns": 40_000, "avg_ns": 20_000.0, "min_ns": 10_000,
         "max_ns": 30_000, "open_starts": 1, "orphan_ends": 0, "module_share": 0.5, "first_ns": 0},
    ])


def test_host_memory_curve_and_peak():
    records = [_host(2, "start", 10, kb=100), _host(3, "end", 20), _host(4, "start", 30, kb=300),
               _host(5, "end", 40, event="Other", kb=300), _host(6, "instant", None, kb=50)]
    same(model_rows({"host_info_record": records}, "host_memory_curve"), [
        {"sample": 1, "line": 2, "memory_bytes": 102_400}, {"sample": 2, "line": 4, "memory_bytes": 307_200},
        {"sample": 3, "line": 5, "memory_bytes": 307_200}, {"sample": 4, "line": 6, "ts_ns": None}])
    # the first sample at the peak (line 4); growth from 100 kB to the last, 50 kB
    same(model_rows({"host_info_record": records}, "host_memory_stats"), [
        {"samples": 4, "peak_bytes": 307_200, "peak_ts_ns": 30_000, "peak_line": 4, "peak_at": "RunGraph::RunGraph",
         "min_bytes": 51_200, "first_bytes": 102_400, "last_bytes": 51_200, "growth_bytes": -51_200,
         "avg_bytes": (100 + 300 + 300 + 50) * 1024 / 4, "first_ts_ns": 10_000, "last_ts_ns": 40_000}])


def test_dataset_host_stats_group_dataset_spans_by_custom_info():
    data = {"module": "Dataset", "event": "Batch(ID:1)", "stage": "WorkerProcess"}
    records = [_host(1, "start", 0, **data), _host(2, "end", 10, custom="{{F:Data}}", **data),
               _host(3, "start", 20, **data), _host(4, "end", 45, custom="{{F:Data}}", **data),
               _host(5, "start", 50, **data), _host(6, "end", 51, custom="{{F:EOE}}", **data),
               _host(7, "start", 60), _host(8, "end", 90)]  # a Runtime span: not a dataset time
    same(model_rows({"host_info_record": records}, "dataset_host_stats"), [
        {"custom_info": "{{F:Data}}", "occurrences": 2, "total_ns": 35_000, "avg_ns": 17_500.0, "min_ns": 10_000,
         "max_ns": 25_000, "first_end_line": 2},
        {"custom_info": "{{F:EOE}}", "occurrences": 1, "total_ns": 1_000, "first_end_line": 6}])


# ------------------------------------------------------------------------------------ MindSpore's Scope Layer

def _scoped_ops(*spans) -> list[dict]:
    return [{"side": "Host", "tid": 0, "op_name": name, "start_ns": start, "dur_ns": end - start, "op_index": i}
            for i, (name, start, end) in enumerate(spans)]


def _mindspore_run(layout: str = "framework") -> list[dict]:
    return [{"device_id": 0, "device_type": "cpu", "framework": "mindspore", "layout": layout}]


SCOPED_OPS = _scoped_ops(
    ("Default/net-A/conv-C/Conv-op0", 0, 10),
    ("Default/net-A/conv-C/ReLU-op1", 10, 20),  # starts at the last end: kept, merges at every depth
    ("Default/net-A/fc-D/MatMul-op2", 25, 30),  # depth 2 changes: conv-C ends at 20, fc-D opens
    ("Default/net-A/MatMul-op3", 30, 32),  # a shorter path: fc-D is left open
    ("Default/net-A/fc-D/Add-op4", 40, 45),  # ... and extended across the gap to 45
    ("Default/Cast-op5", 42, 50),  # starts inside the last kept op (42 < 45): dropped, its end 50 does not count
    ("Default/Cast-op6", 47, 48),  # 47 >= 45 (the last kept op's end, not the dropped one's 50): kept
    ("Gradients/net-A/fc-D/Grad-op7", 50, 60),  # depth 0 changes: a new span at every depth, equal names too
    ("Gradients/net-B/fc-D/Grad-op8", 60, 70),  # depth 1 changes: depth 0 extends, 1 and 2 open anew
    ("Gradients/net-B/fc-D/Grad-op9", 70, 75),  # a contiguous run: extends every depth
    ("MakeTuple-op10", 76, 200),  # no scope: skipped, so it hides nothing after it
    ("Other/x/Op-op11", 80, 85),  # not under a top scope: skipped
    ("DefaultXYZ/y/Op-op12", 95, 100))  # qualifies by plain prefix: a new top scope


def test_scope_layer_span_merges_runs_of_ops_per_depth_as_mindspore():
    same(model_rows({"run_info": _mindspore_run(), "host_op": SCOPED_OPS}, "scope_layer_span"), [
        # depth 0: Default 0..48 (ops 0-4 and 6), Gradients 50..75 (7-9), DefaultXYZ 95..100
        {"depth": 0, "scope": "Default", "start_ns": 0, "dur_ns": 48, "ops": 6, "first_op": 1, "last_op": 7},
        {"depth": 0, "scope": "Gradients", "start_ns": 50, "dur_ns": 25, "ops": 3},
        {"depth": 0, "scope": "DefaultXYZ", "start_ns": 95, "dur_ns": 5, "ops": 1},
        # depth 1: net-A 0..45 (ops 0-4), net-A again at 50..60 (depth 0 broke), net-B 60..75, y 95..100
        {"depth": 1, "scope": "net-A", "start_ns": 0, "dur_ns": 45, "ops": 5},
        {"depth": 1, "scope": "net-A", "start_ns": 50, "dur_ns": 10, "ops": 1},
        {"depth": 1, "scope": "net-B", "start_ns": 60, "dur_ns": 15, "ops": 2},
        {"depth": 1, "scope": "y", "start_ns": 95, "dur_ns": 5, "ops": 1},
        # depth 2: conv-C 0..20, fc-D 25..45 (ops 2 and 4, across op 3), fc-D 50..60, fc-D 60..75 (depth 1 broke)
        {"depth": 2, "scope": "conv-C", "start_ns": 0, "dur_ns": 20, "ops": 2},
        {"depth": 2, "scope": "fc-D", "start_ns": 25, "dur_ns": 20, "ops": 2, "first_op": 3, "last_op": 5},
        {"depth": 2, "scope": "fc-D", "start_ns": 50, "dur_ns": 10, "ops": 1},
        {"depth": 2, "scope": "fc-D", "start_ns": 60, "dur_ns": 15, "ops": 2},
    ])


def test_scope_layer_span_for_mindspore_2_3_and_later_dumps_and_on_the_timeline_lane_9():
    # 2.3-2.4 msprof exports (era E) get the same merge over what profpipe reads of them
    assert model_rows({"run_info": _mindspore_run("ascend_era_e"), "host_op": SCOPED_OPS}, "scope_layer_span") == \
        model_rows({"run_info": _mindspore_run(), "host_op": SCOPED_OPS}, "scope_layer_span")
    lane = [r for r in model_rows({"run_info": _mindspore_run(), "host_op": SCOPED_OPS}, "timeline_span")
            if r["lane"] == 9]
    assert len(lane) == 11
    same(sorted(lane, key=lambda r: (r["tid"], r["start_ns"]))[:2], [
        {"process": "Scope Layer", "tid": 0, "thread": "Thread 0", "name": "Default", "category": "scope",
         "start_ns": 0, "dur_ns": 48, "clock_domain": "main"},
        {"tid": 0, "name": "Gradients", "start_ns": 50, "dur_ns": 25}])


def test_device_memory_capacity_reads_each_device_of_deviceproperties():
    # two devices stated (ids 0 and 1), one without totalGlobalMem (no row), and a source with no deviceProperties
    devices = [{"id": 0, "name": "A", "totalGlobalMem": 85_017_493_504}, {"id": 1, "name": "B", "totalGlobalMem": 1024},
               {"id": 2, "name": "C"}]
    info = [{"rank": 0, "device_type": "gpu", "metadata_json": json.dumps({"deviceProperties": devices})},
            {"rank": 1, "device_type": "gpu", "metadata_json": json.dumps({"distributedInfo": {"rank": 1}})}]
    assert model_rows({"run_info": info}, "device_memory_capacity") == [
        {"rank": 0, "capture": 0, "device": "cuda:0", "device_name": "A", "capacity_bytes": 85_017_493_504},
        {"rank": 0, "capture": 0, "device": "cuda:1", "device_name": "B", "capacity_bytes": 1024}]


def test_scope_name_spans_of_older_dumps_run_per_level_over_consecutive_ops():
    # a flat profiler folder (MindSpore <= 2.4 CPU / GPU) gets 1.3-2.2's Scope Name thread over the same ops;
    # the step's first op (Conv-op0) never comes again, so its last op is the list's last: no step break here
    spans = model_rows({"run_info": _mindspore_run("flat"), "host_op": SCOPED_OPS}, "scope_layer_span")
    assert {r["algorithm"] for r in spans} == {"scope_name"}
    same(spans, [
        # Default: ops 1-7 (every op of Default, overlapping ones too: nothing is dropped), 0..48 (op 7's end)
        {"depth": 0, "scope": "Default", "start_ns": 0, "dur_ns": 48, "ops": 7, "first_op": 1, "last_op": 7},
        {"depth": 0, "scope": "Gradients", "start_ns": 50, "dur_ns": 25, "ops": 3, "first_op": 8, "last_op": 10},
        {"depth": 1, "scope": "net-A", "start_ns": 0, "dur_ns": 45, "ops": 5},  # ops 1-5; op 6 has no level 1
        {"depth": 1, "scope": "net-A", "start_ns": 50, "dur_ns": 10, "ops": 1},  # Gradients' net-A: its own
        {"depth": 1, "scope": "net-B", "start_ns": 60, "dur_ns": 15, "ops": 2},
        {"depth": 2, "scope": "conv-C", "start_ns": 0, "dur_ns": 20, "ops": 2},
        {"depth": 2, "scope": "fc-D", "start_ns": 25, "dur_ns": 5, "ops": 1},  # op 4 lacks level 2: closed at 30
        {"depth": 2, "scope": "fc-D", "start_ns": 40, "dur_ns": 5, "ops": 1},  # (no gap bridging, unlike Scope Layer)
        # ops 8-10: fc-D stays at level 2 while level 1 changes net-A -> net-B: one span (Scope Layer: two)
        {"depth": 2, "scope": "fc-D", "start_ns": 50, "dur_ns": 25, "ops": 3, "first_op": 8, "last_op": 10},
    ])  # MakeTuple (no '/'), Other/... and DefaultXYZ/... (not a subgraph) give nothing


def test_scope_name_spans_end_with_the_steps_last_op_and_skip_communication_ops():
    run = [{"device_id": 0, "device_type": "gpu", "framework": "mindspore", "layout": "flat"}]
    gpu, cpu = "Device", "Host"
    ops = [{"side": side, "op_name": name, "start_ns": start, "dur_ns": end - start}
           for side, name, start, end in [
               (gpu, "Default/InitDataSetQueue-op0", 0, 5),  # first: the step starts with the second op
               (gpu, "Default/net/Conv-op1", 10, 20),  # 2: the step's first op
               (cpu, "Default/net/Cast-op2", 20, 22),  # 4: a tie at 20 puts the GPU op first
               (gpu, "Default/net/Relu-op3", 20, 25),  # 3
               (gpu, "Default/AllReduce-op4", 26, 30),  # a communication op: not in the list, breaks nothing
               (gpu, "Default/net/Add-op5", 30, 35),  # 5: before Conv-op1 comes again: the step's last op
               (gpu, "Default/net/Conv-op1", 40, 50),  # 6
               (gpu, "Default/net/Add-op5", 50, 55)]]  # 7: the list's last op
    comm = [{"step": 1, "kind": kind, "op_name": "Default/AllReduce-op4", "seq": i, "ts_ns": ts}
            for i, (kind, ts) in enumerate([("comm_start", 26), ("comm_end", 30)])]
    tables = {"run_info": run, "host_op": ops, "step_point": comm}
    same(model_rows(tables, "scope_layer_span"), [
        {"algorithm": "scope_name", "depth": 0, "scope": "Default", "start_ns": 10, "dur_ns": 25, "ops": 4,
         "first_op": 2, "last_op": 5},
        {"depth": 0, "scope": "Default", "start_ns": 40, "dur_ns": 15, "ops": 2, "first_op": 6, "last_op": 7},
        {"depth": 1, "scope": "net", "start_ns": 10, "dur_ns": 25, "ops": 4, "first_op": 2, "last_op": 5},
        {"depth": 1, "scope": "net", "start_ns": 40, "dur_ns": 15, "ops": 2}])
    lane = sorted((r for r in model_rows(tables, "timeline_span") if r["lane"] == 9),
                  key=lambda r: (r["tid"], r["start_ns"]))
    same(lane, [{"process": "Scope Name", "tid": 0, "thread": "Level 0", "start_ns": 10},
                {"thread": "Level 0", "start_ns": 40}, {"thread": "Level 1", "start_ns": 10},
                {"tid": 1, "thread": "Level 1", "name": "net", "start_ns": 40, "dur_ns": 15}])


def test_kernel_counters_take_the_op_stack_of_their_launch():
    """Two measured kernels: the first launched (correlation 5, at 20-25 ns) inside aten::addmm inside aten::linear,
    the second (correlation 6, at 70-75 ns) inside aten::linear only; a third range has no launch (null correlation):
    no stack. kernel_counter_op gives each counter value its launch's stack, kernel_counter_stats sums per bottom op."""
    ops = [{"side": "Host", "op_name": "aten::linear", "category": "cpu_op", "tid": 1, "start_ns": 0, "dur_ns": 100},
           {"side": "Host", "op_name": "aten::addmm", "category": "cpu_op", "tid": 1, "start_ns": 10, "dur_ns": 50},
           {"side": "Host", "op_name": "other_thread", "category": "cpu_op", "tid": 2, "start_ns": 0, "dur_ns": 100}]
    calls = [{"tid": 1, "name": "cudaLaunchKernel", "category": "cuda_runtime", "correlation": 5, "start_ns": 20, "dur_ns": 5},
             {"tid": 1, "name": "cudaLaunchKernel", "category": "cuda_runtime", "correlation": 6, "start_ns": 70, "dur_ns": 5}]
    ranges = [(0, "gemm", 5, "dram__bytes_read.sum", 100.0), (0, "gemm", 5, "ffma.sum", 7.0),
              (1, "gemm", 6, "dram__bytes_read.sum", 300.0), (2, "relu", None, "dram__bytes_read.sum", 50.0)]
    counters = [{"range_index": i, "kernel_name": k, "start_ns": 1000 * i, "dur_ns": 10, "launch_correlation": c,
                 "counter": n, "value": v} for i, k, c, n, v in ranges]
    tables = {"host_op": ops, "host_api": calls, "kernel_counter": counters}
    got = sorted((r["range_index"], r["counter"], r["launch_api"], r["top_level_op"], r["bottom_level_op"],
                  r["op_stack"], r["value"]) for r in model_rows(tables, "kernel_counter_op"))
    assert got == [(0, "dram__bytes_read.sum", "cudaLaunchKernel", "aten::linear", "aten::addmm",
                    ["aten::linear", "aten::addmm"], 100.0),
                   (0, "ffma.sum", "cudaLaunchKernel", "aten::linear", "aten::addmm", ["aten::linear", "aten::addmm"], 7.0),
                   (1, "dram__bytes_read.sum", "cudaLaunchKernel", "aten::linear", "aten::linear", ["aten::linear"], 300.0),
                   (2, "dram__bytes_read.sum", None, None, None, None, 50.0)]
    stats = {(r["bottom_level_op"], r["kernel_name"], r["counter"]): (r["kernels"], r["total_value"], r["max_value"])
             for r in model_rows(tables, "kernel_counter_stats")}
    assert stats[("aten::addmm", "gemm", "dram__bytes_read.sum")] == (1, 100.0, 100.0)
    assert stats[("aten::linear", "gemm", "dram__bytes_read.sum")] == (1, 300.0, 300.0)
