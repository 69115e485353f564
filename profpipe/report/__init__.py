"""The visual report (`profpipe report`, and report.html in every `analyse` output): one self-contained HTML file
with the run's overview, step trace, operators, utilisation, data pipeline, communication, memory and timeline
pages, and the advisor's findings; for a warehouse, the runs' trend and the latest regressions.

Where it sits: last, after the models and the exports. It reads the marts only (profpipe/report/pages.py),
never raw input, so it can be rebuilt at any time from an output folder or a warehouse.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from ..database import connect as duckdb_connect
from ..errors import UsageError
from ..output import built_by, is_profpipe_output
from ..version import VERSION
from ..warehouse import is_warehouse, open_run, run_built
from . import document
from .pages import RunContext, run_pages

__all__ = ["RunContext", "write_diff_report", "write_report", "write_run_report", "write_warehouse_report"]


def write_run_report(con: duckdb.DuckDBPyConnection, path: Path, context: RunContext) -> Path:
    """Write the report of the run whose tables and marts `con` holds to `path`."""
    html = document.render(f"profpipe report: {Path(context.input).name or context.input}",
                           f"{context.input} · profpipe {context.profpipe_version}", run_pages(con, context),
                           _FOOTER)
    document.write(path, html)
    return path


def write_warehouse_report(warehouse: Path, path: Path) -> Path:
    """Write the Batch report of a warehouse: its runs' trend and the latest run's regressions."""
    from ..trends import connect as connect_trends
    from .compare_pages import batch_page  # with profpipe.diff and polars, which a run's report does not need

    with connect_trends(warehouse) as con:
        page = batch_page(con, warehouse)
    document.write(path, document.render(f"profpipe batch report: {warehouse.name}", str(warehouse), [page], _FOOTER))
    return path


def write_diff_report(changes: pa.Table, a: str, b: str, path: Path) -> Path:
    """Write the Diff report of `profpipe diff`: the ranked changes of run B against run A."""
    from .compare_pages import diff_page

    document.write(path, document.render(f"profpipe diff: {b} against {a}", f"A = {a} · B = {b}",
                                         [diff_page(changes, a, b)], _FOOTER))
    return path


def write_align_report(alignment: dict, a: str, b: str, path: Path) -> Path:
    """Write the report of `profpipe diff --align ops`: run B aligned op by op on run A."""
    from .compare_pages import align_page

    document.write(path, document.render(f"profpipe diff --align ops: {b} against {a}", f"A = {a} · B = {b}",
                                         [align_page(alignment, a, b)], _FOOTER))
    return path


def write_report(output: Path, path: Path | None = None, *, run: str | None = None) -> Path:
    """The report of an existing output: a `profpipe analyse` folder (default file OUTPUT/report.html), a
    warehouse (its Batch report), or with `run` one run of a warehouse."""
    if is_warehouse(output):
        if run is None:
            return write_warehouse_report(output, path or output / "report.html")
        with open_run(output, run) as con:
            context = RunContext(input=f"{output} run {run}", profpipe_version=VERSION, built=run_built(output, run))
            return write_run_report(con, path or output / f"report-{run}.html", context)
    if run is not None:
        raise UsageError(f"{output}: --run needs a warehouse (profpipe batch), not an output folder")
    database = output / "profile.duckdb"
    if not database.is_file() or not is_profpipe_output(output):
        raise UsageError(f"{output}: not an output folder of profpipe analyse or a warehouse of profpipe batch")
    summary = _json(output / "reports" / "summary.json")
    timeline = summary.get("timeline")
    context = RunContext(input=summary.get("input", str(output)), profpipe_version=summary.get("profpipe_version", VERSION),
                         timeline=timeline, timeline_content=(timeline or {}).get("content", "full") if timeline else "none",
                         built=built_by(output))
    with duckdb_connect(database, read_only=True) as con:
        return write_run_report(con, path or output / "report.html", context)


def _json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


_FOOTER = ("Made by profpipe from the run's SQL models (OUTPUT/profile.duckdb); every number here can be re-queried "
           "with `profpipe query`. The page loads nothing from the network.")
