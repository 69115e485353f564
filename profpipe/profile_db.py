"""The saved profile.duckdb of a run: a copy of a prepared template, filled by the run.

Sits in stage 3 (models), called by profpipe/run.py. Every output's profile.duckdb holds every normalized table, macro
and model with its documentation (a COMMENT ON every table, view and column: some 2,000 statements, longer than a
small input's whole analysis). All of that is the same for every run, so it is made once into a template database
with no rows (kept in the user's cache folder, keyed on the model library's files, the code and DuckDB's version:
resources.cached_copy), which each run copies and fills: the rows of the normalized tables that have any are
inserted (a table keeps its documentation), the models whose inputs hold rows are run (models.run_models with
`prepared`), and only the tables those re-create are documented again. Views are the template's: a view binds when
it is read, so it reads the run's rows.
"""
from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from . import models
from .database import connect, transaction
from .models import comment_on, create_macros, library_files, load_models, run_models, set_run_options
from .resources import cached_copy
from .tables import catalog


def open_profile(path: Path) -> duckdb.DuckDBPyConnection:
    """A connection to a new profile.duckdb at `path`: every table, macro and model of the library, documented and
    empty, ready for `fill_tables` and models.run_models(..., prepared=True)."""
    cached_copy(f"profile-template-duckdb-{duckdb.__version__}", library_files(Path(__file__), Path(models.__file__)),
                _write_template, path)
    try:
        return connect(path)
    except duckdb.Error:  # a damaged template in the cache: this run makes its own (the cache is only a shortcut)
        path.unlink(missing_ok=True)
        _write_template(path)
        return connect(path)


def fill_tables(con: duckdb.DuckDBPyConnection, folder: Path, row_counts: dict[str, int]) -> None:
    """Insert the rows of every normalized table of `folder`/tables/<name>.parquet that has any (`row_counts`) into
    its table of the profile, so that profile.duckdb holds all it needs: it opens from any working folder, and after
    the output folder is moved or copied (the Parquet files stay for tools that read Parquet)."""
    statements = [f"INSERT INTO {name} SELECT * FROM read_parquet('{_quote(str(folder.resolve() / 'tables' / name))}.parquet')"
                  for name in catalog() if row_counts.get(name)]
    if statements:
        con.execute(";\n".join(statements))


def _write_template(path: Path) -> None:
    """The template at `path`: every normalized table (typed as schemas/tables.json declares it), the macros, an
    empty run_option, every view with its SQL and every mart as an empty table of its declared columns, all
    documented."""
    with connect(path) as con:
        with transaction(con):
            for name, spec in catalog().items():
                con.register("empty_rows", pa.table({f.name: pa.array([], f.type) for f in spec.schema}))
                con.execute(f"CREATE TABLE {name} AS SELECT * FROM empty_rows")
                con.unregister("empty_rows")
            create_macros(con)
            set_run_options(con, {})
            run_models(con, load_models(), {name: 0 for name in catalog()})
            con.execute(";\n".join(f"CREATE OR REPLACE VIEW {m.name} AS\n{m.sql}" for m in load_models() if m.kind == "VIEW"))
        comment_on(con)


def _quote(text: str) -> str:
    return text.replace("'", "''")
