"""The marts as plain CSVs in reports/, for people and spreadsheets: all ranks in one file, the rows that
matter most first (each mart's `csv_order` in its YAML, e.g. the largest time share first), then by every
column, so two runs on the same input write the same bytes."""
from __future__ import annotations

from pathlib import Path

import duckdb

from ..models import Model


def write_marts(con: duckdb.DuckDBPyConnection, reports_dir: Path, marts: list[Model], empty: set[str]) -> list[Path]:
    """Write each of `marts` that has a CSV order as reports/<name>.csv, and the trace-health ledger as
    reports/trace_health.csv (most rows touched first), each only when it is not one of the tables known to hold no
    rows (`empty`: run_models'; profile.duckdb keeps every table); return the paths."""
    reports_dir.mkdir(parents=True, exist_ok=True)
    orders = [(name, order) for name, order in [("trace_health", "rows DESC"), *((m.name, m.csv_order) for m in marts)]
              if order is not None and name not in empty]
    paths = []
    for name, order in orders:
        path = reports_dir / f"{name}.csv"
        every = ", ".join(f'"{column}"' for (column,) in con.execute(f"SELECT name FROM pragma_table_info('{name}')").fetchall())
        con.execute(f"COPY (SELECT * FROM {name} ORDER BY {order}, {every}) TO '{path}' (FORMAT CSV, HEADER true)")
        paths.append(path)
    return paths
