"""Data tests of the SQL model library, as dbt runs them: each model's grain is unique, each column holds what its
YAML promises (not_null, unique, accepted_values, range, relationship; shares within 0-1), and each of the model's
invariants across columns holds on every row (parts within their whole, a window holding what it is given).

Sits after stage 3 (models). Every `analyse` runs `check_models` on the models it filled (profpipe/run.py: a
failure becomes a trace-health row, check `model_test`, and a warning), `profpipe check OUT` on a finished
profile.duckdb, and the test suite on the output of every fixture and real trace. To cost a run little, each model
is scanned once, in one query: an aggregate per model counts the rows breaking each of its row-level tests, and
only a test that found some runs again on its own for its count and an example row.
"""
from __future__ import annotations

from collections.abc import Iterable
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


@dataclass(frozen=True)
class _Test:
    """One data test of a model: its name, an aggregate over the model that is non-zero when rows break it (None:
    it needs a query of its own), and the query of the rows (or groups) that break it."""

    name: str
    aggregate: str | None
    breaking: str


def check_models(con: duckdb.DuckDBPyConnection, models: list[Model] | None = None,
                 skip: Iterable[str] = ()) -> list[Failure]:
    """Every failing data test of `models` (default: the whole library) in `con`; the models named in `skip` (known
    to hold no row) are not scanned. One query counts the breaking rows of every test: a row per model (a list of
    counts, one aggregate per row-level test, in one scan) and a row per test that needs a query of its own; only
    the tests that found rows run again, for their count and an example."""
    skipped = set(skip)
    blocks: list[tuple[Model, list[_Test], str]] = []
    for model in models or load_models():
        if model.name in skipped:
            continue
        tests = _tests(model)
        together = [t for t in tests if t.aggregate is not None]
        if together:
            blocks.append((model, together, f"SELECT [{', '.join(t.aggregate for t in together)}] FROM {model.name}"))
        blocks += [(model, [t], f"SELECT [count(*)] FROM ({t.breaking})") for t in tests if t.aggregate is None]
    if not blocks:
        return []
    counts = dict(con.execute(" UNION ALL ".join(f"SELECT {i}, * FROM ({sql})"
                                                 for i, (_, _, sql) in enumerate(blocks))).fetchall())
    return [failure for i, (model, tests, _) in enumerate(blocks) for t, count in zip(tests, counts[i]) if count
            for failure in _run(con, model.name, t.name, t.breaking)]


def _tests(model: Model) -> list[_Test]:
    """The data tests of `model`, as its YAML declares them."""
    tests = []
    if model.grain:
        key = ", ".join(_q(c) for c in model.grain)
        tests.append(_Test(f"unique grain ({', '.join(model.grain)})", f"count(*) - count(DISTINCT row({key}))",
                           f"SELECT {key}, count(*) AS n FROM {model.name} GROUP BY ALL HAVING count(*) > 1"))
    for invariant in model.invariants:
        per = f" per {', '.join(invariant.per)}" if invariant.per else ""
        tests.append(_Test(f"{invariant.why} ({invariant.expression}{per})",
                           None if invariant.per else f"count_if(NOT ({invariant.expression}))",
                           invariant.breaking_rows(model.name)))
    for column in model.columns:
        tests += [_Test(f"{column.name} {name}", aggregate, f"SELECT * FROM {model.name} WHERE {condition}")
                  for name, aggregate, condition in _conditions(column, model.name)]
    return tests


def _conditions(column: Column, model: str) -> list[tuple[str, str | None, str]]:
    """(test name, aggregate counting its breaking rows or None, SQL condition true on the rows that break it) for
    each test of `column` of `model`."""
    c = _q(column.name)
    tests: list[tuple[str, str]] = []
    if column.unit == "share":
        tests.append(("is a share (0-1)", f"{c} < 0 OR {c} > 1 OR isnan({c})"))
    for test in column.tests:
        kind, arg = (test, None) if isinstance(test, str) else next(iter(test.items()))
        if kind == "not_null":
            tests.append(("not null", f"{c} IS NULL"))
        elif kind == "unique":
            tests.append(("unique", f"{c} IN (SELECT {c} FROM {model} GROUP BY {c} HAVING count(*) > 1)"))
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
    aggregates = {"unique": f"count({c}) - count(DISTINCT {c})"}
    return [(name, None if name.startswith("found in ") else aggregates.get(name, f"count_if({condition})"), condition)
            for name, condition in tests]


def _run(con: duckdb.DuckDBPyConnection, model: str, test: str, query: str) -> list[Failure]:
    rows = con.execute(f"SELECT count(*) FROM ({query})").fetchall()[0][0]
    if not rows:
        return []
    example = con.execute(f"{query} LIMIT 1").fetchall()[0]
    return [Failure(model, test, rows, repr(example))]


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(value: object) -> str:
    return str(value) if isinstance(value, (int, float)) else "'" + str(value).replace("'", "''") + "'"
