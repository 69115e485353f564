"""Report, building blocks: the sections a page is made of (facts, text, tables, charts) as the plain dicts
profpipe/report/assets/report.js draws, and the Plotly figures of the charts (`data` + `layout`, drawn by the
plotly.js bundled into the file; no Python plotting API is needed).

Where it sits: profpipe/report/pages.py fills these from the marts; profpipe/report/document.py writes them.
Column formats name how report.js prints a value: text, int, num, ms, pct (a share 0-1), mib, bytes, bw (B/s).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Section = dict[str, Any]
Figure = dict[str, Any]

#: Colours of the step phases, shared by every chart that stacks them.
PHASE_COLOURS = {"iteration_interval_ms": "#9aa5b1", "fp_and_bp_ms": "#2e86de", "tail_ms": "#f5a623",
                 "input_wait_ms": "#d62728", "unsplit_ms": "#c8cdd2"}


def column(key: str, label: str, fmt: str = "text", *, search: bool = False, help: str = "") -> dict[str, Any]:
    """A table column: the row value's `key`, its header, its format; `search` makes the search box match it."""
    return {"key": key, "label": label, "format": fmt, "search": search, "help": help}


def facts(title: str, items: Sequence[tuple[str, Any]]) -> Section:
    return {"kind": "facts", "title": title, "items": [[label, str(value)] for label, value in items]}


def text(title: str, paragraphs: Sequence[str], code: str | None = None) -> Section:
    return {"kind": "text", "title": title, "paragraphs": list(paragraphs), "code": code}


def empty(title: str, why: str) -> Section:
    """A section the dump has no data for, saying why."""
    return {"kind": "empty", "title": title, "why": why}


def table(section_id: str, title: str, columns: list[dict[str, Any]], rows: list[dict[str, Any]], *,
          total: int | None = None, note: str | None = None, drill: dict[str, Any] | None = None) -> Section:
    """A sortable table of `rows` (dicts keyed by the columns' keys); `total` is the row count before a cut."""
    return {"kind": "table", "id": section_id, "title": title, "note": note, "columns": columns,
            "rows": [[row[c["key"]] for c in columns] for row in rows], "total": total or len(rows), "drill": drill}


def drill(title: str, key: Sequence[int], columns: list[dict[str, Any]], child_rows: list[dict[str, Any]],
          child_key: Sequence[str], none: str) -> dict[str, Any]:
    """A table's drill-down: clicking a row shows the `child_rows` whose `child_key` values equal the row's
    values at the column indexes `key`."""
    rows: dict[str, list[list[Any]]] = {}
    for row in child_rows:
        rows.setdefault("\u0000".join(str(row[k]) for k in child_key), []).append([row[c["key"]] for c in columns])
    return {"title": title, "key": list(key), "columns": columns, "rows": rows, "none": none}


def chart(section_id: str, title: str, figure: Figure, note: str | None = None) -> Section:
    return {"kind": "chart", "id": section_id, "title": title, "figure": figure, "note": note}


def chart_variants(section_id: str, title: str, selector: str, variants: list[tuple[str, Figure]],
                   note: str | None = None) -> Section:
    """A chart with a selector (`selector` names it) that switches between figures."""
    return {"kind": "chart", "id": section_id, "title": title, "selector": selector, "note": note,
            "variants": [{"label": label, "figure": figure} for label, figure in variants]}


def bars(categories: Sequence[Any], series: Sequence[tuple[str, Sequence[Any]]], *, x_title: str, y_title: str,
         stacked: bool = True, horizontal: bool = False, colours: dict[str, str] | None = None) -> Figure:
    """Bars of several `series` (name, values) over `categories`, stacked or grouped."""
    colours = colours or {}
    labels = [str(c) for c in categories]
    data = []
    for name, values in series:
        trace: dict[str, Any] = {"type": "bar", "name": name}
        trace.update({"y": labels, "x": list(values), "orientation": "h"} if horizontal else {"x": labels, "y": list(values)})
        if name in colours:
            trace["marker"] = {"color": colours[name]}
        data.append(trace)
    value_axis, category_axis = ({"title": {"text": x_title}}, {"title": {"text": y_title}, "type": "category", "automargin": True}) \
        if horizontal else ({"title": {"text": y_title}}, {"title": {"text": x_title}, "type": "category"})
    layout = {"barmode": "stack" if stacked else "group", 
              "xaxis": value_axis if horizontal else category_axis, "yaxis": category_axis if horizontal else value_axis}
    if horizontal:
        layout["yaxis"]["autorange"] = "reversed"
        layout["height"] = max(300, 22 * len(labels) + 120)
    return {"data": data, "layout": layout}


def lines(curves: Sequence[tuple[str, Sequence[float], Sequence[float]]], *, x_title: str, y_title: str,
          step_shape: bool = False) -> Figure:
    """One line per (name, x values, y values)."""
    shape = {"shape": "hv"} if step_shape else {}
    return {"data": [{"type": "scatter", "mode": "lines", "name": name, "x": list(x), "y": list(y), "line": shape}
                     for name, x, y in curves],
            "layout": {"xaxis": {"title": {"text": x_title}}, "yaxis": {"title": {"text": y_title}}}}


def heatmap(x: Sequence[Any], y: Sequence[Any], z: Sequence[Sequence[Any]], *, x_title: str, y_title: str,
            value_title: str) -> Figure:
    return {"data": [{"type": "heatmap", "x": [str(v) for v in x], "y": [str(v) for v in y], "z": [list(r) for r in z],
                      "colorscale": "Blues", "colorbar": {"title": {"text": value_title}}}],
            "layout": {"xaxis": {"title": {"text": x_title}, "type": "category"},
                       "yaxis": {"title": {"text": y_title}, "type": "category", "autorange": "reversed"}}}


def gantt(bars_by_track: dict[str, list[tuple[float, float, str]]], *, x_title: str) -> Figure:
    """A Gantt chart: per track (a row), bars (start, end, label) drawn from start to end."""
    data = []
    for track, spans in bars_by_track.items():
        data.append({"type": "bar", "orientation": "h", "name": track, "showlegend": False,
                     "y": [track] * len(spans), "base": [s for s, _, _ in spans],
                     "x": [max(e - s, 0.0) for s, e, _ in spans], "text": [label for _, _, label in spans],
                     "hovertemplate": "%{text}<br>%{base:.3f} ms + %{x:.3f} ms<extra>%{y}</extra>"})
    return {"data": data, "layout": {"barmode": "overlay", "xaxis": {"title": {"text": x_title}},
                                     "yaxis": {"type": "category", "automargin": True, "autorange": "reversed"},
                                     "height": max(300, 26 * len(bars_by_track) + 120)}}
