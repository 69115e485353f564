"""Stream text rendered by DuckDB into an open file, without making Python strings per row.

Exporters render each line or JSON event inside SQL (one VARCHAR column, separators included)
and hand the query here; the rows arrive as Arrow batches and each batch's character buffer is
written as it is. This keeps large reports (timelines, per-execution tables) at the speed of
DuckDB's own formatting and their memory at one batch.
"""
from __future__ import annotations

from typing import Any, BinaryIO

import duckdb
import numpy as np
import pyarrow as pa

_BATCH_ROWS = 256 * 1024


def write_text_column(con: duckdb.DuckDBPyConnection, sql: str, handle: BinaryIO,
                      params: dict[str, Any] | None = None, drop_leading: int = 0) -> int:
    """Write the values of `sql`'s single VARCHAR column (with its $`params`) to `handle` back to back; return the
    row count.

    `drop_leading` bytes are left out at the very start (a separator the first value carries
    like every other value, e.g. the comma before each element of a JSON array).
    NULL values are not allowed: the SQL must render every row.
    """
    rows = 0
    reader = con.sql(sql, params=params).to_arrow_reader(_BATCH_ROWS)
    for batch in reader:
        column = batch.column(0)
        if column.null_count:
            raise ValueError(f"text export query rendered NULL rows: {sql[:200]}")
        if pa.types.is_string_view(column.type) or not (pa.types.is_string(column.type)
                                                       or pa.types.is_large_string(column.type)):
            column = column.cast(pa.large_string())
        if len(column) == 0:
            continue
        offset_type = np.int64 if pa.types.is_large_string(column.type) else np.int32
        _, offsets_buffer, data_buffer = column.buffers()
        offsets = np.frombuffer(offsets_buffer, dtype=offset_type, count=len(column) + 1,
                                offset=column.offset * np.dtype(offset_type).itemsize)
        start, end = int(offsets[0]), int(offsets[-1])
        if rows == 0:
            start += drop_leading
        handle.write(memoryview(data_buffer)[start:end])
        rows += len(column)
    return rows
