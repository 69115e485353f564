"""How profpipe opens DuckDB: every connection, in every stage, goes through `connect`.

DuckDB draws a progress bar on standard output for queries that run over two seconds; on the
command's stdout that would corrupt the JSON and CSV profpipe prints there (`analyse --json`,
`query -f csv`, `batch --json`), so every connection turns it off.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb


#: Threads each new connection may use (None: DuckDB's default, one per core); set in worker processes so that
#: workers running side by side share the cores instead of each taking all of them.
_threads: int | None = None


def limit_threads(threads: int | None) -> None:
    """Give every connection opened from now on in this process `threads` threads (None: DuckDB's default)."""
    global _threads
    _threads = threads


def connect(database: str | Path = ":memory:", read_only: bool = False, **config: Any) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection to `database` (default: in memory) with `config` and no progress bar."""
    if _threads is not None:
        config.setdefault("threads", _threads)
    con = duckdb.connect(str(database), read_only=read_only, config=config)
    con.execute("SET enable_progress_bar = false")  # a session setting: not accepted in `config`
    return con
