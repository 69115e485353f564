"""How profpipe opens DuckDB: every connection, in every stage, goes through `connect`.

DuckDB draws a progress bar on standard output for queries that run over two seconds; on the
command's stdout that would corrupt the JSON and CSV profpipe prints there (`analyse --json`,
`query -f csv`, `batch --json`), so every connection turns it off. Threads and memory are set per process
(`configure`): worker processes share the cores, and `analyse --memory-limit` bounds every database of a run.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from .safety import interruptible

#: Threads and memory (MiB) each new connection may use (None: DuckDB's defaults, one thread per core and 80 % of
#: the machine's memory): the process's (`configure`: worker processes share the cores this way instead of each
#: taking all of them), overridden in a thread by `configured` (one run's `--memory-limit`, one batch unit's).
_process: dict[str, int | None] = {"threads": None, "memory_mb": None}
_this_thread = threading.local()


def configure(threads: int | None = None, memory_mb: int | None = None) -> None:
    """Give every connection opened from now on in this process `threads` threads and at most `memory_mb` MiB
    (None: DuckDB's default). A worker process's initializer."""
    _process.update(threads=threads, memory_mb=memory_mb)


@contextmanager
def configured(threads: int | None = None, memory_mb: int | None = None) -> Iterator[None]:
    """The settings given (None keeps the current one) for the connections this thread opens in the body; the
    earlier ones come back after it. Other threads are not affected."""
    before = (_setting("threads"), _setting("memory_mb"))
    _this_thread.threads = before[0] if threads is None else threads
    _this_thread.memory_mb = before[1] if memory_mb is None else memory_mb
    try:
        yield
    finally:
        _this_thread.threads, _this_thread.memory_mb = before


def _setting(name: str) -> int | None:
    value = getattr(_this_thread, name, None)
    return _process[name] if value is None else value


def memory_limit_mb(wanted: int) -> int:
    """`wanted` MiB, or less when this thread's memory limit is lower (a reader's scratch database)."""
    limit = _setting("memory_mb")
    return wanted if limit is None else min(wanted, limit)


def connect(database: str | Path = ":memory:", read_only: bool = False, **config: Any) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection to `database` (default: in memory) with `config` and no progress bar, within this
    thread's thread and memory settings (`configure`, `configured`) where `config` does not set them; a signal
    during a run interrupts its query (`safety.interruptible`; a cursor of it needs its own registration)."""
    threads, memory_mb = _setting("threads"), _setting("memory_mb")
    if threads is not None:
        config.setdefault("threads", threads)
    if memory_mb is not None:
        config.setdefault("memory_limit", f"{memory_mb}MB")
    con = duckdb.connect(str(database), read_only=read_only, config=config)
    con.execute("SET enable_progress_bar = false")  # a session setting: not accepted in `config`
    return interruptible(con)


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Run the body as one transaction of `con`: committed when it ends, rolled back when it raises. Many small
    statements on a database file cost a write of its log each when every one commits alone."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")
