"""The critical path marts (critical_path_edge, critical_path_summary): a graph built by hand, and HTA's own
critical_path_analysis on its test traces (fixtures/hta/critical_path.json, written by
fixtures/generators/hta_critical_path.py)."""
from __future__ import annotations

import functools
import json
from collections import Counter
from itertools import pairwise
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from conftest import realdata, run
from hypothesis import given, settings
from hypothesis import strategies as st
from model_harness import model_rows

from profpipe.critical_path import longest_path

REPO = Path(__file__).resolve().parents[1]


def _call(correlation: int, name: str, start_ns: int, dur_ns: int) -> dict:
    """A CUDA runtime call on thread 1."""
    return {"tid": 1, "name": name, "category": "cuda_runtime", "correlation": correlation, "start_ns": start_ns,
            "dur_ns": dur_ns}


def test_critical_path_by_hand():
    """aten::foo [0, 100] on thread 1 launches gemm (call 10-20, kernel 40-80 on stream 7, an idle queue: a launch
    edge of 30) and then waits in cudaStreamSynchronize [30, 90] (blocking: its own time weighs 0), whose Stream Sync
    ties it to gemm's end. The CPU alone makes 10+10+10+0+10 = 40; through the GPU: 10 (foo's start to the call) +
    30 (launch) + 40 (gemm) + 0 (sync) + 10 (the sync's end to foo's end) = 90, the critical path."""
    ops = [{"side": "Host", "op_name": "aten::foo", "category": "cpu_op", "tid": 1, "start_ns": 0, "dur_ns": 100}]
    calls = [_call(1, "cudaLaunchKernel", 10, 10), _call(2, "cudaStreamSynchronize", 30, 60)]
    device = [{"stream_id": 7, "kind": "kernel", "name": "gemm", "correlation": 1, "start_ns": 40, "dur_ns": 40},
              {"stream_id": 7, "kind": "sync", "name": "Stream Sync", "correlation": 2, "start_ns": 30, "dur_ns": 55}]
    tables = {"host_op": ops, "host_api": calls, "device_exec": device}
    edges = [(r["edge_index"], r["edge_type"], r["weight_ns"], r["from_name"], r["from_point"], r["to_name"],
              r["to_point"], r["event_name"], r["bound_by"]) for r in model_rows(tables, "critical_path_edge")]
    assert edges == [
        (0, "cpu_op", 10, "aten::foo", "start", "cudaLaunchKernel", "start", "aten::foo", "cpu_bound"),
        (1, "launch", 30, "cudaLaunchKernel", "start", "gemm", "start", None, "gpu_kernel_launch_overhead"),
        (2, "gpu_op", 40, "gemm", "start", "gemm", "end", "gemm", "gpu_compute_bound"),
        (3, "sync", 0, "gemm", "end", "cudaStreamSynchronize", "end", None, None),
        (4, "cpu_op", 10, "cudaStreamSynchronize", "end", "aten::foo", "end", "aten::foo", "cpu_bound"),
    ]
    [summary] = model_rows(tables, "critical_path_summary")
    assert (summary["path_length_ns"], summary["edges"], summary["sync_edges"], summary["cpu_ns"],
            summary["gpu_compute_ns"], summary["launch_ns"], summary["kernel_kernel_ns"]) == (90, 5, 1, 20, 40, 30, 0)
    assert summary["cpu_share"] == pytest.approx(2 / 9) and summary["launch_share"] == pytest.approx(1 / 3)
    assert (summary["top_op"], summary["top_op_ns"], summary["top_kernel"], summary["top_kernel_ns"]) == \
        ("aten::foo", 20, "gemm", 40)


def _path(tables):
    return [(r["edge_type"], r["weight_ns"], r["from_name"], r["from_point"], r["to_name"], r["to_point"])
            for r in model_rows(tables, "critical_path_edge")]


def test_cuda_event_synchronize_waits_for_the_recorded_activity():
    """aten::foo [0, 110] launches gemm (call 10-20, kernel 30-80 on stream 7), records a CUDA event on stream 7
    (cudaEventRecord 22-25) and waits for it in cudaEventSynchronize [30, 100] (blocking). Its Event Sync ties gemm's
    end to the call's end: 10 + 20 (launch) + 50 (gemm) + 0 + 10 = 90. Without that edge the path would end at gemm's
    end (80)."""
    ops = [{"side": "Host", "op_name": "aten::foo", "category": "cpu_op", "tid": 1, "start_ns": 0, "dur_ns": 110}]
    calls = [_call(1, "cudaLaunchKernel", 10, 10), _call(2, "cudaEventRecord", 22, 3),
             _call(3, "cudaEventSynchronize", 30, 70)]
    device = [{"stream_id": 7, "kind": "kernel", "name": "gemm", "correlation": 1, "start_ns": 30, "dur_ns": 50},
              {"stream_id": -1, "kind": "sync", "name": "Event Sync", "correlation": 3, "start_ns": 30, "dur_ns": 65,
               "wait_stream_id": 7, "wait_correlation": 2}]
    assert _path({"host_op": ops, "host_api": calls, "device_exec": device}) == [
        ("cpu_op", 10, "aten::foo", "start", "cudaLaunchKernel", "start"),
        ("launch", 20, "cudaLaunchKernel", "start", "gemm", "start"),
        ("gpu_op", 50, "gemm", "start", "gemm", "end"),
        ("sync", 0, "gemm", "end", "cudaEventSynchronize", "end"),
        ("cpu_op", 10, "cudaEventSynchronize", "end", "aten::foo", "end"),
    ]


