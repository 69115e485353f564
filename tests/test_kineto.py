"""PyTorch profiler (Kineto) traces: streaming reader, mapping to the tables, correlations, steps, bad input.

Oracle: the trace files themselves, read here with Python's json (fixtures/kineto from
fixtures/generators/kineto.py; HolisticTraceAnalysis' and Kineto's real traces in ../shared/realdata).
"""
from __future__ import annotations

import gzip
import json
import shutil
import zlib
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from conftest import FIXTURES, assert_generator_reproduces, query, realdata, run
from fuzzing import read_damaged
from profpipe.discover import discover
from profpipe.errors import EXIT_PARTIAL, InputError
from profpipe.ingest import kineto
from profpipe.ingest.scratch import memory_database

KINETO = FIXTURES / "kineto"
BASE_NS = 1_727_740_800_000_000_000
HTA = "HolisticTraceAnalysis/tests/data"


def _load(path: Path) -> dict:
    """The trace with its numbers exact (a double cannot hold an epoch µs with its ns fraction)."""
    with (gzip.open(path) if path.suffix == ".gz" else open(path, "rb")) as handle:
        return json.load(handle, parse_float=Decimal)


def _ns(value: Decimal | int) -> int:
    return int(value * 1000)


def _kernel_totals(trace: dict, base: int = 0) -> dict[str, tuple[int, int]]:
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for event in trace["traceEvents"]:
        if event.get("ph") == "X" and event.get("cat") in ("kernel", "Kernel"):
            totals[event["name"]][0] += 1
            totals[event["name"]][1] += _ns(event["dur"])
    return {name: tuple(v) for name, v in totals.items()}


def test_generator_reproduces(tmp_path: Path):
    assert_generator_reproduces("kineto.py", KINETO, tmp_path)


def test_current_schema_tables_equal_the_trace(tmp_path: Path):
    out = run(KINETO / "current", tmp_path / "out").output
    for rank, name in ((0, "rank-0.pt.trace.json"), (1, "rank-1.pt.trace.json.gz")):
        trace = _load(KINETO / "current" / name)
        events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
        kernels = query(out, f"SELECT name, count(*), sum(dur_ns) FROM device_exec WHERE rank = {rank} AND kind = 'kernel' "
                             "GROUP BY name")
        assert {n: (c, int(s)) for n, c, s in kernels} == _kernel_totals(trace)
        stats = query(out, f"SELECT name, instances, total_ns FROM kernel_stats WHERE rank = {rank}")
        assert {n: (c, t) for n, c, t in stats} == _kernel_totals(trace)
        by_cat = defaultdict(int)
        for event in events:
            by_cat[event["cat"]] += 1
        assert query(out, f"SELECT count(*) FROM host_op WHERE rank = {rank}")[0][0] == by_cat["cpu_op"] + by_cat["user_annotation"]
        assert query(out, f"SELECT count(*) FROM host_api WHERE rank = {rank}")[0][0] == by_cat["cuda_runtime"]
        assert dict(query(out, f"SELECT kind, count(*) FROM device_exec WHERE rank = {rank} GROUP BY kind")) == \
            {"kernel": by_cat["kernel"], "memcpy": by_cat["gpu_memcpy"], "memset": by_cat["gpu_memset"]}
        first = min((e for e in events if e["cat"] == "kernel"), key=lambda e: e["ts"])
        assert query(out, f"SELECT min(start_ns) FROM device_exec WHERE rank = {rank} AND kind = 'kernel'")[0][0] == \
            BASE_NS + _ns(first["ts"])


