"""How profpipe opens DuckDB: every connection, in every stage, goes through `connect`.

DuckDB draws a progress bar on standard output for queries that run over two seconds; on the
command's stdout that would corrupt the JSON and CSV profpipe prints there (`analyse --json`,
`query -f csv`, `batch --json`), so every connection turns it off. Threads and memory are set per process
(`configure`): worker processes share the cores, and `analyse --memory-limit` bounds every database of a run.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb


#: Threads and memory (MiB) each new connection may use (None: DuckDB's defaults, one thread per core and 80 % of
#: the machine's memory). Worker processes share the cores this way instead of each taking all of them, and
#: `analyse --memory-limit` caps every database of a run.
_threads: int | None = None
_memory_mb: int | None = None


def configure(threads: int | None = None, memory_mb: int | None = None) -> None:
    """Give every connection opened from now on in this process `threads` threads and at most `memory_mb` MiB
    (None: DuckDB's default). A worker process's initializer; `configured` sets them for a block."""
    global _threads, _memory_mb
    _threads, _memory_mb = threads, memory_mb


@contextmanager
def configured(threads: int | None = None, memory_mb: int | None = None) -> Iterator[None]:
    """`configure` for the body only, for the settings given (None keeps the current one); the earlier settings come
    back after it."""
    before = (_threads, _memory_mb)
    configure(_threads if threads is None else threads, _memory_mb if memory_mb is None else memory_mb)
    try:
        yield
    finally:
        configure(*before)


def memory_limit_mb(wanted: int) -> int:
    """`wanted` MiB, or less when the process's memory limit is lower (a reader's scratch database)."""
    return wanted if _memory_mb is None else min(wanted, _memory_mb)


def connect(database: str | Path = ":memory:", read_only: bool = False, **config: Any) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection to `database` (default: in memory) with `config` and no progress bar, within this
    process's thread and memory settings (`configure`) where `config` does not set them."""
    if _threads is not None:
        config.setdefault("threads", _threads)
    if _memory_mb is not None:
        config.setdefault("memory_limit", f"{_memory_mb}MB")
    con = duckdb.connect(str(database), read_only=read_only, config=config)
    con.execute("SET enable_progress_bar = false")  # a session setting: not accepted in `config`
    return con
