"""MindSpore 1.3-2.2's "Scope Name" timeline thread (scope_layer_span rows of algorithm scope_name) against an oracle.

The oracle is MindSpore's algorithm (2.2.14 base_timeline_generator.py, _get_scope_name_time_list; reference
formats-mindspore-extras.md §1.5) written again here, over the op list MindSpore builds: for the GPU fixtures from
the raw files as MindSpore reads them, for the Ascend fixtures from the normalized task table. A real MindSpore
2.2.14 GPU dump (hypertseng/mindbnb data/profiler @e3b232d5, with MindSpore's own gpu_timeline_display_0.json) is
checked where it is found: $PROFPIPE_MINDBNB_PROFILER or ../shared/realdata/mindbnb/data/profiler.
"""
from __future__ import annotations

import json
import math
import os
import shutil
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES, REALDATA, load_trace, query, run
from fuzzing import FUZZ
from model_harness import model_rows

SUBGRAPHS = ("Default", "Gradients", "recompute_Default")


def mindspore_scope_names(ops: list[tuple[str, float, float]], factor: float = 1.0) -> list[tuple]:
    """(level, name, start, duration, first, last) per Scope Name span of `ops` (name, start, duration), already in
    MindSpore's order; duration = (start_last - start_first) * factor + duration_last, as MindSpore computes it."""
    if not ops:
        return []
    first = 1 if ops[0][0].startswith("Default/InitDataSetQueue") and len(ops) > 1 else 0
    step_end = ops[first][0]
    for name, _, _ in ops[first + 1:]:
        if name == ops[first][0]:
            break
        step_end = name
    spans = []
    for subgraph in SUBGRAPHS:
        open_keys: dict[tuple[int, str], list[int]] = {}  # (level, segment) -> [first index, last index]
        for i, (name, _, _) in enumerate(ops):
            path = name.split("/")[:-1]
            if name.startswith("Default/InitDataSetQueue") or (path and path[0] != subgraph):
                path = []
            keys = list(enumerate(path))
            for key in keys:
                open_keys.setdefault(key, [i, i])[1] = i
            for key in list(open_keys):
                if key not in keys or i == len(ops) - 1 or name == step_end:
                    lo, hi = open_keys.pop(key)
                    duration = (ops[hi][1] - ops[lo][1]) * factor + ops[hi][2]
                    spans.append((key[0], key[1], ops[lo][1], duration, lo + 1, hi + 1))
    return spans


def _exact(spans: list[tuple]) -> Counter:
    return Counter((level, name, int(start), int(dur)) for level, name, start, dur, _, _ in spans)


def _ours(out: Path, rank: int = 0) -> Counter:
    rows = query(out, f"SELECT algorithm, depth, scope, start_ns, dur_ns FROM scope_layer_span WHERE rank = {rank}")
    assert {r[0] for r in rows} <= {"scope_name"}
    return Counter(r[1:] for r in rows)


# --------------------------------------------------------------------------------------- GPU: the raw files

def _timestamps(path: Path, ns_per_unit: int) -> list[tuple[str, int, int]]:
    """(name, start ns, duration ns) per execution of an op-timestamp file, in file order; executions whose
    duration is not a finite number >= 0 are left out (profpipe's reader drops and counts them)."""
    ops = []
    for line in path.read_text().splitlines():
        name, _, executions = line.split(";")
        for execution in executions.split():
            start, dur = execution.split(",")[:2]
            if math.isfinite(float(dur)) and float(dur) >= 0:
                ops.append((name, int(start), round(float(dur) * ns_per_unit)))
    return ops


def _communication_ops(trace: Path) -> set[str]:
    """Short names of the step trace's communication ops: fields 4+ of a line of the async layout (a line per
    step), lines 4+ of the graph layout (a line per point). MindSpore reads fields 4+ of the first line whatever the
    layout, so in the graph layout it leaves no op out (its list holds timestamps): profpipe does not copy that."""
    lines = [line.split() for line in trace.read_text().splitlines() if line.strip()] if trace.exists() else []
    if lines and "," in lines[0][0]:
        return {field.split(",")[0].split("/")[-1] for fields in lines for field in fields[4:]}
    return {fields[0].split("/")[-1] for fields in lines[3:]}


