"""Report, contents: the pages of one run's report, each built from the marts only (sql/queries/report_*.sql),
as the sections of profpipe/report/sections.py.

Where it sits: after the models; profpipe/report/__init__.py opens the run (an output folder's profile.duckdb, or a
run of a warehouse) and hands the pages to profpipe/report/document.py. The report shows aggregates, never
per-event data: every table keeps its TOP_ROWS largest rows and every per-step chart its first steps (at most
MAX_STEP_ROWS rank-steps in all), so that a 1,000-rank run still opens in a moment. A page without data says why.

A run built with --select (RunContext.built) shows only what it built: a page none of whose queries read built
models is left out, and a page some of whose queries did not keeps only the sections with data (a model that was not
built is not "no data").
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import duckdb

from ..advisor import format_value, headline, read_findings, where
from ..models import query_reads, query_rows
from .sections import (PHASE_COLOURS, Section, bars, chart, chart_variants, column, drill, empty, facts, gantt,
                       heatmap, lines, table, text)

Page = dict[str, Any]

#: Rows a table of the report keeps (the largest first); the table says when rows were cut.
TOP_ROWS = 2000
#: Rank-steps the step charts keep in all: each rank keeps its first MAX_STEP_ROWS // ranks steps (at least 20).
MAX_STEP_ROWS = 100_000
#: Ranks that get a chart of their own where a chart is per rank (the others: in the tables).
MAX_RANK_CHARTS = 32
#: Samples a memory or queue curve keeps (every n-th, and the peak).
MAX_CURVE_POINTS = 1000
#: Steps and ranks the timeline preview draws.
GANTT_STEPS, GANTT_RANKS = 50, 8


@dataclass(frozen=True)
class RunContext:
    """What the report says of the run beside its tables: where it came from and what was exported."""

    input: str
    profpipe_version: str
    #: summary.json's timeline block (path, content, events_written, events_dropped, bytes, limit_mb); None for a
    #: warehouse run and a run without a timeline.
    timeline: dict[str, Any] | None = None
    #: What the run's timeline holds: "full", "summary", "none", or None (a warehouse run: no timeline).
    timeline_content: str | None = None
    #: The models and tables the run built (--select: models.Selection.built); None: every one.
    built: frozenset[str] | None = None


#: While run_pages builds a page of a run with a selection: the models and tables built, and for each query the page
#: ran whether the run built what it reads.
_BUILT: ContextVar[frozenset[str] | None] = ContextVar("report_built", default=None)
_READ_BUILT: ContextVar[list[bool]] = ContextVar("report_read_built")


def rows(con: duckdb.DuckDBPyConnection, name: str, /, **params: Any) -> list[dict[str, Any]]:
    """The rows of the named query (models.query_rows), noting whether the run built what it reads."""
    built = _BUILT.get()
    if built is not None:
        _READ_BUILT.get().append(query_reads(name) <= built)
    return query_rows(con, name, **params)


def _is_built(name: str) -> bool:
    """Whether the run built what the named query reads (always, without a selection)."""
    built = _BUILT.get()
    return built is None or query_reads(name) <= built


def run_pages(con: duckdb.DuckDBPyConnection, context: RunContext) -> list[Page]:
    """Every page of one run's report, in the order the report shows them."""
    ranks = con.execute("SELECT count(DISTINCT rank) FROM rank_summary").fetchone()[0] or 1
    max_steps = max(20, MAX_STEP_ROWS // ranks)
    findings = _findings(con)
    builders: list[Callable[[], Page]] = [
        lambda: overview(con, context, findings),
        *([lambda: advisor(findings)] if findings or context.built is None else []),  # a selection may check no rule
        lambda: step_trace(con, max_steps),
        lambda: operators(con), lambda: utilisation(con, max_steps), lambda: data_pipeline(con),
        lambda: communication(con), lambda: memory(con), lambda: timeline(con, context)]
    if context.built is None:
        return [build() for build in builders]
    return [page for page in (_built_page(build, context.built) for build in builders) if page is not None]


def _built_page(build: Callable[[], Page], built: frozenset[str]) -> Page | None:
    """The page `build` makes for a run that built only `built`: None when none of its queries read what was built;
    without its sections that have no data (empty, a table without rows) when some of them did not."""
    built_token, read_token = _BUILT.set(built), _READ_BUILT.set([])
    try:
        page = build()
        read = _READ_BUILT.get()
    finally:
        _BUILT.reset(built_token)
        _READ_BUILT.reset(read_token)
    if read and not any(read):
        return None
    if not all(read):
        page["sections"] = [s for s in page["sections"]
                            if s["kind"] != "empty" and not (s["kind"] == "table" and not s["rows"])]
    return page if page["sections"] else None


def _count(con: duckdb.DuckDBPyConnection, table_name: str) -> int:
    return con.execute(f"SELECT count(*) FROM {table_name}").fetchone()[0]


def _page(page_id: str, title: str, sections: list[Section]) -> Page:
    return {"id": page_id, "title": title, "sections": sections}


# ---- Overview ------------------------------------------------------------------------------------------------

def overview(con: duckdb.DuckDBPyConnection, context: RunContext, findings: list[dict[str, Any]] | None) -> Page:
    sections: list[Section] = []
    if _is_built("report_run_facts"):
        [run] = rows(con, "report_run_facts")
        sections.append(facts("Run", [
            ("input", context.input), ("profpipe", context.profpipe_version), ("formats", run["formats"] or "none"),
            ("frameworks", run["frameworks"] or "unknown"), ("device types", run["device_types"] or "unknown"),
            ("ranks", run["ranks"]), ("captures (rank × capture)", run["captures"]), ("devices", run["devices"]),
            ("steps", f"{run['steps']} (rank-steps: {run['rank_steps']})" if run["steps"] else "no step trace")]))
    phases = rows(con, "report_rank_phases")
    with_steps = [r for r in phases if r["total_ms"] is not None]
    if with_steps:
        sections.append(chart("overview-phases", "Average step time by phase, per rank", bars(
            [f"rank {r['rank']}" for r in with_steps],
            [(label, [r[key] for r in with_steps]) for key, label in _PHASES],
            x_title="rank", y_title="ms", colours={label: PHASE_COLOURS[key] for key, label in _PHASES}),
            note="Iteration gap, FP+BP and tail add up to the step (step_phases, averaged per rank in rank_summary)."))
    else:
        sections.append(empty("Average step time by phase, per rank",
                              "No step trace in this dump (no step_trace/ProfilerStep/MindSpore step data), so no phases."))
    if findings != []:  # no rule checked: a --select run that built the marts of none
        sections.append(_finding_list("Top findings of the advisor", findings, 5))
    sections.append(_health(con))
    return _page("overview", "Overview", sections)


_PHASES = [("iteration_interval_ms", "iteration gap"), ("fp_and_bp_ms", "FP+BP"), ("tail_ms", "tail")]


def _health(con: duckdb.DuckDBPyConnection) -> Section:
    ledger = rows(con, "report_health")
    if not ledger:
        return text("Trace health", ["Nothing was dropped or repaired: every record was read as written."])
    return table("health", "Trace health: what was dropped or repaired",
                 [column("rank", "rank", "int"), column("check_name", "check", search=True), column("action", "action"),
                  column("events", "events", "int"), column("rows", "rows", "int"), column("message", "message", search=True)],
                 ledger[:TOP_ROWS], total=len(ledger),
                 note="The trace-health ledger (table trace_health): each check that dropped, excluded or repaired data.")


# ---- Advisor -------------------------------------------------------------------------------------------------

def _findings(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]] | None:
    """The advisor's verdicts (table advisor_finding), fired first; None for an output made before the advisor."""
    try:
        return read_findings(con)
    except duckdb.CatalogException:
        return None


