"""Stage 3, models: the SQL model library of sql/, loaded, checked and run over the normalized tables.

The library is layered as dbt projects are (docs/models.md):

* `sql/macros/<name>.sql`: one `CREATE MACRO` each (scalar helpers such as op-name parsing, interval
  helpers), created first; any model may call them.
* `sql/staging/stg_<table>.sql`: one view per normalized table: typed, renamed, unit-normalized, nothing
  else. Only staging reads the normalized tables, with `{{ source('<table>') }}`.
* `sql/intermediate/int_<name>.sql`: private, reusable building blocks (step windows, device executions
  with their op, communication tasks with their step); they read staging and other intermediate models.
* `sql/marts/<name>.sql`: the public analysis tables; they read staging, intermediate and earlier marts.
* `sql/reports/<name>.sql`: files other tools read (MindSpore-compatible files), in those tools' units and
  formats; they read marts only. The YAML names the file (`{rank}`, `{device_id}`: one file per rank and value),
  the --report-style it is written with (`style`, at report or column level), and for a file that is not a plain
  CSV the exporter that formats the rows (`written_by`); or, for a report the Python API returns instead
  (op_analyse's JSON), the function (`returned_by`).
* `sql/queries/<name>.sql`: not models: the named queries the exporters, the report, the summary and the API run
  over the models and temp tables of their own, each with a header comment naming its consumer and its
  $parameters (`query(name)` reads one, `query_rows` runs one; the timeline renders its events with one).

A model names what it reads with `{{ ref('<model>') }}` (or `{{ source('<table>') }}`): those calls are its
declared dependencies, checked at load against the layer order above and for cycles, and a model that
mentions another model or table by its bare name is refused. Beside each SQL file a YAML file documents
the model: what one row is (`description`), the columns that identify a row (`grain`), and per column
its DuckDB type, unit (ns, bytes, share, ratio, count or bytes_per_second; nothing for names, ids and
flags), one-line meaning and data tests (tests/test_model_library.py and `check_models` run them); the model's own `tests` are invariants
across its columns: an `expression` true on every row (NULL counts as true), or with `per` (columns) an aggregate
expression true for every group of rows, and `why` it must hold (parts that add up to their whole, a window that
holds what is attributed to it, shares of one whole that sum to at most 1). Intermediate models that many
others read say `computed_once: true`: the run computes them once into a temporary table, which shadows
the view while marts and exports read it; the saved profile.duckdb keeps only the view. An intermediate model that
SQL cannot compute well (a sequential pass, such as the critical path's longest path) names in `computed_by`
(`package.module:function`) the Python function that computes it: its SQL selects the function's input, the function
returns the model's rows as an Arrow table of its declared columns, and the model is saved as a table.

`select` turns `--select` (dbt's syntax: `MODEL`, `+MODEL`, `MODEL+`) into the models a run builds over this graph:
the named models and everything they read, with `MODEL+` also every model that reads MODEL (and what those read),
and the normalized tables those read; `query_reads` says which models and tables a named query reads, so that an
export or a report page can tell whether its inputs were built.
"""
from __future__ import annotations

import difflib
import importlib
import re
import time
from dataclasses import dataclass
from functools import lru_cache
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from .errors import UsageError
from .resources import cached, data_dir, read_yaml
from .tables import catalog

LAYERS = ("staging", "intermediate", "marts", "reports")
#: What each layer may read: sources (the normalized tables) or models of these layers.
MAY_READ = {"staging": {"source"}, "intermediate": {"staging", "intermediate"},
            "marts": {"staging", "intermediate", "marts"}, "reports": {"marts"}}
_MATERIALIZED = {"staging": "VIEW", "intermediate": "VIEW", "marts": "TABLE", "reports": "VIEW"}
_PREFIX = {"staging": "stg_", "intermediate": "int_", "marts": "", "reports": ""}
#: Units a column may carry (docs/models.md, "Units"); a column without one is a name, id, flag or plain number. A share
#: is a part of a whole (0-1, checked); a ratio is a quotient that can exceed 1 (its description says why).
UNITS = ("ns", "bytes", "share", "ratio", "count", "bytes_per_second", "flop_per_second", "flop_per_byte")
#: Column-name endings (and bare names: share, bytes) and the unit each one requires.
UNIT_SUFFIXES = {"_ns": "ns", "_bytes": "bytes", "_share": "share", "_ratio": "ratio",
                 "_bytes_per_second": "bytes_per_second", "_flop_per_second": "flop_per_second",
                 "_flop_per_byte": "flop_per_byte"}
