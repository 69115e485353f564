"""MindSpore-compatible reports: the plain-CSV files of the reports layer (sql/reports), written as CSV.

Each report model names its file in its YAML (cpu_op_type_info_{rank}.csv, framework_raw_{device_id}.csv,
...); this writer only splits the rows per rank and per value of the columns the name holds, orders them
(csv_order) and leaves out the hidden columns (rank, the ns total that orders them), the columns of the other
--report-style and optional columns that are NULL on every row of the file. Reports of another style, and
reports another exporter formats (`written_by`: text and JSON files), are skipped. Numbers are printed in SQL
as the imitated tool prints them (CPU/GPU: C++ streams, 6 significant digits; Ascend: Python's float repr),
so tools that read MindSpore's files keep working. Differences from MindSpore's CPU/GPU files, on purpose:
rows are sorted by time (MindSpore writes hash-map order), `subgraph` holds the real first scope element
(MindSpore writes `Default` for every op), and sums are exact (MindSpore accumulates in float32).
"""
from __future__ import annotations

import csv
import re
from pathlib import Path

import duckdb

from ..models import Model


def write_reports(con: duckdb.DuckDBPyConnection, reports_dir: Path, reports: list[Model],
                  style: str = "latest") -> list[Path]:
    """Write every CSV report of `reports` for `style` that has rows, once per rank and value of the columns
    its file name holds; return the paths."""
    reports_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for report in reports:
        if report.written_by or report.style not in (None, style):
            continue
        columns = [c for c in report.columns if not c.hidden and c.style in (None, style)]
        shown = ", ".join(f'"{c.name}"' for c in columns)
        order = f" ORDER BY {report.csv_order}" if report.csv_order else ""
        names = re.findall(r"\{(\w+)\}", report.file)
        keys = list(dict.fromkeys(["rank", *names])) if names else []
        groups = (con.execute(f"SELECT DISTINCT {', '.join(keys)} FROM {report.name} ORDER BY ALL").fetchall()
                  if keys else [()])
        for values in groups:
            where = " WHERE " + " AND ".join(f"{k} IS NOT DISTINCT FROM ?" for k in keys) if keys else ""
            rows = con.execute(f"SELECT {shown} FROM {report.name}{where}{order}", values).fetchall()
            if not rows:
                continue
            kept = [i for i, c in enumerate(columns) if not c.optional or any(r[i] is not None for r in rows)]
            path = reports_dir / report.file.format(**dict(zip(keys, values)))
            with open(path, "w", newline="", encoding="utf-8") as handle:  # quoted only where needed, as MindSpore
                writer = csv.writer(handle, lineterminator=report.newline)
                writer.writerow(columns[i].name for i in kept)
                writer.writerows([row[i] for i in kept] for row in rows)
            written.append(path)
    return written