def _finding_list(title: str, findings: list[dict[str, Any]] | None, most: int | None = None) -> Section:
    if findings is None:
        return empty(title, "This output was made before profpipe had an advisor: analyse the dump again.")
    fired = [f for f in findings if f["status"] == "fired"][:most]
    items = [{"rule": f["rule_id"], "severity": f["severity"], "title": f["title"], "suggestion": f["suggestion"],
              "evidence_sql": f["evidence_sql"],
              "summary": f"{headline(f)}; ranks {where(f['ranks'])}; steps {where(f['steps'])} ({f['fired_rows']} "
                         f"evidence rows)."} for f in fired]
    return {"kind": "findings", "title": title, "items": items,
            "none": f"None of the advisor's {len(findings)} rules fired on this run."}


def advisor(findings: list[dict[str, Any]] | None) -> Page:
    """Every finding with its suggestion and evidence SQL, then every rule checked and what it said."""
    sections = [_finding_list("Findings", findings)]
    if findings:
        sections.append(table("rules", "Rules checked", [
            column("rule_id", "rule", search=True), column("title", "looks for", search=True), column("severity", "severity"),
            column("status", "status"), column("said", "worst value or why not"), column("threshold", "threshold"),
            column("threshold_source", "threshold from")],
            [{**f, "said": format_value(f["worst_value"], f["unit"]) if f["status"] in ("fired", "passed")
              else f["reason"], "threshold": "" if f["threshold"] is None else
              f"{f['direction']} {format_value(f['threshold'], f['unit'])}"} for f in findings],
            note="Each rule's SQL (sql/advisor) reads the marts; run a finding's evidence SQL on profile.duckdb for "
                 "every row it fired on. findings.json holds the same, for scripts."))
    return _page("advisor", "Advisor", sections)


# ---- Step trace ----------------------------------------------------------------------------------------------

def step_trace(con: duckdb.DuckDBPyConnection, max_steps: int) -> Page:
    steps = rows(con, "report_steps", max_steps=max_steps)
    if not steps:
        return _page("steps", "Step trace", [empty("Steps", "No step trace and no input-wait data in this dump: "
                                                   "profpipe found no steps to show.")])
    keys = ["rank", "step", "total_ms", "iteration_interval_ms", "fp_and_bp_ms", "tail_ms", "unsplit_ms",
            "communication_ms", "input_wait_ms", "input_bound", "slowest_rank", "is_slow"]
    data = {key: [r[key] for r in steps] for key in keys}
    phases = [{"key": key, "label": label, "color": PHASE_COLOURS[key]} for key, label in _PHASES]
    if any(v is not None for v in data["unsplit_ms"]):  # steps without an FP point: their time, not split
        phases.append({"key": "unsplit_ms", "label": "no FP point (not split)", "color": PHASE_COLOURS["unsplit_ms"]})
    if all(v is None for v in data["total_ms"]):  # input logs without a step trace: the wait is what there is
        phases = [{"key": "input_wait_ms", "label": "wait for input", "color": PHASE_COLOURS["input_wait_ms"]}]
    cut = rows(con, "report_max_cycle_steps")[0]["steps"]
    note = ("Pick a rank to see its steps, or a step to compare every rank in it. Marked: input-bound steps (more "
            "than 20 % of the step waited for the next batch, step_input_wait) and slow ranks (more than 5 % slower "
            "than the step's fastest rank, cluster_step_phases).")
    if cut and cut > max_steps:
        note += f" The chart keeps the first {max_steps} of up to {cut} steps per rank."
    sections: list[Section] = [{"kind": "steps", "id": "steps", "title": "Step phases", "note": note, "data": data,
                                "phases": phases}]
    points = rows(con, "report_step_points")
    sections.append(table("step-points", "FP and BP points used", [
        column("rank", "rank", "int"), column("capture", "capture", "int"), column("fp_op", "FP start op", search=True),
        column("bp_op", "BP end op", search=True), column("steps", "steps", "int")], points) if points else
        empty("FP and BP points used", "The step trace names no FP/BP ops (GPU and PyTorch steps are cut by "
                                       "ProfilerStep or the iteration markers, not by FP/BP points)."))
    slow = rows(con, "report_slowest_ranks")
    if slow:
        sections.append(facts("Slowest rank per step", [(f"rank {r['slowest_rank']}", f"slowest in {r['steps']} steps")
                                                        for r in slow[:10]]))
    sections.extend(_cluster_steps(con, max_steps))
    return _page("steps", "Step trace", sections)