def test_cuda_stream_wait_event_holds_the_next_launch():
    """gemm on stream 7 [30, 120] records an event that stream 8 waits for (cudaStreamWaitEvent 26-28); the next
    kernel the thread launches on stream 8, add (call 30-40, kernel 120-170), starts through a sync edge from gemm's end
    rather than through its launch (HTA: no launch edge while the waited-for activity ran past the call); a
    cudaDeviceSynchronize [45, 180] (Context Sync) returns after add."""
    ops = [{"side": "Host", "op_name": "aten::foo", "category": "cpu_op", "tid": 1, "start_ns": 0, "dur_ns": 200}]
    calls = [_call(1, "cudaLaunchKernel", 10, 10), _call(2, "cudaEventRecord", 22, 3),
             _call(4, "cudaStreamWaitEvent", 26, 2), _call(5, "cudaLaunchKernel", 30, 10),
             _call(6, "cudaDeviceSynchronize", 45, 135)]
    device = [{"stream_id": 7, "kind": "kernel", "name": "gemm", "correlation": 1, "start_ns": 30, "dur_ns": 90},
              {"stream_id": 8, "kind": "sync", "name": "Stream Wait Event", "correlation": 4, "start_ns": 28, "dur_ns": 1,
               "wait_stream_id": 7, "wait_correlation": 2},
              {"stream_id": 8, "kind": "kernel", "name": "add", "correlation": 5, "start_ns": 120, "dur_ns": 50},
              {"stream_id": -1, "kind": "sync", "name": "Context Sync", "correlation": 6, "start_ns": 45, "dur_ns": 130}]
    assert _path({"host_op": ops, "host_api": calls, "device_exec": device}) == [
        ("cpu_op", 10, "aten::foo", "start", "cudaLaunchKernel", "start"),
        ("launch", 20, "cudaLaunchKernel", "start", "gemm", "start"),
        ("gpu_op", 90, "gemm", "start", "gemm", "end"),
        ("sync", 0, "gemm", "end", "add", "start"),
        ("gpu_op", 50, "add", "start", "add", "end"),
        ("sync", 0, "add", "end", "cudaDeviceSynchronize", "end"),
        ("cpu_op", 20, "cudaDeviceSynchronize", "end", "aten::foo", "end"),
    ]



