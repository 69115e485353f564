"""JSON trace files parsed by DuckDB for the readers, with errors that name the file at fault.

Readers of JSON traces (msprof timelines, HCCL traces) hand DuckDB all files of a source in one
`read_json` query, so events are parsed column-wise, never as Python objects. When that query
fails, each file is tried alone to say which one is broken.
"""
from __future__ import annotations

from pathlib import Path

import duckdb

from ..errors import InputError, first_line_of


def create_table(con: duckdb.DuckDBPyConnection, table: str, select_sql: str, files: list[Path], what: str) -> None:
    """CREATE TABLE `table` AS `select_sql`, whose `$files` parameter is the list of paths.

    An empty or whitespace-only file (DuckDB would read it as no events at all) or one that DuckDB cannot parse
    (truncated, not JSON, wrong types) raises InputError naming it and saying it is not `what`.
    """
    for path in files:
        if _blank(path):
            raise InputError(path, f"empty file, expected {what}" if path.stat().st_size == 0 else
                             f"only whitespace, expected {what}")
    try:
        con.execute(f"CREATE TABLE {table} AS {select_sql}", {"files": [str(f) for f in files]})
    except (duckdb.Error, UnicodeDecodeError) as error:  # DuckDB's message may quote bytes that are not UTF-8
        for path in files:  # materialized, so every value is converted as in the failed query
            try:
                con.execute(f"CREATE OR REPLACE TEMP TABLE json_probe AS {select_sql}", {"files": [str(path)]})
            except (duckdb.Error, UnicodeDecodeError) as file_error:
                raise InputError(path, f"not {what} ({duckdb_reason(file_error)})") from None
        raise InputError(files[0].parent, f"could not read the files as {what} ({duckdb_reason(error)})") from None
    for path in files:  # DuckDB reads an array cut just after a comma as complete
        end = _last_byte(path)
        if end[0] not in b"]}":
            raise InputError(path, f"not {what} (the file ends before its JSON value does: cut short?)",
                             offset=end[1])


def _blank(path: Path) -> bool:
    """Whether the file holds nothing but whitespace (read until its first other byte: a few bytes for a JSON
    file, which starts with its bracket, in blocks growing to 1 MiB for one that does not)."""
    size = 4096
    with open(path, "rb") as handle:
        while block := handle.read(size):
            if block.strip():
                return False
            size = min(size * 16, 1 << 20)
    return True


def _last_byte(path: Path) -> tuple[int, int]:
    """The last byte of the file that is not whitespace, and its offset (DuckDB reads an array cut after a
    comma as a complete one: a JSON value must end with a bracket)."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        step = 4096
        while True:
            start = max(size - step, 0)
            handle.seek(start)
            tail = handle.read(size - start).rstrip()
            if tail or start == 0:
                return (tail[-1], start + len(tail) - 1) if tail else (0x20, 0)
            size, step = start, step * 2


def duckdb_reason(error: Exception) -> str:
    """The first line of a DuckDB error, which may be a UnicodeDecodeError or, on an older CPython, an error
    with no message, where DuckDB's message quotes bytes of the file that are not UTF-8."""
    if isinstance(error, UnicodeDecodeError):
        return f"bytes that are not UTF-8 near byte {error.start} of DuckDB's message: not UTF-8 text?"
    return first_line_of(error, "no message (Python drops DuckDB's where it quotes bytes that are not UTF-8): "
                                "not UTF-8 text?")