def _cluster_steps(con: duckdb.DuckDBPyConnection, max_steps: int) -> list[Section]:
    """The Ascend tools' own step trace of every rank (cluster_step_trace, trimmed ranks included) and
    msprof-analyze's slow-rank test per phase (cluster_slow_rank); nothing for a run without them."""
    steps = rows(con, "report_cluster_step_trace", max_steps=max_steps)
    if not steps:
        return []
    sections = [table("cluster-step-trace", "Cluster step trace, every rank (ms)", [
        column("rank", "rank", "int"), column("step", "step", "int"), column("device_id", "device", "int"),
        column("origin", "from"), column("computing_ms", "computing", "ms"),
        column("not_overlapped_ms", "not overlapped", "ms"), column("overlapped_ms", "overlapped", "ms"),
        column("communication_ms", "communication", "ms"), column("free_ms", "free", "ms"),
        column("stage_ms", "stage", "ms"), column("bubble_ms", "bubble", "ms"),
        column("preparing_ms", "preparing", "ms"), column("total_ms", "step", "ms"),
        column("slowdown", "slowdown (× fastest − 1)", "num")], steps[:TOP_ROWS], total=len(steps),
        note="cluster_step_trace: the Ascend tools' own step trace of every rank folder, trimmed ranks included "
             "(from: its step_trace_time.csv or analysis.db; profpipe's own, from the events: step_overlap, on the "
             "GPU/NPU utilisation page); the slowdown is against the step's fastest rank.")]
    phases = rows(con, "report_cluster_slow_rank")
    if phases:
        sections.append(table("cluster-slow-rank", "Slow rank per phase (msprof-analyze's slow-rank test)", [
            column("capture", "capture", "int"), column("phase", "phase"), column("ranks", "ranks", "int"),
            column("max_ms", "largest ms", "ms"), column("max_rank", "on rank", "int"),
            column("min_ms", "smallest ms", "ms"), column("min_rank", "on rank", "int"),
            column("gap_ratio", "gap / mean step", "pct"),
            column("slow_rank", "slow rank", "int"), column("is_slow", "slow")], phases,
            note="cluster_slow_rank: a phase whose largest and smallest rank differ by more than its threshold of the "
                 "mean step names the slow rank (advisor rule slow_rank_phase)."))
    return sections


# ---- Operators and kernels -----------------------------------------------------------------------------------

def operators(con: duckdb.DuckDBPyConnection) -> Page:
    sections: list[Section] = []
    types = rows(con, "report_op_types", top=15)
    for side in sorted({r["side"] for r in types}):
        mine = [r for r in types if r["side"] == side]
        sections.append(chart(f"op-types-{side.lower()}", f"{side} time by op type (top 15, all ranks)", bars(
            [r["op_type"] for r in mine], [("time (ms)", [r["total_ms"] for r in mine])],
            x_title="ms", y_title="op type", horizontal=True)))
    device_types = rows(con, "report_device_op_types", top=15)
    if device_types:
        sections.append(chart("device-op-types", "Device time by op type (top 15, all ranks)", bars(
            [r["op_type"] for r in device_types], [("time (ms)", [r["total_ms"] for r in device_types])],
            x_title="ms", y_title="op type", horizontal=True)))
    core_types = rows(con, "report_op_core_types", top=TOP_ROWS)
    if core_types:
        sections.append(table("op-core-types", "Device tasks per op type and core type", [
            column("rank", "rank", "int"), column("op_type", "op type", search=True), column("core_type", "core type"),
            column("executions", "count", "int"), column("total_ms", "total ms", "ms"),
            column("min_ms", "min ms", "ms"), column("avg_ms", "avg ms", "ms"), column("max_ms", "max ms", "ms"),
            column("share", "share", "pct")],
            core_types, note="msprof's op_statistic.csv: each rank's device tasks (task_desc's op type and core type; "
                             "HCCL ops are on the Communication page), share of the rank's task time."))
    split = rows(con, "report_side_split")
    if {r["side"] for r in split} >= {"Host", "Device"}:
        ranks = sorted({r["rank"] for r in split})
        by = {(r["rank"], r["side"]): r["total_ms"] for r in split}
        sections.append(chart("side-split", "Host and device op time per rank", bars(
            [f"rank {r}" for r in ranks], [(side, [by.get((r, side), 0) for r in ranks]) for side in ("Host", "Device")],
            x_title="rank", y_title="ms", stacked=False)))
    ops = rows(con, "report_ops", top=TOP_ROWS)
    if ops:
        kernels = rows(con, "report_op_kernels", top=TOP_ROWS)
        kernel_columns = [column("name", "kernel"), column("instances", "calls", "int"), column("total_ms", "total ms", "ms"),
                          column("avg_ms", "avg ms", "ms"), column("share_of_op", "share of op", "pct")]
        sections.append(table("ops", "Operators (click a row for its kernels)", [
            column("rank", "rank", "int"), column("side", "side"), column("op_name", "op", search=True),
            column("op_type", "type", search=True), column("occurrences", "calls", "int"), column("total_ms", "total ms", "ms"),
            column("avg_ms", "avg ms", "ms"), column("max_ms", "max ms", "ms"), column("share", "share", "pct"),
            column("device_ms", "device ms", "ms")], ops, total=_count(con, "op_detail_stats"),
            drill=drill("Kernels of", [0, 2], kernel_columns, kernels, ["rank", "op_name"],
                        "No kernel is linked to this op (host-only op, or a dump without op-kernel links).")))
    device_ops = rows(con, "report_device_ops", top=TOP_ROWS)
    if device_ops:
        sections.append(table("device-ops", "Device ops (Ascend tasks)", [
            column("rank", "rank", "int"), column("op_name", "op", search=True), column("op_type", "type", search=True),
            column("stream_id", "stream", "int"), column("executions", "calls", "int"), column("tasks", "tasks", "int"),
            column("total_ms", "total ms", "ms"), column("avg_ms", "avg ms", "ms"), column("max_ms", "max ms", "ms"),
            column("share", "share", "pct")], device_ops, total=_count(con, "device_op_stats"),
            note="device_op_stats: each op timed by its device tasks (torch_npu's kernel_details.csv, msprof's "
                 "op_summary), its share of the rank's device op time."))
    kernel_rows = rows(con, "report_kernels", top=TOP_ROWS)
    if kernel_rows:
        sections.append(table("kernels", "Kernels", [
            column("rank", "rank", "int"), column("name", "kernel", search=True), column("stream_id", "stream", "int"),
            column("op_name", "launched by", search=True), column("instances", "calls", "int"),
            column("total_ms", "total ms", "ms"), column("avg_ms", "avg ms", "ms"), column("median_ms", "median ms", "ms"),
            column("max_ms", "max ms", "ms"), column("share", "share", "pct")], kernel_rows, total=_count(con, "kernel_stats")))
    shapes = rows(con, "report_kernel_shapes", top=TOP_ROWS)
    if shapes:
        sections.append(table("kernel-shapes", "Kernels by launch shape", [
            column("rank", "rank", "int"), column("name", "kernel", search=True), column("grid", "grid"),
            column("block", "block"), column("instances", "calls", "int"), column("total_ms", "total ms", "ms"),
            column("avg_ms", "avg ms", "ms"), column("share", "share", "pct")], shapes, total=_count(con, "kernel_shape_stats")))
    sequences = rows(con, "report_kernel_sequences", top=TOP_ROWS)
    if sequences:
        sections.append(table("kernel-sequences", "Repeated kernel sequences (fusion candidates)", [
            column("rank", "rank", "int"), column("op_name", "op", search=True), column("sequence", "sequence", search=True),
            column("activities", "length", "int"), column("kernels", "kernels", "int"),
            column("instances", "repeats", "int"), column("device_ms", "total ms", "ms"), column("avg_ms", "avg ms", "ms"),
            column("share", "share", "pct")], sequences,
            note="Each op's device work as one sequence (its kernels, memcpy, memset in start order, with those of the "
                 "ops nested in it), repeated at least twice, of at least 3 activities, under the innermost op that "
                 "launches it all (kernel_sequence_stats; HolisticTraceAnalysis' frequent CUDA kernel sequences)."))
    ranges = rows(con, "report_user_ranges", top=TOP_ROWS)
    if ranges:
        sections.append(table("user-ranges", "User ranges: MSTX markers, NVTX ranges, record_function annotations "
                              "(each instance in full, as nsys nvtx_sum)", [
            column("rank", "rank", "int"), column("side", "side"), column("category", "category"),
            column("name", "range", search=True), column("instances", "instances", "int"), column("marks", "marks", "int"),
            column("total_ms", "total ms", "ms"), column("avg_ms", "avg ms", "ms"), column("median_ms", "median ms", "ms"),
            column("max_ms", "max ms", "ms"), column("share", "share", "pct")], ranges,
            total=_count(con, "user_range_stats")))
    counters = rows(con, "report_kernel_counters", top=TOP_ROWS)
    if counters:  # only a trace recorded with CUPTI's range profiler (experimental_config profiler_metrics) has them
        sections.append(table("kernel-counters", "Hardware counters per op and kernel (CUPTI range profiler; values in "
                              "each counter's own unit)", [
            column("rank", "rank", "int"), column("counter", "counter", search=True),
            column("bottom_level_op", "launched by", search=True), column("kernel_name", "kernel", search=True),
            column("kernels", "kernels", "int"), column("total_value", "total", "num"), column("avg_value", "mean", "num"),
            column("max_value", "max", "num")], counters, total=_count(con, "kernel_counter_stats"),
            note="kernel_counter_stats; each kernel's op stack and values: kernel_counter_op (HTA's "
                 "get_cupti_counter_data_with_operators)."))
    sections.extend(_roofline(con))
    sections.extend(_roof_shares(con))
    if not sections:
        sections.append(empty("Operators", "This dump has no framework ops and no device executions."))
    return _page("operators", "Operators and kernels", sections)


