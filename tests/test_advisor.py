"""The advisor (profpipe/advisor.py, sql/advisor): each rule fires where the numbers say it should, with the ranks,
steps and worst value derived independently (generator ground truth, the raw fixture, or the trace the test
wrote), and stays quiet on rows below its threshold; findings.json validates against its schema, and each
finding's evidence_sql, run again on profile.duckdb, gives its evidence rows."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import duckdb
import jsonschema
import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, REPO, run
from profpipe.advisor import ADVISOR_TABLE, EVIDENCE_ROWS, advise, load_rules
from profpipe.cli import app
from profpipe.models import load_models

sys.path.insert(0, str(FIXTURES / "generators"))
from kineto import rank_trace  # noqa: E402  (the fixture generator, with its trace changed below)
from kineto_nccl import ARRIVALS, COLLECTIVES  # noqa: E402  (the NCCL fixtures' arrival lags)

RULES = {rule.id: rule for rule in load_rules()}
#: Analysed once for the module: fixtures on which rules fire (but NO_FINDINGS).
ANALYSED = ["mindspore_gpu/two_ranks", "minddata_sink", "ascend_raw/era_a", "mindspore_hccl", "pytorch_cuda",
            "kineto_nccl", "kineto_nccl_straggler", "kineto_async"]
#: Fixtures on which no rule fires: kineto_async's GPU is busy where it ran its steps (gpu_idle fired at 100 % while
#: its steps were measured in the host's 0.6 ms spans, in which no kernel ran).
NO_FINDINGS = {"kineto_async"}
#: The sync call and the device capacity the test writes into the generator's Kineto trace.
SYNC_NS = 1_500_000
CAPACITY_BYTES = 34 << 20


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("advisor")
    found = {name: run(FIXTURES / name, root / name.replace("/", "_")) for name in ANALYSED}
    trace = _kineto_with_sync_and_capacity(root / "kineto_in")
    found["kineto_sync"] = run(trace, root / "kineto_sync")
    return {name: result.output for name, result in found.items()}


def _kineto_with_sync_and_capacity(folder: Path) -> Path:
    """The kineto generator's rank-0 trace with a cudaDeviceSynchronize call in step 1 and a device of 34 MiB."""
    document = rank_trace("current", 0, 0)
    step = next(e for e in document["traceEvents"] if e["name"] == "ProfilerStep#1")
    document["traceEvents"].append({"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": step["pid"],
                                    "tid": step["tid"], "ts": step["ts"] + 8000.0, "dur": SYNC_NS / 1000,
                                    "args": {"correlation": 999_999}})
    document["deviceProperties"] = [{"id": 0, "name": "test GPU", "totalGlobalMem": CAPACITY_BYTES}]
    folder.mkdir()
    path = folder / "rank-0.pt.trace.json"
    path.write_text(json.dumps(document))
    return path


def _findings(out: Path) -> dict[str, dict]:
    return {f["rule_id"]: f for f in json.loads((out / "findings.json").read_text())["findings"]}


def test_every_rule_is_documented_and_reads_marts_only():
    marts = {m.name for m in load_models() if m.layer == "marts"}
    assert set(RULES) == {"input_bound_steps", "gpu_idle", "launch_bound_stream", "host_device_sync",
                          "comm_not_overlapped", "slow_rank_step", "slow_rank_phase", "collective_straggler",
                          "slow_link", "iteration_gap",
                          "step_tail", "aicpu_ops", "memory_near_capacity", "small_kernels", "input_pipeline",
                          "kernel_fusion_candidate", "below_roofline", "critical_path_overhead"}
    for rule in RULES.values():
        assert rule.reads and rule.reads <= marts and set(rule.requires) <= rule.reads, rule.id
        assert len(rule.suggestion) > 150 and rule.threshold_source and rule.not_applicable, rule.id
        assert "{{" not in rule.sql, rule.id


