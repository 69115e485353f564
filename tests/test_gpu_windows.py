"""Per-step GPU windows (int_step_gpu_window) on a GPU that runs far behind its host (fixtures/kineto_async):
step_gpu_time, gpu_time_breakdown's profpipe definition and the host_device_sync rule measure the device where it ran
its steps' work, every part fits its whole, and the launch columns of kernel_name_stats come from the trace. Every
expected number is derived here from the raw trace events."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from conftest import FIXTURES, assert_generator_reproduces, query, run, union_ns

ASYNC = FIXTURES / "kineto_async"
SYNC_CALLS = ("cudaDeviceSynchronize", "cudaStreamSynchronize")


def test_kineto_async_generator_reproduces(tmp_path: Path):
    assert_generator_reproduces("kineto_async.py", ASYNC, tmp_path)


def _trace(path: Path) -> dict:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as handle:
        return json.load(handle)


def _ns(event: dict, base: int = 0) -> tuple[int, int]:
    """An event's [start, end) in ns: the trace's own µs from `base` (its baseTimeNanoseconds)."""
    start = base + round(event["ts"] * 1000)
    return start, start + round(event["dur"] * 1000)


def _clip(intervals: list[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    return [(max(s, lo), min(e, hi)) for s, e in intervals if s < hi and e > lo]


def _oracle(trace: dict) -> dict[int, dict]:
    """Per host step of the raw trace: the GPU window (the span of its gpu_user_annotation copies, else of the work
    whose runtime call started in the host step) and the parts of that window, by the definitions of step_gpu_time;
    times in ns since the epoch (baseTimeNanoseconds + ts)."""
    events, base = trace["traceEvents"], trace["baseTimeNanoseconds"]
    steps = {int(e["name"].split("#")[1]): _ns(e, base) for e in events
             if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")}
    calls = {e["args"]["correlation"]: _ns(e, base)[0] for e in events if e.get("cat") == "cuda_runtime"}
    work = [(e, _ns(e, base)) for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    found = {}
    for step, (host_start, host_end) in steps.items():
        copies = [_ns(e, base) for e in events if e.get("cat") == "gpu_user_annotation" and e["name"] == f"ProfilerStep#{step}"]
        launched = [span for e, span in work if host_start <= calls[e["args"]["correlation"]] < host_end]
        spans = copies or launched
        window = (min(s for s, _ in spans), max(e for _, e in spans))
        kinds = {"compute": [], "communication": [], "memcpy": []}
        for event, span in work:
            kind = "memcpy" if event["cat"] == "gpu_memcpy" else \
                "communication" if "nccl" in event["name"].lower() else "compute"
            kinds[kind] += _clip([span], *window)
        compute_spans, comm_spans = kinds["compute"], kinds["communication"]
        overlapped = union_ns(compute_spans) + union_ns(comm_spans) - union_ns(compute_spans + comm_spans)
        busy = union_ns([s for spans in kinds.values() for s in spans])
        syncs = [_ns(e, base) for e in events if e.get("cat") == "cuda_runtime" and e["name"] in SYNC_CALLS]
        computing = compute_spans + kinds["memcpy"]
        found[step] = {"host_window": (host_start, host_end), "window": window,
                       "computation_ns": union_ns(computing),
                       "pure_communication_ns": union_ns(computing + comm_spans) - union_ns(computing),
                       "step_ns": host_end - host_start, "gpu_window_start_ns": window[0],
                       "gpu_window_ns": window[1] - window[0], "compute_ns": union_ns(compute_spans),
                       "communication_ns": union_ns(comm_spans), "memcpy_ns": union_ns(kinds["memcpy"]),
                       "busy_ns": busy, "idle_ns": window[1] - window[0] - busy,
                       "overlapped_communication_ns": overlapped,
                       "host_sync_ns": union_ns(_clip(syncs, host_start, host_end))}
    return found


@pytest.fixture(scope="module")
def analysed(tmp_path_factory) -> Path:
    return run(ASYNC, tmp_path_factory.mktemp("async") / "out").output


COLUMNS = ("step_ns", "gpu_window_start_ns", "gpu_window_ns", "compute_ns", "communication_ns", "memcpy_ns", "busy_ns",
           "idle_ns", "overlapped_communication_ns", "host_sync_ns")


@pytest.mark.parametrize("rank", [0, 1])
def test_step_gpu_time_measures_each_step_where_the_gpu_ran_it(analysed, rank):
    """Rank 0 has the steps' copies on the device, rank 1 not (the window comes from what each host step launched);
    the GPU runs each step 9-29 ms after the host's 0.6 ms step, yet every part of a row fits in its window."""
    oracle = _oracle(_trace(ASYNC / f"rank-{rank}.pt.trace.json"))
    rows = query(analysed, f"SELECT step, {', '.join(COLUMNS)} FROM step_gpu_time WHERE rank = {rank} ORDER BY step")
    assert [r[0] for r in rows] == sorted(oracle)
    for step, *values in rows:
        got = dict(zip(COLUMNS, values))
        assert got == {c: oracle[step][c] for c in COLUMNS}
        assert got["compute_ns"] <= got["busy_ns"] and got["communication_ns"] <= got["busy_ns"]
        assert got["memcpy_ns"] <= got["busy_ns"] <= got["gpu_window_ns"] and got["host_sync_ns"] <= got["step_ns"]
        assert got["compute_ns"] > got["step_ns"]  # the GPU's step is far longer than the host's