#: Tables the models may read with source() besides the normalized tables: the run's options.
EXTRA_SOURCES = ("run_option",)
_WORD = re.compile(r"(?<![.\w])\w+")
_CALL = re.compile(r"\{\{\s*(ref|source)\(\s*'([A-Za-z_][A-Za-z0-9_]*)'\s*\)\s*\}\}")


class ModelError(RuntimeError):
    """The model library is inconsistent (a bad reference, layer order, cycle or YAML file)."""


@dataclass(frozen=True)
class Column:
    """One documented column of a model."""

    name: str
    type: str
    description: str
    unit: str | None = None
    tests: tuple[Any, ...] = ()
    #: reports: a column that orders or splits the rows, or feeds a Python formatter, but is not written to the
    #: CSV (rank, total_ns).
    hidden: bool = False
    #: reports: written only with this --report-style ("latest" or "legacy"); None: with every style.
    style: str | None = None
    #: reports: left out of a file in which it is NULL on every row.
    optional: bool = False


@dataclass(frozen=True)
class Invariant:
    """A model's data test across its columns: `expression` holds on every row, or with `per`, aggregated over
    every group of rows with the same `per` values (NULL counts as holding)."""

    expression: str
    why: str
    per: tuple[str, ...] = ()

    def breaking_rows(self, model: str) -> str:
        """The SQL query of the rows (or groups) of `model` that break it."""
        if not self.per:
            return f"SELECT * FROM {model} WHERE NOT ({self.expression})"
        keys = ", ".join(_identifier(c) for c in self.per)
        return f"SELECT {keys} FROM {model} GROUP BY {keys} HAVING NOT ({self.expression})"


@dataclass(frozen=True)
class Model:
    """One SQL model: its rendered SELECT, what it reads and its documentation."""

    name: str
    layer: str
    sql: str
    description: str
    grain: tuple[str, ...]
    columns: tuple[Column, ...]
    refs: frozenset[str]
    sources: frozenset[str]
    computed_once: bool = False
    #: marts and reports: the ORDER BY of the CSV (most important rows first); None: no CSV.
    csv_order: str | None = None
    #: reports: the file name, with {<column>} placeholders (a file per rank and per value of those columns).
    file: str | None = None
    #: reports: written only with this --report-style ("latest" or "legacy"); None: with every style.
    style: str | None = None
    #: reports: the exporter module that formats the file (a text or JSON file); None: the generic CSV writer.
    written_by: str | None = None
    #: reports: the CSV's line ending (MindSpore's Python-written files end lines with \r\n).
    newline: str = "\n"
    #: reports not written as a file: the Python function that returns their rows.
    returned_by: str | None = None
    #: Invariants across columns: (SQL expression true on every row, or with `per` columns an aggregate true for
    #: every group of rows; why it must hold; the `per` columns). NULL counts as true.
    invariants: tuple[Invariant, ...] = ()
    #: Models or normalized tables without whose rows this model holds none (YAML `requires`): where one is known to
    #: be empty, the run creates the model empty without its query (tests/test_model_library.py runs the query there).
    requires: frozenset[str] = frozenset()
    #: intermediate models computed in Python: `package.module:function`, called with the rows of `sql` (an Arrow
    #: table) and returning the model's rows.
    computed_by: str | None = None

    @property
    def kind(self) -> str:
        """What the saved profile.duckdb holds: VIEW (staging, intermediate) or TABLE (marts, and the models
        computed in Python)."""
        return "TABLE" if self.computed_by else _MATERIALIZED[self.layer]

    @property
    def depends_on(self) -> frozenset[str]:
        """The models this one reads."""
        return self.refs

    @property
    def public(self) -> bool:
        """Marts, reports and staging views are documented for users; intermediate models are private helpers."""
        return self.layer != "intermediate"


