"""How profpipe opens DuckDB: every connection, in every stage, goes through `connect`.

DuckDB draws a progress bar on standard output for queries that run over two seconds; on the
command's stdout that would corrupt the JSON and CSV profpipe prints there (`analyse --json`,
`query -f csv`, `batch --json`), so every connection turns it off.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb


def connect(database: str | Path = ":memory:", read_only: bool = False, **config: Any) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection to `database` (default: in memory) with `config` and no progress bar."""
    con = duckdb.connect(str(database), read_only=read_only, config=config)
    con.execute("SET enable_progress_bar = false")  # a session setting: not accepted in `config`
    return con
