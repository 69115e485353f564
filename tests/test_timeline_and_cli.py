"""The Chrome trace (format, size limit, truncation marker) and the CLI commands."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, load_trace, run
from profpipe.cli import app

GPU = FIXTURES / "mindspore_gpu" / "graph_2x"
CPU = FIXTURES / "mindspore_cpu" / "lenet_graph"


def test_trace_is_a_chrome_json_object_with_metadata(tmp_path):
    run(GPU, tmp_path / "out")
    trace = load_trace(tmp_path / "out")
    assert trace["displayTimeUnit"] == "ms"
    assert isinstance(trace["baseTimeNanoseconds"], int)
    events = trace["traceEvents"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert names == {"profpipe", "rank 0"}
    threads = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {"Step Trace: iterations", "Overlap Analysis: Computing", "Overlap Analysis: Free", "GPU kernels: Stream 7",
            "GPU kernels: Stream 13", "Host: Thread 4242", "GPU ops: Ops"} <= threads
    complete = [e for e in events if e["ph"] == "X"]
    assert all(e["ts"] >= 0 and e["dur"] >= 0 and isinstance(e["pid"], int) for e in complete)
    assert "profpipe" not in trace


def test_timeline_limit_drops_the_latest_events_and_says_so(tmp_path):
    run(CPU, tmp_path / "full")
    full = load_trace(tmp_path / "full")
    limit_mb = 0.1
    run(CPU, tmp_path / "cut", timeline_limit_mb=limit_mb)
    path = tmp_path / "cut" / "timeline" / "trace.json"
    assert path.stat().st_size <= limit_mb * 1024 * 1024
    cut = json.loads(path.read_text())
    info = cut["profpipe"]["truncated"]
    ops = [e for e in cut["traceEvents"] if e.get("cat") == "op"]
    all_ops = [e for e in full["traceEvents"] if e.get("cat") == "op"]
    assert 0 < len(ops) < len(all_ops)
    # every event of the full trace is either written or counted as dropped (the first element,
    # the "profpipe" process name, is written by hand and counted in neither)
    assert info["events_dropped"] == len(full["traceEvents"]) - 1 - info["events_written"]
    assert len(cut["traceEvents"]) == info["events_written"] + 2  # + profpipe process + marker
    # complete up to the cut: the kept ops are exactly the earliest ones
    assert sorted(e["ts"] for e in ops) == sorted(e["ts"] for e in all_ops)[: len(ops)]
    assert max(e["ts"] for e in ops) <= info["complete_until_us"]
    marker = [e for e in cut["traceEvents"] if e["ph"] == "i"]
    assert len(marker) == 1 and "truncated" in marker[0]["name"]
    manifest = json.loads((tmp_path / "cut" / "manifest.json").read_text())
    assert any("timeline truncated" in w for w in manifest["warnings"])


def test_timeline_limit_keeps_steps(tmp_path):
    run(GPU, tmp_path / "out", timeline_limit_mb=0.01)
    trace = load_trace(tmp_path / "out")
    assert len([e for e in trace["traceEvents"] if e.get("cat") == "step"]) == 5
    assert trace["profpipe"]["truncated"]["events_dropped"] > 0


def test_cli_analyse_query_tables(tmp_path):
    runner = CliRunner()
    out = tmp_path / "out"
    analysed = runner.invoke(app, ["analyse", str(GPU), "-o", str(out)])
    assert analysed.exit_code == 0, analysed.output
    assert "top op types" in analysed.output and "top kernels" in analysed.output
    as_json = runner.invoke(app, ["query", str(out), "SELECT op_type, occurrences FROM op_type_stats "
                                  "WHERE side = 'Device' ORDER BY op_type LIMIT 2", "--format", "json"])
    assert json.loads(as_json.output) == [{"op_type": "AllReduce", "occurrences": 5},
                                          {"op_type": "ApplyMomentum", "occurrences": 5}]
    as_csv = runner.invoke(app, ["query", str(out), "SELECT count(*) AS n FROM kernel_stats", "-f", "csv"])
    assert as_csv.output.splitlines() == ["n", "9"]
    listed = runner.invoke(app, ["tables", str(out)])
    assert listed.exit_code == 0
    for name in ("host_op", "op_type_stats", "kernel_stats", "step_phases"):
        assert name in listed.output


def test_cli_json_summary(tmp_path):
    outcome = CliRunner().invoke(app, ["analyse", str(CPU), "-o", str(tmp_path / "out"), "--json"])
    assert outcome.exit_code == 0
    summary = json.loads(outcome.output)
    assert summary["ranks"][0]["device_type"] == "cpu"


@pytest.mark.parametrize("args", [["query", "{out}", "SELECT * FROM nope"], ["query", "{out}", "SELECT 1", "-f", "xml"],
                                  ["tables", "{missing}"]])
def test_cli_usage_errors_are_one_line(tmp_path, args):
    runner = CliRunner()
    runner.invoke(app, ["analyse", str(GPU), "-o", str(tmp_path / "out")])
    args = [a.format(out=tmp_path / "out", missing=tmp_path / "missing") for a in args]
    outcome = runner.invoke(app, args)
    assert outcome.exit_code == 2
    assert outcome.output.startswith("profpipe: error:")
    assert "Traceback" not in outcome.output