@dataclass(frozen=True)
class Macro:
    """One SQL macro of sql/macros."""

    name: str
    sql: str
    description: str


def load_models(sql_dir: Path | None = None) -> list[Model]:
    """Every model under `sql_dir` (default: the packaged sql/), checked, in an order that respects
    dependencies."""
    return list(_packaged_models() if sql_dir is None else _load_models(sql_dir))


@lru_cache(maxsize=1)
def _packaged_models() -> tuple[Model, ...]:
    return cached("models", library_files(Path(__file__)), lambda: _load_models(data_dir("sql")))


def library_files(*code: Path) -> list[Path]:
    """Every file the packaged model library is read from (sql/ with its layers, queries and advisor rules, and
    schemas/tables.json), and the `code` that reads them: what a cache of the loaded library is keyed on."""
    root = data_dir("sql")
    folders = [root, *(path for path in root.iterdir() if path.is_dir())]
    return [*code, data_dir("schemas") / "tables.json",
            *(path for folder in folders for path in folder.iterdir() if path.is_file())]


def _load_models(root: Path) -> tuple[Model, ...]:
    sources = set(catalog()) | set(EXTRA_SOURCES)
    models: dict[str, Model] = {}
    texts: dict[str, str] = {}
    for layer in LAYERS:
        for path in sorted((root / layer).glob("*.sql")):
            model = _read_model(path, layer)
            if model.name in models or model.name in sources:
                raise ModelError(f"SQL model {model.name}: the name is taken twice")
            models[model.name] = model
            texts[model.name] = _strip_comments(_CALL.sub("", path.read_text(encoding="utf-8")))
    for model in models.values():
        _check_references(model, texts[model.name], models, sources)
    try:
        order = list(TopologicalSorter({m.name: m.refs for m in models.values()}).static_order())
    except CycleError as exc:
        raise ModelError(f"SQL models depend on each other in a cycle: {exc.args[1]}") from exc
    upstream: dict[str, set[str]] = {}
    for name in order:
        upstream[name] = set(models[name].refs).union(*(upstream[ref] for ref in models[name].refs))
        stray = models[name].requires - upstream[name] - sources
        if stray:
            raise ModelError(f"SQL model {name}: requires {sorted(stray)}, which it does not read (a model upstream of "
                             "it or a normalized table)")
    return tuple(models[name] for name in order)