def test_gpu_time_breakdown_takes_the_gpus_own_span_of_the_steps(analysed):
    """profpipe's window: the first step's GPU start to the last one's end (not the host's 1.8 ms of steps, in which
    no kernel ran); compute, non-compute and idle add up to it."""
    for rank in (0, 1):
        oracle = _oracle(_trace(ASYNC / f"rank-{rank}.pt.trace.json"))
        window = max(v["gpu_window_start_ns"] + v["gpu_window_ns"] for v in oracle.values()) - \
            min(v["gpu_window_start_ns"] for v in oracle.values())
        [(window_ns, busy, compute, non_compute, idle, compute_share)] = query(
            analysed, "SELECT window_ns, busy_ns, compute_ns, non_compute_ns, idle_ns, compute_share "
                      f"FROM gpu_time_breakdown WHERE rank = {rank} AND definition = 'profpipe'")
        steps_busy = sum(v["busy_ns"] for v in oracle.values())  # the windows hold all the work, and no two share it
        steps_compute = sum(v["compute_ns"] for v in oracle.values())
        assert (window_ns, busy, compute) == (window, steps_busy, steps_compute)
        assert compute + non_compute + idle == window_ns and compute_share == pytest.approx(compute / window)
        assert 0.9 < compute_share <= 1


def _idle_gaps(trace: dict) -> list[tuple[int, str, int, int]]:
    """Each stream's idle gaps (stream, cause, start, end) in ns since the epoch: a start after the latest end of the
    stream's earlier work; host_wait when its runtime call started after that end, kernel_wait under 30 µs, else
    other."""
    events, base = trace["traceEvents"], trace["baseTimeNanoseconds"]
    calls = {e["args"]["correlation"]: _ns(e, base)[0] for e in events if e.get("cat") == "cuda_runtime"}
    streams: dict[int, list[tuple[int, int, int]]] = {}
    for e in events:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            streams.setdefault(e["args"]["stream"], []).append((*_ns(e, base), e["args"]["correlation"]))
    gaps = []
    for stream, work in streams.items():
        reach = None
        for start, end, correlation in sorted(work):
            if reach is not None and start > reach:
                cause = "host_wait" if calls.get(correlation, -1) > reach else \
                    "kernel_wait" if start - reach < 30_000 else "other"
                gaps.append((stream, cause, reach, start))
            reach = end if reach is None else max(reach, end)
    return gaps


