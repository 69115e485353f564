"""Report, comparisons: the Batch page of a warehouse's report (the runs' trends with their outliers, from
profpipe/trends.py, and the latest run's regressions) and the Diff page of `profpipe diff --report` (the ranked changes of run B against run A).

Where it sits: beside profpipe/report/pages.py (one run's pages); both read finished models only, the changes
come from profpipe/diff.py (Welch's t test per kernel, op type and step phase).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from ..trends import (
    CHART_KEYS,
    MEDIAN_TEST,
    TEST,
    WINDOW,
    Series,
    Trends,
    latest,
    median_regressions,
    previous_changes,
    previous_pair,
    summaries,
    trends,
)
from .pages import TOP_ROWS, Page
from .sections import Section, bars, chart, column, empty, facts, table

#: Changes the diff chart draws (the table keeps TOP_ROWS).
CHART_CHANGES = 20
#: Trend charts mark every run's point up to this many runs; beyond, lines only (thousands of SVG markers make the
#: page slow to open), the outliers keep their marks.
MARKED_RUNS = 150
#: Beyond MARKED_RUNS runs the runs' axis labels this many, evenly spaced (`_run_axis`).
LABELLED_RUNS = 20
#: The runs table lists the newest this many runs (a table of 1,000 rows is most of the page's open time).
RUN_ROWS = 200


def batch_page(con: duckdb.DuckDBPyConnection, warehouse: Path) -> Page:
    """The runs of the warehouse `con` opens (its catalog): their trends (step time, top op types and kernels, data
    pipeline, trace health and failed runs) with the outliers of profpipe/trends.py marked, then the latest run's
    regressions against the run before it (profpipe diff) and against the recent median."""
    t = trends(con)
    x = t.run_ids
    marked: dict[str, list[str]] = {}
    for o in t.outliers:
        marked.setdefault(o["run"], []).append(f"{o['kind']}: {o['label']} ({o['direction']}, z {_z(o['z'])})")
    sections: list[Section] = [
        facts("Runs", [("runs", len(x)), ("failed", sum(r["status"] == "failed" for r in t.runs)),
                       ("runs with an outlier", len(marked)), ("outlier test", TEST)]),
        _outlier_table(t)]
    step = next(s for s in t.series if s.kind == "step")
    if any(v is not None for v in step.values):
        median = Series("step", "step time", "step time (median)", "ms",
                        [r["step_median_ms"] if v is not None else None for r, v in zip(t.runs, step.values)])
        sections.append(chart("trend-step", "Step time per run", _trend_figure(x, [step, median], y_title="ms per step"),
                              note=_NOTE))
    for kind, title in (("op_type", "Op types: time per step per run"), ("kernel", "Kernels: time per step per run")):
        chosen = _chart_series(t, kind)
        if chosen:
            sections.append(chart(f"trend-{kind}", title, _trend_figure(x, chosen, y_title="ms per step (per run without steps)"),
                                  note=f"The {CHART_KEYS} with the most time over all runs, and every one with an outlier. " + _NOTE))
    data = next(s for s in t.series if s.kind == "data")
    if any(v is not None for v in data.values):
        figure = _trend_figure(x, [data], y_title="share of the step waiting for input")
        figure["data"][0]["text"] = [r["data_verdict"] or "" for r in t.runs]
        figure["data"][0]["hovertemplate"] = "%{x}<br>%{y:.1%} (input-bound: %{text})<extra></extra>"
        sections.append(chart("trend-data", "Data pipeline: input wait per run", figure,
                              note="Verdict per run: highly input-bound above 20 % of the step, moderately from 5 %. " + _NOTE))
    sections.append(chart("trend-health", "Trace-health events and failed runs", _health_figure(t), note=_NOTE))
    sections.append(table("runs", "Runs", [
        column("run", "run", search=True), column("status", "status"), column("analysed_at", "analysed at"),
        column("ranks", "ranks", "int"), column("rank_steps", "rank-steps", "int"), column("step_avg_ms", "avg step ms", "ms"),
        column("step_median_ms", "median step ms", "ms"), column("data_verdict", "input-bound"),
        column("health_events", "health events", "int"), column("outliers", "outliers", search=True),
        column("report", "report", "link"), column("built", "models built", search=True)],
        [{**r, "analysed_at": str(r["analysed_at"]), "outliers": "; ".join(marked.get(r["run"], [])),
          "built": "every model" if r["selection"] is None else f"--select {r['selection']}",
          "report": _link(r["run"])} for r in t.runs[-RUN_ROWS:]], total=len(t.runs),
        note=(f"The newest {RUN_ROWS} runs (every run: `SELECT * FROM batch_runs` in catalog.duckdb). " if len(t.runs) > RUN_ROWS
              else "") + f"A run's report: `profpipe report {warehouse} --run ID` writes report-ID.html beside this file."))
    pair = previous_pair(t)
    per_run = summaries(warehouse, t)
    if pair is not None:
        sections += diff_sections(previous_changes(per_run, pair), pair[0], pair[1], regressions_only=True)
    else:
        unbuilt = sum(r["steps_not_built"] for r in t.runs)
        sections.append(empty("Regressions", "Fewer than two measured runs (with a step trace, or op type or kernel "
                                             "times): nothing to compare yet." + (
            f" {unbuilt} runs were built with a --select that leaves out step_phases: their steps were not built, "
            "which is not the same as having none." if unbuilt else "")))
    sections.append(_median_section(t, per_run))
    for section in sections:  # laid out and drawn when scrolled near (report.js): the page opens with its first screen
        if section["kind"] == "chart" or section.get("id") == "runs":
            section["lazy"] = True
    return {"id": "batch", "title": "Batch", "sections": sections}


_NOTE = (f"Runs in analysis order; a red x marks an outlier ({TEST}). Click a point to open the run's report "
         "(report-RUN.html, written by `profpipe report WAREHOUSE --run RUN`).")


def _link(run: str) -> str:
    return f"report-{run}.html"


def _z(z: float) -> str:
    return f"{z:.1f}" if abs(z) < 1e6 else ("+inf" if z > 0 else "-inf")


def _chart_series(t: Trends, kind: str) -> list[Series]:
    of_kind = [s for s in t.series if s.kind == kind]
    of_kind.sort(key=lambda s: -sum(v or 0 for v in s.values))
    outlying = {(o["key"], o["side"]) for o in t.outliers if o["kind"] == kind}
    return [s for i, s in enumerate(of_kind) if i < CHART_KEYS or (s.key, s.side) in outlying]


def _trend_figure(x: list[str], series: list[Series], *, y_title: str) -> dict[str, Any]:
    """Lines with markers, one per series, and one trace of red x's on the outliers; hover and click name the run."""
    data: list[dict[str, Any]] = []
    ox, oy, otext = [], [], []
    for s in series:
        data.append({"type": "scatter", "mode": "lines+markers" if len(x) <= MARKED_RUNS else "lines",
                     "name": s.label[:60], "x": x, "y": s.values,
                     "connectgaps": False, "hovertemplate": "%{x}<br>%{y:.4g} " + s.unit + "<extra>" + s.label[:60] + "</extra>"})
        for i, value in enumerate(s.values):
            if s.z and s.outlier(i):
                ox.append(x[i])
                oy.append(value)
                otext.append(f"{s.kind}: {s.label}, median {s.medians[i]:.4g} {s.unit}, z {_z(s.z[i])}")
    if ox:
        data.append({"type": "scatter", "mode": "markers", "name": "outlier", "x": ox, "y": oy, "text": otext,
                     "marker": {"symbol": "x", "size": 13, "color": "#d62728", "line": {"width": 2}},
                     "hovertemplate": "%{x}<br>%{text}<extra>outlier</extra>"})
    return {"data": data, "link": _link("{run}"),
            "layout": {"xaxis": _run_axis(x), "yaxis": {"title": {"text": y_title}}, "hovermode": "closest"}}