def _read_model(path: Path, layer: str) -> Model:
    name = path.stem
    if not name.startswith(_PREFIX[layer]) or (not _PREFIX[layer] and name.startswith(("stg_", "int_"))):
        raise ModelError(f"SQL model {name}: a {layer} model's name starts with {_PREFIX[layer] or 'neither stg_ nor int_'}")
    doc_path = path.with_suffix(".yml")
    if not doc_path.is_file():
        raise ModelError(f"SQL model {name}: no {doc_path.name} beside it documenting its grain and columns")
    doc = read_yaml(doc_path) or {}
    unknown = set(doc) - {"description", "grain", "computed_once", "csv_order", "file", "returned_by", "columns",
                          "tests", "style", "written_by", "newline", "computed_by", "requires"}
    if unknown or not doc.get("description") or not doc.get("columns"):
        raise ModelError(f"{doc_path}: needs description and columns (unknown keys: {sorted(unknown)})")
    computed_once = bool(doc.get("computed_once", False))
    if computed_once and layer != "intermediate":
        raise ModelError(f"SQL model {name}: only intermediate models can be computed once per run")
    computed_by = doc.get("computed_by")
    if computed_by is not None and (layer != "intermediate" or computed_once or not re.fullmatch(r"[\w.]+:\w+", computed_by)):
        raise ModelError(f"SQL model {name}: only an intermediate model that is not computed_once can be computed_by "
                         "a Python function, named package.module:function")
    if doc.get("csv_order") is not None and layer not in ("marts", "reports"):
        raise ModelError(f"SQL model {name}: only marts and reports are written as CSVs (csv_order)")
    if (1 if layer == "reports" else 0) != bool(doc.get("file")) + bool(doc.get("returned_by")):
        raise ModelError(f"SQL model {name}: a report, and only a report, names its file or (not both) the "
                         "function that returns it (returned_by)")
    if layer != "reports" and {"style", "written_by", "newline"} & set(doc):
        raise ModelError(f"SQL model {name}: only reports have a style, a writer or a line ending")
    invariants = []
    for test in doc.get("tests") or ():
        if not isinstance(test, dict) or not {"expression", "why"} <= set(test) <= {"expression", "why", "per"}:
            raise ModelError(f"{doc_path}: a model's test is an invariant: {{expression: <SQL>, why: <text>, "
                             "per: [<column>, ...] (optional)}}")
        invariants.append(Invariant(str(test["expression"]), " ".join(str(test["why"]).split()),
                                    tuple(test.get("per") or ())))
    shared = _shared_columns(path.parent.parent)
    columns = []
    for column in doc["columns"]:
        common = shared.get(column["name"], {})
        description = column.get("description") or common.get("description")
        if not description:
            raise ModelError(f"{doc_path}: column {column['name']} has no description (and sql/columns.yml none)")
        columns.append(Column(column["name"], column["type"], " ".join(str(description).split()),
                              column.get("unit", common.get("unit")), tuple(column.get("tests", ())),
                              bool(column.get("hidden", False)), column.get("style"),
                              bool(column.get("optional", False))))
    raw = path.read_text(encoding="utf-8")
    calls = _CALL.findall(raw)
    return Model(name=name, layer=layer, sql=_CALL.sub(lambda m: m.group(2), raw).strip().rstrip(";"),
                 description=" ".join(str(doc["description"]).split()), grain=tuple(doc.get("grain", ())),
                 columns=tuple(columns), refs=frozenset(n for kind, n in calls if kind == "ref"),
                 sources=frozenset(n for kind, n in calls if kind == "source"), computed_once=computed_once,
                 csv_order=doc.get("csv_order"), file=doc.get("file"), style=doc.get("style"),
                 written_by=doc.get("written_by"), newline=doc.get("newline", "\n"), returned_by=doc.get("returned_by"),
                 invariants=tuple(invariants), computed_by=computed_by, requires=frozenset(doc.get("requires") or ()))


@lru_cache(maxsize=4)
def _shared_columns(root: Path) -> dict[str, dict[str, str]]:
    """sql/columns.yml: the meaning (and unit) of columns many models share, by column name."""
    path = root / "columns.yml"
    return read_yaml(path) if path.is_file() else {}


def _check_references(model: Model, text: str, models: dict[str, Model], sources: set[str]) -> None:
    """Refs name models of a layer `model` may read, sources name tables, and nothing is read unnamed
    (`text`: the model's SQL without comments and without its ref()/source() calls)."""
    for name in model.sources:
        if name not in sources:
            raise ModelError(f"SQL model {model.name}: source('{name}') is not a normalized table")
        if "source" not in MAY_READ[model.layer]:
            raise ModelError(f"SQL model {model.name}: only staging models read normalized tables "
                             f"(source('{name}')); read its stg_ view")
    for name in model.refs:
        if name not in models:
            raise ModelError(f"SQL model {model.name}: ref('{name}') names no model")
        if models[name].layer not in MAY_READ[model.layer]:
            raise ModelError(f"SQL model {model.name}: a {model.layer} model may not read the "
                             f"{models[name].layer} model {name}")
    words = set(_WORD.findall(text))  # whole words not after a dot: a column of an alias is not a table
    if unnamed := sorted(words & (set(models) | sources) - {model.name}):
        raise ModelError(f"SQL model {model.name}: reads {unnamed[0]} without ref()/source()")