@pytest.mark.parametrize("rank", [0, 1])
def test_gpu_idle_measures_the_gpu_where_it_ran_each_step(analysed, rank):
    """The host's 0.6 ms steps hold no kernel at all: measured there the GPU would idle 100 % of every step. In each
    step's GPU window (its device copies on rank 0, what its host span launched on rank 1) step_overlap splits the
    window into computation, exposed communication and free time as the raw events do, step_gpu_idle's gaps are the
    streams' gaps clipped to that window, and neither gpu_idle nor comm_not_overlapped fires."""
    trace = _trace(ASYNC / f"rank-{rank}.pt.trace.json")
    oracle = _oracle(trace)
    base = trace["baseTimeNanoseconds"]
    work = [_ns(e, base) for e in trace["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    for values in oracle.values():
        assert not _clip(work, *values["host_window"])  # nothing ran on the GPU in the host's step
    rows = query(analysed, "SELECT step, start_ns, end_ns, total_ns, computation_ns, pure_communication_ns, free_ns "
                           f"FROM step_overlap WHERE rank = {rank} ORDER BY step")
    assert rows == [(step, *v["window"], v["window"][1] - v["window"][0], v["computation_ns"],
                     v["pure_communication_ns"], v["idle_ns"]) for step, v in sorted(oracle.items())]
    expected: dict[tuple[int, int, str], list[int]] = {}
    for step, v in oracle.items():
        low, high = v["window"]
        for stream, cause, start, end in _idle_gaps(trace):
            if start < high and end > low:
                expected.setdefault((step, stream, cause), []).append(min(end, high) - max(start, low))
    got = {(step, stream, cause): (gaps, idle) for step, stream, cause, gaps, idle in query(
        analysed, f"SELECT step, stream_id, category, gaps, idle_ns FROM step_gpu_idle WHERE rank = {rank} AND gaps > 0")}
    assert got == {key: (len(v), sum(v)) for key, v in expected.items()} and got
    free_shares = [v["idle_ns"] / (v["window"][1] - v["window"][0]) for v in oracle.values()]
    assert max(free_shares) < 0.2
    findings = json.loads((analysed / "findings.json").read_text())
    checked = {c["rule_id"]: c["status"] for c in findings["checked"]}
    assert checked["gpu_idle"] == checked["comm_not_overlapped"] == "passed"


def test_a_sync_after_the_last_step_is_no_wait_inside_steps(analysed):
    """The cudaDeviceSynchronize 27 µs after the last step waits ~36.7 ms outside every step: host_device_sync does
    not fire; the 20 µs cudaStreamSynchronize across the step 1/2 edge counts 10 µs in each."""
    events = _trace(ASYNC / "rank-0.pt.trace.json")["traceEvents"]
    last_end = max(_ns(e)[1] for e in events if e.get("name", "").startswith("ProfilerStep#") and e["cat"] == "user_annotation")
    device_sync = next(_ns(e) for e in events if e.get("name") == "cudaDeviceSynchronize")
    assert device_sync[0] > last_end and device_sync[1] - device_sync[0] > 30_000_000
    assert query(analysed, "SELECT rank, step, host_sync_ns, host_sync_calls, host_sync_apis FROM step_gpu_time "
                           "WHERE host_sync_calls > 0 ORDER BY rank, step") == \
        [(rank, step, 10_000, 1, "cudaStreamSynchronize") for rank in (0, 1) for step in (1, 2)]
    checked = {c["rule_id"]: c["status"] for c in json.loads((analysed / "findings.json").read_text())["checked"]}
    assert checked["host_device_sync"] == "passed"


def test_kernel_name_stats_takes_launch_api_grid_and_block_from_the_trace(tmp_path: Path):
    """fixtures/pytorch_cuda (a real trace): per kernel name, the runtime call of the first execution (by its
    correlation id) and the grid and block of the first execution, as the raw trace holds them."""
    trace = FIXTURES / "pytorch_cuda" / "rank-0.pt.trace.json.gz"
    events = _trace(trace)["traceEvents"]
    calls = {e["args"]["correlation"]: e["name"] for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    expected: dict[str, tuple] = {}
    for event in sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"]):
        args = event["args"]
        expected.setdefault(event["name"], (calls.get(args["correlation"]), ",".join(map(str, args["block"])),
                                            ",".join(map(str, args["grid"]))))
    out = run(trace.parent, tmp_path / "out").output
    got = {name: rest for name, *rest in query(out, "SELECT name, launch_api, block_dim, grid_dim FROM kernel_name_stats")}
    assert {name: tuple(rest) for name, rest in got.items()} == expected
    assert all(api and block and grid for api, block, grid in expected.values())
