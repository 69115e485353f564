"""Unit-test harness for the SQL model library: a handful of normalized rows in, one model's rows out.

`model_rows({"device_exec": [{...}, ...]}, "kernel_stats")` builds an in-memory DuckDB holding every
normalized table of `catalog()` (typed from its Arrow schema; a table not given is empty, a column not
given is null, except `rank` and `capture`, which default to 0 as a single-source run has them), the
run_option table, the macros and every model, and returns the requested model's rows as dicts in a
stable order (the model's grain, else all its columns).
"""
from __future__ import annotations

from typing import Any

import duckdb
import pyarrow as pa

from profpipe.models import create_macros, load_models, run_models, set_run_options
from profpipe.tables import catalog

#: Columns given a value when a row leaves them out (every normalized table has a rank; most a capture).
DEFAULTS = {"rank": 0, "capture": 0}


def _arrow(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    schema = catalog()[name].schema
    unknown = {key for row in rows for key in row} - set(schema.names)
    if unknown:
        raise KeyError(f"{name} has no column {sorted(unknown)}")
    filled = [{f.name: row.get(f.name, DEFAULTS.get(f.name)) for f in schema} for row in rows]
    # the declared nullability is the readers' contract; a unit test may leave anything out
    loose = pa.schema([f.with_nullable(True) for f in schema])
    return pa.Table.from_pylist(filled, schema=loose)


def build(tables: dict[str, list[dict[str, Any]]], options: dict[str, str] | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with `tables` (normalized table name -> rows), `options` and every model run."""
    unknown = set(tables) - set(catalog())
    if unknown:
        raise KeyError(f"no normalized table {sorted(unknown)}")
    con = duckdb.connect()
    for name in catalog():
        con.register("given_rows", _arrow(name, tables.get(name, [])))
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM given_rows")
        con.unregister("given_rows")
    set_run_options(con, options or {})
    create_macros(con)
    run_models(con, load_models(), {name: len(tables.get(name, [])) for name in catalog()})  # as a run does
    return con


def rows(con: duckdb.DuckDBPyConnection, model: str) -> list[dict[str, Any]]:
    """The rows of `model` in `con`, ordered by its grain (else by every column)."""
    spec = {m.name: m for m in load_models()}[model]
    order = ", ".join(spec.grain) if spec.grain else "ALL"
    result = con.execute(f"SELECT * FROM {model} ORDER BY {order}")
    names = [d[0] for d in result.description]
    return [dict(zip(names, row)) for row in result.fetchall()]


def model_rows(tables: dict[str, list[dict[str, Any]]], model: str,
               options: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Run every model over `tables` (and run `options`) and return `model`'s rows."""
    con = build(tables, options)
    try:
        return rows(con, model)
    finally:
        con.close()


def unmet_requirements(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The models of a saved profile whose own query gives rows although one of the inputs they `require` is empty
    there (each such model would be created empty by a run: its `requires` is wrong)."""
    unmet = []
    for model in load_models():
        empty = [name for name in sorted(model.requires) if not con.execute(f"SELECT count(*) FROM {name}").fetchall()[0][0]]
        rows = con.execute(f"SELECT count(*) FROM ({model.sql})").fetchall()[0][0] if empty else 0
        if rows:
            unmet.append(f"{model.name} gives {rows} rows with {empty} empty: it does not require them")
    return unmet
