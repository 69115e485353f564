"""Communication analyses of GPU traces: the collective_event table (Kineto reader) and the marts collective_exec,
collective_size_stats, comm_comp_overlap and collective_straggler. Every expected number is derived here, in plain
Python, from the raw trace JSON (exact decimals for times), never from profpipe's own tables."""
from __future__ import annotations

import gzip
import json
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import FIXTURES, assert_generator_reproduces, query, realdata, run
from model_harness import model_rows
from profpipe.discover import discover
from profpipe.ingest import kineto

FIXTURE = FIXTURES / "kineto_nccl"
ELEMENT = {"Float": 4, "BFloat16": 2, "Long": 8, "Byte": 1, "Half": 2, "Double": 8, "Int": 4}
#: nccl-tests (doc/PERFORMANCE.md): S from the Kineto args and the bus factor, per collective name.
KIND = {"allreduce": "AllReduce", "_allgather_base": "AllGather", "allgather": "AllGather", "broadcast": "Broadcast"}


def _load(path: Path) -> dict:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as handle:
        return json.load(handle, parse_float=Decimal)


def _ns(trace: dict, us) -> int:
    return int(trace.get("baseTimeNanoseconds", 0)) + int((Decimal(us) * 1000).to_integral_value())


def _expected_collectives(trace: dict) -> list[dict]:
    """Per NCCL kernel: its args (the kernel's, completed by the record_param_comms op with its External id),
    nccl-tests' S and busbw with t = the kernel's duration."""
    ops = {e["args"]["External id"]: e for e in trace["traceEvents"]
           if e.get("name") == "record_param_comms" and "External id" in e.get("args", {})}
    found = []
    for e in trace["traceEvents"]:
        if e.get("cat") != "kernel" or not e["name"].startswith("nccl"):
            continue
        args = {**ops.get(e["args"].get("External id"), {}).get("args", {}), **e["args"]}
        name = args.get("Collective name")
        kind = KIND.get(name)
        n = args.get("Group size")
        size = None
        if kind == "AllGather":
            size = args["Out msg nelems"] * ELEMENT[args["dtype"]]
        elif kind in ("AllReduce", "Broadcast"):
            size = args["In msg nelems"] * ELEMENT[args["dtype"]]
        factor = {"AllReduce": Decimal(2 * (n - 1)) / n if n else None, "AllGather": Decimal(n - 1) / n if n else None,
                  "Broadcast": Decimal(1)}.get(kind)
        start, dur = _ns(trace, e["ts"]), int((Decimal(e["dur"]) * 1000).to_integral_value())
        found.append({"name": name, "start_ns": start, "dur_ns": dur, "message_bytes": size, "seq": args.get("Seq"),
                      "group": args.get("Process Group Name"),
                      "busbw": float(size / (Decimal(dur) / Decimal(10**9)) * factor) if size is not None and dur else None})
    return sorted(found, key=lambda c: c["start_ns"])


def _union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _expected_overlap(trace: dict) -> tuple[int, int, int]:
    """HTA's comm/comp overlap by a plain union of intervals: (|U_comm|, |U_comp ∩ U_comm|, |U_comp|)."""
    import re
    comm, comp = [], []
    for e in trace["traceEvents"]:
        if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset", "cuda_sync") or e.get("ph") != "X":
            continue
        name, start = e["name"], _ns(trace, e["ts"])
        end = start + int((Decimal(e["dur"]) * 1000).to_integral_value())
        if re.match(r"nccl|hip|hccl", name) or "ncclKernel" in name:
            comm.append((start, end))
        elif not (re.match(r"nccl|Stream Wait Event|runFunction|hip|job_exe|packet|pe_exe|cpum_exe_subgraph|hccl|"
                           r"collective_subgraph_execution", name) or re.search(r"Memcpy|Memset|dma|Sync|cuda.*LaunchKernel", name)):
            comp.append((start, end))
    u_comm, u_comp = _union(comm), _union(comp)
    both = sum(max(0, min(a1, b1) - max(a0, b0)) for a0, a1 in u_comm for b0, b1 in u_comp)
    return sum(b - a for a, b in u_comm), both, sum(b - a for a, b in u_comp)


def test_the_generator_reproduces_the_fixture(tmp_path: Path):
    assert_generator_reproduces("kineto_nccl.py", FIXTURE, tmp_path)


