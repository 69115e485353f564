"""The visual report (profpipe/report): its file, its pages' numbers against the marts, and, in headless Chromium,
that it draws every chart with data, filters its tables, switches its step chart, and loads nothing."""
from __future__ import annotations

import csv
import json
import re
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from browser import ARTIFACTS, browser, open_report
from conftest import FIXTURES, query, realdata, run
from profpipe.cli import app
from profpipe.report import write_report

#: Fixtures whose reports the browser opens: GPU (Kineto with memory), an Ascend cluster with HCCL, MindData,
#: torch_npu's text export (one rank) and a torch_npu cluster of 4 ranks, 2 of them trimmed to the tools' summaries.
BROWSED = ["pytorch_cuda", "ascend_ms_cluster", "minddata_mindspore/slow_map", "ascend_pt_pair/text",
           "ascend_pt_cluster"]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("reports")
    found = {}
    for name in BROWSED:
        out = root / name.replace("/", "_")
        run(FIXTURES / name, out, visual_report=True)
        found[name] = out
    return found


def payload(report: Path) -> dict:
    """The JSON the report's script draws."""
    text = report.read_text(encoding="utf-8")
    data = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', text, re.S).group(1)
    return json.loads(data)


def sections(report: Path, page_id: str) -> dict[str, dict]:
    page = next(p for p in payload(report)["pages"] if p["id"] == page_id)
    return {s.get("id") or s["title"]: s for s in page["sections"]}


# ---- the file ------------------------------------------------------------------------------------------------

def test_analyse_writes_a_self_contained_report(outputs: dict[str, Path]) -> None:
    report = outputs["pytorch_cuda"] / "report.html"
    text = report.read_text(encoding="utf-8")
    # the inlined plotly.js (its cartesian bundle, gzipped: 0.66 MB) and the data: a small run's report stays under 1 MB
    assert 500_000 < report.stat().st_size < 1_000_000
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", text), "every asset must be inlined"
    assert "default-src 'none'" in text  # the page cannot fetch anything, even by mistake
    assert [p["id"] for p in payload(report)["pages"]] == ["overview", "advisor", "steps", "operators", "utilisation",
                                                          "data", "communication", "memory", "timeline"]


