"""The normalized tables: declarations from schemas/tables.json and the checked sink.

Sits between ingest and models. Readers hand Arrow tables to a `TableSink`, which checks
them against the declaration (names, types, nullability) and appends them to one Parquet
file per table, so memory stays bounded by what a reader holds at once.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .errors import SchemaError
from .resources import data_dir
from .ingest.scratch import memory_database

_ARROW_TYPES: dict[str, pa.DataType] = {
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float64": pa.float64(),
    "string": pa.string(),
    "bool": pa.bool_(),
}


@dataclass(frozen=True)
class TableSpec:
    """One normalized table as declared in schemas/tables.json."""

    name: str
    description: str
    schema: pa.Schema
    column_docs: dict[str, str]
    #: The unit of each column that has one (models.UNITS: ns, bytes, share, ratio, count, bytes_per_second).
    units: dict[str, str]


@lru_cache(maxsize=1)
def catalog() -> dict[str, TableSpec]:
    """All declared tables by name."""
    raw = json.loads((data_dir("schemas") / "tables.json").read_text(encoding="utf-8"))
    specs: dict[str, TableSpec] = {}
    for name, decl in raw["tables"].items():
        fields = []
        docs = {}
        units = {}
        for col in decl["columns"]:
            docs[col["name"]] = col.get("description", "")
            if "unit" in col:
                units[col["name"]] = col["unit"]
            # the meaning travels with the data: Parquet keeps field metadata
            meaning = docs[col["name"]] + (f" [{col['unit']}]" if "unit" in col else "")
            fields.append(pa.field(col["name"], _ARROW_TYPES[col["type"]], nullable=col.get("nullable", False),
                                   metadata={"description": meaning}))
        specs[name] = TableSpec(name, decl["description"], pa.schema(fields, metadata={"description": decl["description"]}),
                                docs, units)
    return specs


def conform(name: str, table: pa.Table) -> pa.Table:
    """Return `table` cast to the declared schema of `name` (absent nullable columns become null);
    raise SchemaError if it cannot be."""
    spec = catalog()[name]
    if "capture" in spec.schema.names and "capture" not in table.column_names:
        # readers never write the capture: the run adds the source's (run._ingest); alone, a source is capture 0
        table = table.append_column("capture", pa.repeat(pa.scalar(0, pa.int32()), table.num_rows))
    for field in spec.schema:  # a source that lacks an optional column leaves it null
        if field.nullable and field.name not in table.column_names:
            table = table.append_column(field.name, pa.nulls(table.num_rows, field.type))
    missing = [f.name for f in spec.schema if f.name not in table.column_names]
    extra = [c for c in table.column_names if c not in spec.schema.names]
    if missing or extra:
        raise SchemaError(f"table {name}: missing columns {missing}, unexpected columns {extra}")
    table = table.select(spec.schema.names)
    try:
        table = table.cast(spec.schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as exc:
        raise SchemaError(f"table {name}: {exc}") from exc
    for field in spec.schema:
        if not field.nullable and table.column(field.name).null_count:
            raise SchemaError(f"table {name}: column {field.name} has nulls but is declared not nullable")
    return table


class TableSink:
    """Appends checked pieces of normalized tables to <folder>/<name>.parquet, one writer per table."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self._writers: dict[str, pq.ParquetWriter] = {}
        self.row_counts: dict[str, int] = {}

    def write(self, name: str, table: pa.Table) -> None:
        table = conform(name, table)
        if table.num_rows == 0:
            return
        writer = self._writers.get(name)
        if writer is None:
            writer = pq.ParquetWriter(self.folder / f"{name}.parquet", catalog()[name].schema,
                                      compression="zstd")
            self._writers[name] = writer
        writer.write_table(table)
        self.row_counts[name] = self.row_counts.get(name, 0) + table.num_rows

    def close(self) -> dict[str, int]:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
        return self.row_counts


def merge_parts(part_dirs: list[Path], tables_dir: Path, captures: dict[Path, int] | None = None) -> None:
    """Combine the per-source pieces into tables/<name>.parquet for every declared table, with each
    source's rows in its capture (`captures`: part folder -> capture; profpipe/captures.py)."""
    tables_dir.mkdir(parents=True, exist_ok=True)
    captures = captures or {}
    with memory_database() as con:
        for name, spec in catalog().items():
            parts = [d for d in part_dirs if (d / f"{name}.parquet").exists()]
            target = tables_dir / f"{name}.parquet"
            renumber = "capture" in spec.schema.names and any(captures.get(d, 0) for d in parts)
            if len(parts) == 1 and not renumber:
                (parts[0] / f"{name}.parquet").rename(target)
            elif parts:
                files = [str(d / f"{name}.parquet") for d in parts]
                if renumber:
                    mapping = ", ".join(f"('{_quote(f)}', {captures.get(d, 0)})" for f, d in zip(files, parts))
                    select = (f"SELECT t.* REPLACE (m.capture::INTEGER AS capture) FROM read_parquet(?, filename = "
                              f"'_part') t JOIN (VALUES {mapping}) m(file, capture) ON m.file = t._part")
                    columns = ", ".join(f'"{c}"' for c in spec.schema.names)
                    select = f"SELECT {columns} FROM ({select})"
                else:
                    select = "SELECT * FROM read_parquet(?)"
                con.execute(f"COPY ({select}) TO '{target}' (FORMAT PARQUET, COMPRESSION ZSTD)", [files])
            else:
                pq.write_table(spec.schema.empty_table(), target)


def _quote(text: str) -> str:
    return text.replace("'", "''")


def table_row_counts(tables_dir: Path) -> dict[str, int]:
    """Rows per normalized table in tables_dir (from the Parquet footers)."""
    return {name: pq.ParquetFile(tables_dir / f"{name}.parquet").metadata.num_rows for name in catalog()}
