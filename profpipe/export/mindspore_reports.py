"""MindSpore-compatible reports: the files of the reports layer (sql/reports), written as CSV.

Each report model names its file in its YAML (cpu_op_type_info_{rank}.csv, ...); this writer only
splits the rows per rank, orders them (csv_order) and leaves out the hidden columns (rank, the ns total
that orders them). Numbers are printed in SQL as C++ streams print them (6 significant digits), so tools
that read MindSpore's files keep working. Differences from MindSpore, on purpose: rows are sorted by
time (MindSpore writes hash-map order), `subgraph` holds the real first scope element (MindSpore writes
`Default` for every op), and sums are exact (MindSpore accumulates in float32).
"""
from __future__ import annotations

import csv
from pathlib import Path

import duckdb

from ..models import Model


def write_reports(con: duckdb.DuckDBPyConnection, reports_dir: Path, reports: list[Model]) -> list[Path]:
    """Write every report of `reports` that has rows, once per rank where its file name has {rank};
    return the paths."""
    reports_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for report in reports:
        shown = ", ".join(f'"{c.name}"' for c in report.columns if not c.hidden)
        order = f" ORDER BY {report.csv_order}" if report.csv_order else ""
        per_rank = "{rank}" in report.file
        ranks = ([r for (r,) in con.execute(f"SELECT DISTINCT rank FROM {report.name} ORDER BY rank").fetchall()]
                 if per_rank else [None])
        for rank in ranks:
            where = f" WHERE rank = {int(rank)}" if per_rank else ""
            result = con.execute(f"SELECT {shown} FROM {report.name}{where}{order}")
            rows = result.fetchall()  # a report's rows: one per op or kernel name
            if not rows:
                continue
            path = reports_dir / report.file.format(rank=rank)
            with open(path, "w", newline="", encoding="utf-8") as handle:  # quoted only where needed, as MindSpore
                writer = csv.writer(handle, lineterminator="\n")
                writer.writerow(column[0] for column in result.description)
                writer.writerows(rows)
            written.append(path)
    return written