@pytest.mark.parametrize("name", ANALYSED + ["kineto_sync"])
def test_findings_json_follows_its_schema_and_evidence_sql_gives_the_evidence(outputs, name):
    out = outputs[name]
    document = json.loads((out / "findings.json").read_text())
    jsonschema.validate(document, json.loads((REPO / "schemas" / "findings.schema.json").read_text()))
    assert {c["rule_id"] for c in document["checked"]} == set(RULES)
    assert bool(document["findings"]) != (name in NO_FINDINGS), name  # each fixture fires some rule, but NO_FINDINGS
    with duckdb.connect(str(out / "profile.duckdb"), read_only=True) as con:
        table = {row[0]: row[1:] for row in con.execute(
            f"SELECT rule_id, status, fired_rows FROM {ADVISOR_TABLE}").fetchall()}
        for finding in document["findings"]:
            result = con.execute(finding["evidence_sql"])
            columns = [d[0] for d in result.description]
            rows = [dict(zip(columns, row)) for row in result.fetchall()]
            assert len(rows) == finding["fired_rows"] == table[finding["rule_id"]][1]
            assert columns == finding["evidence_columns"]
            assert len(finding["evidence"]) == min(EVIDENCE_ROWS, len(rows))
            assert {(r["rank"], r["capture"], r["step"]) for r in finding["evidence"]} <= \
                {(r["rank"], r["capture"], r["step"]) for r in rows}
            assert finding["ranks"] == sorted({r["rank"] for r in rows})
            assert finding["steps"] == sorted({r["step"] for r in rows if r["step"] is not None})
    for check in document["checked"]:
        assert table[check["rule_id"]][0] == check["status"]
        assert (check["status"] == "not_applicable") == (check["reason"] or "").startswith("not applicable: ")


def test_step_rules_match_the_generators_step_truth(outputs):
    """iteration_gap, step_tail (20 % of the step) and slow_rank_step (5 % slower than the fastest rank) against
    the steps the mindspore_gpu generator simulated."""
    truth = json.loads((FIXTURES / "mindspore_gpu" / "two_ranks" / "expected.json").read_text())["ranks"]
    steps = {(int(rank), s["step"]): s for rank, entry in truth.items() for s in entry["steps"]}
    fastest = {}
    for (rank, step), s in steps.items():
        fastest[step] = min(fastest.get(step, s["total_ns"]), s["total_ns"])
    expected = {
        "iteration_gap": {k: s["iteration_interval_ns"] / s["total_ns"] for k, s in steps.items()},
        "step_tail": {k: s["tail_ns"] / s["total_ns"] for k, s in steps.items()},
        "slow_rank_step": {k: s["total_ns"] / fastest[k[1]] - 1 for k, s in steps.items()},
    }
    findings = _findings(outputs["mindspore_gpu/two_ranks"])
    for rule_id, values in expected.items():
        fired = {k: v for k, v in values.items() if v > RULES[rule_id].threshold}
        assert fired, rule_id
        finding = findings[rule_id]
        assert finding["ranks"] == sorted({r for r, _ in fired}) and finding["steps"] == sorted({s for _, s in fired})
        assert finding["fired_rows"] == len(fired)
        assert finding["worst_value"] == pytest.approx(max(fired.values()), rel=1e-12)
        assert {(e["rank"], e["step"]): e["value"] for e in finding["evidence"]} == pytest.approx(fired, rel=1e-12)


def test_aicpu_rule_names_the_op_of_the_raw_ai_cpu_record(outputs):
    # fixtures/ascend_raw/era_a/DATA_PREPROCESS.dev.AICPU.0.slice_0: DropoutGenMask, totalTime=150 us (> 20 us)
    finding = _findings(outputs["ascend_raw/era_a"])["aicpu_ops"]
    assert finding["worst_value"] == 150_000 and finding["ranks"] == [0] and finding["steps"] == []
    assert [(e["op_type"], e["executions"], e["long_executions"]) for e in finding["evidence"]] == \
        [("DropoutGenMask", 1, 1)]


def test_sync_and_memory_rules_on_the_trace_the_test_wrote(outputs):
    document = json.loads(next((outputs["kineto_sync"].parent / "kineto_in").glob("*.json")).read_text())
    step_ns = next(round(e["dur"] * 1000) for e in document["traceEvents"] if e["name"] == "ProfilerStep#1")
    reserved = max(e["args"]["Total Reserved"] for e in document["traceEvents"]
                   if e["name"] == "[memory]" and e["args"]["Device Type"] == 1)
    findings = _findings(outputs["kineto_sync"])
    sync = findings["host_device_sync"]
    # the call lies inside step 1: its share of that step
    assert sync["worst_value"] == pytest.approx(SYNC_NS / step_ns) and sync["ranks"] == [0] and sync["steps"] == [1]
    assert sync["evidence"][0]["apis"] == "cudaDeviceSynchronize" and sync["evidence"][0]["sync_calls"] == 1
    memory = findings["memory_near_capacity"]
    assert reserved / CAPACITY_BYTES > 0.9 and memory["worst_value"] == pytest.approx(reserved / CAPACITY_BYTES)
    assert memory["evidence"][0]["device"] == "cuda:0" and memory["evidence"][0]["capacity_bytes"] == CAPACITY_BYTES
    # the real H100 trace: 126 MiB reserved of 79 GiB, and no synchronising call inside its steps
    quiet = {c["rule_id"]: c["status"] for c in json.loads((outputs["pytorch_cuda"] / "findings.json").read_text())["checked"]}
    assert quiet["memory_near_capacity"] == quiet["host_device_sync"] == "passed"