@dataclass(frozen=True)
class Selection:
    """What `--select` asked for and what a run builds for it."""

    #: The selectors as given (MODEL, +MODEL, MODEL+), in order.
    asked: tuple[str, ...]
    #: The models built: the named ones, their downstream where asked (MODEL+), and everything those read.
    models: frozenset[str]
    #: The normalized tables those models read (the sources that write no one of them need not be read).
    tables: frozenset[str]

    @property
    def built(self) -> frozenset[str]:
        """Every model and table whose rows the run holds: the models built, the tables they read, and the
        trace-health ledger (every run has it)."""
        return self.models | self.tables | {"trace_health"}

    def as_json(self) -> dict[str, Any]:
        """The manifest's record of the selection: what was asked, the models built, the tables read."""
        return {"select": list(self.asked), "models": sorted(self.models), "tables": sorted(self.tables)}

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> Selection:
        """The selection a manifest recorded (`as_json`)."""
        return cls(tuple(record["select"]), frozenset(record["models"]), frozenset(record["tables"]))


def select(selectors: tuple[str, ...] | list[str], models: list[Model] | None = None) -> Selection:
    """The models that `selectors` build (dbt's syntax, each item one or more names separated by commas or spaces):
    `MODEL` (or `+MODEL`: the same, its upstream is always built) builds MODEL and every model it reads, transitively;
    `MODEL+` also every model that reads MODEL, transitively, with what those read. A name that is no model is a
    UsageError naming the nearest ones."""
    by_name = {m.name: m for m in models or load_models()}
    asked = tuple(item for selector in selectors for item in re.split(r"[\s,]+", selector.strip()) if item)
    if not asked:
        raise UsageError("--select needs at least one model name (profpipe describe lists them)")
    readers: dict[str, set[str]] = {name: set() for name in by_name}
    for model in by_name.values():
        for ref in model.refs:
            readers[ref].add(model.name)
    roots: set[str] = set()
    for item in asked:
        name = item.removeprefix("+").removesuffix("+")
        if name not in by_name:
            near = difflib.get_close_matches(name, list(by_name), n=5, cutoff=0.6)
            hint = f"; did you mean {', '.join(near)}?" if near else "; profpipe describe lists the models"
            raise UsageError(f"--select {item}: no model {name!r}{hint}")
        roots |= _closure({name}, readers) if item.endswith("+") else {name}
    chosen = _closure(roots, {name: set(m.refs) for name, m in by_name.items()})
    tables = frozenset(t for name in chosen for t in by_name[name].sources) - set(EXTRA_SOURCES)
    return Selection(asked, frozenset(chosen), tables)


def _closure(names: set[str], edges: dict[str, set[str]]) -> set[str]:
    """`names` and every name reachable from them along `edges`."""
    found, todo = set(names), list(names)
    while todo:
        for name in edges[todo.pop()] - found:
            found.add(name)
            todo.append(name)
    return found


@lru_cache(maxsize=256)
def query_reads(name: str) -> frozenset[str]:
    """The models and normalized tables that sql/queries/<name>.sql reads (the words of its text that name one)."""
    known = set(catalog()) | {m.name for m in load_models()}
    return frozenset(set(_WORD.findall(_strip_comments(query(name)))) & known)


def load_macros(sql_dir: Path | None = None) -> list[Macro]:
    """The macros of sql/macros, each file one `CREATE MACRO <name>`, its leading comment its description."""
    macros = []
    for path in sorted((sql_dir or data_dir("sql")).joinpath("macros").glob("*.sql")):
        text = path.read_text(encoding="utf-8")
        if not re.search(rf"CREATE\s+(OR\s+REPLACE\s+)?MACRO\s+{re.escape(path.stem)}\b", text, re.IGNORECASE):
            raise ModelError(f"{path}: must hold CREATE MACRO {path.stem}")
        comment = [line.lstrip("-").strip() for line in text.splitlines() if line.startswith("--")]
        macros.append(Macro(path.stem, text.strip().rstrip(";"), " ".join(comment)))
    return macros


def query(name: str) -> str:
    """The text of sql/queries/<name>.sql: a named query an exporter, the report or the API runs over the models
    and temp tables of its own (the timeline's clock shifts). Not a model: the library does not run it."""
    return data_dir("sql").joinpath("queries", f"{name}.sql").read_text(encoding="utf-8").strip().rstrip(";")


