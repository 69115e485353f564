"""Python call stacks (with_stack): the python_frame table, host_op.frame_index / call_stack and the marts
python_call_tree and python_frame_device_time, against oracles: the raw events read in plain Python here, HTA's
call graph (fixtures/hta/python_stacks_expected.json, written by fixtures/generators/hta_python_stacks.py), the
fixture generator's own frame layout, and hypothesis damage whose counts are derived here."""
from __future__ import annotations

import gzip
import json
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import FIXTURES, assert_generator_reproduces, query, realdata, run
from profpipe.discover import discover
from profpipe.ingest import kineto, msprof_export

CUDA_TRACE = FIXTURES / "pytorch_cuda" / "rank-0.pt.trace.json.gz"
HTA = json.loads((FIXTURES / "hta" / "python_stacks_expected.json").read_text())


@pytest.fixture(scope="module")
def cuda_out(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("stacks") / "out"
    run(CUDA_TRACE, out)
    return out


@pytest.fixture(scope="module")
def raw() -> dict:
    return json.loads(gzip.open(CUDA_TRACE).read(), parse_float=Decimal)


def _ns(raw: dict, us) -> int:
    return int(Decimal(us) * 1000) + raw["baseTimeNanoseconds"]


def _frames(raw: dict) -> dict[int, dict]:
    """The trace's python_function events by Python id."""
    return {e["args"]["Python id"]: e for e in raw["traceEvents"] if e.get("cat") == "python_function"}


def _innermost(frames: list[tuple[int, int, int]], at: int) -> int | None:
    """Plain-Python stack walk: the id of the innermost frame (start, end, id) holding time `at` (frames nest)."""
    holding = [f for f in frames if f[0] <= at < f[1]]
    return min(holding, key=lambda f: f[1] - f[0])[2] if holding else None


# ---------------------------------------------------------------------------------------------- the reader

def test_python_frames_are_the_traces_python_function_events(cuda_out, raw):
    frames = _frames(raw)
    rows = query(cuda_out, "SELECT f.frame_id, p.frame_id, f.tid, f.name, f.module_id, f.start_ns, f.dur_ns "
                           "FROM python_frame f LEFT JOIN python_frame p ON p.frame_index = f.parent_index")
    assert len(rows) == len(frames) == 1715
    for frame_id, parent_id, tid, name, module_id, start_ns, dur_ns in rows:
        event = frames[frame_id]
        assert (parent_id, tid, name, module_id) == (event["args"]["Python parent id"], event["tid"], event["name"],
                                                   event["args"].get("Python module id")), event
        assert (start_ns, dur_ns) == (_ns(raw, event["ts"]), int(Decimal(event["dur"]) * 1000)), event


def test_each_ops_innermost_frame_is_htas(cuda_out):
    ops = dict(query(cuda_out, "SELECT o.external_id, f.frame_id FROM host_op o "
                               "LEFT JOIN python_frame f ON f.frame_index = o.frame_index"))
    assert {str(k): v for k, v in ops.items()} == HTA["op_innermost_frame"]
    assert sum(v is not None for v in ops.values()) == 261  # the main thread's ops; autograd's thread has no frames


def test_the_python_parent_ids_agree_with_nesting_at_ns(raw):
    """The reader trusts Kineto's parent ids; nesting the frames by time (ns) in plain Python gives the same tree,
    so the time-nesting fallback (MindSpore, damaged ids) builds the tree the ids would have."""
    frames = _frames(raw)
    stack, nested = [], {}
    for start, minus_dur, frame_id in sorted((_ns(raw, e["ts"]), -int(Decimal(e["dur"]) * 1000), i)
                                             for i, e in frames.items()):
        end = start - minus_dur
        while stack and (start >= stack[-1][1] or end > stack[-1][1]):
            stack.pop()
        nested[frame_id] = stack[-1][0] if stack else None
        stack.append((frame_id, end))
    assert nested == {i: e["args"]["Python parent id"] for i, e in frames.items()}


def test_call_tree_is_the_parent_id_tree_summed_in_plain_python(cuda_out, raw):
    frames = _frames(raw)
    path_of: dict[int, tuple[str, ...]] = {}

    def path(frame_id: int) -> tuple[str, ...]:
        if frame_id not in path_of:
            event = frames[frame_id]
            parent = event["args"]["Python parent id"]
            path_of[frame_id] = (path(parent) if parent is not None else ()) + (event["name"],)
        return path_of[frame_id]

    expected = defaultdict(lambda: [0, 0, 0])
    child_ns = defaultdict(int)
    for frame_id, event in frames.items():
        if event["args"]["Python parent id"] is not None:
            child_ns[event["args"]["Python parent id"]] += int(Decimal(event["dur"]) * 1000)
    for frame_id, event in frames.items():
        dur = int(Decimal(event["dur"]) * 1000)
        row = expected[";".join(path(frame_id))]
        row[0] += 1
        row[1] += dur
        row[2] += dur - child_ns[frame_id]
    got = {p: [c, t, s] for p, c, t, s in query(cuda_out, "SELECT call_path, calls, total_ns::BIGINT, self_ns::BIGINT "
                                                          "FROM python_call_tree")}
    assert got == dict(expected)
    assert got["pytorch_cuda_record.py(86): <module>"] == [1, 17_014_294, 3_952]


def test_device_time_per_frame_follows_each_launch_to_the_frames_open_around_it(cuda_out, raw):
    """Oracle: each device activity's runtime call (same correlation id), the innermost frame open on the call's
    thread when it was made (a stack walk over the raw frames), and every distinct frame name above it."""
    events = raw["traceEvents"]
    frames = _frames(raw)
    by_thread = defaultdict(list)
    for frame_id, e in frames.items():
        start = _ns(raw, e["ts"])
        by_thread[e["tid"]].append((start, start + int(Decimal(e["dur"]) * 1000), frame_id))
    calls = {e["args"]["correlation"]: e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
             and "correlation" in e.get("args", {})}
    expected = defaultdict(int)
    for e in events:
        if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset") or e["args"].get("correlation") not in calls:
            continue
        call = calls[e["args"]["correlation"]]
        frame_id = _innermost(by_thread[call["tid"]], _ns(raw, call["ts"]))
        names = set()
        while frame_id is not None:
            names.add(frames[frame_id]["name"])
            frame_id = frames[frame_id]["args"]["Python parent id"]
        for name in names:
            expected[name] += int(Decimal(e["dur"]) * 1000)
    got = dict(query(cuda_out, "SELECT frame, device_total_ns::BIGINT FROM python_frame_device_time "
                               "WHERE device_total_ns > 0"))
    assert got == dict(expected)
    top = query(cuda_out, "SELECT frame, device_self_ns FROM python_frame_device_time WHERE frame_kind = 'python' "
                          "ORDER BY device_self_ns DESC LIMIT 1")
    assert top == [("pytorch_cuda_record.py(54): train_step", 92_996)]


# ---------------------------------------------------------------------------------------------- MindSpore

def test_mindspore_stack_generator_reproduces_the_fixture(tmp_path):
    assert_generator_reproduces("mindspore_stack.py", FIXTURES / "mindspore_stack", tmp_path)


def test_mindspore_frames_nest_by_time_and_sum_as_the_generator_lays_them_out(tmp_path):
    import sys
    sys.path.insert(0, str(FIXTURES / "generators"))
    from mindspore_stack import FRAMES  # the generator's own layout: the oracle
    out = tmp_path / "out"
    run(FIXTURES / "mindspore_stack", out)
    trace = json.loads(next((FIXTURES / "mindspore_stack").rglob("trace_view.json")).read_text())
    raw_frames = [(e["tid"], int(Decimal(e["ts"]) * 1000), int(Decimal(e["ts"]) * 1000 + Decimal(e["dur"]) * 1000),
                   e["name"]) for e in trace if e.get("cat") == "python_function"]
    # plain nesting: the shortest frame of the same thread that holds all of the frame
    expected = sorted((tid, start, end - start, name, next((p[3] for p in sorted(raw_frames, key=lambda p: p[2] - p[1])
                                                          if p[0] == tid and p != (tid, start, end, name)
                                                          and p[1] <= start and end <= p[2]), None))
                      for tid, start, end, name in raw_frames)
    got = sorted(query(out, "SELECT f.tid, f.start_ns, f.dur_ns, f.name, p.name FROM python_frame f "
                            "LEFT JOIN python_frame p ON p.frame_index = f.parent_index AND p.rank = f.rank"))
    assert got == expected and len(got) == 2 * len(FRAMES)
    tree = {p: (c, t, s) for p, c, t, s in query(out, "SELECT call_path, calls, total_ns::BIGINT, self_ns::BIGINT "
                                                       "FROM python_call_tree")}
    cell = "train.py(40):<module>;train.py(20):train_step;nn.Cell.LeNet.mindspore/nn/cell.py(700):__call__"
    # two steps; the Cell call 5000 µs minus construct 4000 and the outer helper 800: 200 µs a step
    assert tree[cell] == (2, 10_000_000, 400_000)
    # the recursive helper: outer 800 µs (self 400), inner 400 µs, each twice
    assert tree[cell + ";lenet.py(30):helper"] == (2, 1_600_000, 800_000)
    assert tree[cell + ";lenet.py(30):helper;lenet.py(30):helper"] == (2, 800_000, 800_000)
    frames = {f: (c, h, line) for f, c, h, line in query(
        out, "SELECT frame, calls, host_total_ns::BIGINT, source_line FROM python_frame_device_time")}
    assert frames["lenet.py(30):helper"] == (4, 1_600_000, 30)  # the recursive call is not counted twice
    assert frames["nn.Cell.LeNet.mindspore/nn/cell.py(700):__call__"] == (2, 10_000_000, 700)


# ---------------------------------------------------------------------------------------------- Call stack args

def test_call_stack_args_of_a_pytorch_1_8_trace_give_the_device_time_per_frame(tmp_path):
    trace = realdata("kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz")
    out = tmp_path / "out"
    run(trace, out)
    events = json.loads(gzip.open(trace).read())["traceEvents"]
    stacks = {e["args"]["External id"]: e["args"].get("Call stack") for e in events if e.get("cat") == "Operator"}
    expected = defaultdict(int)
    for e in events:  # kernels, memcpys and memsets name their op by its External id ('external id' in 2021)
        stack = stacks.get(e.get("args", {}).get("external id")) if e.get("cat") in ("Kernel", "Memcpy", "Memset") else None
        for frame in {f.strip() for f in (stack or "").split(";") if f.strip()}:
            expected[frame] += e["dur"] * 1000
    got = dict(query(out, "SELECT frame, device_total_ns::BIGINT FROM python_frame_device_time "
                          "WHERE stack_from = 'call_stack' AND device_total_ns > 0"))
    assert got == dict(expected) and len(got) > 10


# ---------------------------------------------------------------------------------------------- damage

#: Undamaged frames of one thread (name, Python id, parent id, start µs, duration µs): a chain 1 > 2 > ... > 6, a
#: second child 7 of frame 1 and a second top-level frame 8; an op inside frame 6.
_FRAMES = [(f"f.py({i}): f{i}", i, i - 1 if i > 1 else None, 10 * i, (500 if i == 1 else 200 - 20 * i)) for i in range(1, 7)]
_FRAMES += [("f.py(7): f7", 7, 1, 300, 50), ("f.py(8): f8", 8, None, 600, 100)]
_DAMAGE = st.sampled_from([None, ("parent", 999), ("parent", "x"), ("parent", "self"), ("parent", 8), ("id", "x"),
                           ("parent", 1.5)])


def _kineto_frames(damage: list) -> list[dict]:
    events = []
    for (name, frame_id, parent_id, ts, dur), hurt in zip(_FRAMES, damage):
        args = {"Python id": frame_id, "Python parent id": parent_id}
        if hurt:
            args["Python id" if hurt[0] == "id" else "Python parent id"] = frame_id if hurt[1] == "self" else hurt[1]
        events.append({"ph": "X", "cat": "python_function", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
                       "args": args})
    return events


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damage=st.lists(_DAMAGE, min_size=len(_FRAMES), max_size=len(_FRAMES)))
def test_damaged_python_ids_fall_back_on_nesting_and_are_counted(tmp_path_factory, damage: list):
    events = _kineto_frames(damage)
    events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 65, "dur": 5,
                   "args": {"External id": 1}})
    path = tmp_path_factory.mktemp("stack") / "rank-0.pt.trace.json"
    path.write_text(json.dumps({"baseTimeNanoseconds": 1_727_740_800_000_000_000, "traceEvents": events}))
    warnings = []
    tables = defaultdict(list)
    for name, table in kineto.read(discover(path)[0], lambda message, **kw: warnings.append(kw)):
        tables[name].extend(table.to_pylist())
    frames = {f["frame_index"]: f for f in tables["python_frame"]}
    assert len(frames) == len(_FRAMES)
    # every frame keeps the parent of the undamaged trace (ids where they resolve, nesting where not)
    undamaged = {name: next((p[0] for p in _FRAMES if p[1] == parent), None) for name, _, parent, _, _ in _FRAMES}
    assert {f["name"]: frames[f["parent_index"]]["name"] if f["parent_index"] >= 0 else None
            for f in frames.values()} == undamaged
    # counted: parent ids that name no earlier frame of the thread (derived from the damaged events here) ...
    ids = {e["args"]["Python id"]: e["ts"] for e in events if e["cat"] == "python_function"
           and type(e["args"]["Python id"]) is int}
    unresolved = sum(1 for e in events if e["cat"] == "python_function" and e["args"]["Python parent id"] is not None
                     and not (type(e["args"]["Python parent id"]) is int
                              and ids.get(e["args"]["Python parent id"], e["ts"]) < e["ts"]))
    assert sum(w["rows"] for w in warnings if w.get("check") == "unlinked" and w.get("tables") == "python_frame") \
        == unresolved
    # ... and ids that are not integers (read as none)
    not_integers = sum(1 for hurt in damage if hurt and type(hurt[1]) is not int and hurt[1] != "self")
    assert sum(w["rows"] for w in warnings if w.get("check") == "malformed_record" and w.get("action") == "repaired") \
        == not_integers
    # the op's innermost frame is f6 whatever the ids say
    [op] = tables["host_op"]
    assert frames[op["frame_index"]]["name"] == "f.py(6): f6"


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damage=st.lists(st.sampled_from([None, "no_name", "negative_dur", "bad_ts"]), min_size=18, max_size=18))
def test_damaged_mindspore_stack_events_are_left_out_and_counted(tmp_path_factory, damage: list):
    import shutil
    fixture = next((FIXTURES / "mindspore_stack").iterdir())
    folder = tmp_path_factory.mktemp("ms") / fixture.name
    shutil.copytree(fixture, folder)
    trace = folder / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    events = json.loads(trace.read_text())
    frames = [e for e in events if e.get("cat") == "python_function"]
    assert len(frames) == len(damage)
    for event, hurt in zip(frames, damage):
        if hurt == "no_name":
            del event["name"]
        elif hurt == "negative_dur":
            event["dur"] = "-" + event["dur"]
        elif hurt == "bad_ts":
            event["ts"] = "soon"
    trace.write_text(json.dumps(events))
    warnings = []
    rows = [r for name, table in msprof_export.read(discover(folder)[0], lambda message, **kw: warnings.append(kw))
            if name == "python_frame" for r in table.to_pylist()]
    assert len(rows) == damage.count(None)

    def counted(check: str) -> int:
        return sum(w["rows"] for w in warnings if w.get("check") == check and "python_frame" in (w.get("tables") or ""))
    assert counted("negative_duration") == damage.count("negative_dur")
    assert counted("malformed_record") == damage.count("no_name") + damage.count("bad_ts")
    # the frames left nest by time: each parent holds its child on its thread
    by_index = {r["frame_index"]: r for r in rows}
    for r in rows:
        if r["parent_index"] >= 0:
            p = by_index[r["parent_index"]]
            assert p["tid"] == r["tid"] and p["start_ns"] <= r["start_ns"] \
                and r["start_ns"] + r["dur_ns"] <= p["start_ns"] + p["dur_ns"]


