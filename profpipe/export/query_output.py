"""The result of `profpipe query`, streamed in batches: a plain-text table for people, CSV, a JSON array or
a Parquet file for machines. Values are printed as they are: no markup is interpreted, so names such as
`[memory]` or `[red]` stay intact."""
from __future__ import annotations

import csv
import json
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import IO

import duckdb
import pyarrow as pa

from .text_table import simple_table

_BATCH_ROWS = 10_000


def export_query(relation: duckdb.DuckDBPyRelation, format: str, to: Path | None, limit: int) -> int:
    """Write the rows of `relation` (at most `limit`, 0 for all) in `format` to `to` (default: standard
    output); return how many rows the relation had, up to one past `limit`."""
    if format == "parquet":
        return _parquet(relation, to, limit)
    with (open(to, "w", encoding="utf-8", newline="") if to is not None else nullcontext(sys.stdout)) as out:
        writer = {"table": _table, "csv": _csv, "json": _json}[format]
        return writer(relation, out, limit)


def _batches(relation: duckdb.DuckDBPyRelation, limit: int):
    """(rows seen so far, record batch cut to the limit) for each batch of the result."""
    seen = 0
    for batch in relation.to_arrow_reader(_BATCH_ROWS):
        keep = batch if not limit else batch.slice(0, max(0, limit - seen))
        seen += batch.num_rows
        yield seen, keep


def _csv(relation: duckdb.DuckDBPyRelation, out: IO[str], limit: int) -> int:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(relation.columns)
    seen = 0
    for seen, batch in _batches(relation, limit):
        columns = [column.to_pylist() for column in batch.columns]
        writer.writerows(("" if v is None else v for v in row) for row in zip(*columns))
    return seen


def _json(relation: duckdb.DuckDBPyRelation, out: IO[str], limit: int) -> int:
    out.write("[")
    first = True
    seen = 0
    for seen, batch in _batches(relation, limit):
        for row in batch.to_pylist():
            out.write(("" if first else ",\n") + json.dumps(row, default=str))
            first = False
    out.write("]\n")
    return seen


def _table(relation: duckdb.DuckDBPyRelation, out: IO[str], limit: int) -> int:
    rows: list[list[str | int | None]] = []
    seen = 0
    for seen, batch in _batches(relation, limit):
        columns = [column.to_pylist() for column in batch.columns]
        # integers stay numbers (right-aligned); everything else is shown exactly as str() prints it
        rows += [[v if v is None or (isinstance(v, int) and not isinstance(v, bool)) else str(v) for v in row]
                 for row in zip(*columns)]
    out.write(simple_table(list(relation.columns), rows) + "\n")
    return seen


def _parquet(relation: duckdb.DuckDBPyRelation, to: Path, limit: int) -> int:
    import pyarrow.parquet as pq

    seen = 0
    writer = None
    try:
        for seen, batch in _batches(relation, limit):
            if writer is None:
                writer = pq.ParquetWriter(str(to), batch.schema)
            writer.write_table(pa.Table.from_batches([batch]))
    finally:
        if writer is not None:
            writer.close()
    return seen