@pytest.mark.parametrize("name", ANALYSED + ["kineto_sync"])
def test_share_metrics_are_within_zero_and_one_on_every_fixture(outputs, name):
    """What the console, the report and findings.json show of a rule whose unit is share (its worst value and every
    row its evidence SQL gives) lies in [0, 1]: kineto_async's 36.7 ms cudaDeviceSynchronize after its 1.8 ms of
    steps once made host_device_sync 2038 %."""
    findings = [f for f in json.loads((outputs[name] / "findings.json").read_text())["findings"] if f["unit"] == "share"]
    with duckdb.connect(str(outputs[name] / "profile.duckdb"), read_only=True) as con:
        for finding in findings:
            values = [row[0] for row in con.execute(f"SELECT value FROM ({finding['evidence_sql']})").fetchall()]
            assert values and all(0 <= v <= 1 for v in values + [finding["worst_value"]]), (finding["rule_id"], values)


#: One-sided critical value of Dixon's r10 for n = 4 at alpha = 0.005 (Rorabacher 1991, Table 1).
DIXON_Q_CRITICAL_4 = 0.926


def test_straggler_rule_fires_on_the_rank_the_generator_made_late(outputs):
    """kineto_nccl_straggler: Dixon's Q test of the minimum on each collective's four kernel durations, which the
    generator's arrival lags give (every rank's kernel ends with the last arrival's, so a rank's duration is the
    kernel's own plus its lag behind the last rank: the constant cancels in Q)."""
    arrivals = ARRIVALS["kineto_nccl_straggler"]
    assert len(arrivals) == 4
    flagged: dict[int, int] = {}
    last_arrivals: dict[int, int] = {}
    tested = 0
    for index, collective in enumerate(COLLECTIVES):
        if collective[6] is None:  # no kernel: the op-timed `wait` is not compared
            continue
        lags = [ranks[index] for ranks in arrivals]
        waits = sorted((max(lags) - lag, rank) for rank, lag in enumerate(lags))
        x = [wait for wait, _ in waits]
        last_arrivals[waits[0][1]] = last_arrivals.get(waits[0][1], 0) + 1
        if len(set(x)) <= 3:
            continue
        tested += 1
        if (x[1] - x[0]) / (x[3] - x[0]) > DIXON_Q_CRITICAL_4:
            flagged[waits[0][1]] = flagged.get(waits[0][1], 0) + 1
    assert flagged == {3: 2} and tested == 3  # the allreduce and the allgather; the broadcast's Q is 0.85
    finding = _findings(outputs["kineto_nccl_straggler"])["collective_straggler"]
    assert finding["ranks"] == sorted(flagged) and finding["steps"] == []
    assert finding["fired_rows"] == len(flagged) and finding["worst_value"] == max(flagged.values())
    assert [(e["rank"], e["value"], e["instances_tested"], e["last_arrivals"], e["ranks"]) for e in finding["evidence"]] \
        == [(rank, count, tested, last_arrivals[rank], 4) for rank, count in flagged.items()]
    # two ranks are too few for the test: the rule is checked and stays quiet on kineto_nccl
    checked = {c["rule_id"]: c["status"] for c in json.loads((outputs["kineto_nccl"] / "findings.json").read_text())["checked"]}
    assert checked["collective_straggler"] == "passed" and "collective_straggler" not in _findings(outputs["kineto_nccl"])


def test_input_rules_fire_on_the_sink_mode_pipeline(outputs):
    findings = _findings(outputs["minddata_sink"])
    assert findings["input_bound_steps"]["worst_value"] > 0.2
    pipeline = findings["input_pipeline"]
    assert {(e["analyzer"], e["rule"], e["op"]) for e in pipeline["evidence"]} >= {("profpipe", "slowest_op", "Map(id=2)")}