#: Frames of two threads as real captures hold them (name, thread, Python id, parent id, start µs, duration µs;
#: ids in start order): R's parent (5) began before the capture and G's (19) was still open when it ended, so the
#: trace holds neither; thread 2 is autograd's backward thread, whose outermost frames C and E name B on thread 1
#: (C while B runs, E after B ended: PyTorch keeps the id from the thread's first call, as on a real MI300X trace).
_CAPTURE = [("R", 1, 10, 5, 100, 1000), ("A", 1, 11, 10, 110, 100), ("A2", 1, 12, 11, 120, 50),
            ("B", 1, 13, 10, 300, 400), ("C", 2, 14, 13, 320, 200), ("D", 2, 15, 14, 330, 50),
            ("E", 2, 16, 13, 800, 100), ("E2", 2, 17, 16, 810, 20), ("H", 1, 18, 10, 900, 50), ("G", 1, 20, 19, 1200, 50)]
#: The per-thread trees (each frame's parent by name; None: the top of its thread's stack).
_TREE = {"R": None, "A": "R", "A2": "A", "B": "R", "C": None, "D": "C", "E": None, "E2": "E", "H": "R", "G": None}


def _read_frames(tmp_path: Path, parents: dict[str, int]) -> tuple[dict[str, str | None], list[dict]]:
    events = [{"ph": "X", "cat": "python_function", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur,
               "args": {"Python id": frame_id, "Python parent id": parents.get(name, parent)}}
              for name, tid, frame_id, parent, ts, dur in _CAPTURE]
    path = tmp_path / "rank-0.pt.trace.json"
    path.write_text(json.dumps({"baseTimeNanoseconds": 1_727_740_800_000_000_000, "traceEvents": events}))
    warnings: list[dict] = []
    rows = [row for name, table in kineto.read(discover(path)[0], lambda message, **kw: warnings.append(kw))
            if name == "python_frame" for row in table.to_pylist()]
    by_index = {row["frame_index"]: row["name"] for row in rows}
    return {row["name"]: by_index.get(row["parent_index"]) for row in rows}, warnings