#: Marker colours of the roofline chart, per op class (op_roofline.op_class).
_ROOFLINE_COLOURS = {"gemm": "#2e86de", "conv": "#10ac84", "attention": "#8e44ad", "norm": "#e67e22",
                     "elementwise": "#c0392b"}


def _roofline(con: duckdb.DuckDBPyConnection) -> list[Section]:
    """The roofline of the costed ops (op_roofline): a log-log scatter of arithmetic intensity against achieved
    TFLOP/s with each device's roof for each input type, and its table; nothing where no op was costed."""
    ops = rows(con, "report_roofline", top=TOP_ROWS)
    if not ops:
        return []
    data: list[dict[str, Any]] = []
    for op_class, colour in _ROOFLINE_COLOURS.items():
        mine = [r for r in ops if r["op_class"] == op_class]
        if mine:
            data.append({"type": "scatter", "mode": "markers", "name": op_class, "marker": {"color": colour},
                         "x": [r["intensity_flop_per_byte"] for r in mine], "y": [r["achieved_tflops"] for r in mine],
                         "text": [f"rank {r['rank']} {r['op_name']} {r['input_dims']} {r['dtype']}" for r in mine],
                         "hovertemplate": "%{text}<br>%{x:.3g} FLOP/byte, %{y:.3g} TFLOP/s<extra></extra>"})
    low = min(r["intensity_flop_per_byte"] for r in ops) / 4
    high = max(r["intensity_flop_per_byte"] for r in ops) * 4
    roofs = sorted({(r["device_name"], r["dtype"], r["peak_tflops"], r["peak_gbps"]) for r in ops
                    if r["peak_tflops"] is not None and r["peak_gbps"] is not None})
    for device, dtype, peak, gbps in roofs:
        ridge = peak * 1e3 / gbps  # TFLOP/s over GB/s: FLOP/byte
        xs = [low] + ([ridge] if low < ridge < high else []) + [max(high, ridge * 4)]
        data.append({"type": "scatter", "mode": "lines", "name": f"roof {device} {dtype}",
                     "line": {"dash": "dash", "color": "#576574"}, "x": xs, "y": [min(peak, x * gbps / 1e3) for x in xs],
                     "hovertemplate": f"{device} {dtype}: {peak:g} TFLOP/s, {gbps:g} GB/s<extra></extra>"})
    figure = {"data": data, "layout": {"xaxis": {"title": {"text": "arithmetic intensity (FLOP/byte)"}, "type": "log"},
                                       "yaxis": {"title": {"text": "achieved TFLOP/s"}, "type": "log"}}}
    note = ("op_roofline: each op's FLOPs and bytes moved from its input shapes and types (TraceLens' perf-model "
            "formulas: macro op_roofline_cost) over the device time it launched; the dashed roofs are the data-sheet "
            "peaks of the rank's device for the input type (macro gpu_datasheet)" +
            ("" if roofs else "; this device is not in the data-sheet table, so no roof is drawn") + ".")
    return [chart("roofline", "Roofline of the ops (top by device time, all ranks)", figure, note=note),
            table("roofline-ops", "Roofline per op and input shape", [
                column("rank", "rank", "int"), column("op_name", "op", search=True), column("op_class", "class"),
                column("input_dims", "input dims", search=True), column("dtype", "type"),
                column("executions", "calls", "int"), column("device_ms", "device ms", "ms"),
                column("device_share", "device share", "pct"), column("intensity_flop_per_byte", "FLOP/byte", "num"),
                column("achieved_tflops", "TFLOP/s", "num"), column("achieved_gbps", "GB/s", "num"),
                column("ridge_flop_per_byte", "ridge FLOP/byte", "num"), column("bound", "bound"),
                column("roof_ratio", "of roof", "pct")], ops, total=_count(con, "op_roofline"))]