def _marts(rows: dict[str, list[dict]]) -> duckdb.DuckDBPyConnection:
    """An in-memory database with every mart as an empty typed table (types from its YAML), `rows` inserted."""
    con = duckdb.connect()
    for model in load_models():
        if model.layer != "marts":
            continue
        con.execute(f"CREATE TABLE {model.name} ({', '.join(f'{c.name} {c.type}' for c in model.columns)})")
        for row in rows.get(model.name, []):
            con.execute(f"INSERT INTO {model.name} BY NAME SELECT {', '.join(f'? AS {k}' for k in row)}", list(row.values()))
    return con


#: Per rule, mart rows on which it stays quiet (each just inside its threshold) and the change that fires it.
QUIET = {
    "input_bound_steps": ({"step_input_wait": [{"rank": 0, "capture": 0, "step": 1, "wait_share": 0.2}]},
                          ("step_input_wait", "wait_share", 0.21)),
    "gpu_idle": ({"step_overlap": [{"rank": 0, "capture": 0, "step": 1, "total_ns": 100, "free_ns": 20}]},
                 ("step_overlap", "free_ns", 21)),
    "launch_bound_stream": ({"kernel_launch_stats": [{"rank": 0, "capture": 0, "stream_id": 7, "launches": 10,
                                                      "short_kernels": 9, "mean_queue_length": 1.0}]},
                            ("kernel_launch_stats", "mean_queue_length", 0.5)),
    "host_device_sync": ({"step_gpu_time": [{"rank": 0, "capture": 0, "step": 1, "step_ns": 100, "host_sync_ns": 5,
                                             "host_sync_calls": 1, "host_sync_apis": "cudaStreamSynchronize"}]},
                         ("step_gpu_time", "host_sync_ns", 6)),
    "comm_not_overlapped": ({"step_overlap": [{"rank": 0, "capture": 0, "step": 1, "total_ns": 100,
                                               "pure_communication_ns": 10}]},
                            ("step_overlap", "pure_communication_ns", 11)),
    "slow_rank_step": ({"cluster_step_phases": [{"rank": 1, "capture": 0, "step": 1, "ranks": 2, "slowdown": 0.05}]},
                       ("cluster_step_phases", "slowdown", 0.06)),
    "slow_rank_phase": ({"cluster_slow_rank": [{"capture": 0, "phase": "computing", "ranks": 2, "gap_ratio": 0.05,
                                                "slow_rank": 1, "max_step": 1}]},
                        ("cluster_slow_rank", "gap_ratio", 0.06)),
    "collective_straggler": ({"collective_straggler": [{"rank": 1, "capture": 0, "is_slow": False,
                                                        "slow_test": "dixon"}]},
                             ("collective_straggler", "is_slow", True)),
    "slow_link": ({"comm_link_stats": [{"rank": 0, "capture": 0, "link": "0-1", "transport": "SDMA", "bytes": 80,
                                        "time_ns": 100},
                                       {"rank": 1, "capture": 0, "link": "1-0", "transport": "SDMA", "bytes": 100,
                                        "time_ns": 100},
                                       {"rank": 2, "capture": 0, "link": "2-0", "transport": "SDMA", "bytes": 100,
                                        "time_ns": 100}]},
                  ("comm_link_stats", "bytes", 79)),
    "iteration_gap": ({"step_phases": [{"rank": 0, "capture": 0, "step": 1, "total_ns": 100,
                                        "iteration_interval_ns": 20}]},
                      ("step_phases", "iteration_interval_ns", 21)),
    "step_tail": ({"step_phases": [{"rank": 0, "capture": 0, "step": 1, "total_ns": 100, "tail_ns": 20}]},
                  ("step_phases", "tail_ns", 21)),
    "aicpu_ops": ({"aicpu_op_exec": [{"rank": 0, "seq": 0, "op_type": "Cast", "total_ns": 20_000}]},
                  ("aicpu_op_exec", "total_ns", 20_001)),
    "memory_near_capacity": ({"memory_peak": [{"rank": 0, "capture": 0, "kind": "allocator", "component": "allocator",
                                               "device": "cuda:0", "peak_reserved_bytes": 90}],
                              "device_memory_capacity": [{"rank": 0, "capture": 0, "device": "cuda:0",
                                                          "capacity_bytes": 100}]},
                             ("memory_peak", "peak_reserved_bytes", 91)),
    "small_kernels": ({"kernel_stats": [{"rank": 0, "name": "small", "stream_id": 7, "instances": 5, "avg_ns": 9_999,
                                         "total_ns": 50_000},
                                        {"rank": 0, "name": "big", "stream_id": 7, "instances": 5, "avg_ns": 10_000,
                                         "total_ns": 50_000}]},
                      ("kernel_stats", "instances", 6)),
    # 3 kernels of 9 µs on average, 5 times: 5% of the device time is quiet
    "kernel_fusion_candidate": ({"kernel_sequence_stats": [{"rank": 0, "op_name": "op", "op_depth": 0,
                                                            "sequence": "a|b|c", "activities": 3, "kernels": 3,
                                                            "instances": 5, "device_ns": 135_000, "kernel_ns": 135_000,
                                                            "device_share": 0.05}]},
                                ("kernel_sequence_stats", "device_share", 0.051)),
    # an op at 5 % of the device time reaching 60 % of its roof is quiet
    "below_roofline": ({"op_roofline": [{"rank": 0, "op_name": "aten::mm", "input_dims": "[[8, 8], [8, 8]]",
                                         "dtype": "float", "device_share": 0.05, "roof_ratio": 0.6}]},
                       ("op_roofline", "roof_ratio", 0.59)),
    # launch delays and kernel gaps at 20 % of the critical path are quiet
    "critical_path_overhead": ({"critical_path_summary": [{"rank": 0, "capture": 0, "step": 1, "path_length_ns": 100,
                                                           "cpu_ns": 80, "launch_ns": 10, "kernel_kernel_ns": 10,
                                                           "sync_edges": 1}]},
                               ("critical_path_summary", "launch_ns", 11)),
    "input_pipeline": ({"data_findings": [{"rank": 0, "capture": 0, "analyzer": "mindinsight", "rule": "device_queue",
                                           "value": 0.3, "threshold": 0.3}]},
                       ("data_findings", "value", 0.31)),
}


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_each_rule_is_quiet_at_its_threshold_and_fires_past_it(rule_id):
    rows, (mart, column, value) = QUIET[rule_id]
    rule = RULES[rule_id]
    quiet = advise(_marts(rows), [rule])[0]
    assert quiet.status == "passed", rule_id
    fired_rows = {name: [dict(r) for r in table] for name, table in rows.items()}
    fired_rows[mart][0][column] = value
    fired = advise(_marts(fired_rows), [rule])[0]
    row = fired_rows[mart][0]
    assert fired.status == "fired" and fired.ranks == [row.get("rank", row.get("slow_rank"))], rule_id
    assert advise(_marts({}), [rule])[0].status == "not_applicable"


