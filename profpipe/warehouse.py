"""The warehouse of `profpipe batch`: every run's public tables as Hive-partitioned Parquet, one manifest.

Where it sits: after the pipeline (profpipe/run.py builds one run's profile.duckdb), before the user's SQL.
profpipe/batch.py decides what to analyse and calls `publish_run` (in a worker) and `Warehouse.commit`
(in the driver); `profpipe query`, `profpipe diff` and the DuckDB catalog read through `connect`.

Layout of a warehouse folder:

    .profpipe-warehouse                 the mark: profpipe wrote this folder and may change it
    warehouse.json                      the manifest: every run's generation, files, status (the truth)
    catalog.duckdb                      a view per table over all runs, the batch_runs table, and the report's
                                        trend aggregates (trend_runs, trend_keys: profpipe/trends.py)
    tables/<table>/run=<id>/<generation>/rank=<r>/data_0.parquet   tables with a rank column
    tables/<table>/run=<id>/<generation>/data_0.parquet            tables without one
    .lock                               held (flock) by the batch writing the warehouse

Consistency: a run's files are written under a fresh generation folder that no reader looks at; the
run becomes visible only when the manifest, naming that generation, atomically replaces the old
manifest (write, fsync, rename). Readers list files from the manifest, never by globbing, so a batch
killed at any moment leaves every run wholly at its old or its new generation; files of generations
the manifest does not name are garbage the next batch removes. Plain Parquet plus an atomic manifest
is all this needs (docs/batch.md: why not Delta Lake or Iceberg).
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from .advisor import ADVISOR_TABLE
from .database import connect as duckdb_connect
from .errors import UsageError
from .models import Selection, create_macros, load_models, run_models, set_run_options
from .tables import catalog

MARKER = ".profpipe-warehouse"
MANIFEST = "warehouse.json"
CATALOG = "catalog.duckdb"
#: The manifest's own format (not the tables' schema, which is `run_schema_version`).
MANIFEST_FORMAT = 1
#: A batch commits the runs that end within this many seconds of the last commit together (Warehouse.commit_soon).
COMMIT_EVERY_S = 1.0

#: batch_runs: one row per run in the warehouse (the ledger of `profpipe batch`).
BATCH_RUNS_SCHEMA = pa.schema([
    ("run", pa.string()), ("path", pa.string()), ("status", pa.string()), ("error", pa.string()),
    ("fingerprint", pa.string()), ("content_fingerprint", pa.string()), ("generation", pa.string()), ("analysed_at", pa.timestamp("s")),
    ("wall_s", pa.float64()), ("ingest_s", pa.float64()), ("models_s", pa.float64()),
    ("input_bytes", pa.int64()), ("input_files", pa.int64()), ("sources", pa.int32()), ("ranks", pa.int32()),
    ("health_events", pa.int64()), ("health_lossy_rows", pa.int64()), ("sources_failed", pa.int32()),
    ("profpipe_version", pa.string()), ("schema_version", pa.string()),
    ("selection", pa.string()), ("tables_not_built", pa.list_(pa.string())),
])
#: Meaning of every batch_runs column (also COMMENT ON in catalog.duckdb and docs/batch.md).
#: The run statuses whose tables hold the run's own numbers (a failed run's hold its last good version).
OWN_NUMBERS = ("ok", "partial")
BATCH_RUNS_DOCS = {
    "run": "run id: the run folder's path below its ROOT, '/' written as '.'",
    "path": "absolute path of the run folder",
    "status": "ok (read whole), partial (trace_health reports data dropped or a source skipped), failed "
              "(nothing usable; the tables hold the run's last good version, if any), empty (no profiler "
              "data in the folder) or missing (the folder "
              "is gone; kept by --keep-missing)",
    "error": "why the run failed, or what was looked for (failed and empty only)",
    "fingerprint": "what the input looked like when analysed: file list, sizes and mtimes (and content "
                   "hashes with --verify)",
    "content_fingerprint": "blake2b of every byte of the run folder's files (NULL: never batched with --verify)",
    "generation": "the folder under tables/<table>/run=<id>/ that holds the run's files (NULL: no tables)",
    "analysed_at": "when the batch that last analysed the run started, UTC (a TIMESTAMP without time zone; the runs "
                   "of one batch share it, so they sort by run id after it)",
    "wall_s": "seconds from the first source read to the tables published [s]",
    "ingest_s": "seconds of reading the sources, summed over workers [s]",
    "models_s": "seconds of merging the parts and building the models [s]",
    "input_bytes": "bytes of the run folder's files [bytes]",
    "input_files": "files in the run folder",
    "sources": "sources discover found (rank x format family x capture)",
    "ranks": "ranks read",
    "health_events": "trace-health events of the run",
    "health_lossy_rows": "rows dropped, clamped or repaired by the readers, summed over trace_health [rows]",
    "sources_failed": "sources that could not be read (skipped)",
    "profpipe_version": "profpipe version that analysed the run",
    "schema_version": "data-contract version of the tables (profpipe's version and a hash of schemas/ and sql/)",
    "selection": "the run's --select, as given (NULL: every model was built)",
    "tables_not_built": "the public tables the run did not build (--select): their views hold no row of the run "
                        "because it did not build them, not because they have none (NULL: every table was built)",
}


def public_tables() -> list[str]:
    """The tables a run publishes: the normalized tables (trace_health included), the marts and the advisor's
    findings (advisor_finding)."""
    return list(catalog()) + [m.name for m in load_models() if m.layer == "marts"] + [ADVISOR_TABLE]


def selection_text(selection: Selection | None) -> str | None:
    """batch_runs.selection: the --select a run was built with, as given (None: every model)."""
    return None if selection is None else " ".join(selection.asked)


def not_built(selection: Selection) -> list[str]:
    """batch_runs.tables_not_built: the public tables a run built with `selection` lacks (the advisor's findings
    table is always built: it holds the rules the selection could check)."""
    return [table for table in public_tables() if table not in selection.built | {ADVISOR_TABLE}]


def lacking(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    """Why the runs of a warehouse connection (`connect`) hold no row of `table`, by run: "not built" (a run built
    with a --select that left it out) or "no rows" (built, and empty); runs that hold rows are not listed."""
    found = con.execute(f"SELECT r.run, CASE WHEN list_contains(r.tables_not_built, ?) THEN 'not built' ELSE 'no rows' "
                        f"END FROM batch_runs r WHERE r.status IN {OWN_NUMBERS} "
                        f"AND r.run NOT IN (SELECT DISTINCT run FROM {_ident(table)}) ORDER BY r.run", [table])
    return dict(found.fetchall())


@lru_cache(maxsize=1)
def contract_columns() -> dict[str, tuple[tuple[str, str], ...]]:
    """Each public table's columns and DuckDB types in this profpipe's contract (schemas/tables.json, the marts'
    YAML): a warehouse's views show them all, NULL in the runs analysed before a column or table existed, so that
    the staging views, the marts' readers and `profpipe report --run` work on every run of a warehouse an older
    profpipe started."""
    found: dict[str, tuple[tuple[str, str], ...]] = {}
    with duckdb_connect() as con:
        for name, spec in catalog().items():
            con.register("empty_rows", pa.table({f.name: pa.array([], f.type) for f in spec.schema}))
            found[name] = tuple((column, kind) for column, kind, *_ in con.execute("DESCRIBE empty_rows").fetchall())
            con.unregister("empty_rows")
    for model in load_models():
        if model.layer == "marts":
            found[model.name] = tuple((c.name, c.type) for c in model.columns)
    return found


@dataclass
class RunRecord:
    """One run of the manifest: its ledger row (BATCH_RUNS_SCHEMA's columns) and its files per table,
    relative to its generation folder."""

    row: dict[str, Any]
    files: dict[str, list[str]] = field(default_factory=dict)

    @property
    def run(self) -> str:
        return str(self.row["run"])

    @property
    def generation(self) -> str | None:
        return self.row.get("generation")


def publish_run(database: Path, warehouse: Path, run: str, generation: str,
                empty: frozenset[str] | set[str] = frozenset()) -> tuple[dict[str, list[str]], dict[str, list[list[str]]]]:
    """Write every public table of one run's profile.duckdb that has rows under the run's new `generation` folder
    (`empty`: tables the run knows hold none, not counted again); return (files per table, relative to that
    folder; columns and DuckDB types per table, empty ones included). Runs in a worker; nothing is visible until the
    driver commits the generation. Run again, it starts over."""
    files: dict[str, list[str]] = {}
    columns: dict[str, list[list[str]]] = {}
    with duckdb_connect(database, read_only=True) as con:
        described = con.execute("SELECT table_name, column_name, data_type FROM information_schema.columns "
                                "WHERE table_schema = 'main' ORDER BY table_name, ordinal_position").fetchall()
        for table, name, kind in described:
            columns.setdefault(table, []).append([name, kind])
        columns = {table: columns[table] for table in public_tables()}
        for table in public_tables():
            if table in empty or not con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]:
                continue
            target = warehouse / "tables" / table / f"run={run}" / generation
            shutil.rmtree(target, ignore_errors=True)  # an earlier attempt's, when a worker died under it
            target.parent.mkdir(parents=True, exist_ok=True)
            if any(name == "rank" for name, _ in columns[table]):
                con.execute(f"COPY {table} TO '{_quote(target)}' (FORMAT parquet, PARTITION_BY (rank))")
            else:
                target.mkdir()
                con.execute(f"COPY {table} TO '{_quote(target / 'data_0.parquet')}' (FORMAT parquet)")
            files[table] = sorted(str(p.relative_to(target)) for p in target.rglob("*.parquet"))
    return files, columns


class Warehouse:
    """A warehouse folder opened for writing by one batch: the manifest in memory, committed atomically."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.runs: dict[str, RunRecord] = {}
        self.columns: dict[str, list[list[str]]] = {}
        self.serial = 0
        self.schema_version: str | None = None
        #: Generations (run, generation) the manifest in memory no longer names: removed after the commit.
        self._retired: list[tuple[str, str]] = []
        #: When the manifest was last committed (time.monotonic), and whether the one in memory has changed since.
        self._committed_at = time.monotonic()
        self.uncommitted = False
        manifest = self.root / MANIFEST
        if manifest.is_file():
            data = _read_manifest(manifest)
            self.serial = int(data["serial"])
            self.schema_version = data.get("schema_version")
            self.columns = data.get("columns", {})
            self.runs = {run: RunRecord(entry["row"], entry["files"]) for run, entry in data["runs"].items()}

    @staticmethod
    def prepare(root: Path) -> None:
        """Create the warehouse folder (or check that an existing one is profpipe's)."""
        if root.exists() and not root.is_dir():
            raise UsageError(f"warehouse {root} exists and is not a folder")
        if root.is_dir() and any(root.iterdir()) and not (root / MARKER).is_file():
            raise UsageError(f"{root} is not empty and is not a profpipe warehouse (no {MARKER}); "
                             "profpipe writes only into folders it made: choose another -w")
        try:
            root.mkdir(parents=True, exist_ok=True)
            (root / MARKER).write_text('{"written_by": "profpipe", "what": "a warehouse of profpipe batch"}\n')
        except OSError as exc:
            raise UsageError(f"cannot write the warehouse {root}: {exc.strerror or exc}") from None

    def put(self, record: RunRecord, columns: dict[str, list[list[str]]] | None = None) -> None:
        """Replace (or add) a run's record; its files of another generation go at the next commit."""
        old = self.runs.get(record.run)
        self.runs[record.run] = record
        self.columns.update(columns or {})
        self.uncommitted = True
        if old is not None and old.generation and old.generation != record.generation:
            self._retired.append((record.run, old.generation))

    def drop(self, run: str) -> None:
        """Forget a run; its files go at the next commit."""
        old = self.runs.pop(run, None)
        self.uncommitted = True
        if old is not None and old.generation:
            self._retired.append((run, old.generation))

    def commit(self, schema_version: str) -> None:
        """Make the manifest in memory the warehouse's, atomically (write, fsync, rename, fsync folder),
        then remove the files of the generations it no longer names."""
        self.serial += 1
        self.schema_version = schema_version
        data = {"written_by": "profpipe", "format": MANIFEST_FORMAT, "serial": self.serial,
                "schema_version": schema_version, "columns": self.columns,
                "runs": {run: {"row": _jsonable(r.row), "files": r.files} for run, r in sorted(self.runs.items())}}
        _atomic_write(self.root / MANIFEST, json.dumps(data, separators=(",", ":")).encode())
        self._committed_at, self.uncommitted = time.monotonic(), False
        while self._retired:
            self._remove_generation(*self._retired.pop())

    def commit_soon(self, schema_version: str) -> None:
        """Commit, unless the last commit is less than COMMIT_EVERY_S old: the batch commits the runs that end close
        together as one (the manifest of 1,000 runs rewritten and synced after each small run would cost more than
        the run). The caller commits what is left at the end, and on the way out of an interrupted batch; a run
        whose commit a SIGKILL prevents is analysed again next time (its files are garbage, collected then)."""
        if time.monotonic() - self._committed_at >= COMMIT_EVERY_S:
            self.commit(schema_version)
        else:
            self.uncommitted = True

    def _remove_generation(self, run: str, generation: str) -> None:
        for table_dir in _table_dirs(self.root):
            shutil.rmtree(table_dir / f"run={run}" / generation, ignore_errors=True)
            _remove_if_empty(table_dir / f"run={run}")

    def collect_garbage(self) -> int:
        """Remove the files of generations the manifest does not name (a killed batch's) and the staging
        folder; return how many generation folders were removed."""
        live = {(r.run, r.generation) for r in self.runs.values() if r.generation}
        removed = 0
        for table_dir in _table_dirs(self.root):
            for run_dir in table_dir.glob("run=*"):
                for generation in run_dir.iterdir():
                    if (run_dir.name.removeprefix("run="), generation.name) not in live:
                        shutil.rmtree(generation, ignore_errors=True)
                        removed += 1
                _remove_if_empty(run_dir)
        shutil.rmtree(self.root / ".staging", ignore_errors=True)
        for stale in self.root.glob(f".{MANIFEST}.tmp-*"):
            stale.unlink(missing_ok=True)
        for stale in self.root.glob(f".{CATALOG}.tmp-*"):
            stale.unlink(missing_ok=True)
        return removed

    def write_catalog(self) -> None:
        """catalog.duckdb: a view per table over every run (absolute paths) and the batch_runs table;
        replaced atomically. Skipped when it already describes this manifest."""
        target = self.root / CATALOG
        if target.is_file() and _catalog_serial(target) == self.serial:
            return
        tmp = self.root / f".{CATALOG}.tmp-{os.getpid()}"
        tmp.unlink(missing_ok=True)
        with duckdb_connect(tmp) as con:
            _create_views(con, self.root, self.runs, self.columns, run=None)
            from .trends import materialize  # the report's trend aggregates, cached per run and generation

            materialize(con, self.runs, target if target.is_file() else None)
            con.execute("CREATE TABLE warehouse_info AS SELECT ? AS serial, ? AS schema_version",
                        [self.serial, self.schema_version])
        os.replace(tmp, target)
        _fsync_dir(self.root)


@contextmanager
def locked(root: Path) -> Iterator[None]:
    """Hold the warehouse's lock for the body, or fail at once naming the batch that holds it. The lock is
    the kernel's (flock): it goes when its process does, SIGKILL included."""
    handle = open(root / ".lock", "a+", encoding="utf-8")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise UsageError(f"warehouse {root} is being written by another batch ({holder}); two batches never "
                             "write one warehouse at once: wait for it, or use another -w") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} on {os.uname().nodename}, since {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        handle.flush()
        yield
    finally:
        handle.close()


def is_warehouse(path: Path) -> bool:
    return (path / MARKER).is_file() and (path / MANIFEST).is_file()


def connect(root: Path, run: str | None = None, tables: tuple[str, ...] | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection over the warehouse at `root`, read from its manifest: a view per
    public table over every run (column `run` first) and batch_runs; with `run`, views of that run's
    tables only, without the `run` column, and the staging views over them, like one run's profile.duckdb; with
    `tables`, views of those tables only (and batch_runs), no macros: a view reads every file's footer when it is
    created, which over 1,000 runs takes seconds a table."""
    root = root.resolve()
    if not is_warehouse(root):
        raise UsageError(f"{root}: not a profpipe warehouse (no {MANIFEST}; `profpipe batch -w` makes one)")
    warehouse = Warehouse(root)
    if run is not None and run not in warehouse.runs:
        raise UsageError(f"no run {run!r} in the warehouse {root} (runs: {', '.join(sorted(warehouse.runs)) or 'none'})")
    con = duckdb_connect()
    columns = warehouse.columns if tables is None else {t: c for t, c in warehouse.columns.items() if t in tables}
    _create_views(con, root, warehouse.runs, columns, run, tables)
    if tables is not None:
        return con
    create_macros(con)
    if run is not None:
        set_run_options(con, {})
        run_models(con, [m for m in load_models() if m.layer == "staging"])
    return con


def open_run(warehouse: Path, run: str) -> duckdb.DuckDBPyConnection:
    """A connection whose views hold exactly the public tables of one run of the warehouse."""
    return connect(warehouse, run)


def run_built(warehouse: Path, run: str) -> frozenset[str] | None:
    """The models and tables a run of the warehouse built (RunContext.built): None when it built every one, else
    every one but its tables_not_built (--select)."""
    lacks = Warehouse(warehouse).runs[run].row.get("tables_not_built")
    if lacks is None:
        return None
    return frozenset([*catalog(), *(m.name for m in load_models())]) - set(lacks)


def batch_runs_table(runs: dict[str, RunRecord]) -> pa.Table:
    """The batch_runs ledger of the manifest's runs."""
    rows = [dict(r.row) for _, r in sorted(runs.items())]
    for row in rows:
        if isinstance(row.get("analysed_at"), (int, float)):
            row["analysed_at"] = int(row["analysed_at"])
    return pa.Table.from_pylist(rows, schema=BATCH_RUNS_SCHEMA) if rows else BATCH_RUNS_SCHEMA.empty_table()


def _create_views(con: duckdb.DuckDBPyConnection, root: Path, runs: dict[str, RunRecord],
                  columns: dict[str, list[list[str]]], run: str | None, tables: tuple[str, ...] | None = None) -> None:
    """A view per table of `columns` (the manifest's: the columns the runs' files have) and per table of the
    contract (contract_columns; only `tables` where given), with the contract's columns the files lack as NULL."""
    chosen = {run: runs[run]} if run is not None else runs
    contract = {t: c for t, c in contract_columns().items() if tables is None or t in tables}
    for table in sorted(set(columns) | set(contract)):
        described = columns.get(table) or [list(c) for c in contract[table]]
        paths = [root / "tables" / table / f"run={r.run}" / r.generation / f
                 for r in chosen.values() if r.generation for f in r.files.get(table, [])]
        names = [name for name, _ in described]
        lacking = [(name, kind) for name, kind in contract.get(table, ()) if name not in names]
        described = [*described, *map(list, lacking)]
        selected = ", ".join([*(_ident(n) for n in names),
                              *(f"CAST(NULL AS {kind}) AS {_ident(name)}" for name, kind in lacking)])
        head = "" if run is not None else "run, "
        if paths:
            partitioned = "rank" in names and any("rank=" in str(p) for p in paths)
            types = {"run": "VARCHAR"} | ({"rank": dict(map(tuple, described))["rank"]} if partitioned else {})
            hive = ", ".join(f"'{k}': '{v}'" for k, v in types.items())
            listed = ", ".join(f"'{_quote(p)}'" for p in paths)
            files = f"read_parquet([{listed}], hive_partitioning = true, hive_types = {{{hive}}}, union_by_name = true)"
            try:
                con.execute(f"CREATE VIEW {_ident(table)} AS SELECT {head}{selected} FROM {files}")
            except duckdb.BinderException:  # the run's files predate a column the manifest names (a later run's)
                present = {name for name, *_ in con.execute(f"DESCRIBE SELECT * FROM {files}").fetchall()}
                selected = ", ".join(_ident(name) if name in present else f"CAST(NULL AS {kind}) AS {_ident(name)}"
                                     for name, kind in described)
                con.execute(f"CREATE VIEW {_ident(table)} AS SELECT {head}{selected} FROM {files}")
        else:
            typed = ", ".join(f"CAST(NULL AS {kind}) AS {_ident(name)}" for name, kind in described)
            empty_run = "" if run is not None else "CAST(NULL AS VARCHAR) AS run, "
            con.execute(f"CREATE VIEW {_ident(table)} AS SELECT {empty_run}{typed} WHERE false")
    if run is None:
        ledger = batch_runs_table(runs)
        con.register("_batch_runs", ledger)
        con.execute("CREATE TABLE batch_runs AS SELECT * FROM _batch_runs")
        con.unregister("_batch_runs")
        for column, meaning in BATCH_RUNS_DOCS.items():
            con.execute(f"COMMENT ON COLUMN batch_runs.{column} IS '{_quote(meaning)}'")
        con.execute("COMMENT ON TABLE batch_runs IS 'One row per run in the warehouse: the ledger of profpipe batch'")


def _read_manifest(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: the warehouse manifest cannot be read ({exc}); it is only ever replaced "
                         "whole, so this file was changed by hand or the disk is damaged") from None
    if data.get("written_by") != "profpipe" or data.get("format") != MANIFEST_FORMAT:
        raise UsageError(f"{path}: not a manifest this profpipe writes (format {data.get('format')!r})")
    return data


def _catalog_serial(path: Path) -> int | None:
    try:
        with duckdb_connect(path, read_only=True) as con:
            return con.execute("SELECT serial FROM warehouse_info").fetchone()[0]
    except duckdb.Error:
        return None


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}"
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _table_dirs(root: Path) -> list[Path]:
    tables = root / "tables"
    return sorted(p for p in tables.iterdir() if p.is_dir()) if tables.is_dir() else []


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in row.items()}


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _quote(text: object) -> str:
    return str(text).replace("'", "''")