def _run_axis(x: list[str]) -> dict[str, Any]:
    """The runs' axis: a category per run; beyond MARKED_RUNS runs a label on every len(x) / LABELLED_RUNS-th run,
    given (plotly's automatic ticks of a category axis of 1,000 runs were half of the chart's drawing)."""
    axis: dict[str, Any] = {"title": {"text": "run (oldest analysis first)"}, "type": "category"}
    if len(x) > MARKED_RUNS:
        axis.update(tickmode="array", tickvals=x[::math.ceil(len(x) / LABELLED_RUNS)])
    return axis


def _health_figure(t: Trends) -> dict[str, Any]:
    x = t.run_ids
    mode = "lines+markers" if len(x) <= MARKED_RUNS else "lines"
    data: list[dict[str, Any]] = [
        {"type": "scatter", "mode": mode, "name": name, "x": x, "y": [r[key] or 0 for r in t.runs],
         "hovertemplate": "%{x}<br>%{y} " + name + "<extra></extra>"}
        for key, name in (("health_events", "health events"), ("sources_failed", "sources failed"))]
    failed = [r for r in t.runs if r["status"] not in ("ok", "partial")]
    if failed:
        data.append({"type": "scatter", "mode": "markers", "name": "failed / empty / missing run",
                     "x": [r["run"] for r in failed], "y": [0] * len(failed),
                     "text": [f"{r['status']}: {r['error'] or ''}"[:200] for r in failed],
                     "marker": {"symbol": "x", "size": 13, "color": "#d62728"},
                     "hovertemplate": "%{x}<br>%{text}<extra></extra>"})
    return {"data": data, "link": _link("{run}"),
            "layout": {"xaxis": _run_axis(x), "yaxis": {"title": {"text": "count"}, "rangemode": "tozero"},
                       "hovermode": "closest"}}