def test_the_generator_reproduces_the_straggler_fixture(tmp_path: Path):
    assert_generator_reproduces("kineto_nccl.py", FIXTURES / "kineto_nccl_straggler", tmp_path, "--straggler")


@pytest.fixture(scope="module")
def fixture_out(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("kineto_nccl") / "out"
    run(FIXTURE, out)
    return out


def _check_collectives(out: Path, traces: dict[int, dict]) -> None:
    for rank, trace in traces.items():
        want = _expected_collectives(trace)
        got = query(out, f"SELECT name, start_ns, dur_ns, message_bytes, group_seq, group_name, "
                         f"bus_bandwidth_bytes_per_second FROM collective_exec WHERE rank = {rank} AND timed_by = 'kernel' "
                         f"ORDER BY start_ns")
        assert len(got) == len(want) > 0
        for (name, start, dur, size, seq, group, busbw), w in zip(got, want):
            assert (name, start, dur, size, seq, group) == (w["name"], w["start_ns"], w["dur_ns"], w["message_bytes"],
                                                          w["seq"], w["group"])
            assert (busbw is None) == (w["busbw"] is None) and (busbw is None or busbw == pytest.approx(w["busbw"], rel=1e-12))


def _check_overlap(out: Path, traces: dict[int, dict]) -> None:
    for rank, trace in traces.items():
        comm, both, comp = _expected_overlap(trace)
        got = query(out, f"SELECT communication_ns, overlap_ns, computation_ns, overlap_share FROM comm_comp_overlap "
                         f"WHERE rank = {rank} AND definition = 'profpipe'")
        assert got[0][:3] == (comm, both, comp)
        assert got[0][3] == pytest.approx(both / comm)


def test_fixture_collectives_bandwidth_overlap_and_straggler(fixture_out: Path):
    traces = {r: _load(FIXTURE / f"rank-{r}.pt.trace.json") for r in (0, 1)}
    _check_collectives(fixture_out, traces)
    _check_overlap(fixture_out, traces)
    # the fixture's story: rank 0's allreduce overlaps the gemm for 100 us, rank 1's does not
    assert query(fixture_out, "SELECT rank, overlap_ns FROM comm_comp_overlap WHERE definition = 'profpipe' "
                              "ORDER BY rank") == [(0, 100_000), (1, 0)]
    # the record_param_comms without a kernel (wait) is kept, timed by its op; the broadcast's args come from its op
    assert query(fixture_out, "SELECT rank, name, timed_by, args_from FROM stg_collective_event "
                              "WHERE name IN ('wait', 'broadcast') ORDER BY ALL") == [
        (0, "broadcast", "kernel", "cpu_op"), (0, "wait", "cpu_op", "cpu_op"),
        (1, "broadcast", "kernel", "cpu_op"), (1, "wait", "cpu_op", "cpu_op")]
    # straggler: instances matched by Seq; the last arrival is the latest kernel start, the others wait for it
    per_seq: dict[int, dict[int, int]] = {}
    for rank, trace in traces.items():
        for c in _expected_collectives(trace):
            per_seq.setdefault(c["seq"], {})[rank] = c["start_ns"]
    got = query(fixture_out, "SELECT occurrence, rank, last_rank, wait_ns, is_last_arrival, slow_test, is_slow "
                             "FROM collective_straggler ORDER BY occurrence, rank")
    want = []
    for seq, starts in sorted(per_seq.items()):
        last = max(starts, key=starts.get)
        want += [(seq, r, last, starts[last] - s, r == last, "too_few_ranks", False) for r, s in sorted(starts.items())]
    assert got == want and {row[2] for row in got} == {1}
    assert query(fixture_out, "SELECT count(*) FROM trace_health") == [(0,)]


def test_fixture_size_stats(fixture_out: Path):
    assert query(fixture_out, "SELECT rank, collective_type, message_bytes, instances, avg_ns, "
                              "bus_bandwidth_bytes_per_second FROM collective_size_stats WHERE rank = 1 ORDER BY ALL") == [
        (1, "AllGather", 8192 * 2, 1, 20_000.0, 16384 / 20e-6 * 0.5),
        (1, "AllReduce", 1_048_576 * 4, 1, 400_000.0, 4_194_304 / 400e-6 * 1.0),
        (1, "Broadcast", 53 * 8, 1, 8_000.0, 424 / 8e-6)]


def test_real_nccl_trace_collectives_and_overlap(tmp_path: Path):
    """HTA's nccl_parser_config trace (rank 0 of 2, NCCL 2.17): args copied onto the kernels."""
    path = realdata("HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz")
    run(path, tmp_path / "out")
    trace = _load(path)
    _check_collectives(tmp_path / "out", {0: trace})
    _check_overlap(tmp_path / "out", {0: trace})
    # the six record_param_comms `wait` ops (group size 1) have no kernel: timed by the op, no bandwidth
    assert query(tmp_path / "out", "SELECT name, count(*), count(bus_bandwidth_bytes_per_second) FROM collective_exec "
                                   "WHERE timed_by = 'cpu_op' GROUP BY name") == [("wait", 6, 0)]


def test_real_two_rank_traces_straggler_by_order_of_occurrence(tmp_path: Path):
    """HTA's trace_filter pair (ranks 0 and 1 of 128): NCCL SendRecv kernels without collective args, matched across
    ranks by order of occurrence; the last arrival and the waits from the raw kernels."""
    folder = realdata("HolisticTraceAnalysis/tests/data/trace_filter")
    run(folder, tmp_path / "out")
    starts = {}
    for rank in (0, 1):
        trace = _load(folder / f"sampled_rank-{rank}.json.gz")
        kernels = sorted(_ns(trace, e["ts"]) for e in trace["traceEvents"]
                         if e.get("cat") == "kernel" and e["name"].startswith("nccl"))
        for i, start in enumerate(kernels):
            starts.setdefault(i, {})[rank] = start
        _check_overlap(tmp_path / "out", {rank: trace})
    got = query(tmp_path / "out", "SELECT occurrence, rank, last_rank, wait_ns, slow_test FROM collective_straggler "
                                  "ORDER BY occurrence, rank")
    want = [(i, r, max(s, key=s.get), max(s.values()) - s[r], "send_recv") for i, s in sorted(starts.items()) for r in sorted(s)]
    assert got == want and len(got) == 20


def _instances(durations: list[int], name="allreduce", seq=1) -> list[dict]:
    return [{"rank": r, "name": name, "dtype": "Float", "element_bytes": 4, "in_nelems": 1000, "out_nelems": 1000,
             "group_size": len(durations), "group_name": "0", "group_seq": seq, "timed_by": "kernel", "args_from": "kernel",
             "kernel_name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "stream_id": 20, "event_index": seq,
             "start_ns": 10_000 - d, "dur_ns": d} for r, d in enumerate(durations)]


def test_straggler_dixon_flags_the_shortest_collective():
    # 5 ranks: sorted 100, 500, 510, 520, 530 -> r10 = (500 - 100) / (530 - 100) = 0.9302 > 0.821 (n = 5): rank 0
    rows = model_rows({"collective_event": _instances([100, 500, 510, 520, 530])}, "collective_straggler")
    assert [(r["rank"], r["slow_test"], r["is_slow"], r["is_last_arrival"]) for r in rows] == [
        (0, "dixon", True, True), (1, "dixon", False, False), (2, "dixon", False, False), (3, "dixon", False, False),
        (4, "dixon", False, False)]
    assert rows[0]["q_value"] == pytest.approx(400 / 430) and rows[0]["q_critical"] == 0.821
    assert [r["wait_ns"] for r in rows] == [0, 400, 410, 420, 430]
    # 400, 500, 510, 520, 530: r10 = 100 / 130 = 0.769 < 0.821: nobody
    rows = model_rows({"collective_event": _instances([400, 500, 510, 520, 530])}, "collective_straggler")
    assert not any(r["is_slow"] for r in rows) and rows[0]["q_value"] == pytest.approx(100 / 130)
    # 14 ranks use r22 = (x3 - x1) / (x12 - x1): 100, 101, 800, 810, ... -> (800 - 100) / (x12 - 100)
    durations = [100, 101] + [800 + 10 * i for i in range(12)]
    rows = model_rows({"collective_event": _instances(durations)}, "collective_straggler")
    assert rows[0]["q_value"] == pytest.approx(700 / (sorted(durations)[11] - 100)) and rows[0]["q_critical"] == 0.674
    assert [r["rank"] for r in rows if r["is_slow"]] == [0]
    # 3 distinct values or fewer: no test
    rows = model_rows({"collective_event": _instances([100, 500, 500, 510])}, "collective_straggler")
    assert {r["slow_test"] for r in rows} == {"too_few_values"}


def test_straggler_three_sigma_beyond_100_ranks():
    durations = [1000 + (i % 7) for i in range(120)]
    durations[17] = 10
    rows = model_rows({"collective_event": _instances(durations)}, "collective_straggler")
    assert {r["slow_test"] for r in rows} == {"three_sigma"}
    assert [r["rank"] for r in rows if r["is_slow"]] == [17]


def test_straggler_skips_a_group_with_unequal_counts():
    rows = _instances([100, 500, 510, 520, 530]) + _instances([100, 500, 510, 520], seq=2)
    got = model_rows({"collective_event": rows}, "collective_straggler")
    assert {r["slow_test"] for r in got} == {"unequal_counts"} and not any(r["is_slow"] for r in got)


# --- damage to the collective args: never silently changed --------------------------------------------------------

_GOOD = {"Collective name": "allreduce", "dtype": "Float", "In msg nelems": 1024, "Out msg nelems": 1024,
         "Group size": 2, "Process Group Name": "0", "Seq": 4}
_INTEGER_KEYS = ("In msg nelems", "Out msg nelems", "Group size", "Seq")
_BAD = st.one_of(st.text(max_size=5), st.floats(allow_nan=False, allow_infinity=False), st.integers(-2**70, -1),
                 st.integers(2**58 + 1, 2**70), st.lists(st.integers(0, 3), max_size=2), st.none(), st.just(0))


def _trace(args: dict, missing: set[str]) -> dict:
    kept = {k: v for k, v in args.items() if k not in missing}
    return {"baseTimeNanoseconds": 1_727_740_800_000_000_000, "distributedInfo": {"rank": 0, "world_size": 2},
            "traceEvents": [
                {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 10, "dur": 50,
                 "args": {"External id": 7, **kept}},
                {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 20, "dur": 5,
                 "args": {"External id": 7, "correlation": 99}},
                {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0, "tid": 20,
                 "ts": 100, "dur": 40, "args": {"External id": 7, "correlation": 99, "stream": 20, "device": 0}}]}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bad=st.dictionaries(st.sampled_from(_INTEGER_KEYS + ("dtype", "Collective name")), _BAD, max_size=3),
       missing=st.sets(st.sampled_from(("dtype", "In msg nelems", "Out msg nelems", "Group size", "Seq")), max_size=2))