def _gpu_op_list(profiler: Path, rank: int) -> list[tuple[str, int, int]]:
    """MindSpore's GPU op list: the GPU ops (less the step trace's communication ops), then the CPU ops shifted
    onto the GPU clock, stably sorted by start."""
    gpu_file = next(p for p in (profiler / f"gpu_op_execute_timestamp_{rank}.txt",
                                profiler / f"op_execute_timestamp_{rank}.txt") if p.exists())
    communication = _communication_ops(profiler / f"step_trace_profiling_{rank}.txt")
    ops = [op for op in _timestamps(gpu_file, 1000) if op[0].split("/")[-1] not in communication]
    cpu_file = profiler / f"cpu_op_execute_timestamp_{rank}.txt"
    if cpu_file.exists():
        host, device = (int(line.split(":")[1]) for line in (profiler / f"start_time_{rank}.txt").read_text().split("\n")[:2])
        ops += [(name, start + device - host, dur) for name, start, dur in _timestamps(cpu_file, 1_000_000)]
    return sorted(ops, key=lambda op: op[1])


GPU_FIXTURES = [("mindspore_gpu/graph_2x", 0), ("mindspore_gpu/async_1x", 0), ("mindspore_gpu/two_ranks", 0),
                ("mindspore_gpu/two_ranks", 1)]


@pytest.fixture(scope="module")
def gpu_outputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("scope_name_gpu")
    outs = {}
    for name in sorted({f for f, _ in GPU_FIXTURES}):
        outs[name] = root / name.replace("/", "_")
        run(FIXTURES / name, outs[name])
    return outs


@pytest.mark.parametrize("fixture, rank", GPU_FIXTURES)
def test_gpu_scope_names_are_mindspores_over_the_raw_op_files(gpu_outputs, fixture, rank):
    expected = _exact(mindspore_scope_names(_gpu_op_list(FIXTURES / fixture / "profiler", rank)))
    assert sum(expected.values()) > 10
    assert _ours(gpu_outputs[fixture], rank) == expected


def test_gpu_scope_names_are_drawn_one_track_per_level(gpu_outputs):
    out = gpu_outputs["mindspore_gpu/graph_2x"]
    trace = load_trace(out)
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    drawn = Counter()
    for event in trace["traceEvents"]:
        if event["ph"] == "X" and event.get("cat") == "scope":
            process, level = names[event["pid"], event["tid"]].split(": Level ")
            assert process == "Scope Name"
            drawn[int(level), event["name"]] += 1
    assert drawn == Counter((depth, scope) for depth, scope, _, _ in _ours(out).elements())


# ----------------------------------------------------------------------------- Ascend: the normalized tasks

@pytest.mark.parametrize("fixture", ["ascend_raw/era_a", "ascend_raw/era_c", "msprof_timeline"])
def test_ascend_scope_names_are_mindspores_over_the_op_tasks(fixture, tmp_path):
    out = tmp_path / "out"
    run(FIXTURES / fixture, out)
    tasks = pq.read_table(out / "tables" / "device_exec.parquet").to_pylist()
    points = pq.read_table(out / "tables" / "step_point.parquet").to_pylist()
    communication = {p["op_name"].split("/")[-1] for p in points if p["kind"].startswith("comm_") and p["op_name"]}
    ops = sorted(((t["name"], t["start_ns"], t["dur_ns"]) for t in tasks
                  if t["kind"] == "task" and t["name"].split("/")[-1] not in communication), key=lambda op: op[1])
    expected = _exact(mindspore_scope_names(ops))
    assert sum(expected.values()) >= 6
    assert _ours(out) == expected


# ------------------------------------------------------------------------------ the real MindSpore 2.2.14 dump

def _mindbnb() -> Path:
    given_path = os.environ.get("PROFPIPE_MINDBNB_PROFILER")
    path = Path(given_path) if given_path else REALDATA / "mindbnb" / "data" / "profiler"
    if not (path / "gpu_timeline_display_0.json").exists():
        pytest.skip(f"MindSpore 2.2.14 GPU sample not found at {path}: set PROFPIPE_MINDBNB_PROFILER to the "
                    "data/profiler folder of github.com/hypertseng/mindbnb @e3b232d5")
    return path


