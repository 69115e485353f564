"""MindSpore CPU dumps against MindSpore's own outputs for the same run (fixtures/mindspore_cpu).

The fixtures are real MindSpore 2.10 profiler folders (see fixtures/generators/mindspore_cpu.py):
FRAMEWORK/cpu_op_*_info_0.csv and ASCEND_PROFILER_OUTPUT/trace_view.json are what MindSpore
computed, the oracle here.
"""
from __future__ import annotations

import csv
import json
from decimal import Decimal
from pathlib import Path

import pytest

from conftest import FIXTURES, load_trace, run

CPU_FIXTURES = sorted(p for p in (FIXTURES / "mindspore_cpu").iterdir() if p.is_dir())
# MindSpore prints 6 significant digits and sums float32 values; our sums are exact integers.
REL = 2e-5


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def _close(ours: str, theirs: str) -> bool:
    return float(ours) == pytest.approx(float(theirs), rel=REL, abs=1e-6)


@pytest.fixture(scope="module", params=CPU_FIXTURES, ids=lambda p: p.name)
def analysed(request, tmp_path_factory):
    fixture = request.param
    out = tmp_path_factory.mktemp(fixture.name) / "out"
    run(fixture, out)
    framework = next(fixture.glob("*_ascend_ms/FRAMEWORK"))
    return fixture, framework, out


def test_op_type_info_equals_mindspore(analysed):
    _, framework, out = analysed
    theirs = {r["op_type"]: r for r in _csv(framework / "cpu_op_type_info_0.csv")}
    ours = {r["op_type"]: r for r in _csv(out / "reports" / "cpu_op_type_info_0.csv")}
    assert list(ours.values())[0].keys() == list(theirs.values())[0].keys()
    assert ours.keys() == theirs.keys()
    for op_type, expected in theirs.items():
        got = ours[op_type]
        assert got["type_occurrences"] == expected["type_occurrences"], op_type
        assert got["execution_frequency(per-step)"] == expected["execution_frequency(per-step)"], op_type
        for column in ("total_compute_time", "avg_time(ms)", "percent"):
            assert _close(got[column], expected[column]), (op_type, column, got[column], expected[column])


def test_op_detail_info_equals_mindspore(analysed):
    _, framework, out = analysed
    theirs = {r["full_op_name"]: r for r in _csv(framework / "cpu_op_detail_info_0.csv")}
    ours = {r["full_op_name"]: r for r in _csv(out / "reports" / "cpu_op_detail_info_0.csv")}
    assert list(ours.values())[0].keys() == list(theirs.values())[0].keys()
    assert ours.keys() == theirs.keys()
    for name, expected in theirs.items():
        got = ours[name]
        for column in ("op_side", "op_type", "op_name", "op_occurrences", "pid"):
            assert got[column] == expected[column], (name, column)
        for column in ("op_total_time(ms)", "op_avg_time(ms)", "total_proportion"):
            assert _close(got[column], expected[column]), (name, column, got[column], expected[column])
        assert got["subgraph"] == name.split("/")[0]


def _mindspore_ts_ns(ts: str) -> Decimal:
    return Decimal(ts) * 1000


def _mindspore_host_ops(fixture: Path) -> list[dict]:
    """The X events of trace_view.json's "CPU OP" process (the others are derived scope layers)."""
    events = json.loads(next(fixture.glob("*_ascend_ms/ASCEND_PROFILER_OUTPUT/trace_view.json")).read_text())
    pids = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"
            and e["args"]["name"] == "CPU OP"}
    assert len(pids) == 1
    return [e for e in events if e["ph"] == "X" and e["pid"] in pids]


def test_every_trace_view_host_op_is_in_our_timeline(analysed):
    fixture, _, out = analysed
    theirs = _mindspore_host_ops(fixture)
    trace = load_trace(out)
    base = trace["baseTimeNanoseconds"]
    ours = {}
    for event in trace["traceEvents"]:
        if event["ph"] == "X" and event.get("cat") == "op":
            start_ns = base + round(Decimal(str(event["ts"])) * 1000)
            ours.setdefault(event["name"], []).append((start_ns, Decimal(str(event["dur"]))))
    assert sum(len(v) for v in ours.values()) == len(theirs)
    for event in theirs:
        candidates = ours[event["name"]]
        ms_start_ns = _mindspore_ts_ns(event["ts"])
        start_ns, dur_us = min(candidates, key=lambda c: abs(c[0] - ms_start_ns))
        # Same start to well under a microsecond: MindSpore's ts carries a ~37 ns artefact
        # (ns * Decimal(0.001) of a float), ours is exact.
        assert abs(start_ns - ms_start_ns) < 100, event
        assert dur_us == Decimal(event["dur"]), event


def test_mindspore_ts_artefact_is_understood(analysed):
    """MindSpore's trace_view ts = ns * Decimal(0.001) (float), quantized: reproduce it from our exact ns."""
    fixture, _, out = analysed
    theirs = _mindspore_host_ops(fixture)
    trace = load_trace(out)
    base = trace["baseTimeNanoseconds"]
    ours = sorted(base + round(Decimal(str(e["ts"])) * 1000)
                  for e in trace["traceEvents"] if e.get("cat") == "op")
    reproduced = sorted((Decimal(ns) * Decimal(0.001)).quantize(Decimal("0.000")) for ns in ours)
    assert reproduced == sorted(Decimal(e["ts"]) for e in theirs)