def test_damaged_collective_args_are_read_as_none_and_counted(tmp_path_factory, bad: dict, missing: set[str]):
    folder = tmp_path_factory.mktemp("damaged")
    path = folder / "rank-0.pt.trace.json"
    args = {**_GOOD, **bad}
    path.write_text(json.dumps(_trace(args, missing)))
    warnings = []
    source = discover(path)[0]
    tables = {}
    for name, table in kineto.read(source, lambda message, **kw: warnings.append(kw)):
        tables.setdefault(name, []).extend(table.to_pylist())
    [row] = tables["collective_event"]
    columns = {"Collective name": "name", "dtype": "dtype", "In msg nelems": "in_nelems", "Out msg nelems": "out_nelems",
               "Group size": "group_size", "Seq": "group_seq"}
    changed = 0
    for key, column in columns.items():
        given_value = None if key in missing else args.get(key)
        if key in _INTEGER_KEYS:
            low = 1 if key == "Group size" else 0
            valid = (type(given_value) is int and low <= given_value <= (2**58 if "nelems" in key else 2**63 - 1)
                     and (key != "Group size" or given_value <= 2**31 - 1))
        else:
            valid = isinstance(given_value, str)
        if valid:
            assert row[column] == given_value, (key, row)
        else:
            assert row[column] is None, (key, row)
            changed += given_value is not None
    repaired = sum(w["rows"] for w in warnings if w.get("action") == "repaired" and w.get("tables") == "collective_event")
    assert (repaired > 0) == (changed > 0), (warnings, row)
    incomplete = any(args.get(k) is None or k in missing for k in ("dtype", "In msg nelems", "Out msg nelems", "Group size"))
    kept = [w for w in warnings if w.get("action") == "kept" and w.get("check") == "malformed_record"]
    assert bool(kept) == incomplete, (warnings, args, missing)
