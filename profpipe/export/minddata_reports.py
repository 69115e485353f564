"""MindSpore-compatible MindData reports: the report models sql/reports/minddata_pipeline_raw and
minddata_pipeline_summary, written as MindSpore's Python writes them (stage 5, export; formatting only).

* `minddata_pipeline_raw_<rank>.csv`: the rows in pipeline order, CRLF lines (Python's csv module), a
  whole sample interval as an integer. A root without queue metrics (DeviceQueue) has no usage (MindSpore
  2.x), or usage 0 with style "legacy" (MindSpore 1.x, as in MindInsight's expected files).
* `minddata_pipeline_summary_<rank>.json` / `.csv`: the summary dict (a key and its JSON list per row),
  as JSON and as CSV rows of the key then the values.

A rank's later profiling cycles (capture 1, 2, ...) get the same files with `_capture<c>` after the rank;
MindSpore has one cycle per folder.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

import duckdb

from ..models import Model

#: The report models this module writes (the generic writer, mindspore_reports.py, writes the others).
def write_minddata_reports(con: duckdb.DuckDBPyConnection, reports_dir: Path, reports: list[Model],
                           style: str = "latest") -> list[Path]:
    """Write the files of the MindData report models for every rank and capture with rows; return their paths.
    `style` is the MindSpore version imitated: "latest" (2.x) or "legacy" (1.x)."""
    written = []
    for report in (r for r in reports if r.written_by == "profpipe/export/minddata_reports.py"):
        shown = [c.name for c in report.columns if not c.hidden]
        relation = con.sql(f"SELECT * FROM {report.name} ORDER BY rank, capture, {report.csv_order}")
        rows = [dict(zip(relation.columns, row)) for row in relation.fetchall()]
        for rank, capture in dict.fromkeys((row["rank"], row["capture"]) for row in rows):
            mine = [row for row in rows if (row["rank"], row["capture"]) == (rank, capture)]
            suffix = f"{rank}" if capture == 0 else f"{rank}_capture{capture}"  # a later profiling cycle
            path = reports_dir / report.file.format(rank=suffix)
            reports_dir.mkdir(parents=True, exist_ok=True)
            if report.name == "minddata_pipeline_raw":
                _write_raw(path, shown, mine, root_usage=0 if style == "legacy" else None)
                written.append(path)
            else:
                written += _write_summary(path, {row["key"]: json.loads(row["value"]) for row in mine})
    return written


def _write_raw(path: Path, columns: list[str], rows: list[dict], root_usage: int | None) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for row in rows:
            interval = row["sample_interval"]
            row["sample_interval"] = int(interval) if interval is not None and interval.is_integer() else interval
            if row["root_without_queue"]:
                row["output_queue_usage_rate"] = root_usage
            writer.writerow([row[c] for c in columns])


def _write_summary(json_path: Path, summary: dict[str, list]) -> list[Path]:
    json_path.write_text(json.dumps(summary, ensure_ascii=False), encoding="utf-8")
    csv_path = json_path.with_suffix(".csv")
    with open(csv_path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([[key, *values] for key, values in summary.items()])
    return [json_path, csv_path]