def test_op_analyse_matches_detail_totals(analysed):
    import profpipe

    _, framework, out = analysed
    detail = _csv(framework / "cpu_op_detail_info_0.csv")
    result = json.loads(profpipe.op_analyse(out, "MatMul"))
    assert result["device_id"] == 0
    matmul = [r for r in detail if r["op_type"] == "MatMul"]
    assert sum(r["op_occurrences"] for r in result["MatMul"]) == sum(int(r["op_occurrences"]) for r in matmul)
    assert sum(r["op_total_time(us)"] for r in result["MatMul"]) == pytest.approx(
        sum(float(r["op_total_time(ms)"]) * 1000 for r in matmul), rel=1e-4)
    assert {r["op_side"] for r in result["MatMul"]} == {"cpu"}


#: MindSpore 2.10's own op_analyse answers for the LeNet fixture (fixtures/generators/mindspore_cpu_op_analyse.py,
#: run in MindSpore's interpreter): per op type, per op name (MatMul-op0), for a list and for a scoped name.
MS_OP_ANALYSE = json.loads((FIXTURES / "mindspore_cpu" / "op_analyse.json").read_text())
ANSWER_KEYS = ["op_side", "input_shape", "op_occurrences", "op_total_time(us)", "op_avg_time(us)"]


def _totals(entries: list[dict]) -> tuple[int, float]:
    return sum(e["op_occurrences"] for e in entries), sum(e["op_total_time(us)"] for e in entries)


def test_op_analyse_answers_types_names_and_lists_as_mindspore_itself(tmp_path_factory):
    """MindSpore answers a name from the first op instance of that name, once per distinct (name, input shapes) item
    of its framework file (its input_shape text is mangled by its own split at ']'); profpipe sums every instance of
    the name. Where a name has one instance (one row in cpu_op_detail_info) and one entry in MindSpore's answer, and
    a type consists of such names, both must agree: executions exactly, times to MindSpore's 6 printed digits."""
    import profpipe

    fixture = FIXTURES / "mindspore_cpu" / "lenet_graph"
    out = tmp_path_factory.mktemp("opa") / "out"
    run(fixture, out)
    detail = _csv(next(fixture.glob("*_ascend_ms/FRAMEWORK")) / "cpu_op_detail_info_0.csv")
    instances = {name: sum(r["op_name"] == name for r in detail) for name in {r["op_name"] for r in detail}}
    plain = {name for name, answer in MS_OP_ANALYSE["names"].items()
             if len(answer.get(name, [])) == 1 and instances.get(name) == 1}
    assert len(plain) >= 25
    for name, answer in MS_OP_ANALYSE["names"].items():
        ours = json.loads(profpipe.op_analyse(out, name))
        assert list(ours) == [name, "device_id"] and ours["device_id"] == answer["device_id"] == 0
        assert all(list(entry) == ANSWER_KEYS and entry["op_side"] == "cpu" for entry in ours[name])
        if name in plain:
            (theirs,) = answer[name]
            assert _totals(ours[name])[0] == theirs["op_occurrences"]
            assert _totals(ours[name])[1] == pytest.approx(theirs["op_total_time(us)"], rel=REL)
            assert ours[name][0]["op_avg_time(us)"] == pytest.approx(theirs["op_avg_time(us)"], rel=REL)
        else:  # several instances share the name: ours is their sum (detail rows), MindSpore's the first one's
            rows = [r for r in detail if r["op_name"] == name]
            assert _totals(ours[name])[0] == sum(int(r["op_occurrences"]) for r in rows)
    types = [t for t, answer in MS_OP_ANALYSE["types"].items()
             if all(r["op_name"] in plain for r in detail if r["op_type"] == t)]
    assert len(types) >= 5
    for op_type in types:
        ours, theirs = json.loads(profpipe.op_analyse(out, op_type))[op_type], MS_OP_ANALYSE["types"][op_type][op_type]
        assert _totals(ours)[0] == _totals(theirs)[0]
        assert _totals(ours)[1] == pytest.approx(_totals(theirs)[1], rel=REL)
    # a list: one key per name asked, in order, each the same answer as asked alone
    asked = MS_OP_ANALYSE["list"]["asked"]
    listed = json.loads(profpipe.op_analyse(out, asked))
    assert list(listed) == list(MS_OP_ANALYSE["list"]["answer"]) == [*asked, "device_id"]
    assert all(listed[n] == json.loads(profpipe.op_analyse(out, n))[n] for n in asked)
    # a full scoped name: MindSpore's framework files do not hold it (its error); profpipe answers for that instance
    scoped = MS_OP_ANALYSE["scoped"]["asked"]
    assert "is not found" in MS_OP_ANALYSE["scoped"]["answer"]["error"]
    short = scoped.rsplit("/", 1)[-1]
    assert short in plain
    assert json.loads(profpipe.op_analyse(out, scoped))[scoped] == json.loads(profpipe.op_analyse(out, short))[short]
    with pytest.raises(RuntimeError, match="op name .MatMul-op99. not found"):
        profpipe.op_analyse(out, ["MatMul", "MatMul-op99"])