#: Marker colours of the roof chart's Ascend ops, per busiest pipe (op_bound.busiest_pipe).
_PIPE_COLOURS = {"mac": "#0a3d62", "vec": "#3c6382", "scalar": "#82ccdd", "mte1": "#b71540", "mte2": "#e55039",
                 "mte3": "#f8c291"}


def _roof_shares(con: duckdb.DuckDBPyConnection) -> list[Section]:
    """GPU and Ascend ops on one plane (report_roof_shares): the share of the memory roof against the share of the
    compute roof, the diagonal between compute- and memory-bound; nothing where no op has both a GPU roof and no
    op has PipeUtilization ratios."""
    ops = rows(con, "report_roof_shares", top=TOP_ROWS)
    if not ops:
        return []
    data: list[dict[str, Any]] = []
    series = [("gpu", kind, f"GPU {kind}", colour) for kind, colour in _ROOFLINE_COLOURS.items()]
    series += [("ascend", pipe, f"Ascend, busiest {pipe}", colour) for pipe, colour in _PIPE_COLOURS.items()]
    for device, kind, name, colour in series:
        mine = [r for r in ops if r["device"] == device and r["kind"] == kind]
        if mine:
            data.append({"type": "scatter", "mode": "markers", "name": name,
                         "marker": {"color": colour, "symbol": "circle" if device == "gpu" else "diamond"},
                         "x": [r["memory_share"] or 0 for r in mine], "y": [r["compute_share"] or 0 for r in mine],
                         "text": [f"rank {r['rank']} {r['op_name']} {r['detail'] or ''}: {r['bound']}-bound, "
                                  f"{r['roof_distance']:.0%} from the roof" for r in mine],
                         "hovertemplate": "%{text}<br>memory %{x:.1%}, compute %{y:.1%}<extra></extra>"})
    top = max(1.0, *(max(r["memory_share"] or 0, r["compute_share"] or 0) for r in ops))
    data.append({"type": "scatter", "mode": "lines", "name": "compute = memory", "x": [0, top], "y": [0, top],
                 "line": {"dash": "dash", "color": "#576574"}, "hoverinfo": "skip"})
    figure = {"data": data, "layout": {
        "xaxis": {"title": {"text": "share of the memory roof"}, "tickformat": ".0%", "range": [0, top * 1.05]},
        "yaxis": {"title": {"text": "share of the compute roof"}, "tickformat": ".0%", "range": [0, top * 1.05]}}}
    note = ("Above the diagonal an op is compute-bound, below it memory-bound; its distance from the roof is 1 minus "
            "the larger share. GPU ops: op_roofline's achieved FLOP/s and bytes/s over the data-sheet peaks (the "
            "larger share is its roof_ratio, the side of the diagonal its bound; the memory share can pass 100 % "
            "where tensors come from the L2 cache). Ascend ops: op_bound's mean busy shares of the AI Core pipes "
            "(msprof's PipeUtilization *_ratio): compute is the busiest of the cube (mac), vector and scalar pipes, "
            "memory the busiest MTE pipe.")
    return [chart("roof-shares", "Ops against their compute and memory roofs (top by device time, all ranks)", figure,
                  note=note),
            table("roof-shares-ops", "Ops against their roofs", [
                column("device", "device"), column("rank", "rank", "int"), column("op_name", "op", search=True),
                column("kind", "class / busiest pipe"), column("detail", "shape / type", search=True),
                column("device_ms", "device ms", "ms"), column("compute_share", "compute roof", "pct"),
                column("memory_share", "memory roof", "pct"), column("bound", "bound"),
                column("roof_distance", "from roof", "pct")], ops,
                total=_count(con, "op_bound") + con.execute(
                    "SELECT count(*) FROM op_roofline WHERE flop > 0 AND bytes > 0 AND peak_flop_per_second > 0 "
                    "AND peak_bytes_per_second > 0").fetchone()[0])]


# ---- Utilisation ---------------------------------------------------------------------------------------------

_OVERLAP = [("computation_ms", "computation", "#2e86de"), ("pure_communication_ms", "communication not overlapped", "#7f3c8d"),
            ("free_ms", "idle", "#c8cdd6")]
#: Per-step values drawn as lines beside the stacked overlap bars, where a rank has any.
_BESIDE = [("overlapped_communication_ms", "communication overlapped"), ("bubble_ms", "bubble (pipeline Receive)"),
           ("preparing_ms", "preparing (before the window)"), ("memory_ms", "of which memory copies/sets")]