def test_slow_link_leaves_local_copies_out_and_judges_a_rank_once():
    """A rank's copy to itself (link i-i, on-chip, hundreds of GB/s) is no peer of the links between ranks: with it in
    the transport's median, both HCCS links of a healthy 2-rank all-reduce would be slow. A rank with HCCL tasks is
    judged from them, not again from the tools' matrix."""
    link = lambda rank, name, bytes_: {"rank": rank, "capture": 0, "link": name, "transport": "SDMA",  # noqa: E731
                                       "bytes": bytes_, "time_ns": 100}
    healthy = {"comm_link_stats": [link(0, "0-0", 4200), link(1, "1-1", 4200), link(0, "0-1", 150),
                                   link(1, "1-0", 150)]}
    assert advise(_marts(healthy), [RULES["slow_link"]])[0].status == "passed"
    matrix = {"capture": 0, "src_rank": 0, "dst_rank": 1, "transport": "HCCS", "links": 2, "bytes": 10, "time_ns": 100,
              "bandwidth_bytes_per_second": 1e8, "median_bytes_per_second": 1e9, "median_ratio": 0.1}
    both = {**healthy, "cluster_link_bandwidth": [matrix]}
    assert advise(_marts(both), [RULES["slow_link"]])[0].status == "passed"
    trimmed = {"cluster_link_bandwidth": [matrix]}
    assert advise(_marts(trimmed), [RULES["slow_link"]])[0].status == "fired"


def test_console_and_advise_command(outputs):
    out = outputs["mindspore_gpu/two_ranks"]
    printed = CliRunner().invoke(app, ["advise", str(out)])
    assert printed.exit_code == 0
    assert printed.output.startswith(f"advisor: 5 findings ({len(RULES)} rules checked, ")
    assert "iteration_gap" in printed.output and "SELECT rank, capture, step" in printed.output
    as_json = json.loads(CliRunner().invoke(app, ["advise", str(out), "--json"]).output)
    assert [r["rule_id"] for r in as_json if r["status"] == "fired"] == \
        [f["rule_id"] for f in json.loads((out / "findings.json").read_text())["findings"]]
