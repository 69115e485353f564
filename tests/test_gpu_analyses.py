"""GPU-trace analyses of issue 20 on real and project-made Kineto traces: which op launched each kernel, ops
ranked by their own time, step phases that stay inside their step.

Oracles: values derived here from the raw trace events with plain Python (nesting by time on each thread, as
PyTorch's profiler nests), independent of the SQL that profpipe runs.
"""
from __future__ import annotations

import gzip
import json
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

from conftest import FIXTURES, query, run

CUDA_TRACE = FIXTURES / "pytorch_cuda" / "rank-0.pt.trace.json.gz"
ANNOTATIONS = ("user_annotation",)


def _events(path: Path) -> list[dict]:
    with gzip.open(path) as handle:
        return [e for e in json.load(handle, parse_float=Decimal)["traceEvents"] if e.get("ph") == "X"]


def _ns(value: Decimal | int) -> int:
    return int(Decimal(value) * 1000)


def _self_times(events: list[dict]) -> dict[str, list[int]]:
    """Per host-op name: calls, self ns (its span less its direct children's on its thread), total ns. Children:
    spans held whole by an open span, innermost first (a span opened at the same time and as long as its parent
    comes after it in the file)."""
    per_name: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    by_thread: dict[object, list[tuple[int, int, int, dict]]] = defaultdict(list)
    for order, event in enumerate(events):
        if event.get("cat") in ("cpu_op", "user_annotation"):
            start = _ns(event["ts"])
            by_thread[event["tid"]].append((start, -(start + _ns(event["dur"])), order, event))
    for spans in by_thread.values():
        spans.sort()
        stack: list[list] = []  # [end, event, child ns]
        def close(entry: list) -> None:
            name = entry[1]["name"]
            per_name[name][0] += 1
            per_name[name][1] += _ns(entry[1]["dur"]) - entry[2]
            per_name[name][2] += _ns(entry[1]["dur"])
        for start, negative_end, _, event in spans:
            end = -negative_end
            while stack and (start >= stack[-1][0] or end > stack[-1][0]):
                close(stack.pop())
            if stack:
                stack[-1][2] += end - start
            stack.append([end, event, 0])
        while stack:
            close(stack.pop())
    return per_name


def test_top_ops_rank_by_self_time_and_leave_annotations_out(tmp_path: Path) -> None:
    """The console's and summary.json's top ops of a real H100 trace (fixtures/pytorch_cuda): by self time,
    never ProfilerStep#N or record_function ranges, with the device time each op launched itself."""
    result = run(CUDA_TRACE.parent, tmp_path / "out")
    events = _events(CUDA_TRACE)
    annotations = {e["name"] for e in events if e.get("cat") in ANNOTATIONS}
    own = {name: v for name, v in _self_times(events).items() if name not in annotations}
    expected = sorted(own, key=lambda name: (-own[name][1], name))[:10]
    [rank] = result.summary["ranks"]
    assert [row["op_name"] for row in rank["top_ops"]] == expected
    assert [(row["calls"], round(row["self_ms"] * 1e6), round(row["total_ms"] * 1e6)) for row in rank["top_ops"]] == \
        [tuple(own[name]) for name in expected]
    assert not any(row["op_name"].startswith("ProfilerStep#") for row in rank["top_ops"] + rank["top_ops_by_device"])
    total_self = sum(v[1] for v in own.values())
    assert abs(rank["top_ops"][0]["self_share"] - own[expected[0]][1] / total_self) < 1e-9
    # by device time launched: the kernels, memcpys and memsets whose runtime call each op made itself
    device_ms = [row["device_self_ms"] for row in rank["top_ops_by_device"]]
    assert device_ms == sorted(device_ms, reverse=True) and device_ms[0] > 0
    launched = dict(query(result.output, "SELECT o.op_name, sum(d.dur_ns) FROM device_exec d JOIN host_op o "
                                         "USING (rank, op_index) GROUP BY 1"))
    assert [round(row["device_self_ms"] * 1e6) for row in rank["top_ops_by_device"]] == \
        [launched[row["op_name"]] for row in rank["top_ops_by_device"]]