def utilisation(con: duckdb.DuckDBPyConnection, max_steps: int) -> Page:
    per_rank = rows(con, "report_rank_overlap")
    if not per_rank:
        return _page("utilisation", "GPU/NPU utilisation", [empty(
            "Utilisation", "No device executions inside steps (a host-only dump, or one without a step trace)."),
            *_critical_path(con, max_steps)])
    sections: list[Section] = [chart("utilisation-ranks", "Share of step time per rank", bars(
        [f"rank {r['rank']}" for r in per_rank],
        [(label, [r[key] for r in per_rank]) for key, label in (
            ("computation_share", "computation"), ("communication_share", "communication not overlapped"),
            ("free_share", "idle"))],
        x_title="rank", y_title="share of step time", colours={label: c for _, label, c in _OVERLAP}),
        note="step_overlap summed over each rank's steps: computation, communication not hidden by computation, and "
             "time with nothing on the device (memory copies count as computation on GPUs, as HTA counts them).")]
    steps = rows(con, "report_step_overlap", max_steps=max_steps)
    by_rank: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in steps:
        by_rank[row["rank"]].append(row)
    variants = []
    for rank, mine in list(by_rank.items())[:MAX_RANK_CHARTS]:
        series = [(label, [r[key] for r in mine]) for key, label, _ in _OVERLAP]
        beside = [(label, [r[key] for r in mine]) for key, label in _BESIDE if any(r[key] for r in mine)]
        figure = bars([r["step"] for r in mine], series + beside, x_title="step", y_title="ms",
                      colours={label: c for _, label, c in _OVERLAP})
        for trace in figure["data"][len(series):]:  # parts of the stacked phases, or before the window: not stacked
            trace.update({"type": "scatter", "mode": "lines+markers"})
        variants.append((f"rank {rank}", figure))
    sections.append(chart_variants(
        "utilisation-steps", "Per step", "Rank", variants,
        note="The bars add up to the step's window on the device; the lines are parts of them (communication "
             "hidden by computation, pipeline Receive ops: bubble, memory copies and sets) or the time before it "
             "(preparing: from the step's start on the host to the first device work)."))
    sections.append(table("step-trace", "Step trace in msprof-analyze's step_trace_time.csv columns (ms)", [
        column("rank", "rank", "int"), column("step", "step", "int"), column("computation_ms", "computing", "ms"),
        column("pure_communication_ms", "not overlapped", "ms"),
        column("overlapped_communication_ms", "overlapped", "ms"),
        column("communication_ms", "communication", "ms"), column("free_ms", "free", "ms"),
        column("stage_ms", "stage", "ms"), column("bubble_ms", "bubble", "ms"),
        column("exclude_receive_ms", "not overlapped less receive", "ms"),
        column("preparing_ms", "preparing", "ms")], steps[:TOP_ROWS], total=len(steps),
        note="step_overlap in msprof-analyze's terms: stage is the window less the bubble (the pipeline Receive "
             "ops), preparing runs from the step's start (ProfilerStep#N on the host) to its first device work."))
    idle = rows(con, "report_idle_causes")
    if idle:
        ranks = sorted({r["rank"] for r in idle})
        by = {(r["rank"], r["category"]): r["idle_ms"] for r in idle}
        sections.append(chart("idle-causes", "Device idle time by cause", bars(
            [f"rank {r}" for r in ranks], [(cause, [by.get((r, cause), 0) for r in ranks])
                                          for cause in ("host_wait", "kernel_wait", "other")],
            x_title="rank", y_title="ms"),
            note="HTA's causes: host_wait, the device waited for the host to launch the next kernel; kernel_wait, "
                 "short gaps between queued kernels; other (gpu_idle_breakdown, profpipe's definition: the steps' window)."))
    breakdown = rows(con, "report_gpu_breakdown")
    if breakdown:
        sections.append(table("gpu-breakdown", "Device time breakdown (HTA's and profpipe's definitions)", [
            column("rank", "rank", "int"), column("capture", "capture", "int"), column("definition", "definition"),
            column("window_ms", "window ms", "ms"), column("compute_ms", "compute ms", "ms"),
            column("exposed_communication_ms", "communication alone ms", "ms"),
            column("exposed_memory_ms", "memory alone ms", "ms"), column("exposed_other_ms", "other alone ms", "ms"),
            column("idle_ms", "idle ms", "ms"), column("idle_share", "idle", "pct")],
            breakdown, note="compute + communication, memory and other alone (with no compute beside them) + idle = "
                            "the window."))
    sections.extend(_critical_path(con, max_steps))
    return _page("utilisation", "GPU/NPU utilisation", sections)


#: The critical path's parts as the report shows them (report_critical_path_windows), and their colours.
_CRITICAL_PATH = (("cpu_ms", "host ops", "#576574"), ("gpu_compute_ms", "device compute", "#2e86de"),
                  ("gpu_communication_ms", "device communication", "#8e44ad"), ("launch_ms", "launch delay", "#e67e22"),
                  ("kernel_kernel_ms", "gaps between kernels", "#c0392b"))


def _critical_path(con: duckdb.DuckDBPyConnection, max_steps: int) -> list[Section]:
    """HTA's critical path per window and rank (critical_path_summary), split by what its time is, and the ops and
    kernels it runs through (critical_path_edge); nothing where the trace has no critical path."""
    windows = rows(con, "report_critical_path_windows", max_steps=max_steps)
    if not windows:
        return []
    by_rank: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in windows:
        by_rank[row["rank"]].append(row)
    variants = []
    for rank, mine in list(by_rank.items())[:MAX_RANK_CHARTS]:
        labels = ["whole capture" if r["step"] is None else r["step"] for r in mine]
        variants.append((f"rank {rank}", bars(labels, [(label, [r[key] for r in mine]) for key, label, _ in _CRITICAL_PATH],
                                              x_title="step", y_title="ms",
                                              colours={label: colour for _, label, colour in _CRITICAL_PATH})))
    sections: list[Section] = [chart_variants(
        "critical-path", "Critical path per step: what bounds its length", "Rank", variants,
        note="HolisticTraceAnalysis' critical path (critical_path_summary): the longest chain of dependencies through "
             "the step's host ops, runtime calls, kernel launches, kernels and synchronisations; its length split by "
             "the edges it runs through. Shortening anything off this path does not shorten the step.")]
    events = rows(con, "report_critical_path_events", top=TOP_ROWS)
    if events:
        sections.append(table("critical-path-events", "Ops and kernels on the critical path", [
            column("rank", "rank", "int"), column("side", "side"), column("event_name", "op or kernel", search=True),
            column("windows", "steps", "int"), column("edges", "edges", "int"), column("path_ms", "on path ms", "ms"),
            column("share", "share of path", "pct")], events,
            note="critical_path_edge: each op's and activity's time on the path (the edges HTA attributes to it), "
                 "summed over the rank's steps, as a share of their summed path length."))
    return sections


# ---- Data pipeline -------------------------------------------------------------------------------------------