def test_critical_path_never_runs_back_in_time_through_overlaps_and_ties():
    """Two overlapping step windows, [0, 110] and [90, 250], with baz [95, 105] on thread 2 in both (it starts as k2
    ends: a tie). Step 1: foo [0, 100] launches k1 (call 10-20, kernel 40-80 on stream 7, an idle queue: a launch
    edge of 30) and then k2 (call 45-55) on the same stream at 70-95, 10 before k1 ends (programmatic dependent
    launch): the kernel_kernel edge k1 end -> k2 start runs back 10 and weighs 0, so the path through it, 10 + 30 +
    40 + 0 + 25 = 105, would be longer than its span (0 to 95). Step 2: bar [120, 200] launches k3 (call 130-140,
    kernel 150-230 on stream 8) and waits in cudaStreamSynchronize [160, 190], whose Stream Sync ties k3's end (230)
    to the call's end (190), back in time: the path through it, 10 + 20 + 80 + 0 + 10 = 120, would be longer than
    its span (120 to 200). A path never takes an edge back in time: step 1's is foo's walk (100, from 0 to 100),
    step 2's ends at k3's end (10 + 20 + 80 = 110, from 120 to 230)."""
    from model_harness import build, rows

    from profpipe.model_checks import check_models

    ops = [{"side": "Host", "op_name": "aten::foo", "category": "cpu_op", "tid": 1, "start_ns": 0, "dur_ns": 100},
           {"side": "Host", "op_name": "aten::baz", "category": "cpu_op", "tid": 2, "start_ns": 95, "dur_ns": 10},
           {"side": "Host", "op_name": "aten::bar", "category": "cpu_op", "tid": 1, "start_ns": 120, "dur_ns": 80}]
    calls = [_call(1, "cudaLaunchKernel", 10, 10), _call(2, "cudaLaunchKernel", 45, 10),
             _call(3, "cudaLaunchKernel", 130, 10), _call(4, "cudaStreamSynchronize", 160, 30)]
    device = [{"stream_id": 7, "kind": "kernel", "name": "k1", "correlation": 1, "start_ns": 40, "dur_ns": 40},
              {"stream_id": 7, "kind": "kernel", "name": "k2", "correlation": 2, "start_ns": 70, "dur_ns": 25},
              {"stream_id": 8, "kind": "kernel", "name": "k3", "correlation": 3, "start_ns": 150, "dur_ns": 80},
              {"stream_id": 8, "kind": "sync", "name": "Stream Sync", "correlation": 4, "start_ns": 160, "dur_ns": 25}]
    steps = [{"step": step, "kind": kind, "ts_ns": ts} for step, kind, ts in
             ((1, "step_start", 0), (1, "step_end", 110), (2, "step_start", 90), (2, "step_end", 250))]
    con = build({"host_op": ops, "host_api": calls, "device_exec": device, "step_point": steps})
    try:
        summary = {r["step"]: r for r in rows(con, "critical_path_summary")}
        backwards = con.execute("SELECT count(*) FROM critical_path_edge WHERE to_ns < from_ns").fetchone()
        failures = [str(f) for f in check_models(con) if "critical_path" in f.model]
        in_both = con.execute("SELECT count(DISTINCT win) FROM int_critical_path_event WHERE name = 'aten::baz'").fetchone()
    finally:
        con.close()
    assert in_both == (2,)
    assert {step: (r["path_start_ns"], r["path_end_ns"], r["path_length_ns"]) for step, r in summary.items()} == \
        {1: (0, 100, 100), 2: (120, 230, 110)}
    assert (summary[1]["cpu_ns"], summary[2]["cpu_ns"], summary[2]["launch_ns"], summary[2]["gpu_compute_ns"]) == \
        (100, 10, 20, 80)
    assert backwards == (0,) and failures == []


TRACES = {
    "simple_add": "HolisticTraceAnalysis/tests/data/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz",
    "alexnet": "HolisticTraceAnalysis/tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "cuda_event_sync": "HolisticTraceAnalysis/tests/data/critical_path/cuda_event_sync/event_sync_trace.json.gz",
    "cuda_event_sync_multi_stream":
        "HolisticTraceAnalysis/tests/data/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz",
}


@pytest.mark.parametrize("name", sorted(TRACES))
def test_critical_path_matches_hta(name, tmp_path):
    """Over the window profpipe takes (the first step where the trace has steps: HTA's annotation ProfilerStep,
    instance 0; else the whole trace: HTA's annotation ""), the path's length, edge count, time per edge type and per
    bound_by class equal HTA 0.5.0's (its µs x 1000), and so do its edges' types, weights and node times. The
    cuda_event_sync traces hold cudaEventSynchronize and cudaStreamWaitEvent, tied to their cudaEventRecord."""
    trace = realdata(TRACES[name])
    expected = json.loads((REPO / "fixtures/hta/critical_path.json").read_text())["traces"]["realdata/" + TRACES[name]]
    hta = expected.get("ProfilerStep#0") or expected["whole"]
    source = tmp_path / "trace"
    source.mkdir()
    (source / trace.name).symlink_to(trace)
    run(source, tmp_path / "out")
    con = duckdb.connect(str(tmp_path / "out" / "profile.duckdb"), read_only=True)
    window = "step IS NULL" if "ProfilerStep#0" not in expected else \
        f"step = {con.execute('SELECT min(step) FROM critical_path_summary').fetchall()[0][0]}"
    [(length, count)] = con.execute(
        "SELECT path_length_ns, edges FROM critical_path_summary WHERE " + window).fetchall()
    assert (length, count) == (hta["length"] * 1000, hta["edges_on_path"])
    [(graph_edges,)] = con.execute("SELECT count(*) FROM int_critical_path_graph g JOIN (SELECT DISTINCT win FROM "
                                   "int_critical_path_event WHERE " + window + ") USING (win)").fetchall()
    assert graph_edges == hta["graph_edges"]  # the whole graph, CUDA-event sync edges included
    by_type = dict(con.execute(f"SELECT edge_type, sum(weight_ns) FROM critical_path_edge WHERE {window} "
                               "GROUP BY ALL").fetchall())
    names = {"cpu_op": "operator", "gpu_op": "operator", "launch": "kernel_launch_delay",
             "kernel_kernel": "kernel_kernel_delay", "sync": "sync_dependency", "dependency": "dependency"}
    ours = Counter()
    for edge_type, ns in by_type.items():
        ours[names[edge_type]] += ns
    assert dict(ours) == {k: v * 1000 for k, v in hta["by_type"].items()}
    bound = dict(con.execute("SELECT coalesce(bound_by, ''), sum(weight_ns) FROM critical_path_edge "
                             "WHERE " + window + " GROUP BY ALL").fetchall())
    assert bound == {k: v * 1000 for k, v in hta["by_bound"].items()}
    # edge by edge, on the clock HTA shifts to the trace's first event (µs)
    origin = hta["path_start_ts"] * 1000 - con.execute(
        "SELECT path_start_ns FROM critical_path_summary WHERE " + window).fetchall()[0][0]
    got = sorted((names[t], w // 1000, (f + origin) // 1000, (e + origin) // 1000) for t, w, f, e in con.execute(
        "SELECT edge_type, weight_ns, from_ns, to_ns FROM critical_path_edge WHERE " + window).fetchall())
    want = sorted((r["type"].replace("operator_kernel", "operator"), r["weight"], r["begin_ts"], r["end_ts"])
                  for r in hta["edges"])
    assert got == want


