"""Stage 2, ingest helper for one-file trace sources (Kineto, Nsight Systems): the checks before a trace is
opened, the scratch DuckDB database it is parsed into, and the tables out of it.

In memory up to MEMORY_LIMIT_MB, spilled to a scratch folder beyond it: a trace larger than memory is
read with bounded memory, and one that fits pays no disk writes (a database file would write and
checkpoint every table).
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pyarrow as pa

from ..database import connect as duckdb_connect, memory_limit_mb
from ..errors import InputError
from ..output import process_gone
from ..safety import signals_held
from .units import US_TO_NS_MACRO

#: DuckDB's memory for one trace (MiB; less under `analyse --memory-limit`); beyond it the data spill to the
#: scratch folder.
MEMORY_LIMIT_MB = 640
_BATCH_ROWS = 1 << 20


def check_trace_file(path: Path, rank: int, no_rank: str, expected: str) -> None:
    """Refuse, naming the file, a trace whose rank discover could not tell (`no_rank` says where it
    looked) or that is empty (`expected` says what it should hold)."""
    if rank < 0:
        raise InputError(path, f"cannot tell its rank: {no_rank}; name the files by rank")
    if path.stat().st_size == 0:
        raise InputError(path, f"empty file, expected {expected}")


#: Scratch folders are named profpipe-<kind>-<pid>-<random> in $TMPDIR, so that the next run can find and
#: remove those of a killed run (its process is gone) or any older than MAX_SCRATCH_AGE_S.
_SCRATCH_NAME = re.compile(r"profpipe-[a-z]+-(?:(\d+)-)?\w+")
MAX_SCRATCH_AGE_S = 2 * 24 * 3600


@contextmanager
def scratch_folder(kind: str) -> Iterator[Path]:
    """A private folder under $TMPDIR for one reader's temporary files, removed when the body ends, on
    error and on interruption too (a signal that arrives just after it was made is held until its name is known)."""
    folder = None
    try:
        with signals_held():
            folder = tempfile.mkdtemp(prefix=f"profpipe-{kind}-{os.getpid()}-")
        yield Path(folder)
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def sweep_scratch_folders() -> None:
    """Remove this user's scratch folders in $TMPDIR left by killed runs (process gone) or stale (old)."""
    root = Path(tempfile.gettempdir())
    try:
        candidates = list(root.glob("profpipe-*"))
    except OSError:
        return
    now = time.time()
    for folder in candidates:
        match = _SCRATCH_NAME.fullmatch(folder.name)
        try:
            info = folder.lstat()
        except OSError:
            continue
        if not match or info.st_uid != os.getuid() or not folder.is_dir() or folder.is_symlink():
            continue
        pid = match.group(1)
        if (pid is not None and int(pid) != os.getpid() and process_gone(int(pid))) or \
                now - info.st_mtime > MAX_SCRATCH_AGE_S:
            shutil.rmtree(folder, ignore_errors=True)


def memory_database() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB database for a short query; should it spill, its files go to a scratch folder under
    $TMPDIR (DuckDB's default, `.tmp` in the working folder, may be the user's input folder)."""
    spill = Path(tempfile.gettempdir()) / f"profpipe-spill-{os.getpid()}-duckdb"
    return _with_macros(duckdb_connect(temp_directory=str(spill)))


def scratch_database(folder: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB database that spills to `folder` (which the caller removes). Its tables are compressed
    in memory (DuckDB's COMPRESS option: dictionaries and FSST for the names a trace repeats millions of times),
    so more of a large trace fits in MEMORY_LIMIT_MB before it spills (a 2 GiB Kineto trace: ingest 30 -> 27 s)."""
    con = duckdb_connect(temp_directory=str(folder), memory_limit=f"{memory_limit_mb(MEMORY_LIMIT_MB)}MB")
    con.execute("ATTACH ':memory:' AS scratch (COMPRESS)")
    con.execute("USE scratch")
    return _with_macros(con)


def _with_macros(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """`con` with the readers' macros: us_to_ns(text), the µs rule of units.py."""
    con.execute(US_TO_NS_MACRO)
    return con


def query_tables(con: duckdb.DuckDBPyConnection, queries: list[tuple[str, str]]) -> Iterator[tuple[str, pa.Table]]:
    """Yield (table name, rows) in batches for each (table name, SQL) of `queries` (the runner adds the rank)."""
    for name, sql in queries:
        for batch in con.sql(sql).to_arrow_reader(_BATCH_ROWS):
            if batch.num_rows:
                yield name, pa.Table.from_batches([batch])
