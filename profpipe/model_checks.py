"""Data tests of the SQL model library, as dbt runs them: each model's grain is unique, each column holds what its
YAML promises (not_null, unique, accepted_values, range, relationship; shares within 0-1), and each of the model's
invariants across columns holds on every row (parts within their whole, a window holding what it is given).

Sits after stage 3 (models): `check_models` runs over a finished profile.duckdb. The test suite runs it on
the output of every fixture; users can run it on theirs with `profpipe check OUT`.
"""
from __future__ import annotations

from dataclasses import dataclass

import duckdb

from .models import Column, Model, load_models


@dataclass(frozen=True)
class Failure:
    """One data test that found rows breaking it."""

    model: str
    test: str
    rows: int
    example: str

    def __str__(self) -> str:
        return f"{self.model}: {self.test}: {self.rows} rows break it, e.g. {self.example}"


def check_models(con: duckdb.DuckDBPyConnection, models: list[Model] | None = None) -> list[Failure]:
    """Every failing data test of `models` (default: the whole library) in `con`."""
    failures = []
    for model in models or load_models():
        if model.grain:
            key = ", ".join(_q(c) for c in model.grain)
            failures += _run(con, model.name, f"unique grain ({', '.join(model.grain)})",
                             f"SELECT {key}, count(*) AS n FROM {model.name} GROUP BY ALL HAVING count(*) > 1")
        for invariant in model.invariants:
            per = f" per {', '.join(invariant.per)}" if invariant.per else ""
            failures += _run(con, model.name, f"{invariant.why} ({invariant.expression}{per})",
                             invariant.breaking_rows(model.name))
        for column in model.columns:
            for name, condition in _conditions(column):
                failures += _run(con, model.name, f"{column.name} {name}",
                                 f"SELECT * FROM {model.name} WHERE {condition}")
    return failures


def _conditions(column: Column) -> list[tuple[str, str]]:
    """(test name, SQL condition true on the rows that break it) for each test of `column`."""
    c = _q(column.name)
    tests: list[tuple[str, str]] = []
    if column.unit == "share":
        tests.append(("is a share (0-1)", f"{c} < 0 OR {c} > 1 OR isnan({c})"))
    for test in column.tests:
        kind, arg = (test, None) if isinstance(test, str) else next(iter(test.items()))
        if kind == "not_null":
            tests.append(("not null", f"{c} IS NULL"))
        elif kind == "unique":
            tests.append(("unique", f"{c} IN (SELECT {c} FROM __model__ GROUP BY {c} HAVING count(*) > 1)"))
        elif kind == "accepted_values":
            values = ", ".join(_literal(v) for v in arg)
            tests.append((f"in ({values})", f"{c} NOT IN ({values})"))
        elif kind == "range":
            low, high = arg
            parts = ([f"{c} < {low}"] if low is not None else []) + ([f"{c} > {high}"] if high is not None else [])
            tests.append((f"within [{low}, {high}]", " OR ".join(parts)))
        elif kind == "relationship":
            to, field = arg["to"], arg.get("column", column.name)
            tests.append((f"found in {to}.{field}", f"{c} IS NOT NULL AND {c} NOT IN (SELECT {_q(field)} FROM {to})"))
        else:
            raise ValueError(f"column {column.name}: unknown data test {kind!r}")
    return tests


def _run(con: duckdb.DuckDBPyConnection, model: str, test: str, query: str) -> list[Failure]:
    query = query.replace("__model__", model)
    rows = con.execute(f"SELECT count(*) FROM ({query})").fetchone()[0]
    if not rows:
        return []
    example = con.execute(f"{query} LIMIT 1").fetchone()
    return [Failure(model, test, rows, repr(example))]


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(value: object) -> str:
    return str(value) if isinstance(value, (int, float)) else "'" + str(value).replace("'", "''") + "'"