def test_real_mindspore_2_2_gpu_scope_names_match_its_timeline(tmp_path):
    profiler = _mindbnb()
    events = json.loads((profiler / "gpu_timeline_display_0.json").read_text())
    theirs = sorted((e["ts"], e["scope_level"], e["name"], e["dur"]) for e in events
                    if e.get("ph") == "X" and e.get("tid") == 100001)
    assert len(theirs) == 15 and {(level, name) for _, level, name, _ in theirs} == {(0, "Default")}
    # the oracle with MindSpore's float arithmetic (ns starts as doubles, µs durations) writes its file exactly
    ops = _gpu_op_list(profiler, 0)
    floats = [(name, float(start), dur / 1000) for name, start, dur in ops]
    oracle = sorted((start / 1000, level, name, dur) for level, name, start, dur, _, _ in
                    mindspore_scope_names(floats, factor=1e-3))
    assert oracle == theirs
    # the first span is step "1"
    step_1 = next(e for e in events if e.get("tid") == 100000 and e.get("name") == "1")
    assert (theirs[0][0], theirs[0][3]) == (step_1["ts"], step_1["dur"])
    # profpipe: the oracle in exact ns; MindSpore's durations within its float steps (256 ns starts)
    out = tmp_path / "out"
    run(profiler, out)
    assert _ours(out) == _exact(mindspore_scope_names(ops))
    ours = sorted(query(out, "SELECT start_ns, dur_ns FROM scope_layer_span"))
    for (start, dur), (ts, _, _, their_dur) in zip(ours, theirs):
        assert float(start) / 1000 == ts
        assert abs(dur / 1000 - their_dur) < 0.3


def test_mindinsight_ascend_timelines_hold_no_scope_name_thread():
    """MindInsight's real timelines (its test resources) predate the Scope Name thread: nothing to check against."""
    root = REALDATA / "mindinsight"
    files = sorted(root.rglob("*timeline_display_*.json")) if root.exists() else []
    if not files:
        pytest.skip(f"MindInsight's timelines not found under {root}")
    for path in files:
        events = json.loads(path.read_text())
        assert not [e for e in events if isinstance(e, dict) and ("scope_level" in e or e.get("tid") == 100001)], path


# --------------------------------------------------------------------------------------------- damage

_SEGMENT = st.sampled_from(["Default", "Gradients", "recompute_Default", "net", "net-A", "", "Other", "x-y"])
_NAME = st.one_of(
    st.lists(_SEGMENT, min_size=1, max_size=5).map(lambda parts: "/".join(parts + ["Op-op1"])),
    st.sampled_from(["MakeTuple-op9", "Default/InitDataSetQueue-op0", "Default//Op-op2", "Default/net/", "/Op-op3"]))


@FUZZ
@given(st.lists(st.tuples(_NAME, st.integers(0, 60), st.integers(0, 30)), max_size=25))
def test_scope_name_spans_of_any_op_list_are_mindspores(ops):
    """Names without '/', empty segments, other subgraphs, ops out of order, overlapping and repeated: the spans are
    the oracle's over the ops in start order (ties by name, as the model orders host ops of one side)."""
    rows = [{"side": "Host", "op_name": name, "start_ns": start, "dur_ns": dur} for name, start, dur in ops]
    run_info = [{"device_id": 0, "device_type": "cpu", "framework": "mindspore", "layout": "flat"}]
    spans = model_rows({"run_info": run_info, "host_op": rows}, "scope_layer_span")
    ordered = sorted(ops, key=lambda op: (op[1], op[0]))
    assert Counter((r["depth"], r["scope"], r["start_ns"], r["dur_ns"], r["first_op"], r["last_op"]) for r in spans) == \
        Counter(mindspore_scope_names(ordered))
    assert all(r["dur_ns"] >= 0 and r["algorithm"] == "scope_name" for r in spans)


def test_damaged_gpu_op_lines_are_counted_and_the_spans_are_those_of_the_ops_kept(tmp_path):
    """NaN and negative durations and a line cut short: the reader drops and counts them; the spans are the
    oracle's over the executions kept (ops with no '/' or an empty segment are kept and treated as MindSpore does)."""
    folder = tmp_path / "in"
    shutil.copytree(FIXTURES / "mindspore_gpu" / "graph_2x", folder)
    path = folder / "profiler" / "gpu_op_execute_timestamp_0.txt"
    lines = path.read_text().splitlines()
    name, kind, executions = lines[1].split(";")
    first, second, *rest = executions.split()
    lines[1] = ";".join([name, kind, " ".join([first.split(",")[0] + ",nan", second.split(",")[0] + ",-3.5", *rest])
                         + " "])
    start = int(first.split(",")[0])
    lines += [f"NoScope-op50;GpuOps;{start + 7},1.5 ", f"Default//net/Odd-op51;GpuOps;{start + 9},2.25 "]
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    result = run(folder, out)
    health = Counter(query(out, "SELECT check_name, rows FROM trace_health WHERE first_file LIKE '%gpu_op_execute%'"))
    assert health == Counter({("non_finite", 1): 1, ("negative_duration", 1): 1})
    assert result.exit_code == 3
    kept = _gpu_op_list(folder / "profiler", 0)
    assert len(kept) == len(_gpu_op_list(FIXTURES / "mindspore_gpu" / "graph_2x" / "profiler", 0))  # -2 +2
    assert _ours(out) == _exact(mindspore_scope_names(kept))