def _outlier_table(t: Trends) -> Section:
    if not t.outliers:
        return empty("Outliers", f"No run is an outlier against its recent history ({TEST}).")
    return table("outliers", "Outliers", [
        column("run", "run", search=True), column("kind", "kind"), column("label", "key", search=True),
        column("direction", "direction"), column("value", "value", "num"), column("median", "median of history", "num"),
        column("unit", "unit"), column("z", "robust z", "num")], t.outliers[:TOP_ROWS], total=len(t.outliers),
        note=f"Each run against the previous {WINDOW} runs with a value: {TEST}.")


def _median_section(t: Trends, per_run: Callable[[str], Any]) -> Section:
    found = median_regressions(t, per_run)
    i = latest(t)
    title = f"Regressions of {t.runs[i]['run']} against the median of the previous {WINDOW} runs" if i is not None \
        else "Regressions against the recent median"
    if not found:
        return empty(title, f"No op type, kernel or step phase significantly slower than its median run ({MEDIAN_TEST}).")
    return table("median-regressions", title, [
        column("kind", "kind"), column("key", "key", search=True), column("median_run", "median run", search=True),
        column("median_ms", "median run ms per step", "ms"), column("latest_ms", "latest ms per step", "ms"),
        column("change_ms", "change ms", "ms"), column("relative_change", "change", "pct"), column("samples", "samples"),
        column("p_value", "p", "num")],
        found[:TOP_ROWS], total=len(found),
        note=f"Each key against its median run: {MEDIAN_TEST}. Samples: steps (per-step times), or executions (each "
             "execution's time, where a run has no step markers; 'per step' is then per cycle).")


def diff_page(changes: pa.Table, a: str, b: str) -> Page:
    """The Diff page: every change of run B against run A, largest impact first."""
    return {"id": "diff", "title": "Diff", "sections": diff_sections(changes, a, b, regressions_only=False)}


