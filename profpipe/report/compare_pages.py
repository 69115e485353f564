"""Report, comparisons: the Batch page of a warehouse's report (the runs' step-time trend and the latest run's
regressions) and the Diff page of `profpipe diff --report` (the ranked changes of run B against run A).

Where it sits: beside profpipe/report/pages.py (one run's pages); both read finished models only, the changes
come from profpipe/diff.py (Welch's t test per kernel, op type and step phase).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from ..diff import diff_runs
from ..models import query_rows as rows
from ..warehouse import open_run
from .pages import TOP_ROWS, Page
from .sections import PHASE_COLOURS, Section, bars, chart, column, empty, table

#: Changes the diff chart draws (the table keeps TOP_ROWS).
CHART_CHANGES = 20


def batch_page(con: duckdb.DuckDBPyConnection, warehouse: Path) -> Page:
    """The runs of the warehouse `con` opens (its catalog): the trend of their step time, then what changed from
    the run before the latest to the latest run with steps."""
    runs = rows(con, "report_run_trend")
    sections: list[Section] = [table("runs", "Runs", [
        column("run", "run", search=True), column("status", "status"), column("analysed_at", "analysed at"),
        column("ranks", "ranks", "int"), column("rank_steps", "rank-steps", "int"), column("total_ms", "avg step ms", "ms"),
        column("health_events", "health events", "int")], [{**r, "analysed_at": str(r["analysed_at"])} for r in runs])]
    timed = [r for r in runs if r["total_ms"] is not None]
    if timed:
        phases = [("iteration_interval_ms", "iteration gap"), ("fp_and_bp_ms", "FP+BP"), ("tail_ms", "tail")]
        figure = bars([r["run"] for r in timed], [(label, [r[key] for r in timed]) for key, label in phases],
                      x_title="run (oldest analysis first)", y_title="average step, ms",
                      colours={label: PHASE_COLOURS[key] for key, label in phases})
        figure["data"].append({"type": "scatter", "mode": "lines+markers", "name": "step",
                               "x": [r["run"] for r in timed], "y": [r["total_ms"] for r in timed]})
        sections.append(chart("run-trend", "Average step time per run", figure))
    if len(timed) >= 2:
        before, latest = timed[-2]["run"], timed[-1]["run"]
        con_a, con_b = open_run(warehouse, before), open_run(warehouse, latest)
        try:
            changes = diff_runs(con_a, con_b)
        finally:
            con_a.close()
            con_b.close()
        sections += diff_sections(changes, before, latest, regressions_only=True)
    else:
        sections.append(empty("Regressions", "Fewer than two runs with a step trace: nothing to compare yet."))
    return {"id": "batch", "title": "Batch", "sections": sections}


def diff_page(changes: pa.Table, a: str, b: str) -> Page:
    """The Diff page: every change of run B against run A, largest impact first."""
    return {"id": "diff", "title": "Diff", "sections": diff_sections(changes, a, b, regressions_only=False)}


def diff_sections(changes: pa.Table, a: str, b: str, *, regressions_only: bool) -> list[Section]:
    """The chart of the largest changes and the ranked table; with `regressions_only`, the significant slow-downs."""
    listed = changes.to_pylist()
    if regressions_only:
        listed = [r for r in listed if r["significant"] and (r["per_step_change_ns"] or 0) > 0]
    title = f"Regressions of {b} against {a}" if regressions_only else f"Changes of {b} against {a}"
    if not listed:
        return [empty(title, "No significant slow-down (Welch's t test, p < 0.05 and at least 1 % per step)."
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
                note=f"A = {a}, B = {b}; ranked by the absolute change of the per-step time (profpipe diff).")]


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
