"""Stage 2, ingest helper: the scratch DuckDB database a reader parses one trace into.

In memory up to MEMORY_LIMIT, spilled to a scratch folder beyond it: a trace larger than memory is
read with bounded memory, and one that fits pays no disk writes (a database file would write and
checkpoint every table).
"""
from __future__ import annotations

from pathlib import Path

import duckdb

#: DuckDB's memory for one trace; beyond it the data spill to the scratch folder.
MEMORY_LIMIT = "640MB"


def scratch_database(folder: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB database that spills to `folder` (which the caller removes)."""
    return duckdb.connect(config={"temp_directory": str(folder), "memory_limit": MEMORY_LIMIT})