def query_rows(con: duckdb.DuckDBPyConnection, name: str, /, **params: Any) -> list[dict[str, Any]]:
    """The rows of sql/queries/<name>.sql run in `con` with its $`params`, as dicts by column name."""
    cursor = con.execute(query(name), params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def create_macros(con: duckdb.DuckDBPyConnection) -> None:
    """Create every macro of sql/macros in `con` (saved in profile.duckdb for users too)."""
    con.execute(";\n".join(re.sub(r"CREATE\s+MACRO", "CREATE OR REPLACE MACRO", macro.sql, count=1, flags=re.IGNORECASE)
                           for macro in load_macros()))


def set_run_options(con: duckdb.DuckDBPyConnection, options: dict[str, str]) -> None:
    """Table run_option(name, value): the analysis options the models read (fp_op, bp_op overrides)."""
    con.execute("CREATE OR REPLACE TABLE run_option (name VARCHAR, value VARCHAR)")
    if options:
        con.executemany("INSERT INTO run_option VALUES (?, ?)", list(options.items()))


@dataclass
class ModelRun:
    """What `run_models` did: seconds per model it ran, and the models it created empty instead."""

    seconds: dict[str, float]
    #: Models none of whose inputs held a row: created from their declared columns, with no rows.
    skipped: list[str]
    #: Every table and model known to hold no rows: the empty normalized tables, the skipped models and the
    #: tables that came out empty.
    empty: set[str]
    #: The models saved as tables that this run created (their documentation goes with them: comment_on).
    tables: list[str]

    def slowest(self, count: int) -> list[tuple[str, float]]:
        """The `count` models that took longest, slowest first."""
        return sorted(self.seconds.items(), key=lambda item: -item[1])[:count]


def run_models(con: duckdb.DuckDBPyConnection, models: list[Model] | None = None,
               row_counts: dict[str, int] | None = None, prepared: bool = False) -> ModelRun:
    """Create every model in `con`, in the given (dependency) order.

    With `row_counts` (rows per normalized table), a model none of whose inputs holds a row, or one of whose
    `requires` holds none, is not run: it is
    created from its YAML's columns with no rows (a table for a mart, a view for the others), so every model
    exists with the same columns and types whatever the input held (tests/test_model_library.py checks that each
    model gives no rows from empty inputs, so this changes no result). A model's output counts as empty when it
    was created empty or is a table (a mart, a computed-once model) that holds no row; a view that ran counts as
    holding rows. run_option (the options) is not an input here. The empty models are created together, in one
    statement per batch. `prepared`: `con` already holds every model as the profile template has it (each view
    with its SQL, each mart as an empty table: profpipe/profile_db.py), so only the marts that run and the
    computed-once models are created."""
    empty = {name for name, rows in (row_counts or {}).items() if rows == 0}
    seconds: dict[str, float] = {}
    skipped: list[str] = []
    tables: list[str] = []
    pending: list[str] = []
    for model in models or load_models():
        inputs = model.refs | (model.sources - set(EXTRA_SOURCES))
        if row_counts is not None and (inputs and inputs <= empty or model.requires & empty):
            if not prepared:
                pending.append(_empty_model_sql(model))
            skipped.append(model.name)
            empty.add(model.name)
            continue
        if pending:
            con.execute(";\n".join(pending))
            pending.clear()
        started = time.perf_counter()
        if model.computed_by:
            _compute_in_python(con, model)
        elif model.kind == "TABLE" or not prepared:
            con.execute(f"CREATE OR REPLACE {model.kind} {model.name} AS\n{model.sql}")
        if model.kind == "TABLE":
            tables.append(model.name)
        if model.computed_once:
            con.execute(f"CREATE OR REPLACE TEMP TABLE {model.name} AS\n{model.sql}")
        if ((model.kind == "TABLE" or model.computed_once) and row_counts is not None
                and not con.execute(f"SELECT count(*) FROM {model.name}").fetchall()[0][0]):
            empty.add(model.name)
        seconds[model.name] = time.perf_counter() - started
    if pending:
        con.execute(";\n".join(pending))
    return ModelRun(seconds, skipped, empty, tables)


def _compute_in_python(con: duckdb.DuckDBPyConnection, model: Model) -> None:
    """Create `model` as a table of the rows its `computed_by` function returns for the rows of its SQL."""
    module_name, function_name = model.computed_by.split(":")
    function = getattr(importlib.import_module(module_name), function_name)
    rows: pa.Table = function(con.sql(model.sql).to_arrow_table())
    columns = ", ".join(f"CAST({_identifier(c.name)} AS {c.type}) AS {_identifier(c.name)}" for c in model.columns)
    con.register("computed_rows", rows)
    try:
        con.execute(f"CREATE OR REPLACE TABLE {model.name} AS SELECT {columns} FROM computed_rows")
    finally:
        con.unregister("computed_rows")


def _empty_model_sql(model: Model) -> str:
    """The statement that creates `model` with its declared columns and no rows, as the kind it is saved as."""
    if model.kind == "TABLE":
        columns = ", ".join(f"{_identifier(c.name)} {c.type}" for c in model.columns)
        return f"CREATE OR REPLACE TABLE {model.name} ({columns})"
    columns = ", ".join(f"CAST(NULL AS {c.type}) AS {_identifier(c.name)}" for c in model.columns)
    return f"CREATE OR REPLACE VIEW {model.name} AS SELECT {columns} WHERE false"


def documentation() -> dict[str, dict[str, Any]]:
    """Every normalized table (layer "table") and model, by name: its layer, what one row is, its grain, its
    invariants and its columns (name, type, unit, description, tests), as `profpipe describe` shows them."""
    entries: dict[str, dict[str, Any]] = {}
    shared = _shared_columns(data_dir("sql"))
    for name, spec in catalog().items():
        entries[name] = {"name": name, "layer": "table", "description": spec.description, "grain": [], "invariants": [],
                         "columns": [{"name": f.name, "type": str(f.type), "unit": spec.units.get(f.name),
                                      "description": spec.column_docs[f.name]
                                      or shared.get(f.name, {}).get("description", ""),
                                      "tests": [] if f.nullable else ["not_null"]} for f in spec.schema]}
    for model in load_models():
        entries[model.name] = {"name": model.name, "layer": model.layer, "description": model.description,
                               "grain": list(model.grain),
                               "invariants": [{"expression": i.expression, "why": i.why, "per": list(i.per)}
                                              for i in model.invariants],
                               "columns": [{"name": c.name, "type": c.type, "unit": c.unit, "description": c.description,
                                            "tests": [_test_name(t) for t in c.tests]} for c in model.columns]}
    return entries


def comment_on(con: duckdb.DuckDBPyConnection, names: set[str] | None = None) -> None:
    """Write every table's and model's documentation (or only that of `names`) into `con` (COMMENT ON TABLE / VIEW
    / COLUMN), where any DuckDB client shows it (duckdb_tables(), duckdb_columns())."""
    kinds = dict(con.execute("SELECT table_name, table_type FROM information_schema.tables "  # not the temp tables
                             "WHERE table_catalog = current_database() AND table_schema = 'main'").fetchall())
    database = _identifier(con.execute("SELECT current_database()").fetchall()[0][0])
    statements = []
    for name, entry in documentation().items():
        if name not in kinds or (names is not None and name not in names):
            continue
        kind = "VIEW" if kinds[name] == "VIEW" else "TABLE"
        qualified = f"{database}.main.{name}"  # never a temporary table of the same name (a computed-once model)
        statements.append(f"COMMENT ON {kind} {qualified} IS '{_quote(entry['description'])}'")
        for column in entry["columns"]:
            unit = f" [{column['unit']}]" if column["unit"] else ""
            statements.append(f"COMMENT ON COLUMN {qualified}.{_identifier(column['name'])} IS '{_quote(column['description'] + unit)}'")
    try:
        con.execute(";\n".join(["BEGIN TRANSACTION", *statements, "COMMIT"]))  # one commit, not one per comment
    except duckdb.Error:
        con.execute("ROLLBACK")
        raise


def _test_name(test: Any) -> str:
    if isinstance(test, str):
        return test
    kind, argument = next(iter(test.items()))
    return f"{kind} {argument}"


def _quote(text: str) -> str:
    return text.replace("'", "''")


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _strip_comments(sql: str) -> str:
    return re.sub(r"--[^\n]*", "", sql)