def data_pipeline(con: duckdb.DuckDBPyConnection) -> Page:
    sections: list[Section] = []
    [wait] = rows(con, "report_input_bound")
    if wait["steps"]:
        sections.append(facts("Input-bound steps", [
            ("steps measured", wait["steps"]), ("highly input-bound (over 20 % of the step waits for data)", wait["highly"]),
            ("moderately input-bound (5 % to 20 %)", wait["moderately"]), ("measured from", wait["wait_source"]),
            ("on the step chart", "marked with a red triangle (Step trace page)")]))
    queues = rows(con, "report_data_queues", max_samples=MAX_CURVE_POINTS)
    if queues:
        variants = [(f"rank {rank}", lines([(q["op"], q["seconds"], q["usage"]) for q in queues if q["rank"] == rank],
                                           x_title="seconds since the first sample", y_title="queue usage (share of capacity)",
                                           step_shape=True))
                    for rank in sorted({q["rank"] for q in queues})[:MAX_RANK_CHARTS]]
        sections.append(chart_variants("data-queues", "Output-queue usage of each MindData op over time", "Rank", variants,
                                       note="An op whose output queue stays empty while its input queue is full is the "
                                            "slow stage (data_op_stats' queue samples)."))
    ops = rows(con, "report_data_ops")
    if ops:
        sections.append(table("data-ops", "MindData ops", [
            column("rank", "rank", "int"), column("op_id", "id", "int"), column("op_name", "op", search=True),
            column("op_type", "type"), column("num_workers", "workers", "int"),
            column("avg_cpus_per_worker", "CPU per worker", "pct"), column("queue_usage_share", "queue usage", "pct"),
            column("queue_empty_share", "queue empty", "pct"), column("queue_capacity", "capacity", "int")], ops))
    batches = rows(con, "report_data_batches")
    if batches:
        sections.append(table("data-batches", "Batches delivered (throughput)", [
            column("rank", "rank", "int"), column("trace", "trace"), column("batches", "batches", "int"),
            column("batches_per_second", "batches/s", "num"), column("avg_batch_ms", "avg batch ms", "ms"),
            column("avg_get_next_wait_ms", "avg wait for next ms", "ms"), column("empty_queue_share", "queue empty", "pct")],
            batches))
    verdicts = rows(con, "report_data_findings")
    if verdicts:
        sections.append(table("data-findings", "Bottleneck verdicts and their evidence", [
            column("rank", "rank", "int"), column("analyzer", "by"), column("rule", "rule"), column("op", "op", search=True),
            column("finding", "evidence", search=True), column("suggestion", "suggestion")],
            verdicts,
            note="profpipe's slowest stage, MindSpore's MindData rules and MindInsight's proposer (data_findings)."))
    if not sections:
        sections.append(empty("Data pipeline", "No MindData logs (pipeline_profiling, device_queue/dataset_iterator "
                                               "profiling) and no DataLoader time in this dump."))
    return _page("data", "Data pipeline", sections)


# ---- Communication -------------------------------------------------------------------------------------------

def communication(con: duckdb.DuckDBPyConnection) -> Page:
    sections: list[Section] = []
    ops = rows(con, "report_comm_ops")
    if ops:
        sections.append(chart("comm-ops", "Time per communication op (all ranks)", bars(
            [r["op_label"] for r in ops[:20]], [("communication (ms)", [r["total_ms"] for r in ops[:20]]),
                                               ("waiting for peers (ms)", [r["wait_ms"] for r in ops[:20]])],
            x_title="ms", y_title="op", horizontal=True, stacked=False)))
        sections.append(table("comm-op-table", "Communication ops", [
            column("op_label", "op", search=True), column("executions", "executions", "int"), column("ranks", "ranks", "int"),
            column("total_ms", "total ms", "ms"), column("avg_ms", "avg ms", "ms"), column("max_ms", "max ms", "ms"),
            column("wait_ms", "wait ms", "ms")], ops[:TOP_ROWS], total=len(ops)))
    matrix = rows(con, "report_comm_matrix")
    if matrix:
        ranks = sorted({r["src_rank"] for r in matrix} | {r["dst_rank"] for r in matrix})
        by = {(r["src_rank"], r["dst_rank"]): r["bytes"] for r in matrix}
        sections.append(chart("comm-matrix", "Bytes sent between ranks", heatmap(
            ranks, ranks, [[by.get((s, d)) for d in ranks] for s in ranks], x_title="to rank", y_title="from rank",
            value_title="bytes"), note="comm_matrix over every op; empty cells: no traffic recorded between the pair."))
    stragglers = rows(con, "report_stragglers")
    if stragglers:
        sections.append(chart("stragglers", "Last arrivals at collectives per rank", bars(
            [f"rank {r['rank']}" for r in stragglers], [("last to arrive", [r["last_arrivals"] for r in stragglers]),
                                                        ("flagged slow", [r["flagged_slow"] for r in stragglers])],
            x_title="rank", y_title="collectives", stacked=False),
            note="collective_straggler: the rank that starts a collective last keeps the others waiting; 'flagged slow' "
                 "applies msprof-analyze's test (Dixon's Q up to 100 ranks, 3 sigma beyond)."))
    links = rows(con, "report_slow_links", top=TOP_ROWS)
    if links:
        sections.append(table("slow-links", "Links, slowest bandwidth first", [
            column("rank", "rank", "int"), column("link", "link", search=True), column("transport", "transport"),
            column("tasks", "tasks", "int"), column("bytes", "bytes", "bytes"), column("time_ms", "time ms", "ms"),
            column("bandwidth_bytes_per_second", "bandwidth", "bw"), column("wait_ms", "wait ms", "ms")], links,
            total=rows(con, "report_link_count")[0]["links"]))
    sections.extend(_cluster_links(con))
    if not sections:
        sections.append(empty("Communication", "No collective communication in this dump (no HCCL data, NCCL "
                                               "kernels or communication ops)."))
    return _page("communication", "Communication", sections)


def _cluster_links(con: duckdb.DuckDBPyConnection) -> list[Section]:
    """The cluster's links from the Ascend tools' own communication matrix (cluster_link_bandwidth): bytes between
    global ranks and the links' bandwidth against their transport's median; nothing for a run without it."""
    links = rows(con, "report_cluster_links", top=TOP_ROWS)
    if not links:
        return []
    ranks = sorted({r["src_rank"] for r in links} | {r["dst_rank"] for r in links})
    by: dict[tuple[int, int], int] = defaultdict(int)
    for r in links:
        by[(r["src_rank"], r["dst_rank"])] += r["bytes"]
    return [chart("cluster-matrix", "Bytes sent between ranks (the tools' communication matrix)", heatmap(
                ranks, ranks, [[by.get((s, d)) for d in ranks] for s in ranks], x_title="to rank",
                y_title="from rank", value_title="bytes"),
                note="cluster_link_bandwidth over every step, group and transport (LOCAL copies left out)."),
            table("cluster-links", "Cluster links, slowest against their transport's median first", [
                column("capture", "capture", "int"), column("src_rank", "from", "int"), column("dst_rank", "to", "int"),
                column("transport", "transport"), column("bytes", "bytes", "bytes"), column("time_ms", "time ms", "ms"),
                column("bandwidth_bytes_per_second", "bandwidth", "bw"),
                column("median_bytes_per_second", "transport median", "bw"), column("median_ratio", "× median", "num"),
                column("entries", "entries", "int")], links, total=_count(con, "cluster_link_bandwidth"),
                note="advisor rule slow_link fires on a link far below its transport's median.")]


# ---- Memory --------------------------------------------------------------------------------------------------