@st.composite
def _windows(draw):
    """Graphs of one to three windows: DAGs over nodes numbered densely (as int_critical_path_graph numbers them) or
    sparsely, often along a backbone through every node (long chains, as a thread's walk makes), with equal weights
    common so that ties are common."""
    rows = []
    for win in range(draw(st.integers(1, 3))):
        size = draw(st.integers(2, 14))
        order = draw(st.permutations(range(size)))  # a topological order of the window's nodes
        start = draw(st.sampled_from([2, 2, 10**12]))
        gap = draw(st.sampled_from([1, 1, 7919]))
        pairs = draw(st.sets(st.tuples(st.integers(0, size - 2), st.integers(1, size - 1)).filter(lambda p: p[0] < p[1]),
                             min_size=1, max_size=draw(st.sampled_from([3, 30]))))
        if draw(st.booleans()):
            pairs |= {(i, i + 1) for i in range(size - 1)}
        for a, b in sorted(pairs):
            rows.append({"rank": 0, "capture": 0, "win": win, "src": start + gap * order[a],
                         "dst": start + gap * order[b], "edge_type": "cpu_op",
                         "weight_ns": draw(st.sampled_from([0, 1, 5, 5, 10]))})
    return rows


def _reference_path(edges: list[dict]) -> list[dict]:
    """The longest path of a DAG by the rule critical_path.py documents, computed another way (memoised recursion
    over each node's edges in): a node's way in is its greatest (distance, node before it); the path ends at the
    farthest node, the lowest-numbered of equal ones."""
    @functools.cache
    def way_in(node: int) -> tuple[int, int, int]:  # (distance, node before, index of the edge), (0, -1, -1): none
        return max(((way_in(e["src"])[0] + e["weight_ns"], e["src"], i) for i, e in enumerate(edges) if e["dst"] == node),
                   default=(0, -1, -1))

    nodes = sorted({e["src"] for e in edges} | {e["dst"] for e in edges})
    node = max(nodes, key=lambda n: (way_in(n)[0], -n))
    path = []
    while way_in(node)[2] >= 0:
        path.append(edges[way_in(node)[2]])
        node = way_in(node)[1]
    return path[::-1]


@settings(max_examples=300, deadline=None)
@given(_windows())
def test_longest_path_follows_its_rule(rows):
    path = longest_path(pa.Table.from_pylist(rows)).to_pylist()
    for win in {row["win"] for row in rows}:
        taken = sorted((row for row in path if row["win"] == win), key=lambda row: row["edge_index"])
        assert [row["edge_index"] for row in taken] == list(range(len(taken)))
        assert all(a["dst"] == b["src"] for a, b in pairwise(taken))  # a path: each edge starts where one ended
        assert [{k: v for k, v in row.items() if k != "edge_index"} for row in taken] == \
            _reference_path([row for row in rows if row["win"] == win])


@pytest.mark.parametrize("edges", [
    # node 2 waits for 3, which waits for 2, so the pass stops at 2, the cycle's start: the longest path through the
    # rest is 1 -> 2
    [(1, 2, 5), (2, 3, 5), (3, 2, 1), (1, 4, 3)],
    # the same, with a long chain 3 -> 4 -> 5 behind the cycle: never reached, so it counts nothing
    [(1, 2, 1), (2, 3, 1), (3, 2, 1), (3, 4, 100), (4, 5, 100)],
])
def test_longest_path_of_a_window_with_a_cycle_ends(edges):
    rows = [{"rank": 0, "capture": 0, "win": 0, "src": s, "dst": d, "edge_type": "cpu_op", "weight_ns": w}
            for s, d, w in edges]
    assert [(row["src"], row["dst"]) for row in longest_path(pa.Table.from_pylist(rows)).to_pylist()] == [(1, 2)]
