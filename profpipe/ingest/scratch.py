"""Stage 2, ingest helper for one-file trace sources (Kineto, Nsight Systems, Ascend db exports): the checks before
a trace is opened, the scratch DuckDB database it is parsed into (SQLite tables copied column-wise into it), and the
tables out of it.

In memory up to MEMORY_LIMIT_MB, spilled to a scratch folder beyond it: a trace larger than memory is
read with bounded memory, and one that fits pays no disk writes (a database file would write and
checkpoint every table).
"""
from __future__ import annotations

import os
import re
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.request import pathname2url

import duckdb
import pyarrow as pa

from ..database import connect as duckdb_connect, memory_limit_mb
from ..errors import InputError
from ..health import Warn
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


def open_sqlite(path: Path) -> sqlite3.Connection:
    """`path` opened read-only and immutable: SQLite writes nothing beside it (no journal, no lock file)."""
    return sqlite3.connect(f"file:{pathname2url(str(path.resolve()))}?mode=ro&immutable=1", uri=True)


def sqlite_columns(db: sqlite3.Connection) -> dict[str, set[str]]:
    """Column names of every table of an SQLite file."""
    tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {table: {row[1] for row in db.execute(f'PRAGMA table_info("{table.replace(chr(34), chr(34) * 2)}")')}
            for table in tables if isinstance(table, str)}


#: Integers beyond ±2^62 are refused as times (a start plus a duration always fits in int64).
SQLITE_INT_LIMIT = 1 << 62
_FETCH_ROWS = 1 << 16
#: Column values of the wrong storage class, by what was done (see copy_sqlite_table).
_TYPE_PROBLEMS = {
    "real_exact": ("malformed_record", "kept", "REAL values where INTEGER is expected, whole numbers: read exactly"),
    "real_rounded": ("malformed_record", "repaired", "REAL values with a fraction where INTEGER is expected: rounded "
                                                     "to the nearest integer"),
    "not_integer": ("malformed_record", "repaired", "TEXT or BLOB values, or REAL values beyond ±2^62, where INTEGER "
                                                    "is expected: read as none"),
    "blob_text": ("malformed_record", "repaired", "BLOB values where TEXT is expected: read as text"),
    "not_number": ("malformed_record", "repaired", "TEXT or BLOB values where a number is expected: read as none"),
}


def _integer(column: str) -> str:
    """SQLite expression: an INTEGER column's value as an integer, or NULL (REAL rounded; TEXT, BLOB, huge: NULL)."""
    return (f'CASE typeof("{column}") WHEN \'integer\' THEN "{column}" WHEN \'real\' THEN CASE WHEN abs("{column}") '
            f'< {float(SQLITE_INT_LIMIT)} THEN CAST(round("{column}") AS INTEGER) END END')


