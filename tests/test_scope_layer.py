"""MindSpore's Scope Layer against MindSpore's own trace_view.json, event for event.

The CPU fixtures are real MindSpore 2.10 profiler folders (fixtures/generators/mindspore_cpu*.py); their
ASCEND_PROFILER_OUTPUT/trace_view.json has MindSpore's "Scope Layer" process (a thread per scope depth, a span per
run of consecutive ops under one scope), the oracle for the mart scope_layer_span and the timeline's lane 9.
"""
from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest

from conftest import FIXTURES, load_trace, query, run

FIXTURES_WITH_SCOPES = [FIXTURES / "mindspore_cpu" / "lenet_graph", FIXTURES / "mindspore_cpu" / "mlp_graph",
                        FIXTURES / "mindspore_cpu_memory"]


def _mindspore_us(ns: int) -> Decimal:
    """MindSpore's µs of an exact ns: ns * Decimal(0.001) (a float, hence ~37 ns late), to three decimals."""
    return (Decimal(ns) * Decimal(0.001)).quantize(Decimal("0.000"))


def _mindspore_scope_layer(fixture: Path) -> Counter:
    """(depth, name, ts, dur) of the X events of trace_view.json's Scope Layer process, as MindSpore wrote them."""
    events = json.loads(next(fixture.glob("*_ascend_ms/ASCEND_PROFILER_OUTPUT/trace_view.json")).read_text())
    pids = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"
            and e["args"]["name"] == "Scope Layer"}
    assert len(pids) == 1
    threads = {e["tid"]: e["args"]["name"] for e in events
               if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] in pids}
    assert all(name == f"Thread {tid}" for tid, name in threads.items())
    return Counter((e["tid"], e["name"], Decimal(e["ts"]), Decimal(e["dur"]))
                   for e in events if e["ph"] == "X" and e["pid"] in pids)


@pytest.fixture(scope="module", params=FIXTURES_WITH_SCOPES, ids=lambda p: p.name)
def analysed(request, tmp_path_factory):
    fixture = request.param
    out = tmp_path_factory.mktemp(fixture.name) / "out"
    run(fixture, out)
    return fixture, out


def test_scope_layer_span_is_mindspores_scope_layer_event_for_event(analysed):
    fixture, out = analysed
    theirs = _mindspore_scope_layer(fixture)
    spans = query(out, "SELECT depth, scope, start_ns, dur_ns FROM scope_layer_span")
    assert len(spans) == sum(theirs.values()) > 0
    # MindSpore's ts and end are each ns * Decimal(0.001) of a float: reproduce both from our exact ns.
    ours = Counter((depth, scope, _mindspore_us(start), _mindspore_us(start + dur) - _mindspore_us(start))
                   for depth, scope, start, dur in spans)
    assert ours == theirs
    # and to well under a microsecond without reproducing the artefact: start within 100 ns, duration within 1 ns
    exact = sorted((d, s, Decimal(start) / 1000, Decimal(dur) / 1000) for d, s, start, dur in spans)
    for (d, s, start_us, dur_us), (td, ts, t_start, t_dur) in zip(exact, sorted(theirs.elements())):
        assert (d, s) == (td, ts)
        assert 0 <= t_start - start_us < Decimal("0.1")
        assert abs(t_dur - dur_us) <= Decimal("0.001")


def test_timeline_draws_the_scope_layer_as_mindspore_does(analysed):
    fixture, out = analysed
    theirs = _mindspore_scope_layer(fixture)
    trace = load_trace(out)
    base = trace["baseTimeNanoseconds"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    ours = Counter()
    for event in trace["traceEvents"]:
        if event["ph"] == "X" and event.get("cat") == "scope":
            thread = names[event["pid"], event["tid"]]
            assert thread.startswith("Scope Layer: Thread "), thread
            start_ns = base + round(Decimal(str(event["ts"])) * 1000)
            dur_ns = round(Decimal(str(event["dur"])) * 1000)
            ours[(int(thread.rsplit(" ", 1)[1]), event["name"], _mindspore_us(start_ns),
                  _mindspore_us(start_ns + dur_ns) - _mindspore_us(start_ns))] += 1
    assert ours == theirs