def memory(con: duckdb.DuckDBPyConnection) -> Page:
    sections: list[Section] = []
    curves = rows(con, "report_memory_curves", max_points=MAX_CURVE_POINTS)
    if curves:
        variants = [(f"rank {rank}", lines([(f"{c['kind']} {c['component']} {c['device']}".strip(), c["seconds"], c["mib"])
                                            for c in curves if c["rank"] == rank],
                                           x_title="seconds since the curve's first sample", y_title="MiB", step_shape=True))
                    for rank in sorted({c["rank"] for c in curves})[:MAX_RANK_CHARTS]]
        sections.append(chart_variants("memory-curves", "Memory over time", "Rank", variants,
                                       note="Reserved memory where the dump has it, else allocated (memory_curve); the "
                                            "host's resident memory (host_memory_curve); curves that stay at 0 are "
                                            "only in the table."))
    peaks = rows(con, "report_memory_peaks")
    if peaks:
        sections.append(table("memory-peaks", "Peak memory per rank and curve", [
            column("rank", "rank", "int"), column("kind", "kind"), column("component", "component", search=True),
            column("device", "device"), column("samples", "samples", "int"),
            column("peak_allocated_mib", "peak allocated MiB", "mib"), column("peak_reserved_mib", "peak reserved MiB", "mib"),
            column("peak_at_s", "peak at s", "num"), column("end_reserved_mib", "reserved at end MiB", "mib")], peaks))
    bandwidth = rows(con, "report_memory_bandwidth", max_points=MAX_CURVE_POINTS)
    if bandwidth:  # only where the dump has memcpy / memset executions with their bytes
        variants = [(f"rank {rank}", lines([(b["direction"], b["seconds"], b["gb_per_second"])
                                            for b in bandwidth if b["rank"] == rank],
                                           x_title="seconds since the rank's first copy", y_title="GB/s", step_shape=True))
                    for rank in sorted({b["rank"] for b in bandwidth})[:MAX_RANK_CHARTS]]
        sections.append(chart_variants("memory-bandwidth", "Memory copy bandwidth over time", "Rank", variants,
                                       note="memcpy and memset bandwidth per direction, concurrent copies summed, as "
                                            "HTA's memory bandwidth time series (memory_bandwidth_series)."))
        sections.append(table("memory-bandwidth-stats", "Memory copy bandwidth per direction", [
            column("rank", "rank", "int"), column("direction", "direction"), column("copies", "copies", "int"),
            column("total_bytes", "bytes", "bytes"), column("busy_ms", "busy ms", "ms"),
            column("busy_avg_bps", "mean while busy", "bw"), column("median_bps", "median", "bw"),
            column("max_bps", "peak", "bw")], rows(con, "report_memory_bandwidth_stats")))
    owners = rows(con, "report_memory_ops", top=TOP_ROWS)
    if owners:
        sections.append(table("memory-ops", "Allocations per op", [
            column("rank", "rank", "int"), column("component", "component"), column("owner", "op / owner", search=True),
            column("blocks", "blocks", "int"), column("total_mib", "total MiB", "mib"), column("max_mib", "largest MiB", "mib"),
            column("avg_lifetime_ms", "avg lifetime ms", "ms")], owners, total=_count(con, "memory_op_stats")))
    if not sections:
        sections.append(empty("Memory", "No memory data in this dump (profile_memory / profile_memory=True in PyTorch, "
                                        "or msprof memory exports, were not on)."))
    return _page("memory", "Memory", sections)


# ---- Timeline preview ----------------------------------------------------------------------------------------

def timeline(con: duckdb.DuckDBPyConnection, context: RunContext) -> Page:
    sections: list[Section] = []
    spans = rows(con, "report_timeline_gantt", max_steps=GANTT_STEPS, max_ranks=GANTT_RANKS)
    if spans:
        variants = []
        for rank in sorted({s["rank"] for s in spans}):
            tracks: dict[str, list[tuple[float, float, str]]] = defaultdict(list)
            for s in spans:
                if s["rank"] == rank:
                    tracks[s["track"]].append((s["start_ms"], s["end_ms"], f"{s['step']}: {s['spans']} spans"))
            variants.append((f"rank {rank}", gantt(tracks, x_title="ms since the rank's first step")))
        sections.append(chart_variants("timeline-gantt", "Tracks per step", "Rank", variants,
                                       note=f"Each bar spans a track's first start to its last end inside one step (the "
                                            f"first {GANTT_STEPS} steps of the first {GANTT_RANKS} ranks); hover for the step "
                                            "and how many slices it holds. The full timeline is timeline/trace.json."))
    else:
        sections.append(empty("Tracks per step", "No step trace to cut the timeline into steps."))
    sections.append(text("Open the full timeline", _how_to_open(context)))
    return _page("timeline", "Timeline", sections)


def _how_to_open(context: RunContext) -> list[str]:
    if context.timeline is None and context.timeline_content == "none":
        return ["No timeline was written for this run (--timeline none)."]
    if context.timeline is None:
        return ["A warehouse keeps the tables, not the timeline: run `profpipe analyse` on the run's folder "
                "for its trace.json."]
    name = context.timeline["path"]
    paragraphs = [f"Open https://ui.perfetto.dev in a browser, choose 'Open trace file' and pick {name} "
                  "from the output folder (Perfetto reads the file locally: nothing is uploaded). Or open chrome://tracing "
                  "in Chrome or Chromium and press 'Load'. Each rank is a process; its threads are the host threads, "
                  "device streams, communication planes and the overlap analysis."]
    if context.timeline.get("content") == "summary":
        paragraphs.append("It holds the steps, their phases and the overlap analysis only (--timeline summary; the "
                          "default for one rank's PyTorch or Paddle trace, which opens in Perfetto itself with every op "
                          "and kernel): `--timeline full` writes every lane.")
    size = context.timeline["bytes"] / 1048576
    limit_mb = context.timeline.get("limit_mb")
    limit = (f"the limit is {limit_mb:g} MiB of text (--timeline-limit, as MindSpore's timeline_limit)"
             if limit_mb else "no size limit was set")
    kept = f"{context.timeline['events_written']:,} events, {size:.1f} MiB on disk; {limit}."
    if context.timeline["events_dropped"]:
        kept += (f" {context.timeline['events_dropped']:,} later events were left out to stay under it: every step "
                 "is kept, and slices and flow arrows are cut whole at one point in time.")
    paragraphs.append(f"This run's timeline holds {kept}")
    return paragraphs