def test_kernels_know_the_op_that_launched_them(tmp_path: Path):
    """Kineto's external correlation: a kernel's External id is the one of the op it was launched in;
    its runtime call shares its correlation id."""
    out = run(KINETO / "current", tmp_path / "out").output
    trace = _load(KINETO / "current" / "rank-0.pt.trace.json")
    ops = {e["args"]["External id"]: e["name"] for e in trace["traceEvents"] if e.get("cat") == "cpu_op"}
    launches = {e["args"]["correlation"]: e["name"] for e in trace["traceEvents"] if e.get("cat") == "cuda_runtime"}
    expected = sorted((e["name"], ops[e["args"]["External id"]], launches[e["args"]["correlation"]])
                      for e in trace["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    got = query(out, "SELECT d.name, d.op_name, a.name FROM device_exec d JOIN host_api a USING (rank, correlation) "
                     "WHERE rank = 0 ORDER BY 1, 2, 3")
    assert got == expected
    assert query(out, "SELECT DISTINCT op_attribution FROM int_device_exec") == [("source",)]
    # kernel_stats names a kernel's main op: most executions, then most kernel time (a tie here: two each)
    main: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for event in trace["traceEvents"]:
        if event.get("cat") == "kernel":
            totals = main[event["name"]][ops[event["args"]["External id"]]]
            totals[0] += 1
            totals[1] += _ns(event["dur"])
    assert query(out, "SELECT name, op_name FROM kernel_stats WHERE rank = 0 ORDER BY name") == sorted(
        (name, min(per_op, key=lambda op: (-per_op[op][0], -per_op[op][1], op))) for name, per_op in main.items())


@settings(max_examples=8, deadline=None)
@given(drop=st.sets(st.integers(0, 40), max_size=6), external_is_correlation=st.booleans())
def test_attribution_holds_when_the_external_id_is_the_correlation_id(tmp_path_factory, drop: set[int],
                                                                       external_is_correlation: bool):
    """Some Kineto versions write each launch's correlation id as its External id (HTA's trace_filter traces):
    that id names no op, or by chance one that did not launch it. A device activity's op is then the innermost
    op open on its runtime call's thread. Oracle: the op the intact trace links by External id. Runtime calls
    dropped (damage) leave their activities without an op only where no External id names one; trace_health
    counts them: as launched before the capture (kept) where their ids are below every call's left and they ran
    first on their stream, else as damaged ids (read as none, repaired: the run is partial)."""
    tmp_path = tmp_path_factory.mktemp("attribution")
    trace = json.loads((KINETO / "current" / "rank-0.pt.trace.json").read_text())
    events = trace["traceEvents"]
    ops = {e["args"]["External id"]: e["name"] for e in events
           if e.get("cat") in ("cpu_op", "user_annotation") and "External id" in e["args"]}
    device = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    expected = {e["args"]["correlation"]: ops[e["args"]["External id"]] for e in device}
    calls = [e for e in events if e.get("cat") == "cuda_runtime"]
    dropped = {calls[i]["args"]["correlation"] for i in drop if i < len(calls)}
    if external_is_correlation:
        for event in calls + device:
            event["args"]["External id"] = event["args"]["correlation"]
    trace["traceEvents"] = [e for e in events if e.get("cat") != "cuda_runtime" or e["args"]["correlation"] not in dropped]
    result = run(_bad(tmp_path, json.dumps(trace).encode()), tmp_path / "out")
    # an activity whose call is gone was launched before the capture where its id is below every call left and it
    # ran before every activity of its stream whose call is left; any other is a damaged id (read as none)
    left = [e["args"]["correlation"] for e in calls if e["args"]["correlation"] not in dropped]
    first_called = defaultdict(lambda: None)
    for e in device:
        if e["args"]["correlation"] not in dropped:
            stream, ts = e["args"]["stream"], Decimal(str(e["ts"]))
            first_called[stream] = ts if first_called[stream] is None else min(ts, first_called[stream])
    before = {e["args"]["correlation"] for e in device if e["args"]["correlation"] in dropped
              and left and e["args"]["correlation"] < min(left)
              and (first_called[e["args"]["stream"]] is None or Decimal(str(e["ts"])) <= first_called[e["args"]["stream"]])}
    damaged = (dropped & expected.keys()) - before
    unlinked = dropped if external_is_correlation else set()
    got = sorted(query(result.output, "SELECT correlation, op_name FROM device_exec WHERE kind <> 'sync'"), key=str)
    assert got == sorted(((None if c in damaged else c, None if c in unlinked else op) for c, op in expected.items()),
                         key=str)
    ledger = {(r["action"], r["rows"]) for r in result.health["rows"] if r["check_name"] == "unlinked"}
    kept = len(unlinked & before)
    assert ledger == {row for row in [("kept", kept), ("repaired", len(damaged))] if row[1]}
    assert (result.exit_code == EXIT_PARTIAL) == bool(damaged)


def test_attribution_on_a_trace_whose_external_ids_are_correlation_ids(tmp_path: Path):
    """HTA's trace_filter ranks (real, 2,258 kernels): every kernel, memcpy and memset gets the op its runtime
    call was made in. Oracle: per call, the innermost cpu_op or user_annotation on the call's thread that holds
    its start (latest start, then shortest, then the later External id: an op nested in one of the same span is
    recorded after it), found here from the raw events."""
    folder = realdata("HolisticTraceAnalysis/tests/data/trace_filter")
    out = run(folder, tmp_path / "out").output
    for rank in (0, 1):
        trace = _load(folder / f"sampled_rank-{rank}.json.gz")
        events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
        spans = defaultdict(list)
        for e in events:
            if e.get("cat") in ("cpu_op", "user_annotation"):
                spans[e["tid"]].append((_ns(Decimal(str(e["ts"]))), _ns(Decimal(str(e["ts"])) + Decimal(str(e["dur"]))),
                                        e["args"]["External id"], e["name"]))
        launcher = {}
        for e in events:
            if e.get("cat") == "cuda_runtime":
                start = _ns(Decimal(str(e["ts"])))
                holding = [s for s in spans[e["tid"]] if s[0] <= start <= s[1]]
                innermost = max(holding, key=lambda s: (s[0], -s[1], s[2]), default=None)
                launcher[e["args"]["correlation"]] = innermost[3] if innermost else None
        expected = sorted((e["args"]["correlation"], launcher.get(e["args"]["correlation"])) for e in events
                          if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
        got = query(out, f"SELECT correlation, op_name FROM device_exec WHERE rank = {rank} ORDER BY 1, 2")
        assert got == expected
    assert query(out, "SELECT count(*), count(op_name) FROM device_exec WHERE kind = 'kernel'") == [(2258, 2258)]


def test_steps_and_their_fp_bp_points(tmp_path: Path):
    """Per step (fixtures/generators/kineto.py): the DataLoader annotation ends at 1.0 ms, aten::to copies the
    batch, aten::linear (the first op autograd records) starts at 2.0 ms, the backward engine event ends at
    6.0 ms, the step at 10 ms: gap 2.0, fp+bp 4.0, tail 4.0 ms."""
    out = run(KINETO / "current", tmp_path / "out").output
    rows = query(out, "SELECT rank, step, iteration_interval_ns, fp_and_bp_ns, tail_ns, fp_op, bp_op FROM step_phases "
                      "ORDER BY rank, step")
    assert rows == [(rank, step, 2_000_000, 4_000_000, 4_000_000, "aten::linear",
                     "autograd::engine::evaluate_function: AddmmBackward0") for rank in (0, 1) for step in (1, 2)]


def test_2021_schema(tmp_path: Path):
    """Operator / Runtime / Kernel / Memcpy / Memset, lower-case 'external id', absolute µs, no distributedInfo:
    a lone trace is rank 0."""
    out = run(KINETO / "v2021", tmp_path / "out").output
    trace = _load(KINETO / "v2021" / "worker0.pt.trace.json")
    assert query(out, "SELECT rank, layout, clock FROM run_info") == [(0, "kineto", "unix_epoch")]
    assert {n: (c, int(t)) for n, c, t in query(out, "SELECT name, count(*), sum(dur_ns) FROM device_exec "
                                                      "WHERE kind = 'kernel' GROUP BY name")} == _kernel_totals(trace)
    assert query(out, "SELECT count(*) FROM device_exec WHERE op_name IS NULL") == [(0,)]
    assert query(out, "SELECT DISTINCT stream_id FROM device_exec") == [(7,)]
    assert query(out, "SELECT count(*) FROM step_phases") == [(2,)]


def test_rank_from_the_file_name_and_a_missing_rank_named(tmp_path: Path):
    folder = tmp_path / "traces"
    folder.mkdir()
    trace = (KINETO / "v2021" / "worker0.pt.trace.json").read_text()
    (folder / "trainer-rank_3.json").write_text(trace)
    (folder / "trainer.json").write_text(trace)
    result = run(folder, tmp_path / "out")
    assert result.ranks == [3]
    assert [s["error"] for s in result.skipped] == [
        f"{folder / 'trainer.json'}: cannot tell its rank: no distributedInfo.rank in the trace and no rank in the "
        "file name (rank-<n>, worker<n>); name the files by rank, or pass --rank-map FILE with a line "
        "'<path or glob> <rank>' per trace (paths relative to the input)"]


def _memory_in_use(trace: dict) -> dict[tuple[int, int], tuple[int, int, int, int, int]]:
    """Per (Device Type, Device Id): allocations, frees, bytes allocated, the most in use and the end, from the
    trace's "[memory]" instants in file order (Total Allocated where present, else the running sum)."""
    result: dict[tuple[int, int], list[int]] = {}
    for event in trace["traceEvents"]:
        if event.get("ph") != "i" or event.get("name") != "[memory]":
            continue
        args = event["args"]
        key = (args["Device Type"], args["Device Id"])
        allocations, frees, allocated, peak, in_use = result.get(key, [0, 0, 0, None, 0])
        size = int(args["Bytes"])
        in_use = args.get("Total Allocated", in_use + size)
        result[key] = [allocations + (size > 0), frees + (size < 0), allocated + max(size, 0),
                       in_use if peak is None else max(peak, in_use), in_use]
    return {key: tuple(values) for key, values in result.items()}


@pytest.mark.parametrize("folder, relative", [("current", False), ("v2021", True)])
def test_memory_events(folder: str, relative: bool, tmp_path: Path):
    out = run(KINETO / folder, tmp_path / "out").output
    trace = _load(next((KINETO / folder).glob("*0.pt.trace.json")))
    got = query(out, "SELECT device_type, device_id, allocations, frees, allocated_bytes, peak_in_use_bytes, "
                     "end_in_use_bytes, in_use_from_trace_start FROM memory_stats WHERE rank = 0")
    types = {"cpu": 0, "cuda": 1}
    assert {(types[t], d): tuple(v) for t, d, *v, _ in got} == _memory_in_use(trace)
    assert {row[-1] for row in got} == {relative}
    # by hand: per step +1 MiB, +4 KiB, +8 KiB, -4 KiB, -1 MiB on CUDA; the peak is step 2's +8 KiB at 4.05 ms,
    # on top of the 10 MiB in use before the trace where the trace says so
    cuda = query(out, "SELECT peak_in_use_bytes, peak_ts_ns - (SELECT min(start_ns) FROM step_phases WHERE rank = 0), "
                      "peak_reserved_bytes FROM memory_stats WHERE rank = 0 AND device_type = 'cuda'")
    before = 0 if relative else 10 << 20
    assert cuda == [(before + 8192 + (1 << 20) + 4096 + 8192, 10_000_000 + 4_050_000, None if relative else 32 << 20)]
    summary = json.loads((out / "reports" / "summary.json").read_text())["ranks"][0]["memory"]
    assert [(m["device_type"], m["peak_in_use_bytes"], m["in_use_from_trace_start"]) for m in summary] == [
        ("cpu", 64, relative), ("cuda", cuda[0][0], relative)]


def test_memory_events_of_a_real_2021_trace(tmp_path: Path):
    folder = realdata("kineto/tb_plugin/samples/resnet50_num_workers_0")
    work = tmp_path / "in"
    work.mkdir()
    path = sorted(folder.iterdir())[0]
    shutil.copy(path, work / path.name)
    out = run(work, tmp_path / "out").output
    got = query(out, "SELECT device_type, device_id, allocations, frees, allocated_bytes, peak_in_use_bytes, "
                     "end_in_use_bytes FROM memory_stats")
    types = {"cpu": 0, "cuda": 1}
    assert {(types[t], d): tuple(v) for t, d, *v in got} == _memory_in_use(_load(work / path.name))


# --- bad input -------------------------------------------------------------------------------------

def _bad(tmp_path: Path, text: bytes, name: str = "rank-0.pt.trace.json") -> Path:
    folder = tmp_path / "bad"
    folder.mkdir(exist_ok=True)
    (folder / name).write_bytes(text)
    return folder


def test_truncated_trace_keeps_its_complete_events(tmp_path: Path):
    """A crashed job: the file stops inside an event. The events before it are read; the warning says where."""
    text = (KINETO / "current" / "rank-0.pt.trace.json").read_bytes()
    cut = text.index(b'"cat": "kernel"', len(text) // 2)  # inside a kernel event
    result = run(_bad(tmp_path, text[:cut]), tmp_path / "out")
    complete = json.loads(text[:text.rindex(b"}", 0, text.rindex(b"{", 0, cut)) + 1].decode()
                          .split('"traceEvents": ', 1)[1] + "]")
    kernels = sum(1 for e in complete if e.get("cat") == "kernel")
    assert query(result.output, "SELECT count(*) FROM device_exec WHERE kind = 'kernel'") == [(kernels,)]
    warnings = json.loads((result.output / "manifest.json").read_text())["warnings"]
    assert any("the trace is cut short at byte" in w and "incomplete last one is lost" in w for w in warnings), warnings


def test_truncated_gzip_trace_keeps_its_complete_events(tmp_path: Path):
    """A gzip trace whose writer crashed: the blocks it holds are inflated and read as a truncated trace."""
    text = (KINETO / "current" / "rank-0.pt.trace.json").read_bytes()
    packed = gzip.compress(text)
    inflater = zlib.decompressobj(wbits=31)
    held = inflater.decompress(packed[:len(packed) // 2])  # what the first half of the file holds
    result = run(_bad(tmp_path, packed[:len(packed) // 2], "rank-0.pt.trace.json.gz"), tmp_path / "out")
    complete = json.loads(held[:held.rindex(b"}", 0, held.rindex(b"{")) + 1].decode()
                          .split('"traceEvents": ', 1)[1] + "]")
    assert query(result.output, "SELECT count(*) FROM host_op") == [
        (sum(1 for e in complete if e.get("cat") in ("cpu_op", "user_annotation")),)]
    warnings = json.loads((result.output / "manifest.json").read_text())["warnings"]
    assert any("the gzip file stops before its end" in w for w in warnings), warnings
    assert any("the trace is cut short at byte" in w for w in warnings), warnings


def test_gzip_of_several_members_is_read_whole(tmp_path: Path):
    """gzip allows members back to back (`cat a.gz b.gz`); each is inflated in turn."""
    text = (KINETO / "current" / "rank-0.pt.trace.json").read_bytes()
    cut = len(text) // 3
    packed = gzip.compress(text[:cut]) + gzip.compress(text[cut:])
    result = run(_bad(tmp_path, packed, "rank-0.pt.trace.json.gz"), tmp_path / "out", strict=True)
    events = json.loads(text)["traceEvents"]
    assert query(result.output, "SELECT count(*) FROM host_op") == [
        (sum(1 for e in events if e.get("cat") in ("cpu_op", "user_annotation")),)]
    assert json.loads((result.output / "manifest.json").read_text())["warnings"] == []


def _corrupt(data: bytes) -> bytes:
    """The gzip file with a run of its compressed bytes overwritten (a corrupt block or checksum)."""
    middle = len(data) // 2
    return data[:middle] + bytes(64) + data[middle + 64:]


@pytest.mark.parametrize("mangle, message", [
    (lambda t: b"", "empty file"),
    (lambda t: b"{\"schemaVersion\": 1}\n", "no \"traceEvents\" array"),
    (lambda t: t.replace(b'"traceEvents": [', b'"traceEvents": [\n  {"ph": "X", "cat": "cpu_op"},,', 1),
     "its events cannot be parsed"),
    (lambda t: _corrupt(gzip.compress(t)), "cannot be read to the end"),
])
def test_broken_traces_are_named(mangle, message: str, tmp_path: Path):
    text = (KINETO / "current" / "rank-0.pt.trace.json").read_bytes()
    name = "rank-0.pt.trace.json.gz" if message == "cannot be read to the end" else "rank-0.pt.trace.json"
    folder = _bad(tmp_path, mangle(text), name)
    with pytest.raises(InputError, match=message) as error:
        run(folder, tmp_path / "out", strict=True)
    assert str(folder / name) in str(error.value)


def test_events_without_or_with_negative_durations_are_counted(tmp_path: Path):
    trace = json.loads((KINETO / "current" / "rank-0.pt.trace.json").read_text())
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    del kernels[0]["dur"]
    kernels[1]["dur"] = -5
    result = run(_bad(tmp_path, json.dumps(trace).encode()), tmp_path / "out")
    ledger = {(r["check_name"], r["action"]): r["rows"] for r in result.health["rows"]}
    assert ledger[("malformed_record", "dropped")] == 1  # no duration
    assert ledger[("negative_duration", "dropped")] == 1
    assert query(result.output, "SELECT count(*) FROM device_exec WHERE kind = 'kernel'") == [(len(kernels) - 2,)]


# --- real traces -----------------------------------------------------------------------------------

@pytest.mark.parametrize("relative", [
    f"{HTA}/trace_filter", f"{HTA}/nccl_parser_config", f"{HTA}/ns_resolution_trace",
    "kineto/tb_plugin/samples/resnet50_num_workers_4"])
def test_real_traces_kernel_totals(relative: str, tmp_path: Path):
    folder = realdata(relative)
    work = tmp_path / "in"
    shutil.copytree(folder, work)
    files = sorted(p for p in work.iterdir() if p.name.endswith((".json", ".json.gz")))
    result = run(work, tmp_path / "out")
    assert result.skipped == []  # several profiling cycles of one rank: each is a capture (file order)
    captures: dict[int, int] = {}
    for path in files:
        trace = _load(path)
        rank = (trace.get("distributedInfo") or {}).get("rank", 0)
        capture = captures[rank] = captures.get(rank, -1) + 1
        base = int(trace.get("baseTimeNanoseconds") or 0)
        got = query(result.output, f"SELECT name, count(*), sum(dur_ns) FROM device_exec WHERE rank = {rank} "
                                   f"AND capture = {capture} AND kind = 'kernel' GROUP BY name")
        assert {n: (c, int(t)) for n, c, t in got} == _kernel_totals(trace, base)


def test_real_trace_fp_point_is_the_first_forward_op(tmp_path: Path):
    result = run(realdata(f"{HTA}/ns_resolution_trace"), tmp_path / "out")
    assert query(result.output, "SELECT DISTINCT fp_op FROM step_phases") == [("aten::conv2d",)]
    assert query(result.output, "SELECT count(*) FROM step_phases") == [(5,)]


def test_fp_point_override(tmp_path: Path):
    out = run(KINETO / "current", tmp_path / "out", fp_op="aten::relu").output
    assert set(query(out, "SELECT iteration_interval_ns, fp_op FROM step_phases")) == {(3_100_000, "aten::relu")}


def _operator_view(trace: dict) -> dict[str, tuple[int, int, int, int, int]]:
    """The Operator view computed here with a stack per thread: per op name, calls, host total, host self,
    device self, device total (ns). Nesting as PyTorch's EventList builds it: sorted by start (longest first),
    an op is popped once a later op starts at or after its end or ends after it."""
    base = int(trace.get("baseTimeNanoseconds") or 0)
    ops = sorted(((e["tid"], _ns(e["ts"]) + base, _ns(e["dur"]), e["name"], (e.get("args") or {}).get("External id"))
                  for e in trace["traceEvents"]
                  if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation") and e.get("dur", -1) >= 0),
                 key=lambda o: (o[0], o[1], -o[2], o[4] if o[4] is not None else -1, o[3]))
    device = defaultdict(int)
    for e in trace["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset", "cuda_sync") and "dur" in e:
            device[(e.get("args") or {}).get("External id")] += _ns(e["dur"])
    rows = [{"name": name, "dur": dur, "child": 0, "self_dev": device.get(ext, 0) if ext is not None else 0,
             "total_dev": 0} for _, _, dur, name, ext in ops]
    stack: list[int] = []
    previous_tid = None
    for index, (tid, start, dur, _, _) in enumerate(ops):
        if tid != previous_tid:
            stack, previous_tid = [], tid
        while stack and (start >= ops[stack[-1]][1] + ops[stack[-1]][2]
                         or start + dur > ops[stack[-1]][1] + ops[stack[-1]][2]):
            stack.pop()
        if stack:
            rows[stack[-1]]["child"] += dur
        for ancestor in stack:
            rows[ancestor]["total_dev"] += rows[index]["self_dev"]
        rows[index]["total_dev"] += rows[index]["self_dev"]
        stack.append(index)
    view: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    for row in rows:
        entry = view[row["name"]]
        entry[0] += 1
        entry[1] += row["dur"]
        entry[2] += row["dur"] - row["child"]
        entry[3] += row["self_dev"]
        entry[4] += row["total_dev"]
    return {name: tuple(v) for name, v in view.items()}


def test_operator_view_self_and_total_times(tmp_path: Path):
    """Worked example (fixtures/generators/kineto.py): ProfilerStep#1 holds 5.79 ms of ops, so 4.21 ms self;
    aten::linear 1.0 ms holds aten::addmm 0.8 ms, so 0.2 ms self, and owns addmm's kernel as device total."""
    out = run(KINETO / "current", tmp_path / "out").output
    rows = {r[0]: r[1:] for r in query(out, "SELECT op_name, calls, host_total_ns, host_self_ns, device_self_ns, "
                                            "device_total_ns FROM host_op_stats WHERE rank = 0")}
    assert rows == _operator_view(_load(KINETO / "current" / "rank-0.pt.trace.json"))
    assert rows["ProfilerStep#1"][2] == 4_210_000 and rows["aten::linear"][2] == 2 * 200_000


def test_operator_view_on_a_real_trace(tmp_path: Path):
    folder = realdata(f"{HTA}/ns_resolution_trace")
    out = run(folder, tmp_path / "out").output
    rows = {r[0]: r[1:] for r in query(out, "SELECT op_name, calls, host_total_ns, host_self_ns, device_self_ns, "
                                            "device_total_ns FROM host_op_stats")}
    expected = _operator_view(_load(next(folder.iterdir())))
    assert rows == expected


def test_step_gpu_time(tmp_path: Path):
    """Per step (fixtures/generators/kineto.py): kernels 1.5 ms + 1.234 µs x step, 0.1 ms and 1.6 ms, a 0.2 ms copy and a
    0.05 ms memset, none overlapping; launch delays 50, 100, 750, 100 and 50 µs; DataLoader 0.99 ms, forward from
    2.0 to 4.0 ms, backward from 4.0 to 6.0 ms, optimizer 1.0 ms. The step's GPU window (no copies of the steps on
    the device here): what it launched, from the copy's start at 1.2 ms to the memset's end at 7.75 ms."""
    out = run(KINETO / "current", tmp_path / "out").output
    rows = query(out, "SELECT step, compute_ns, communication_ns, memcpy_ns, memset_ns, busy_ns, idle_ns, kernels, "
                      "launch_delay_avg_ns, launch_delay_max_ns, dataloader_ns, forward_ns, backward_ns, optimizer_ns "
                      "FROM step_gpu_time WHERE rank = 0 ORDER BY step")
    expected = []
    for step in (1, 2):
        compute = 1_500_000 + 1_234 * step + 100_000 + 1_600_000
        busy = compute + 200_000 + 50_000
        expected.append((step, compute, 0, 200_000, 50_000, busy, 7_750_000 - 1_200_000 - busy, 5, 210_000, 750_000,
                         990_000, 2_000_000, 2_000_000, 1_000_000))
    assert rows == expected


def test_nccl_kernels_are_communication(tmp_path: Path):
    """A real NCCL trace: every step runs NCCL kernels, and the parts of a step's GPU window fit in it."""
    out = run(realdata(f"{HTA}/nccl_parser_config"), tmp_path / "out").output
    rows = query(out, "SELECT communication_ns, overlapped_communication_ns, compute_ns, busy_ns, idle_ns, gpu_window_ns "
                      "FROM step_gpu_time")
    assert rows and all(0 < comm <= busy and overlapped <= min(comm, compute) and compute <= busy
                        and busy + idle == window for comm, overlapped, compute, busy, idle, window in rows)


# --- Paddle's exporter (fixtures/paddle) -----------------------------------------------------------

PADDLE = FIXTURES / "paddle"


def test_paddle_generator_reproduces(tmp_path: Path):
    assert_generator_reproduces("paddle.py", PADDLE, tmp_path)


def test_paddle_trace(tmp_path: Path):
    """fixtures/generators/paddle.py, worked by hand: names without "[x ms]", kernels under the op their launch was
    made in, steps from ProfileStep#N with FP at the Forward span (2.0 ms) and BP at the end of Backward (6.0 ms),
    Forward 1.4 ms of which linear 1.0 and relu 0.3 are nested, so 0.1 ms self."""
    out = run(PADDLE, tmp_path / "out").output
    assert query(out, "SELECT rank, framework, device_type FROM run_info") == [(0, "paddle", "gpu")]
    assert query(out, "SELECT DISTINCT name, op_name FROM device_exec ORDER BY 1, 2") == [
        ("Memcpy HtoD", "memcpy_h2d"), ("Memset", "fill_constant"), ("relu_kernel", "relu"),
        ("volta_sgemm_64x64_nn", "matmul_v2"), ("volta_sgemm_64x64_nn", "matmul_v2_grad")]
    assert query(out, "SELECT step, iteration_interval_ns, fp_and_bp_ns, tail_ns, fp_op FROM step_phases ORDER BY step") == \
        [(1, 2_000_000, 4_000_000, 4_000_000, "Forward"), (2, 2_000_000, 4_000_000, 4_000_000, "Forward")]
    assert query(out, "SELECT calls, host_total_ns, host_self_ns, device_total_ns FROM host_op_stats "
                      "WHERE op_name = 'Forward'") == [(2, 2_800_000, 200_000, 2 * 1_600_000 + 1_000 * 3)]
    assert query(out, "SELECT step, dataloader_ns, forward_ns, backward_ns, optimizer_ns, launch_delay_max_ns "
                      "FROM step_gpu_time ORDER BY step") == \
        [(step, 990_000, 1_400_000, 2_000_000, 1_000_000, 750_000) for step in (1, 2)]
    assert query(out, "SELECT count(*) FROM host_api WHERE tid = 4242 AND correlation IS NOT NULL") == [(10,)]


def test_repeated_ids_do_not_multiply_activities(tmp_path: Path):
    """Traces stitched from copies repeat correlation and External ids: each activity still appears once and
    belongs to the op of its own copy (the last one with its id started before it)."""
    trace = json.loads((KINETO / "current" / "rank-0.pt.trace.json").read_text())
    second = [dict(e, ts=round(e["ts"] + 1_000_000, 3)) if "ts" in e else e for e in trace["traceEvents"]]
    trace["traceEvents"] += second
    out = run(_bad(tmp_path, json.dumps(trace).encode()), tmp_path / "out").output
    devices = sum(1 for e in trace["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    assert query(out, "SELECT count(*) FROM device_exec") == [(devices,)]
    assert query(out, "SELECT count(*) FROM device_exec d JOIN host_op h ON h.rank = d.rank AND h.op_index = d.op_index "
                      "WHERE d.start_ns < h.start_ns OR d.start_ns > h.start_ns + 10_000_000") == [(0,)]


@pytest.mark.parametrize("mangle, warning", [
    (lambda t: t[:t.rindex(b"]")].rstrip() + b",\n" + t[t.rindex(b"]"):], "a comma follows its last event"),
    (lambda t: t[:t.rindex(b"]")] + t[t.rindex(b"]") + 1:], "its event array is not closed"),
])
def test_trailing_comma_and_missing_bracket_keep_every_event(mangle, warning: str, tmp_path: Path):
    text = (KINETO / "current" / "rank-0.pt.trace.json").read_bytes()
    text = text.replace(b',\n "INFO"', b"\n}\n").split(b"\n}\n")[0] + b"\n}\n"  # the array is the last member
    result = run(_bad(tmp_path, mangle(text)), tmp_path / "out")
    kernels = sum(1 for e in json.loads(text)["traceEvents"] if e.get("cat") == "kernel")
    assert query(result.output, "SELECT count(*) FROM device_exec WHERE kind = 'kernel'") == [(kernels,)]
    warnings = json.loads((result.output / "manifest.json").read_text())["warnings"]
    assert any(warning in w for w in warnings), warnings


def test_timeline_has_the_runtime_calls_and_the_memory_in_use(tmp_path: Path):
    out = run(KINETO / "current", tmp_path / "out").output
    events = json.loads((out / "timeline" / "trace.json").read_text())["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    calls = [e for e in events if names.get(e["pid"]) == "rank 0" and e["ph"] == "X" and e["cat"] == "cuda_runtime"]
    assert len(calls) == query(out, "SELECT count(*) FROM host_api WHERE rank = 0")[0][0] == 10
    assert {threads[e["pid"], e["tid"]] for e in calls} <= {t for t in threads.values() if t.startswith("Host: Thread ")}
    counters = [e for e in events if names.get(e["pid"]) == "rank 0" and e["ph"] == "C"]
    # the memory in use, and the bandwidth of the trace's copies and sets (memory_bandwidth_series)
    assert {e["name"] for e in counters} == {"Memory in use cuda:0", "Memory in use cpu", "Memory bandwidth HtoD",
                                             "Memory bandwidth memset"}
    # the last CUDA counter is what is in use at the end: 10 MiB before the trace and 8 KiB kept per step
    last = max((e for e in counters if e["name"].endswith("cuda:0")), key=lambda e: e["ts"])
    assert last["args"]["bytes"] == (10 << 20) + 2 * 8192


def test_array_end_found_past_look_alikes_inside_events_and_after_the_array(tmp_path: Path):
    """Events whose args end in `}]` or `[]` followed by more members, and members after the array that
    hold arrays of objects: the array ends at the first bracket followed by nothing but members."""
    events = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": 1000 * i, "dur": 10,
               "args": {"Input Dims": [[], [2]], "shapes": [{"n": i}], "External id": i}} for i in range(3)]
    text = json.dumps({"schemaVersion": 1, "traceEvents": events, "extra": [{"list": [[]]}], "traceName": "t"})
    folder = _bad(tmp_path, text.encode())
    result = run(folder, tmp_path / "out", strict=True)
    assert query(result.output, "SELECT count(*) FROM host_op") == [(3,)]
    assert query(result.output, "SELECT metadata_json->>'traceName' FROM run_info") == [("t",)]


_JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                            max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(events=st.lists(st.dictionaries(st.sampled_from(["args", "dims", "x"]), _JSON_VALUES, max_size=3), max_size=4),
       before=st.sampled_from(["", " ", "\n  ", " " * 300]), comma=st.booleans(), after=st.sampled_from(["", "\n", " \t"]),
       members=st.dictionaries(st.text(max_size=6), _JSON_VALUES, max_size=3))
def test_the_array_end_is_the_first_bracket_followed_by_members_only(events, before, comma, after, members):
    """Whatever the events and the members after the array hold (arrays of objects, empty arrays, brackets in
    strings), and however much space and a trailing comma come before the bracket, the bracket that closes the
    array is found and the members after it are returned whole."""
    from profpipe.ingest.trace_object import _array_end

    array = "[" + ", ".join(json.dumps(e) for e in events) + ("," if comma and events else "") + before
    rest = "".join(f", {json.dumps(k)}: {json.dumps(v)}" for k, v in members.items())
    tail = (array + "]" + after + rest + "}\n").encode()
    position, trailer = _array_end(tail)
    assert position == len(array.encode())
    assert json.loads(b"{" + trailer + b"}") == members


def test_a_large_plain_trace_is_read_whole(tmp_path: Path):
    """Over 32 MiB in whole µs: the middle of the array is copied by the kernel, its head and tail in Python."""
    events = [{"ph": "X", "cat": "kernel", "name": f"kernel_{i % 7}", "pid": 0, "tid": 7, "ts": 1_000 + 10 * i,
               "dur": 5 + i % 3, "args": {"correlation": i, "stream": 7, "device": 0, "padding": "x" * 120}}
              for i in range(240_000)]
    text = json.dumps({"schemaVersion": 1, "traceEvents": events, "traceName": "big"}).encode()
    assert len(text) > 40 << 20  # the head and tail Python reads are 16 MiB each
    result = run(_bad(tmp_path, text), tmp_path / "out", strict=True)
    expected: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for event in events:
        expected[event["name"]][0] += 1
        expected[event["name"]][1] += event["dur"] * 1000
    got = query(result.output, "SELECT name, count(*), sum(dur_ns) FROM device_exec GROUP BY name")
    assert {n: [c, int(t)] for n, c, t in got} == dict(expected)
    assert query(result.output, "SELECT metadata_json->>'traceName' FROM run_info") == [("big",)]


_TWO_OPS = ('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": FIRST_TS, "dur": 5 '
            'EXTRA}, {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 20, "dur": 5}]}')


@pytest.mark.parametrize("first_ts, extra, name, ops, warning", [
    ("10", ', "dur": 7', "a", [("a", 5000), ("b", 5000)],
     'an event repeats a key (JSON transform error, in record/value 1: Object {"ph":"X"'),
    ("123456789012345678901234567890", "", "a", [("b", 5000)],
     "1 events whose start time or duration is beyond ±146 years of ns are left out"),
    ("10", "", "a\udcff\udcfe", [("a\ufffd\ufffd", 5000), ("b", 5000)],
     "2 byte sequences that are not UTF-8 are read as U+FFFD"),
], ids=["duplicate key", "huge integer", "not UTF-8"])
def test_duplicate_keys_huge_integers_and_bad_utf8(first_ts: str, extra: str, name: str, ops: list, warning: str,
                                                    tmp_path: Path):
    text = _TWO_OPS.replace("FIRST_TS", first_ts).replace("EXTRA", extra).replace('"a"', f'"{name}"')
    result = run(_bad(tmp_path, text.encode("utf-8", errors="surrogateescape")), tmp_path / "out")
    assert query(result.output, "SELECT op_name, dur_ns FROM host_op ORDER BY op_name") == ops
    assert result.health["partial"]  # a value dropped or rewritten: the ledger says so
    warnings = json.loads((result.output / "manifest.json").read_text())["warnings"]
    assert any(warning in w for w in warnings), warnings


def test_cpu_only_trace(tmp_path: Path):
    """A trace of a CPU run (no device events): host ops, steps and op statistics, no GPU marts."""
    trace = json.loads((KINETO / "current" / "rank-0.pt.trace.json").read_text())
    trace["traceEvents"] = [e for e in trace["traceEvents"] if e.get("cat") in ("cpu_op", "user_annotation")]
    result = run(_bad(tmp_path, json.dumps(trace).encode()), tmp_path / "out", strict=True)
    assert query(result.output, "SELECT device_type FROM run_info") == [("cpu",)]
    assert query(result.output, "SELECT count(*) FROM step_phases") == [(2,)]
    assert query(result.output, "SELECT count(*) FROM step_gpu_time") == [(0,)]
    assert query(result.output, "SELECT sum(calls)::BIGINT FROM host_op_stats") == [(len(trace["traceEvents"]),)]


def test_other_accelerators_runtime_calls(tmp_path: Path):
    """Kineto's XPU / MTIA / PrivateUse1 runtime categories are runtime calls, linked to their kernels like CUDA's."""
    trace = json.loads((KINETO / "current" / "rank-0.pt.trace.json").read_text())
    for event in trace["traceEvents"]:
        if event.get("cat") == "cuda_runtime":
            event["cat"] = "xpu_runtime"
    result = run(_bad(tmp_path, json.dumps(trace).encode()), tmp_path / "out", strict=True)
    calls = sum(1 for e in trace["traceEvents"] if e.get("cat") == "xpu_runtime")
    assert query(result.output, "SELECT category, count(*) FROM host_api GROUP BY ALL") == [("xpu_runtime", calls)]
    assert query(result.output, "SELECT count(*) FROM step_gpu_time WHERE launch_delay_avg_ns IS NOT NULL") == [(2,)]


def test_mtia_trace(tmp_path: Path):
    """fixtures/kineto/mtia: MTIA's device events (`mtia_ccp_events`, no External id) are kernels linked to the
    op their `mtia_runtime` call (same correlation id) was made in, `dma_request` transfers memcpys with their
    size; its epoch µs with ns fractions (more digits than a double holds) are read exactly."""
    trace = _load(KINETO / "mtia" / "rank-0.pt.trace.json")
    events = trace["traceEvents"]
    calls = {e["args"]["correlation"]: e for e in events if e.get("cat") == "mtia_runtime"}
    ops = [e for e in events if e.get("cat") == "cpu_op"]

    def launching_op(call: dict) -> str:  # the innermost op open on the calling thread when the call starts
        holding = [o for o in ops if o["tid"] == call["tid"] and o["ts"] <= call["ts"] < o["ts"] + o["dur"]]
        return max(holding, key=lambda o: (o["ts"], -o["dur"]))["name"]

    expected = sorted(
        (_ns(e["ts"]), e["name"], "memcpy" if e["name"] == "dma_request" else "kernel", _ns(e["dur"]),
         e["args"].get("size"), launching_op(calls[e["args"]["correlation"]]) if "correlation" in e["args"] else None)
        for e in events if e.get("cat") == "mtia_ccp_events")
    assert any(start % 1000 and start % 250 for start, *_ in expected)  # a fraction a double would round
    result = run(KINETO / "mtia", tmp_path / "out", strict=True)
    assert query(result.output, "SELECT start_ns, name, kind, dur_ns, bytes, op_name FROM device_exec "
                                "ORDER BY start_ns, name") == expected
    assert query(result.output, "SELECT count(*) FROM host_api WHERE category = 'mtia_runtime'") == [(len(calls),)]


def test_real_mtia_trace_device_totals(tmp_path: Path):
    """HTA's MTIA sample (the largest real trace: 87 MB of JSON): per name, the count and total of its device
    events equal the trace's, and every launched function knows the op it was launched in."""
    folder = realdata(f"{HTA}/mtia_trace_single_rank")
    trace = _load(next(folder.iterdir()))
    expected: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for event in trace["traceEvents"]:
        if event.get("cat") == "mtia_ccp_events":
            totals = expected[event["name"]]
            totals[0] += 1
            totals[1] += _ns(event["dur"])
            totals[2] += event["args"].get("size", 0) if event["name"] == "dma_request" else 0
    result = run(folder, tmp_path / "out", strict=True)
    got = query(result.output, "SELECT name, count(*), sum(dur_ns)::BIGINT, coalesce(sum(bytes), 0)::BIGINT "
                               "FROM device_exec GROUP BY name")
    assert {n: [c, t, b] for n, c, t, b in got} == dict(expected)
    assert query(result.output, "SELECT count(*) FILTER (WHERE op_name IS NULL) FROM device_exec "
                                "WHERE kind = 'kernel'") == [(0,)]


@pytest.mark.parametrize("times, separator, first_chunk, how", [
    (["4398046511103.999"], ": ", None, "as is"),
    (["1712195495534377.850", "1712195495534390.001", "1712000000000012.345"], ": ", None, "split"),
    (["1712195495534377.850", "1712000000000012.345"], ":", None, "split"),
    (["4398046511103.999", "1712195495534377.850"], ": ", 160, "quoted"),
    (["1712999999999999.999", "1713000000000000.001"], ": ", 160, "quoted"),
    (["1712195495534377.850", "1712.5"], ": ", None, "quoted"),
    (["4658289678232.364", "4658289678300.001", "4658289678866.061"], ": ", None, "split"),
    (["4658289678232.364", "465828967823.5"], ": ", None, "quoted"),
], ids=["small", "epoch", "epoch, compact JSON", "epoch after small ones", "epoch into the next 10^12 µs",
        "a short time with the epoch's first digits", "past 2^42 since baseTimeNanoseconds (PyTorch 2.x)",
        "a shorter time that starts like the prefix"])
def test_ns_fractions_are_read_exactly(times: list[str], separator: str, first_chunk: int | None, how: str,
                                       monkeypatch, tmp_path: Path):
    """Small times with ns fractions are read as doubles (exact below 2^42 µs); longer ones (epoch µs, PyTorch 2.x's µs
    since baseTimeNanoseconds past 2^42) are split in two numbers on the copy (by the prefixes of the first events:
    the digits before the last 12); times the first events (`first_chunk`
    bytes) did not announce, or that the split got wrong, are found and the array is read again, quoted.
    (A reader-level test: no real trace mixes these clocks, and its steps would span years.)"""
    if first_chunk:
        monkeypatch.setattr("profpipe.ingest.trace_object._CHUNK", first_chunk)
    events = ", ".join(f'{{"ts"{separator}{ts}, "dur"{separator}{i}.125, "ph": "X", "cat": "cpu_op", "name": "op{i}", '
                       f'"pid": 1, "tid": 1, "args": {{"padding": "{"x" * 150}"}}}}' for i, ts in enumerate(times))
    trace = _bad(tmp_path, f'{{"traceEvents": [{events}]}}'.encode()) / "rank-0.pt.trace.json"
    with memory_database() as con:  # the reader's scratch database, with its us_to_ns macro
        assert kineto._load_events(con, trace, tmp_path, print).times == how
        assert con.execute("SELECT name, start_ns, dur_ns FROM events ORDER BY name").fetchall() == [
            (f"op{i}", _ns(Decimal(ts)), i * 1000 + 125) for i, ts in enumerate(times)]


def test_reports_are_the_same_bytes_on_every_run(tmp_path: Path):
    """Two runs on the same trace write identical reports (mart CSVs sorted, ties broken by name), so runs diff cleanly."""
    first, second = (run(KINETO / "current", tmp_path / name).output / "reports" for name in ("a", "b"))
    names = sorted(p.name for p in first.iterdir())
    assert names == sorted(p.name for p in second.iterdir()) and "kernel_stats.csv" in names
    assert [n for n in names if (first / n).read_bytes() != (second / n).read_bytes()] == []


_SHAPE = st.one_of(st.integers(-3, 2**40), st.floats(allow_nan=True), st.text(max_size=3), st.none(),
                   st.lists(st.integers(0, 2**40), max_size=3))


@settings(max_examples=25, deadline=None)
@given(first=st.lists(_SHAPE, max_size=3), second=st.lists(_SHAPE, max_size=3))
def test_flops_of_damaged_input_dims_are_none_or_pytorchs(tmp_path_factory, first: list, second: list):
    """An aten::mm whose Input Dims are damaged (wrong types, negative, huge, missing): its FLOPs are 2MKN where the
    dims are non-negative integers that give them and fit, none otherwise (a negative dim gives none, not a negative
    count); the op itself and every other table are read as
    without the damage."""
    tmp_path = tmp_path_factory.mktemp("flops")
    trace = json.loads((KINETO / "current" / "rank-0.pt.trace.json").read_text())
    op = next(e for e in trace["traceEvents"] if e.get("cat") == "cpu_op")
    op["name"] = "aten::mm"
    op["args"]["Input Dims"] = [first, second]
    host_op = read_damaged(_bad(tmp_path, json.dumps(trace).encode())).tables["host_op"].to_pylist()
    [flops] = [row["flops"] for row in host_op if row["op_name"] == "aten::mm" and row["rank"] == 0]
    ints = all(isinstance(v, list) and all(isinstance(x, int) and x >= 0 for x in v)
               or isinstance(v, int) and not isinstance(v, bool) and v >= 0
               for v in first + second) and all(isinstance(v, int) for v in first[:2] + second[1:2])
    if ints and len(first) >= 2 and len(second) >= 2 and 2 * first[0] * first[1] * second[1] < 2**63:
        assert flops == 2 * first[0] * first[1] * second[1]
    else:
        assert flops is None
    assert len(host_op) == sum(1 for e in trace["traceEvents"] if e.get("cat") in ("cpu_op", "user_annotation"))


# --- odd events: damage or legitimate, counted either way (issue 33) ---------------------------------------

def _ledger_of(result) -> dict[tuple[str, str], tuple[int, str]]:
    return {(r["check_name"], r["action"]): (r["rows"], r["message"]) for r in result.health["rows"]}


def test_a_kernel_without_a_category_is_left_out_and_counted(tmp_path: Path):
    """No cat: nothing says which table the event belongs to (real traces always have one): damage, dropped."""
    trace = json.loads((KINETO / "current" / "rank-0.pt.trace.json").read_text())
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    del kernels[0]["cat"]
    result = run(_bad(tmp_path, json.dumps(trace).encode()), tmp_path / "out")
    assert result.exit_code == 3
    assert query(result.output, "SELECT count(*) FROM device_exec WHERE kind = 'kernel'") == [(len(kernels) - 1,)]
    rows, message = _ledger_of(result)[("malformed_record", "dropped")]
    assert rows == 1 and "1 events without a category (cat)" in message


def test_a_paddle_thread_id_that_is_not_a_number_is_counted_and_kept_apart(tmp_path: Path):
    trace = json.loads((PADDLE / "worker0.paddle_trace.json").read_text())
    host = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("tid") == "4242(C++)"]
    odd = [e for e in host if e["name"].startswith("ProfileStep#1")]
    for event in odd:
        event["tid"] = "abc(C++)"
    result = run(_bad(tmp_path, json.dumps(trace).encode(), "worker0.paddle_trace.json"), tmp_path / "out")
    assert result.exit_code == 3
    rows, message = _ledger_of(result)[("malformed_record", "repaired")]
    assert rows == len(odd) == 1 and "thread id that is not a number" in message
    assert result.health["rows"][0]["example"] == "tid abc(C++)"
    # the step keeps its own thread (not merged with others under an empty id); its tid is none
    assert query(result.output, "SELECT count(*) FROM host_op WHERE tid IS NULL") == [(1,)]
    assert query(result.output, "SELECT count(*) FROM host_op") == [(len(host) - _paddle_api(host),)]


def _paddle_api(events: list[dict]) -> int:
    return sum(e.get("cat") == "CudaRuntime" for e in events)


def test_zero_length_kernels_are_legitimate_and_counted(tmp_path: Path):
    """Real traces hold 0 ns kernels (639 in Kineto's resnet50 sample: whole µs before PyTorch 2): kept, with a row."""
    trace = json.loads((KINETO / "current" / "rank-0.pt.trace.json").read_text())
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    kernels[0]["dur"] = 0
    result = run(_bad(tmp_path, json.dumps(trace).encode()), tmp_path / "out")
    assert result.exit_code == 0
    assert query(result.output, "SELECT count(*), count(*) FILTER (WHERE dur_ns = 0) FROM device_exec "
                                "WHERE kind = 'kernel'") == [(len(kernels), 1)]
    rows, message = _ledger_of(result)[("out_of_range", "kept")]
    assert rows == 1 and "1 device activities (kernel) last 0 ns" in message


def test_real_zero_length_kernels_are_counted(tmp_path: Path):
    path = realdata("kineto/tb_plugin/samples/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz")
    trace = _load(path)
    zero = sum(1 for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("dur") == 0
               and e.get("cat") in ("Kernel", "Memcpy", "Memset"))
    result = run(path, tmp_path / "out")
    assert result.exit_code == 0 and zero > 0
    assert _ledger_of(result)[("out_of_range", "kept")][0] == zero


def test_a_kernel_that_starts_before_the_one_before_it_on_its_stream_ended_is_counted(tmp_path: Path):
    trace = json.loads((KINETO / "current" / "rank-0.pt.trace.json").read_text())
    kernels = sorted((e for e in trace["traceEvents"] if e.get("cat") == "kernel"
                      and e["args"]["stream"] == 7), key=lambda e: e["ts"])
    kernels[1]["ts"] = kernels[0]["ts"] + kernels[0]["dur"] / 2  # starts while the first runs
    result = run(_bad(tmp_path, json.dumps(trace).encode()), tmp_path / "out")
    assert result.exit_code == 0
    rows, message = _ledger_of(result)[("clock", "kept")]
    assert rows == 1 and "start before the one before them on their stream ended" in message
    moved = BASE_NS + _ns(Decimal(str(kernels[1]["ts"])))  # kept as recorded
    assert query(result.output, f"SELECT count(*) FROM device_exec WHERE kind = 'kernel' AND start_ns = {moved}") == \
        [(1,)]


def _launch_trace(correlations: list[int]) -> dict:
    """One op launching two kernels on stream 7 (calls with correlation 10 and 11 at 1 and 2 µs, kernels at 30 and
    40 µs), after
    two kernels launched before the capture (correlations 3 and 4, at 10 and 20 µs: the trace holds no call of
    theirs); `correlations` are the four kernels' ids in time order."""
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5,
               "args": {"External id": 1}}]
    events += [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1 + i,
                "dur": 1, "args": {"correlation": c, "External id": 1}} for i, c in enumerate((10, 11))]
    events += [{"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": 10 + 10 * i, "dur": 5,
                "args": {"correlation": c, "stream": 7, "device": 0}} for i, c in enumerate(correlations)]
    return {"baseTimeNanoseconds": 1_727_740_800_000_000_000, "traceEvents": events}


@settings(max_examples=30, deadline=None)
@given(kernel=st.integers(0, 3), value=st.integers(0, 40))
def test_a_garbage_correlation_id_is_told_from_a_launch_before_the_capture(tmp_path_factory, kernel: int, value: int):
    """Kernels launched before the capture (ids below every call's, run before the first kernel of their stream whose
    call the trace holds) are kept; a kernel's id changed into one that names no call anywhere else is damage: read
    as none and counted (repaired). Oracle, by hand from the layout: the ids left to calls are 10 and 11."""
    correlations = [3, 4, 10, 11]
    correlations[kernel] = value
    path = tmp_path_factory.mktemp("launch") / "rank-0.pt.trace.json"
    path.write_text(json.dumps(_launch_trace(correlations)))
    warnings: list[dict] = []
    tables = {name: table.to_pylist() for name, table in
              kineto.read(discover(path)[0], lambda message, **kw: warnings.append(kw))}
    first_called = min((i for i, c in enumerate(correlations) if c in (10, 11)), default=None)
    before = [i for i, c in enumerate(correlations) if c not in (10, 11) and c < 10
              and (first_called is None or i <= first_called)]
    damaged = [i for i, c in enumerate(correlations) if c not in (10, 11) and i not in before]
    got = {row["name"]: (row["correlation"], row["op_name"]) for row in tables["device_exec"]}
    assert got == {f"k{i}": (None if i in damaged else c, "aten::mm" if c in (10, 11) else None)
                   for i, c in enumerate(correlations)}
    ledger = {(w["action"], w["rows"]) for w in warnings if w["check"] == "unlinked"}
    assert ledger == {row for row in [("kept", len(before)), ("repaired", len(damaged))] if row[1]}


def _stepped_trace(shift_us: int = 0, swap: bool = False) -> dict:
    """The committed trace with ProfilerStep#2 moved `shift_us` later (or, with `swap`, the two steps' numbers
    exchanged): its ops stay where they ran."""
    trace = json.loads((KINETO / "current" / "rank-0.pt.trace.json").read_text())
    for event in trace["traceEvents"]:
        if event.get("cat") == "user_annotation" and event.get("name", "").startswith("ProfilerStep#"):
            if event["name"] == "ProfilerStep#2":
                event["ts"] += shift_us
            if swap:
                event["name"] = {"ProfilerStep#1": "ProfilerStep#2", "ProfilerStep#2": "ProfilerStep#1"}[event["name"]]
    return trace


@pytest.mark.parametrize("shift_us, swap, left_out, fault", [
    (0, False, set(), None),
    (2500, False, {2}, "start after an op"),      # starts after aten::linear (12000-13000 µs) began, inside it
    (-500, False, {1, 2}, "overlap"),             # starts before step 1 ends
    (0, True, {1, 2}, "out of order"),            # step 2 before step 1
])
def test_a_profiler_step_the_ops_contradict_is_left_out_and_counted(shift_us: int, swap: bool, left_out: set[int],
                                                                    fault: str | None, tmp_path: Path):
    """A ProfilerStep#N whose window its ops contradict would give its ops to no step or to another one: it is left
    out of step_point with a lossy row (clock, dropped); the other steps keep their points. Oracle: the committed
    trace's two steps (0-10000 and 10000-20000 µs; ops from 1100 and 11100 µs on), by hand."""
    path = _bad(tmp_path, json.dumps(_stepped_trace(shift_us, swap)).encode())
    warnings: list[tuple[str, dict]] = []
    tables = {name: table.to_pylist() for name, table in
              kineto.read(discover(path)[0], lambda message, **kw: warnings.append((message, kw)))}
    assert {row["step"] for row in tables.get("step_point", [])} == {1, 2} - left_out
    rows = [(message, kw) for message, kw in warnings if kw["check"] == "clock" and kw["action"] == "dropped"]
    assert [kw["rows"] for _, kw in rows] == ([len(left_out)] if left_out else [])
    assert all(fault in message for message, _ in rows)


def test_activities_of_a_trace_without_runtime_calls_are_kept(tmp_path: Path):
    """A capture of device activity only (ProfilerActivity.CUDA alone) holds no runtime call: no id can be judged,
    each activity is kept without an op (unlinked, kept) with its correlation id as recorded."""
    trace = _launch_trace([3, 4, 10, 11])
    trace["traceEvents"] = [e for e in trace["traceEvents"] if e["cat"] == "kernel"]
    path = tmp_path / "rank-0.pt.trace.json"
    path.write_text(json.dumps(trace))
    warnings: list[tuple[str, dict]] = []
    tables = {name: table.to_pylist() for name, table in
              kineto.read(discover(path)[0], lambda message, **kw: warnings.append((message, kw)))}
    assert [row["correlation"] for row in sorted(tables["device_exec"], key=lambda r: r["start_ns"])] == [3, 4, 10, 11]
    assert [(kw["check"], kw["action"], kw["rows"]) for _, kw in warnings] == [("unlinked", "kept", 4)]
    assert "holds no runtime calls" in warnings[0][0]
