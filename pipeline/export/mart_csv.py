"""Every mart as a plain CSV in reports/, for people and spreadsheets (all ranks in one file, rows sorted
by every column from the first, so two runs on the same input write the same bytes)."""
from __future__ import annotations

from pathlib import Path

import duckdb


def write_marts(con: duckdb.DuckDBPyConnection, reports_dir: Path, names: list[str]) -> list[Path]:
    """Write each mart `name` as reports/<name>.csv; return the paths."""
    reports_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in names:
        path = reports_dir / f"{name}.csv"
        con.execute(f"COPY (SELECT * FROM {name} ORDER BY ALL) TO '{path}' (FORMAT CSV, HEADER true)")
        paths.append(path)
    return paths