def diff_sections(changes: pa.Table, a: str, b: str, *, regressions_only: bool) -> list[Section]:
    """The chart of the largest changes and the ranked table; with `regressions_only`, the significant slow-downs."""
    listed = changes.to_pylist()
    title = f"Regressions of {b} against {a}" if regressions_only else f"Changes of {b} against {a}"
    samples = (f"Samples: {listed[0]['samples']} (" + ("per-step times" if listed[0]["samples"] == "steps" else
               "each execution's time: a run has no step markers, 'per step' is per cycle") + ").") if listed else ""
    if regressions_only:
        listed = [r for r in listed if r["significant"] and (r["per_step_change_ns"] or 0) > 0]
    if not listed:
        return [empty(title, f"No significant slow-down (Welch's t test, p < 0.05 and at least 1 % per step). {samples}"
                      if regressions_only else "The two runs have no kernel, op type or step phase to compare.")]
    shown = [{**r, "change_ms": _ms(r["per_step_change_ns"]), "a_ms": _ms(r["per_step_a_ns"]),
              "b_ms": _ms(r["per_step_b_ns"])} for r in listed]
    top = shown[:CHART_CHANGES]
    figure = bars([f"{r['kind']}: {r['key']}"[:80] for r in top], [("change per step (ms)", [r["change_ms"] for r in top])],
                  x_title="ms per step, B - A", y_title="", horizontal=True)
    return [chart("diff-chart", f"{title}: largest changes per step", figure,
                  note="Per step: a key's time in the run divided by its steps (rank-steps), so a step without it counts 0."),
            table("diff-table", title, [
                column("kind", "kind"), column("key", "key", search=True), column("status", "status"),
                column("a_ms", "per step A ms", "ms"), column("b_ms", "per step B ms", "ms"),
                column("change_ms", "change ms", "ms"), column("relative_change", "change", "pct"),
                column("p_value", "p", "num"), column("significant", "significant", "bool")],
                shown[:TOP_ROWS], total=len(shown),
                note=f"A = {a}, B = {b}; ranked by the absolute change of the per-step time (profpipe diff). {samples}")]


def align_page(alignment: dict, a: str, b: str) -> Page:
    """The Alignment page of `profpipe diff --align ops --report`: the aligned ops, per op type and per
    collective type (profpipe/align.py)."""
    ops = alignment["ops"].to_pylist()
    if not ops:
        return {"id": "align", "title": "Alignment", "sections": [
            empty("Op alignment", "Neither run has framework or device ops in a step to align.")]}
    shown = [{**r, "a_ms": _ms(r["time_a_ns"]), "b_ms": _ms(r["time_b_ns"]), "change_ms": _ms(r["difference_ns"])}
             for r in ops]
    memory = "; ".join(f"{label}: peak {side['peak_allocated_bytes'] / 2 ** 20:.1f} MiB allocated"
                       if side["peak_allocated_bytes"] is not None else f"{label}: no memory peak"
                       for label, side in (("A", alignment["a"]), ("B", alignment["b"])))
    sections: list[Section] = [table("align-ops", f"Op alignment of {b} against {a}", [
        column("position", "position", "int"), column("canonical_type", "type", search=True),
        column("status", "status"), column("op_name_a", "op A", search=True), column("op_name_b", "op B", search=True),
        column("a_ms", "A ms per step", "ms"), column("b_ms", "B ms per step", "ms"), column("change_ms", "B - A ms", "ms"),
        column("kernels_a", "kernels A", "num"), column("top_kernel_a", "top kernel A"),
        column("kernels_b", "kernels B", "num"), column("top_kernel_b", "top kernel B")], shown[:TOP_ROWS],
        total=len(shown), note=f"A = {a}, B = {b}; the op sequence of one representative step per run, aligned over "
                               f"canonical op types with difflib.SequenceMatcher (profpipe diff --align ops). {memory}.")]
    for key, title in (("op_types", "Per op type"), ("collectives", "Per collective type")):
        listed = [{**r, "a_ms": _ms(r["time_a_ns"]), "b_ms": _ms(r["time_b_ns"]), "change_ms": _ms(r["difference_ns"])}
                  for r in alignment[key].to_pylist()]
        if not listed:
            sections.append(empty(title, "None in either run."))
            continue
        sections.append(table(f"align-{key}", title, [
            column("canonical_type", "type", search=True), column("ops_a", "ops A", "int"),
            column("ops_b", "ops B", "int"), column("matched", "matched", "int"), column("a_ms", "A ms per step", "ms"),
            column("b_ms", "B ms per step", "ms"), column("change_ms", "B - A ms", "ms")], listed[:TOP_ROWS],
            total=len(listed)))
    return {"id": "align", "title": "Alignment", "sections": sections}


def _ms(ns: Any) -> float | None:
    return None if ns is None else ns / 1e6