def test_frames_whose_parent_is_on_another_thread_or_outside_the_capture_are_kept(tmp_path: Path):
    """What real captures hold is expected: each tree stays on its thread, and the ledger says so without loss."""
    tree, warnings = _read_frames(tmp_path, {})
    assert tree == _TREE
    assert sorted((w["check"], w["action"], w["rows"]) for w in warnings) == [("ambiguous", "kept", 2),
                                                                               ("unlinked", "kept", 2)]


_IDS = {frame_id: name for name, _, frame_id, *_ in _CAPTURE}
_THREAD = {name: tid for name, tid, *_ in _CAPTURE}
_SPAN = {name: (ts, ts + dur) for name, _, _, _, ts, dur in _CAPTURE}
_OWN_ID = {name: frame_id for name, _, frame_id, *_ in _CAPTURE}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damage=st.dictionaries(st.sampled_from([c[0] for c in _CAPTURE]),
                              st.sampled_from([1, 5, 19, 999, 12, 13, 15, 17, 18, 20, 21]), min_size=1, max_size=2))
def test_a_parent_id_damaged_mid_capture_is_repaired_and_counted(tmp_path_factory, damage: dict[str, int]):
    """A damaged parent id must not pass for a frame begun before the capture or a caller on another thread. Oracle
    (from the layout, by hand): a frame whose new id names an earlier frame of its thread that holds it takes that
    frame (a changed id no time reveals); any other keeps its place in its thread's tree (nesting); the change is
    kept only where it cannot change a link: the frame is the top of its thread's stack and the id, smaller than its
    own, names a frame of another thread begun before it or no frame at all; else it is repaired (partial)."""
    tree, warnings = _read_frames(tmp_path_factory.mktemp("frames"), damage)
    expected, lossy, kept = dict(_TREE), 0, {"ambiguous": 2, "unlinked": 2}
    for name, value in damage.items():
        named = _IDS.get(value)
        held_by_named = (named is not None and _THREAD[named] == _THREAD[name] and value < _OWN_ID[name]
                         and _SPAN[named][0] <= _SPAN[name][0] and _SPAN[name][1] <= _SPAN[named][1])
        original = next(c[3] for c in _CAPTURE if c[0] == name)
        was = ("ambiguous" if _IDS.get(original) and _THREAD[_IDS[original]] != _THREAD[name]
               else "unlinked" if _TREE[name] is None else None)
        if was:
            kept[was] -= 1
        if held_by_named:
            expected[name] = named
        elif _TREE[name] is None and value < _OWN_ID[name] and (
                named is None or _THREAD[named] != _THREAD[name] and _SPAN[named][0] <= _SPAN[name][0]):
            kept["unlinked" if named is None else "ambiguous"] += 1
        else:
            lossy += 1
    assert tree == expected
    assert sum(w["rows"] for w in warnings if w["action"] == "repaired") == lossy
    assert {w["check"]: w["rows"] for w in warnings if w["action"] == "kept"} == {k: n for k, n in kept.items() if n}
