"""Stage 3, models: run the DuckDB SQL files of sql/ over the normalized tables.

Each `sql/<layer>/<name>.sql` holds one SELECT and defines the relation `<name>`. Files under
`staging/` become views, files under `marts/` become tables. A staging model that many others
read (and that is costly to recompute) says `-- computed once per run` in its header: the run
computes it once into a temporary table, which shadows the view while the marts and exports
read it; the saved profile.duckdb keeps only the view. A model depends on every other model whose
name it mentions; the runner orders them so that each runs after what it reads.
The first comment line of a file is its one-line description; the following comment lines
document its columns.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import duckdb

from .resources import data_dir
from .tables import catalog

_LAYER_KIND = {"staging": "VIEW", "marts": "TABLE"}


@dataclass(frozen=True)
class Model:
    """One SQL model file."""

    name: str
    layer: str
    sql: str
    description: str
    depends_on: frozenset[str]
    computed_once: bool = False  # staging only: a temporary table during the run (see the module doc)

    @property
    def kind(self) -> str:
        """What the saved profile.duckdb holds: VIEW (staging) or TABLE (marts)."""
        return _LAYER_KIND[self.layer]


def load_models(sql_dir: Path | None = None) -> list[Model]:
    """All models under `sql_dir` (default: the packaged sql/), in an order that respects dependencies."""
    root = sql_dir or data_dir("sql")
    files = {path.stem: path for layer in _LAYER_KIND for path in sorted((root / layer).glob("*.sql"))}
    raw = {name: path.read_text(encoding="utf-8") for name, path in files.items()}
    models = {}
    for name, sql in raw.items():
        body = _strip_comments(sql)
        depends = frozenset(other for other in raw if other != name
                            and re.search(rf"\b{re.escape(other)}\b", body))
        layer = files[name].parent.name
        computed_once = bool(re.search(r"^--\s*computed once per run\b", sql, re.MULTILINE))
        if computed_once and layer != "staging":
            raise RuntimeError(f"SQL model {name}: only staging models can be computed once per run")
        models[name] = Model(name, layer, sql.strip().rstrip(";"), _description(name, sql), depends, computed_once)
    try:
        order = TopologicalSorter({m.name: m.depends_on for m in models.values()}).static_order()
        return [models[name] for name in order]
    except CycleError as exc:
        raise RuntimeError(f"SQL models depend on each other in a cycle: {exc.args[1]}") from exc


def table_views(con: duckdb.DuckDBPyConnection) -> None:
    """Create one view per normalized table over tables/<name>.parquet (paths relative to the output folder)."""
    for name in catalog():
        con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet('tables/{name}.parquet')")


#: SQL macros the models use, saved in profile.duckdb for users too: name -> (parameters, body, what it does).
MACROS: dict[str, tuple[str, str, str]] = {
    "round_like_python": (
        "x, digits", "round_even(printf('%.20f', x)::DECIMAL(38, 20), digits)::DOUBLE",
        "x rounded as Python's round(x, digits) does: half to even on the exact binary value, so reports "
        "that copy MindSpore's Python (which rounds 1.385 up: its double is 1.38500000000000000888) "
        "print the same digits; for |x| < 1e17."),
    "duration_stats": (
        "d", "{'instances': count(d), 'total_ns': sum(d)::BIGINT, 'avg_ns': avg(d), 'median_ns': median(d), "
             "'min_ns': min(d), 'max_ns': max(d), 'stddev_ns': coalesce(stddev_samp(d), 0)}",
        "Aggregate: Nsight Systems' summary of the durations d of a group (instances, total, average, median, "
        "min, max, sample standard deviation; 0 for one instance), as a struct: SELECT unnest(duration_stats(d))."),
}


def create_macros(con: duckdb.DuckDBPyConnection) -> None:
    """Create MACROS in `con`."""
    for name, (parameters, body, _) in MACROS.items():
        con.execute(f"CREATE OR REPLACE MACRO {name}({parameters}) AS {body}")


def set_run_options(con: duckdb.DuckDBPyConnection, options: dict[str, str]) -> None:
    """Table run_option(name, value): the analysis options the models read (fp_op, bp_op overrides)."""
    con.execute("CREATE OR REPLACE TABLE run_option (name VARCHAR, value VARCHAR)")
    if options:
        con.executemany("INSERT INTO run_option VALUES (?, ?)", list(options.items()))


def run_models(con: duckdb.DuckDBPyConnection, models: list[Model] | None = None) -> dict[str, float]:
    """Create every model in `con`; return seconds spent per model."""
    timings = {}
    for model in models or load_models():
        started = time.perf_counter()
        con.execute(f"CREATE OR REPLACE {model.kind} {model.name} AS\n{model.sql}")
        if model.computed_once:
            con.execute(f"CREATE OR REPLACE TEMP TABLE {model.name} AS\n{model.sql}")
        timings[model.name] = time.perf_counter() - started
    return timings


def _strip_comments(sql: str) -> str:
    return re.sub(r"--[^\n]*", "", sql)


def _description(name: str, sql: str) -> str:
    first = sql.lstrip().splitlines()[0] if sql.strip() else ""
    if not first.startswith("--"):
        raise RuntimeError(f"SQL model {name} must start with a comment saying what one row is")
    return first.lstrip("-").strip().removeprefix(f"{name}:").strip()
