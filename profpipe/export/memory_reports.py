"""MindSpore-compatible memory report: memory_usage_summary_<rank>.json of MindSpore 1.2-2.3, from the report model
sql/reports/memory_usage_summary_json (stage 5, export; formatting only).

MindSpore's parser json.dumps a dict {capacity, allocations, deallocations, peak_mem, static_mem}: GiB as Python
floats, counts as ints, and peak_mem / static_mem still the integer 0 they start as when no graph had tensors. A
rank's later profiling cycles (capture 1, 2, ...) get the same file with `_capture<c>` after the rank.
"""
from __future__ import annotations

import json
from pathlib import Path

import duckdb

from ..models import Model


def write_memory_reports(con: duckdb.DuckDBPyConnection, reports_dir: Path, reports: list[Model]) -> list[Path]:
    """Write memory_usage_summary_<rank>.json for every rank and capture with a memory usage file; return the paths."""
    written = []
    for report in (r for r in reports if r.written_by == "profpipe/export/memory_reports.py"):
        relation = con.sql(f"SELECT * FROM {report.name} ORDER BY rank, capture")
        for row in (dict(zip(relation.columns, values)) for values in relation.fetchall()):
            counted = row["graphs"] > 0
            summary = {"capacity": row["capacity"], "allocations": row["allocations"],
                       "deallocations": row["deallocations"], "peak_mem": row["peak_mem"] if counted else 0,
                       "static_mem": row["static_mem"] if counted else 0}
            suffix = f"{row['rank']}" if row["capture"] == 0 else f"{row['rank']}_capture{row['capture']}"
            path = reports_dir / report.file.format(rank=suffix)
            reports_dir.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(summary), encoding="utf-8")
            written.append(path)
    return written