def copy_sqlite_table(db: sqlite3.Connection, con: duckdb.DuckDBPyConnection, path: Path, name: str, table: str,
                      wanted: tuple[str, ...], present: set[str], warn: Warn, text_columns: set[str] | frozenset[str],
                      real_columns: set[str] | frozenset[str] = frozenset()) -> None:
    """Copy `wanted` columns of SQLite `table` into DuckDB table `name`, in batches; an absent table
    or column reads as empty or null. Columns are INTEGER but those in `text_columns` (TEXT) and `real_columns`
    (DOUBLE: INTEGER or REAL values). Values of the wrong storage class are counted first (in SQLite) and
    converted as _TYPE_PROBLEMS says, each kind a ledger row naming the table and its columns."""
    def arrow_type(column: str) -> pa.DataType:
        return pa.string() if column in text_columns else pa.float64() if column in real_columns else pa.int64()

    def classes(column: str) -> str:
        return "'text'" if column in text_columns else "'integer', 'real'" if column in real_columns else "'integer'"

    schema = pa.schema([(c, arrow_type(c)) for c in wanted])
    con.from_arrow(schema.empty_table()).create(name)
    if not present:
        return
    quoted = table.replace('"', '""')
    checks, labels = [], []
    columns = [c for c in wanted if c in present]
    odd = db.execute("SELECT " + ", ".join(f"total(typeof(\"{c}\") NOT IN ({classes(c)}, 'null'))" for c in columns)
                     + f' FROM "{quoted}"').fetchone() if columns else ()
    mixed = {column for column, count in zip(columns, odd) if count}  # only those need telling apart and converting
    limit = float(SQLITE_INT_LIMIT)
    for column, count in zip(columns, odd):
        if not count:  # every value of the column is of its class (most exports): nothing to tell apart
            continue
        if column in text_columns:
            checks.append(f"total(typeof(\"{column}\") = 'blob')")
            labels.append(("blob_text", column))
            continue
        if column in real_columns:
            checks.append(f"total(typeof(\"{column}\") IN ('text', 'blob'))")
            labels.append(("not_number", column))
            continue
        real = f"typeof(\"{column}\") = 'real'"
        exact = f'abs("{column}") < {limit} AND "{column}" = round("{column}")'
        checks += [f"total({real} AND {exact})", f"total({real} AND abs(\"{column}\") < {limit} "
                                                f"AND \"{column}\" <> round(\"{column}\"))",
                   f"total(typeof(\"{column}\") IN ('text', 'blob') OR ({real} AND NOT abs(\"{column}\") < {limit}))"]
        labels += [("real_exact", column), ("real_rounded", column), ("not_integer", column)]
    found: dict[str, list[tuple[str, int]]] = {}
    if checks:
        for (kind, column), count in zip(labels, db.execute(f'SELECT {", ".join(checks)} FROM "{quoted}"').fetchone()):
            if count:
                found.setdefault(kind, []).append((column, int(count)))
    for kind, counted in found.items():
        check, action, what = _TYPE_PROBLEMS[kind]
        rows = sum(count for _, count in counted)
        warn(f"{path}: table {table}: {rows} {what} (" + ", ".join(f"{c}: {n}" for c, n in counted) + ")",
             check=check, action=action, rows=rows, path=path)

    def selected(column: str) -> str:
        if column not in present:
            return f'NULL AS "{column}"'
        if column not in mixed:
            return f'"{column}"'
        if column in text_columns:
            return f'CAST("{column}" AS TEXT)'
        if column in real_columns:
            return f'CASE WHEN typeof("{column}") IN (\'integer\', \'real\') THEN CAST("{column}" AS REAL) END'
        return _integer(column)

    cursor = db.execute(f'SELECT {", ".join(selected(c) for c in wanted)} FROM "{quoted}"')
    while rows := cursor.fetchmany(_FETCH_ROWS):
        batch = pa.table([pa.array(values, field.type) for values, field in zip(zip(*rows), schema)], schema=schema)
        con.from_arrow(batch).insert_into(name)


def drop_bad_intervals(con: duckdb.DuckDBPyConnection, path: Path, warn: Warn,
                       intervals: list[tuple[str, str, str, str, str, str, str]]) -> None:
    """Leave out, with a ledger row per table and kind, the intervals the tables cannot hold: without a start or
    end, beyond ±2^62 ns, or ending before they start. `intervals`: (scratch table, the file's table as named in
    the report, start column, end column, SQL condition of the rows that are intervals, what a row is called,
    the normalized tables they feed)."""
    limit = SQLITE_INT_LIMIT
    counts = con.execute(" UNION ALL ".join(f"""
        SELECT '{name}', count(*) FILTER (WHERE {where} AND ({start} IS NULL OR {end} IS NULL)),
               count(*) FILTER (WHERE {where} AND (abs({start}) >= {limit} OR abs({end}) >= {limit})),
               count(*) FILTER (WHERE {where} AND abs({start}) < {limit} AND abs({end}) < {limit} AND {end} < {start}),
               any_value(concat('start ', {start}, ', end ', {end})) FILTER (WHERE {where} AND {end} < {start})
        FROM {name}""" for name, _, start, end, where, _, _ in intervals)).fetchall()
    for (name, table, start, end, where, noun, tables), (_, missing, huge, negative, example) in zip(intervals, counts):
        for count, check, what in ((missing, "malformed_record", "without a start or an end (or not integers)"),
                                   (huge, "out_of_range", "with a start or end beyond ±2^62 ns"),
                                   (negative, "negative_duration", "that end before they start")):
            if count:
                warn(f"{path}: table {table}: {count} {noun} {what}; left out", check=check, action="dropped",
                     rows=count, path=path, example=example if check == "negative_duration" else None, tables=tables)
        if missing or huge or negative:
            con.execute(f"DELETE FROM {name} WHERE {where} AND ({start} IS NULL OR {end} IS NULL OR abs({start}) >= "
                        f"{limit} OR abs({end}) >= {limit} OR {end} < {start})")