def test_no_report_option_and_report_command(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["analyse", str(FIXTURES / "kineto_nccl"), "-o", str(out), "-q", "--no-report"])
    assert result.exit_code == 0, result.output
    assert not (out / "report.html").exists()
    result = CliRunner().invoke(app, ["report", str(out), "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    assert payload(tmp_path / "r.html")["pages"][0]["id"] == "overview"
    refused = CliRunner().invoke(app, ["report", str(FIXTURES / "kineto_nccl")])
    assert refused.exit_code == 2 and "not an output folder" in refused.output
    assert not (FIXTURES / "kineto_nccl" / "report.html").exists()


def test_pages_without_data_say_why(outputs: dict[str, Path]) -> None:
    report = outputs["minddata_mindspore/slow_map"] / "report.html"
    for page in ("operators", "communication", "memory"):
        kinds = {s["kind"] for s in sections(report, page).values()}
        assert kinds == {"empty"}, page
        assert all(s["why"] for s in sections(report, page).values())


# ---- numbers against the marts -------------------------------------------------------------------------------

def test_step_chart_data_is_the_step_phases(outputs: dict[str, Path]) -> None:
    out = outputs["ascend_ms_cluster"]
    data = sections(out / "report.html", "steps")["steps"]["data"]
    expected = query(out, "SELECT p.rank, p.step, p.total_ns / 1e6, c.slowest_rank FROM step_phases p "
                          "JOIN cluster_step_phases c USING (rank, capture, step) ORDER BY p.rank, p.step")
    assert list(zip(data["rank"], data["step"], data["total_ms"], data["slowest_rank"])) == \
        [(r, s, pytest.approx(t), slow) for r, s, t, slow in expected]
    # the generator gives both ranks the same step time (STEP_US): no rank is marked slow
    assert not any(data["is_slow"])


def test_memory_bandwidth_chart_and_table_only_where_there_are_copies(outputs: dict[str, Path]) -> None:
    """The H100 fixture's memory page draws memory_bandwidth_series per direction (GB/s, every change point: fewer
    than the cap) and lists memory_bandwidth_stats' profpipe rows; the Ascend cluster (no memcpy) has neither."""
    out = outputs["pytorch_cuda"]
    found = sections(out / "report.html", "memory")
    figure = found["memory-bandwidth"]["variants"][0]["figure"]
    lines = {trace["name"]: trace["y"] for trace in figure["data"]}
    expected = {}
    for direction, value in query(out, "SELECT direction, bytes_per_second / 1e9 FROM memory_bandwidth_series "
                                       "ORDER BY direction, ts_ns"):
        expected.setdefault(direction, []).append(pytest.approx(value))
    assert lines == expected and set(lines) == {"HtoD", "DtoH", "memset"}
    table = found["memory-bandwidth-stats"]["rows"]  # rank, direction, copies, ...
    assert sorted((r[1], r[2]) for r in table) == [("DtoH", 3), ("HtoD", 6), ("memset", 12)]
    other = sections(outputs["ascend_ms_cluster"] / "report.html", "memory")
    assert "memory-bandwidth" not in other and "memory-bandwidth-stats" not in other



def test_roofline_chart_only_where_ops_are_costed(outputs: dict[str, Path]) -> None:
    """The H100 fixture's operators page draws op_roofline (intensity against TFLOP/s, log-log, a point per row) under
    the float roof of an H100 (494.7 TFLOP/s, 3,350 GB/s); the Ascend cluster (no Kineto shapes) has no roofline."""
    out = outputs["pytorch_cuda"]
    found = sections(out / "report.html", "operators")
    figure = found["roofline"]["figure"]
    assert figure["layout"]["xaxis"]["type"] == figure["layout"]["yaxis"]["type"] == "log"
    points = sorted((x, y) for trace in figure["data"] if trace["mode"] == "markers" for x, y in zip(trace["x"], trace["y"]))
    expected = sorted(query(out, "SELECT intensity_flop_per_byte, achieved_flop_per_second / 1e12 FROM op_roofline"))
    assert points == [(pytest.approx(x), pytest.approx(y)) for x, y in expected] and points
    roofs = [trace for trace in figure["data"] if trace["mode"] == "lines"]
    assert len(roofs) == 1 and max(roofs[0]["y"]) == pytest.approx(494.7)
    assert all(y <= 494.7 for _, y in points)
    assert len(found["roofline-ops"]["rows"]) == len(expected)
    other = sections(outputs["ascend_ms_cluster"] / "report.html", "operators")
    assert "roofline" not in other and "roofline-ops" not in other

def test_critical_path_chart_adds_up_to_each_steps_path(outputs: dict[str, Path]) -> None:
    """The H100 fixture's utilisation page stacks each step's critical path (critical_path_summary) by what its
    edges are: the parts add up to the path's length; the table's ops and kernels are critical_path_edge's; the
    Ascend cluster (no runtime calls) has neither."""
    out = outputs["pytorch_cuda"]
    found = sections(out / "report.html", "utilisation")
    figure = found["critical-path"]["variants"][0]["figure"]
    totals = [sum(v or 0 for v in values) for values in zip(*(trace["y"] for trace in figure["data"]))]
    expected = query(out, "SELECT path_length_ns / 1e6 FROM critical_path_summary WHERE rank = 0 "
                          "ORDER BY capture, step NULLS FIRST")
    assert totals == [pytest.approx(t) for (t,) in expected] and totals
    on_path = query(out, "SELECT sum(weight_ns) / 1e6 FROM critical_path_edge WHERE edge_type IN ('cpu_op', 'gpu_op') "
                         "AND event_name IS NOT NULL")[0][0]
    rows = found["critical-path-events"]["rows"]  # rank, side, op or kernel, steps, edges, on path ms, share
    assert sum(r[5] for r in rows) == pytest.approx(on_path) and all(0 <= r[6] <= 1 for r in rows)
    other = sections(outputs["ascend_ms_cluster"] / "report.html", "utilisation")
    assert "critical-path" not in other and "critical-path-events" not in other


def test_roof_share_chart_puts_gpu_and_ascend_ops_on_one_plane(outputs: dict[str, Path], tmp_path: Path) -> None:
    """The roof chart: the H100 fixture's ops at achieved over peak FLOP/s and bytes/s (the larger is roof_ratio),
    the Ascend PMU fixture's at op_bound's busiest compute and memory pipes; the Ascend cluster (no shapes, no
    PipeUtilization) has no such section."""
    def points(out: Path) -> list[tuple[float, float]]:
        figure = sections(out / "report.html", "operators")["roof-shares"]["figure"]
        return sorted((x, y) for trace in figure["data"] if trace["mode"] == "markers"
                      for x, y in zip(trace["x"], trace["y"]))

    gpu = outputs["pytorch_cuda"]
    expected = query(gpu, "SELECT achieved_bytes_per_second / peak_bytes_per_second, achieved_flop_per_second / "
                          "peak_flop_per_second, roof_ratio FROM op_roofline WHERE peak_flop_per_second IS NOT NULL")
    assert expected and all(max(m, c) == pytest.approx(ratio) for m, c, ratio in expected)
    assert points(gpu) == [(pytest.approx(m), pytest.approx(c)) for m, c in sorted(r[:2] for r in expected)]
    pmu = run(FIXTURES / "ascend_pmu", tmp_path / "pmu", visual_report=True).output
    expected = query(pmu, "SELECT coalesce(memory_share, 0), coalesce(compute_share, 0) FROM op_bound")
    assert points(pmu) == [(pytest.approx(m), pytest.approx(c)) for m, c in sorted(expected)] and expected
    rows_ = sections(pmu / "report.html", "operators")["roof-shares-ops"]["rows"]
    assert {r[0] for r in rows_} == {"ascend"} and len(rows_) == len(expected)
    other = sections(outputs["ascend_ms_cluster"] / "report.html", "operators")
    assert "roof-shares" not in other and "roof-shares-ops" not in other


def _records(section: dict) -> list[dict]:
    """A table section's rows as dicts keyed by its columns' keys."""
    keys = [c["key"] for c in section["columns"]]
    return [dict(zip(keys, row)) for row in section["rows"]]


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _close(got: float, expected_us: str, within_us: str) -> bool:
    """A report value in ms against a tool's µs cell, within `within_us` µs."""
    return abs(Decimal(repr(got)) * 1000 - Decimal(expected_us)) <= Decimal(within_us)


def test_torch_npu_step_trace_is_step_trace_time_csv(outputs: dict[str, Path]) -> None:
    """The utilisation page's step trace: every column of torch_npu's step_trace_time.csv, step for step (within the
    tool's float arithmetic: 0.03 µs, stage and preparing 0.25 µs; formats-ascend-today.md §4.4), and the per-step
    chart draws the overlapped communication and preparing beside the stacked phases."""
    expected = _csv(FIXTURES / "ascend_pt_pair" / "text" / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" /
                    "step_trace_time.csv")
    page = sections(outputs["ascend_pt_pair/text"] / "report.html", "utilisation")
    got = {r["step"]: r for r in _records(page["step-trace"])}
    assert sorted(got) == sorted(int(r["Step"]) for r in expected)
    columns = [("computation_ms", "Computing", "0.03"),
               ("pure_communication_ms", "Communication(Not Overlapped)", "0.03"),
               ("overlapped_communication_ms", "Overlapped", "0.03"), ("communication_ms", "Communication", "0.03"),
               ("free_ms", "Free", "0.03"), ("stage_ms", "Stage", "0.25"), ("bubble_ms", "Bubble", "0"),
               ("exclude_receive_ms", "Communication(Not Overlapped and Exclude Receive)", "0.03"),
               ("preparing_ms", "Preparing", "0.25")]
    for row in expected:
        for key, name, within in columns:
            assert _close(got[int(row["Step"])][key], row[name], within), (row["Step"], name)
    [figure] = [v["figure"] for v in page["utilisation-steps"]["variants"]]
    lines = {t["name"]: t["y"] for t in figure["data"] if t["type"] == "scatter"}
    assert lines["communication overlapped"] == [got[s]["overlapped_communication_ms"] for s in sorted(got)]
    assert lines["preparing (before the window)"] == [got[s]["preparing_ms"] for s in sorted(got)]
    assert "bubble (pipeline Receive)" not in lines  # no Receive op: nothing to draw


def test_torch_npu_tasks_per_op_type_and_core_type_are_op_statistic(outputs: dict[str, Path]) -> None:
    """The operators page lists the device tasks per op type and core type as op_statistic.csv does (count, total
    within 0.01 µs) and per op as kernel_details.csv does, and the ops table gives torch_npu's host ops the device
    time they launched (host_op_stats) and, clicked, the tasks they launched."""
    out = outputs["ascend_pt_pair/text"]
    expected = _csv(FIXTURES / "ascend_pt_pair" / "text" / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" /
                    "op_statistic.csv")
    page = sections(out / "report.html", "operators")
    got = {(r["op_type"], r["core_type"]): r for r in _records(page["op-core-types"])}
    assert got.keys() == {(r["OP Type"], r["Core Type"]) for r in expected}
    for row in expected:
        mine = got[(row["OP Type"], row["Core Type"])]
        assert mine["executions"] == int(row["Count"])
        assert _close(mine["total_ms"], row["Total Time(us)"], "0.01"), row["OP Type"]
        assert _close(mine["max_ms"], row["Max Time(us)"], "0.01"), row["OP Type"]
    assert sum(r["share"] for r in got.values()) == pytest.approx(1)
    tasks: dict[str, list[Decimal]] = {}
    for row in _csv(FIXTURES / "ascend_pt_pair" / "text" / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" /
                    "kernel_details.csv"):
        if row["Task ID"] != "N/A":  # HCCL ops: on the Communication page
            tasks.setdefault(row["Name"], []).append(Decimal(row["Duration(us)"]))
    device_ops = {r["op_name"]: r for r in _records(page["device-ops"])}
    assert device_ops.keys() == tasks.keys()
    for name, durations in tasks.items():
        assert device_ops[name]["tasks"] == len(durations)
        assert _close(device_ops[name]["total_ms"], str(sum(durations)), "0.001"), name
    launched = {row[0]: row[2] for rows_ in page["ops"]["drill"]["rows"].values() for row in rows_}  # drill-down
    assert launched.keys() == tasks.keys()  # every task under the host op that launched it (torch_to_npu)
    for name, durations in tasks.items():
        assert _close(launched[name], str(sum(durations)), "0.001"), name
    device = dict(query(out, "SELECT op_name, device_total_ns / 1e6 FROM host_op_stats"))
    ops = _records(page["ops"])
    assert {r["side"] for r in ops} == {"Host"}
    assert [r["device_ms"] for r in ops] == [device[r["op_name"]] for r in ops]
    assert max(r["device_ms"] for r in ops) > 0  # torch_npu's ops launch the tasks: not all 0


@pytest.mark.parametrize("export", ["text", "db"])
def test_torch_npu_real_report_is_the_tools_own_files(tmp_path: Path, export: str) -> None:
    """The real two-rank torch_npu results, text and db exports (the same analysis as test_ascend_pt_text.py's and
    test_ascend_db.py's, its report written after): per rank, the step trace table is the tools' own step trace
    (ascend_step_summary: the text export's step_trace_time.csv, the db export's analysis.db StepTraceTime; within
    0.03 µs, stage and preparing 0.25 µs), and the text export's tasks per op type and core type are op_statistic.csv (count; total within
    0.01 µs); the roof chart carries every op with PMU ratios (op_bound); the memory page has one PTA+GE curve
    per rank (the db export's MEMORY_RECORD holds its derived PTA+GE rows too: left out, as the text export's)."""
    out = tmp_path / "out"
    run(realdata(f"Ascend-msinsight/test/data/pytorch/{export}/level1"), out)
    write_report(out)
    utilisation = sections(out / "report.html", "utilisation")
    got = {(r["rank"], r["step"]): r for r in _records(utilisation["step-trace"])}
    ranks = sorted({rank for rank, _ in got})
    assert ranks == [0, 1]
    columns = [("computation_ms", "computing_ns", "0.03"),
               ("pure_communication_ms", "communication_not_overlapped_ns", "0.03"),
               ("overlapped_communication_ms", "overlapped_ns", "0.03"), ("free_ms", "free_ns", "0.03"),
               ("stage_ms", "stage_ns", "0.25"), ("bubble_ms", "bubble_ns", "0"),
               ("preparing_ms", "preparing_ns", "0.25")]
    expected = query(out, f"SELECT rank, step, {', '.join(c for _, c, _ in columns)} FROM ascend_step_summary")
    assert {(r[0], r[1]) for r in expected} == got.keys()
    for rank, step, *values in expected:  # the tools' own numbers, ns
        for (key, name, within), value in zip(columns, values):
            assert _close(got[(rank, step)][key], str(Decimal(value) / 1000), within), (rank, step, name)
    peaks = _records(sections(out / "report.html", "memory")["memory-peaks"])  # PTA+GE once: recomputed, not read
    assert sorted((r["rank"], r["component"]) for r in peaks if r["kind"] == "component") == [
        (rank, component) for rank in ranks for component in ("APP", "GE", "PTA", "PTA+GE")]
    operators = sections(out / "report.html", "operators")
    assert {(r["device"], r["op_name"]) for r in _records(operators["roof-shares-ops"])} == {
        ("ascend", name) for (name,) in query(out, "SELECT DISTINCT op_name FROM op_bound")}
    if export == "db":
        return
    cores = {(r["rank"], r["op_type"], r["core_type"]): r for r in _records(operators["op-core-types"])}
    for rank in ranks:
        for row in _csv(realdata(f"Ascend-msinsight/test/data/pytorch/text/level1/rank{rank}_ascend_pt/"
                                 "ASCEND_PROFILER_OUTPUT/op_statistic.csv")):
            mine = cores.pop((rank, row["OP Type"], row["Core Type"]))
            assert mine["executions"] == int(row["Count"])
            assert _close(mine["total_ms"], row["Total Time(us)"], "0.01"), row["OP Type"]
    assert cores == {}


def test_torch_npu_pmu_per_op_on_the_roof_chart(outputs: dict[str, Path]) -> None:
    """torch_npu's PMU columns of kernel_details.csv (aic_mac_ratio, aiv_vec_ratio) put each AI Core op on the roof
    chart: its compute share is its busiest pipe's ratio (ties to the cube: op_bound's order), no PMU no point."""
    rows_ = _csv(FIXTURES / "ascend_pt_pair" / "text" / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" /
                 "kernel_details.csv")
    expected = {r["Name"]: ("mac" if float(r["aic_mac_ratio"]) >= float(r["aiv_vec_ratio"]) else "vec",
                            max(float(r["aic_mac_ratio"]), float(r["aiv_vec_ratio"])))
                for r in rows_ if r["aic_mac_ratio"] != "N/A"}
    page = sections(outputs["ascend_pt_pair/text"] / "report.html", "operators")
    got = {r["op_name"]: (r["kind"], r["compute_share"]) for r in _records(page["roof-shares-ops"])
           if r["device"] == "ascend"}
    assert got == expected
    drawn = {name for trace in page["roof-shares"]["figure"]["data"] if trace["name"].startswith("Ascend")
             for name in (text.split()[2] for text in trace["text"])}
    assert drawn == expected.keys()


def test_torch_npu_cluster_pages(outputs: dict[str, Path]) -> None:
    """The 4-rank torch_npu cluster (2 ranks trimmed to their summaries): the step trace page lists every rank's
    step as its analysis.db has it and the slow-rank test per phase; the communication page draws the tools' matrix
    between global ranks and lists the slow link the advisor names."""
    out = outputs["ascend_pt_cluster"]
    steps = sections(out / "report.html", "steps")
    trace = _records(steps["cluster-step-trace"])
    assert sorted(r["rank"] for r in trace) == [0, 1, 2, 3]
    for r in trace:  # the tools' own phases add up to the step, in every rank
        assert r["computing_ms"] + r["not_overlapped_ms"] + r["free_ms"] == pytest.approx(r["total_ms"])
    expected = {rank: (c / 1e6, n / 1e6) for rank, c, n in query(
        out, "SELECT rank, computing_ns, communication_not_overlapped_ns FROM cluster_step_trace")}
    assert {r["rank"]: (r["computing_ms"], r["not_overlapped_ms"]) for r in trace} == expected
    slow = {r["phase"]: r for r in _records(steps["cluster-slow-rank"])}
    findings = sections(out / "report.html", "advisor")["Findings"]["items"]
    [fired] = [f for f in findings if f["rule"] == "slow_rank_phase"]
    assert slow["computing"]["is_slow"] and slow["computing"]["slow_rank"] == 3 and "ranks 3" in fired["summary"]
    comm = sections(out / "report.html", "communication")
    links = _records(comm["cluster-links"])
    assert (links[0]["src_rank"], links[0]["dst_rank"], links[0]["median_ratio"]) == (1, 2, 0.5)  # slowest first
    matrix = comm["cluster-matrix"]["figure"]["data"][0]
    assert matrix["x"] == matrix["y"] == ["0", "1", "2", "3"]
    by = dict(((s, d), b) for s, d, b in query(out, "SELECT src_rank, dst_rank, sum(bytes) FROM cluster_link_bandwidth "
                                                   "GROUP BY ALL"))
    assert matrix["z"] == [[by.get((s, d)) for d in range(4)] for s in range(4)]


def test_user_range_table_is_user_range_stats(outputs: dict[str, Path]) -> None:
    """The era F cluster's MSTX markers: the operators page lists them as user_range_stats has them, and the op
    table has none of them."""
    out = outputs["ascend_ms_cluster"]
    page = sections(out / "report.html", "operators")
    expected = query(out, "SELECT rank, side, category, name, instances, marks, total_ns / 1e6 FROM user_range_stats "
                          "ORDER BY total_ns DESC, rank, side, name")
    assert expected and all(category == "marker" for _, _, category, *_ in expected)
    assert [tuple(row[:6]) + (pytest.approx(row[6]),) for row in page["user-ranges"]["rows"]] == expected
    markers = {name for _, _, _, name, *_ in expected}
    assert not markers & {row[2] for row in page["ops"]["rows"]}


def test_slow_ranks_are_marked(tmp_path: Path) -> None:
    """A rank is marked slow in a step when its step is more than 5 % longer than the step's fastest rank's."""
    out = tmp_path / "out"
    run(FIXTURES / "mindspore_gpu" / "two_ranks", out, visual_report=True)
    data = sections(out / "report.html", "steps")["steps"]["data"]
    totals = {(r, s): t for r, s, t in zip(data["rank"], data["step"], data["total_ms"])}
    fastest = {s: min(t for (_, s2), t in totals.items() if s2 == s) for _, s in totals}
    expected = [totals[r, s] > 1.05 * fastest[s] for r, s in zip(data["rank"], data["step"])]
    assert data["is_slow"] == expected and any(expected) and not all(expected)


def test_input_bound_steps_are_marked(outputs: dict[str, Path]) -> None:
    out = outputs["minddata_mindspore/slow_map"]
    data = sections(out / "report.html", "steps")["steps"]["data"]
    bound = query(out, "SELECT step FROM step_input_wait WHERE input_bound = 'highly' ORDER BY step")
    assert [s for s, b in zip(data["step"], data["input_bound"]) if b] == [s for (s,) in bound]
    assert bound, "the slow_map fixture's pipeline starves the device"


def test_overview_phases_sum_to_the_step(outputs: dict[str, Path]) -> None:
    figure = sections(outputs["ascend_ms_cluster"] / "report.html", "overview")["overview-phases"]["figure"]
    totals = [sum(v or 0 for v in values) for values in zip(*(trace["y"] for trace in figure["data"]))]
    expected = query(outputs["ascend_ms_cluster"], "SELECT avg(total_ns) / 1e6 FROM step_phases GROUP BY rank ORDER BY rank")
    assert totals == [pytest.approx(t) for (t,) in expected]


@pytest.mark.parametrize("name", BROWSED + ["kineto_async"])
def test_no_share_above_one_and_the_gpu_breakdown_adds_up(tmp_path: Path, name: str) -> None:
    """Every percentage a report table shows is a share within [0, 1]; the GPU breakdown's columns (compute, the
    kinds alone, idle) add up to its window. kineto_async's GPU runs up to 38 ms behind its host steps."""
    out = tmp_path / "out"
    run(FIXTURES / name, out, visual_report=True)
    shown = breakdowns = 0
    for page in payload(out / "report.html")["pages"]:
        for section in page["sections"]:
            if section.get("kind") != "table":
                continue
            keys = [c["key"] for c in section["columns"]]
            for index in (i for i, c in enumerate(section["columns"]) if c.get("format") == "pct"):
                values = [row[index] for row in section["rows"] if row[index] is not None]
                shown += len(values)
                assert all(0 <= v <= 1 for v in values), (page["id"], section["id"], keys[index], values)
            if section["id"] == "gpu-breakdown":
                for row in (dict(zip(keys, r)) for r in section["rows"]):
                    parts = ["compute_ms", "exposed_communication_ms", "exposed_memory_ms", "exposed_other_ms", "idle_ms"]
                    if row["definition"] == "profpipe":
                        breakdowns += 1
                        assert sum(row[k] for k in parts) == pytest.approx(row["window_ms"], abs=1e-9), row
    assert shown, "the report shows at least one share"
    assert breakdowns or name not in ("pytorch_cuda", "kineto_async"), "a GPU trace's report shows its breakdown"


def test_report_tables_are_capped_and_say_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    run(FIXTURES / "pytorch_cuda", out)
    monkeypatch.setattr("profpipe.report.pages.TOP_ROWS", 5)
    write_report(out)
    ops = sections(out / "report.html", "operators")["ops"]
    assert len(ops["rows"]) == 5 and ops["total"] == query(out, "SELECT count(*) FROM op_detail_stats")[0][0] > 5


def test_warehouse_and_diff_reports(tmp_path: Path) -> None:
    warehouse = tmp_path / "w"
    result = CliRunner().invoke(app, ["batch", str(FIXTURES / "mindspore_gpu"), "-w", str(warehouse), "-q"])
    assert result.exit_code == 0, result.output
    batch = sections(warehouse / "report.html", "batch")
    with duckdb.connect(str(warehouse / "catalog.duckdb"), read_only=True) as con:
        runs = [r for (r,) in con.execute("SELECT run FROM batch_runs ORDER BY analysed_at, run").fetchall()]
    assert [row[0] for row in batch["runs"]["rows"]] == runs
    assert "trend-step" in batch and "trend-op_type" in batch
    a, b = tmp_path / "a", tmp_path / "b"
    run(FIXTURES / "mindspore_gpu" / "graph_2x", a)
    run(FIXTURES / "mindspore_gpu" / "async_1x", b)
    result = CliRunner().invoke(app, ["diff", str(a), str(b), "--report", str(tmp_path / "diff.html"), "--json"])
    assert result.exit_code == 0, result.output
    changes = json.loads(result.output)["rows"]
    table = sections(tmp_path / "diff.html", "diff")["diff-table"]
    assert [(r[0], r[1]) for r in table["rows"]] == [(c["kind"], c["key"]) for c in changes]


# ---- in the browser ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def chromium():
    with browser() as instance:
        yield instance


def _page_charts(page, page_id: str) -> list[dict]:
    return page.eval_on_selector_all(f'.page[data-page="{page_id}"] .chart',
                                     "els => els.map(e => ({id: e.dataset.chart, rendered: e.dataset.rendered, "
                                     "points: Number(e.dataset.points || 0)}))")


@pytest.mark.parametrize("name", BROWSED)
def test_every_page_draws_without_errors_or_requests(chromium, outputs: dict[str, Path], name: str) -> None:
    visit = open_report(chromium, outputs[name] / "report.html")
    page = visit.page
    shots = ARTIFACTS / "report" / name.replace("/", "_")
    shots.mkdir(parents=True, exist_ok=True)
    drawn = 0
    for page_id in page.eval_on_selector_all("nav a", "els => els.map(e => e.dataset.page)"):
        page.click(f'nav a[data-page="{page_id}"]')
        assert page.is_visible(f'.page[data-page="{page_id}"]')
        for chart in _page_charts(page, page_id):
            assert chart["rendered"] == "true" and chart["points"] > 0, (page_id, chart)
            drawn += 1
        page.screenshot(path=str(shots / f"{page_id}.png"), full_page=True)
    charts = sum(s["kind"] in ("chart", "steps") for p in payload(outputs[name] / "report.html")["pages"] for s in p["sections"])
    assert drawn == charts > 0
    assert page.eval_on_selector_all(".js-plotly-plot", "els => els.length") == drawn
    assert visit.errors == []
    assert visit.requests == []
    page.close()


def test_search_filters_the_op_table(chromium, outputs: dict[str, Path]) -> None:
    out = outputs["pytorch_cuda"]
    visit = open_report(chromium, out / "report.html")
    page = visit.page
    page.click('nav a[data-page="operators"]')
    table = '[data-table="ops"]'
    every = page.eval_on_selector_all(f"{table} tbody tr", "rows => rows.length")
    page.fill(f"{table} input.search", "linear")
    names = page.eval_on_selector_all(f"{table} tbody tr", "rows => rows.map(r => [r.cells[2].textContent, r.cells[3].textContent])")
    expected = query(out, "SELECT count(*) FROM op_detail_stats WHERE op_name ILIKE '%linear%' OR op_type ILIKE '%linear%'")[0][0]
    assert 0 < expected <= len(names) < every  # substring matches first; fuzzy (letters in order) ones after them
    assert all("linear" in (op + " " + kind).lower() for op, kind in names[:expected])
    page.fill(f"{table} input.search", "")
    assert page.eval_on_selector_all(f"{table} tbody tr", "rows => rows.length") == every
    # the drill-down: an op's row lists the kernels it launched
    page.fill(f"{table} input.search", "aten::addmm")
    page.click(f"{table} tbody tr >> nth=0")
    rank, op = page.eval_on_selector(f"{table} tbody tr", "r => [Number(r.cells[0].textContent), r.cells[2].textContent]")
    kernels = page.eval_on_selector_all(f"{table} .drill tbody tr", "rows => rows.map(r => r.cells[0].textContent)")
    assert sorted(kernels) == sorted(k for (k,) in query(out, f"SELECT name FROM op_kernel_stats WHERE rank = {rank} AND op_name = '{op}'"))
    assert visit.errors == []
    page.close()


def test_step_selector_changes_the_step_chart(chromium, outputs: dict[str, Path]) -> None:
    out = outputs["ascend_ms_cluster"]
    visit = open_report(chromium, out / "report.html")
    page = visit.page
    page.click('nav a[data-page="steps"]')
    chart = '[data-chart="steps"]'
    before = page.eval_on_selector(chart, "gd => gd.data[0].x")
    assert before == [s for (s,) in query(out, "SELECT step FROM step_phases WHERE rank = 0 ORDER BY step")] and before
    step = before[-1]
    page.select_option('select[data-selector="step"]', str(step))
    after = page.eval_on_selector(chart, "gd => gd.data.filter(t => t.type === 'bar').map(t => [t.x, t.y])")
    phases = query(out, f"SELECT iteration_interval_ns / 1e6, fp_and_bp_ns / 1e6, tail_ns / 1e6 FROM step_phases "
                        f"WHERE step = {step} ORDER BY rank")
    assert [x for x, _ in after] == [["rank 0", "rank 1"]] * 3
    assert [y for _, y in after] == [[pytest.approx(p[i]) for p in phases] for i in range(3)]
    page.select_option('select[data-selector="rank"]', "1")
    page.select_option('select[data-selector="step"]', "all")
    assert page.eval_on_selector(chart, "gd => gd.layout.xaxis.title.text") == "steps of rank 1"
    assert visit.errors == []
    page.close()
