"""`profpipe batch`: analyse every run under some roots into one warehouse, incrementally, on many cores.

Where it sits: above the pipeline. The driver (this process) finds the runs, fingerprints them, decides
what to analyse, discovers each run's sources and holds the warehouse lock; the work goes to an executor
(a local process pool or a Dask cluster) as units of one source (ingest: profpipe.run.ingest_source)
and of one run (merge, models and publishing the tables: `_build_run`). Workers write their results into
the warehouse's staging and generation folders themselves; only small outcomes travel back. The driver
commits each finished run to the manifest (profpipe/warehouse.py), so a batch killed at any moment
loses at most the runs in flight.
"""
from __future__ import annotations

import concurrent.futures as cf
import hashlib
import os
import re
import shutil
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISREG
from typing import Any
from urllib.parse import urlsplit

from .database import configured
from .discover import Source, ascend_cluster_ranks, is_trace_file, loose_files, trace_stem
from .errors import NoProfilerData, ProfpipeError, UsageError
from .health import HealthEvent, HealthLedger
from .ingest.scratch import sweep_scratch_folders
from .meter import StageMeter
from .options import Options
from .parallel import cores, local_workers, process_pool, submit
from .report import write_warehouse_report
from .resources import data_dir
from .run import (IngestOutcome, QuietReporter, Reporter, build_output, find_sources, ingest_source, selected_sources,
                  source_error)
from .safety import raise_if_interrupted, stop_on_signals
from .version import VERSION
from .warehouse import RunRecord, Warehouse, locked, not_built, publish_run, selection_text

#: Executors `--executor` accepts.
EXECUTORS = ("local", "dask")
_RUN_ID_CHARACTER = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class BatchOptions:
    """What `profpipe batch` does: which runs, into which warehouse, on which executor."""

    roots: tuple[Path, ...]
    warehouse: Path
    #: Every folder this many levels below a root is one run (0: the root itself). Ignored with `runs_glob`.
    run_depth: int = 1
    #: A glob relative to each root naming the run folders (e.g. "*/job-*"); overrides run_depth.
    runs_glob: str | None = None
    #: Also compare content hashes, not only file lists, sizes and mtimes.
    verify: bool = False
    #: Keep the tables of runs whose folder is gone (status missing) instead of dropping them.
    keep_missing: bool = False
    #: Analyse again the runs that failed last time although their input did not change.
    retry_failed: bool = False
    executor: str = "local"
    #: Dask scheduler address (None with --executor dask: a LocalCluster on this machine).
    scheduler: str | None = None
    #: Worker processes (None: sized to the machine's cores and memory).
    workers: int | None = None
    analysis: Options = field(default_factory=Options)


@dataclass(frozen=True)
class RunFolder:
    """One run: its id in the warehouse and its folder."""

    run: str
    path: Path


@dataclass
class BatchResult:
    """What one batch did, by run id."""

    analysed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    empty: dict[str, str] = field(default_factory=dict)
    unchanged: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    #: What each root held (its runs, what was looked for, why none was found).
    roots: list[RootScan] = field(default_factory=list)
    workers: int = 0
    wall_s: float = 0.0

    @property
    def exit_code(self) -> int:
        """0 when every run analysed was read whole or skipped as unchanged; 3 when some run failed."""
        return 3 if self.failed else 0


def schema_version() -> str:
    """The data contract's version: profpipe's version and a hash of the table declarations and the SQL
    models. When it changes, every run in a warehouse is analysed again (its numbers may differ)."""
    digest = hashlib.blake2b(digest_size=8)
    for folder in (data_dir("schemas"), data_dir("sql")):
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return f"{VERSION}+{digest.hexdigest()}"


@dataclass
class RootScan:
    """What one root holds: its runs, what was looked for, and how the root was read when it is not a plain
    folder of run folders (notes)."""

    root: Path
    looked_for: str
    runs: list[RunFolder] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Why no run was found (None when some was).
    reason: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"root": str(self.root), "runs_found": len(self.runs), "looked_for": self.looked_for,
                "reason": self.reason, "notes": self.notes}


def find_runs(roots: tuple[Path, ...], run_depth: int = 1, runs_glob: str | None = None,
              exclude: Path | None = None) -> list[RunFolder]:
    """The runs under `roots` (scan_roots), by id. Two runs with one id are a usage error."""
    return _by_id(scan_roots(roots, run_depth, runs_glob, exclude))


def _by_id(scans: list[RootScan]) -> list[RunFolder]:
    found: dict[str, RunFolder] = {}
    for scan in scans:
        for folder in scan.runs:
            if folder.run in found and found[folder.run].path != folder.path:
                raise UsageError(f"runs {found[folder.run].path} and {folder.path} would both be run {folder.run!r} in "
                                 "the warehouse: batch their roots into separate warehouses, or pick runs with --runs")
            found[folder.run] = folder
    return sorted(found.values(), key=lambda r: r.run)


def scan_roots(roots: tuple[Path, ...], run_depth: int = 1, runs_glob: str | None = None,
               exclude: Path | None = None) -> list[RootScan]:
    """The runs under each root: every folder `run_depth` levels below it (hidden ones, links and `exclude` left
    out), or the folders and trace files matching `runs_glob`.

    A folder above that level that holds profiler files directly is not a folder of runs: when they are files of a
    format whose run is many files (MindSpore, msprof, raw Ascend, MindData...), the folder is one run (what is
    below it is its parts); when they are traces that stand alone (Kineto/Paddle JSON, Nsight Systems SQLite), the
    folder is one run if `analyse` reads them as one (every trace has a rank, or there is only one trace) and it
    holds no subfolders, else each trace file is a run of its own. A run's id is its path below its root with '/'
    written as '.' (a trace file's without its trace suffix; a root that is itself the run: the root's name);
    characters other than letters, digits, '.', '_' and '-' become '_'."""
    scans = []
    for root in roots:
        root = root.resolve()
        if not root.is_dir():
            raise UsageError(f"{root}: no such folder")
        if runs_glob is not None:
            scan = RootScan(root, f"folders and trace files (Kineto/Paddle JSON, Nsight Systems SQLite) matching "
                                  f"--runs {runs_glob!r} below it")
            paths = sorted(p for p in root.glob(runs_glob) if p.is_dir() or is_trace_file(p))
        else:
            if run_depth == 0:
                looked = "the root itself as one run (--run-depth 0)"
            else:
                looked = (f"run folders {run_depth} level{'s' * (run_depth > 1)} below it (--run-depth {run_depth}), "
                          + ("and profiler files directly in it" if run_depth == 1 else
                             "and profiler files directly in it and in the folders between")
                          + " (such a folder is a run, or its trace files are)")
            scan = RootScan(root, looked)
            paths = _walk_runs(root, run_depth, scan)
        for path in paths:
            if exclude is not None and (path == exclude or exclude in path.parents):
                continue
            relative = path.relative_to(root)
            parts = [*relative.parts[:-1], trace_stem(relative.name)] if path.is_file() else relative.parts
            name = ".".join(parts) if parts else root.name
            scan.runs.append(RunFolder(_RUN_ID_CHARACTER.sub("_", name), path))
        if not scan.runs:
            scan.reason = _no_runs_reason(root, run_depth, runs_glob)
        scans.append(scan)
    _by_id(scans)
    return scans


def _walk_runs(root: Path, run_depth: int, scan: RootScan) -> list[Path]:
    """The run folders (and trace files that are runs) `run_depth` levels below `root` (scan_roots)."""
    level, runs = [root], []
    for _ in range(run_depth):
        below = []
        for folder in level:
            loose = loose_files(folder)
            subfolders = _subfolders(folder)
            ranks = ascend_cluster_ranks(subfolders)
            if ranks:
                scan.notes.append(f"{folder} holds Ascend result folders of ranks {', '.join(map(str, ranks))}: one run "
                                  "(a cluster, as `profpipe analyse` reads the folder); to batch each result folder as "
                                  "a run of its own, pass --runs with a glob naming them")
                runs.append(folder)
                continue
            if loose.others:
                shown = ", ".join(p.name for p in loose.others[:3]) + (", ..." if len(loose.others) > 3 else "")
                scan.notes.append(f"{folder} holds profiler files directly ({shown}): it is one run (a dump whose "
                                  "files are many), not a folder of runs")
                runs.append(folder)
                continue
            traces = sorted(t.files.get("trace", t.files.get("sqlite")) for t in loose.traces)
            if traces and not subfolders and loose.traces_read_together():
                ranks = sorted({t.rank for t in loose.traces})
                scan.notes.append(
                    f"{folder} holds {len(traces)} trace file{'s' * (len(traces) > 1)} directly"
                    + (f" with ranks {', '.join(map(str, ranks))}: one run (the ranks and profiling cycles of one "
                       "job, as `profpipe analyse` reads the folder)" if len(traces) > 1 else ": one run")
                    + "; to batch each trace file as a run of its own, pass --runs with a glob naming the files "
                      "(e.g. --runs '*.pt.trace.json')")
                runs.append(folder)
                continue
            if traces:
                why = ("the folder also holds folders" if subfolders else
                       "not every trace has a rank (distributedInfo.rank, or rank-<n>/worker<n> in its name), so "
                       "they are not the ranks of one job")
                scan.notes.append(f"{folder} holds {len(traces)} trace file{'s' * (len(traces) > 1)} directly: each "
                                  f"is a run of its own ({why}); the rank traces of one job belong in a folder of "
                                  "their own")
                runs.extend(traces)
            below.extend(subfolders)
        level = sorted(below)
    return sorted(runs + level)


def _no_runs_reason(root: Path, run_depth: int, runs_glob: str | None) -> str:
    if runs_glob is not None:
        return f"no folder and no trace file below it matches --runs {runs_glob!r}"
    if run_depth == 0:
        return "the root is excluded (the warehouse)"
    where = "no folders" if run_depth == 1 else f"no folders {run_depth} levels below it"
    return (f"it holds {where} (hidden ones and links left out) and no profiler files directly; point ROOT at the "
            "folder that holds the run folders, or set --run-depth (0: the root is one run) or --runs GLOB")


def _subfolders(folder: Path) -> list[Path]:
    """The folders in `folder`, hidden ones and links left out."""
    try:
        return [p for p in folder.iterdir() if p.is_dir() and not p.is_symlink() and not p.name.startswith(".")]
    except OSError:
        return []


def fingerprint_run(folder: Path, verify: bool = False) -> tuple[str, str | None, int, int]:
    """(stat fingerprint, content fingerprint with `verify`, bytes, files) of every regular file under
    `folder` (a run that is one trace file: of that file). The stat fingerprint hashes each file's path, size and
    mtime: cheap, and it changes whenever a profiler rewrites or adds a file. The content fingerprint hashes every
    byte."""
    entries = []
    walk = os.walk(folder) if not folder.is_file() else [(str(folder.parent), [], [folder.name])]
    for directory, subfolders, names in walk:
        subfolders.sort()
        for name in names:
            path = Path(directory) / name
            try:
                info = path.lstat()
            except OSError:
                continue
            if S_ISREG(info.st_mode):  # a regular file, not a link: from the lstat above, no more syscalls
                entries.append((str(path.relative_to(folder.parent if folder.is_file() else folder)), info.st_size,
                                info.st_mtime_ns, path))
    entries.sort()
    stat_digest = hashlib.blake2b(digest_size=16)
    content_digest = hashlib.blake2b(digest_size=16) if verify else None
    for relative, size, mtime, path in entries:
        stat_digest.update(f"{relative}\0{size}\0{mtime}\n".encode())
        if content_digest is not None:
            content_digest.update(f"{relative}\0".encode())
            with open(path, "rb") as handle:
                while block := handle.read(8 * 1024 * 1024):
                    content_digest.update(block)
    content = None if content_digest is None else f"blake2b:{content_digest.hexdigest()}"
    return f"stat:{stat_digest.hexdigest()}", content, sum(e[1] for e in entries), len(entries)


def batch(options: BatchOptions, reporter: Reporter | None = None) -> BatchResult:
    """Analyse every new or changed run under `options.roots` into the warehouse `options.warehouse`.

    Unchanged runs (same files, sizes and mtimes; same content with `verify`) are skipped unless the data
    contract changed (schema_version). Runs whose folder is gone are dropped (kept as missing with
    `keep_missing`). A run that fails is a batch_runs row with its error and keeps its last good tables.
    Only one batch writes a warehouse at a time (a lock); SIGINT/SIGTERM stop it cleanly and a SIGKILL
    leaves every run wholly old or wholly new: the next batch finishes the work.
    """
    reporter = reporter or QuietReporter()
    started = time.perf_counter()
    if options.executor not in EXECUTORS:
        raise UsageError(f"--executor must be one of {', '.join(EXECUTORS)}")
    options.analysis.selection  # noqa: B018 - a model name that is no model is a usage error before any run
    root = options.warehouse.resolve()
    for input_root in options.roots:
        resolved = input_root.resolve()
        if root == resolved or resolved in root.parents or root in resolved.parents:
            raise UsageError(f"the warehouse {options.warehouse} and the input {input_root} overlap; profpipe never "
                             "writes into its inputs: put the warehouse elsewhere")
    Warehouse.prepare(root)
    result = BatchResult()
    with locked(root), stop_on_signals():
        warehouse = Warehouse(root)
        warehouse.collect_garbage()
        version = schema_version()
        result.roots = scan_roots(options.roots, options.run_depth, options.runs_glob, exclude=root)
        runs = _by_id(result.roots)
        todo, ledger_changed = _plan(runs, warehouse, version, options, result)
        if ledger_changed:
            warehouse.commit(version)
        try:
            if todo:
                _analyse_runs(todo, warehouse, version, options, reporter, result)
        finally:  # the runs that ended since the last commit (an interrupted batch keeps them too)
            if warehouse.uncommitted:
                warehouse.commit(version)
        warehouse.write_catalog()
        if options.analysis.visual_report is not False:
            write_warehouse_report(root, root / "report.html")
    result.wall_s = time.perf_counter() - started
    return result


@dataclass
class _PlannedRun:
    folder: RunFolder
    fingerprint: str
    content_fingerprint: str | None
    input_bytes: int
    input_files: int
    generation: str = ""
    sources: list[Source] = field(default_factory=list)
    discover_events: list[HealthEvent] = field(default_factory=list)
    outcomes: dict[int, IngestOutcome] = field(default_factory=dict)
    ingest_s: float = 0.0
    started: float = 0.0
    #: When the batch started (Unix s): the run's analysed_at, shared by the batch's runs so that they sort by run id.
    batch_started_at: int = 0


def _plan(runs: list[RunFolder], warehouse: Warehouse, version: str, options: BatchOptions,
          result: BatchResult) -> tuple[list[_PlannedRun], bool]:
    """(the runs to analyse, whether the ledger changed): unchanged runs go to result.unchanged (with
    `verify`, their first content fingerprint is recorded), gone ones are dropped or marked missing."""
    present = {r.run for r in runs}
    ledger_changed = False
    for run, record in list(warehouse.runs.items()):
        if run in present or Path(record.row["path"]).exists():
            continue
        if options.keep_missing:
            if record.row["status"] != "missing":
                warehouse.put(RunRecord({**record.row, "status": "missing"}, record.files))
                ledger_changed = True
            result.missing.append(run)
        else:
            warehouse.drop(run)
            result.dropped.append(run)
            ledger_changed = True
    todo = []
    batch_started_at = int(time.time())
    for folder in runs:
        stat, content, size, count = fingerprint_run(folder.path, options.verify)
        record = warehouse.runs.get(folder.run)
        if record is not None and _unchanged(record, folder, stat, content, version, options):
            if content is not None and record.row.get("content_fingerprint") is None:
                record.row["content_fingerprint"] = content
                ledger_changed = True
            result.unchanged.append(folder.run)
            continue
        todo.append(_PlannedRun(folder, stat, content, size, count, batch_started_at=batch_started_at))
    return todo, ledger_changed


def _unchanged(record: RunRecord, folder: RunFolder, stat: str, content: str | None, version: str,
               options: BatchOptions) -> bool:
    row = record.row
    if row["schema_version"] != version or row["path"] != str(folder.path) or row["fingerprint"] != stat:
        return False
    if row["status"] == "missing":  # the folder is back
        return False
    if content is not None and row.get("content_fingerprint") not in (None, content):
        return False
    if row.get("selection") != selection_text(options.analysis.selection):  # built with another --select
        return False
    return not (options.retry_failed and row["status"] == "failed")


def _analyse_runs(todo: list[_PlannedRun], warehouse: Warehouse, version: str, options: BatchOptions,
                  reporter: Reporter, result: BatchResult) -> None:
    """Discover each run's sources, fan the sources out, then each run's models; commit runs as they end."""
    staging = warehouse.root / ".staging"
    for planned in todo:
        planned.generation = f"g{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:8]}"
        health = HealthLedger()
        try:
            planned.sources = selected_sources(find_sources(planned.folder.path, options.analysis, health),
                                               options.analysis.selection, [])
        except NoProfilerData as error:
            _commit_failure(warehouse, version, planned, str(error), result, status="empty")
        except ProfpipeError as error:
            _commit_failure(warehouse, version, planned, str(error), result)
        planned.discover_events = health.events
    todo = [p for p in todo if p.sources]
    largest = max((s.size_bytes() for p in todo for s in p.sources), default=0)
    reporter.stage("runs", len(todo))
    with _executor(options, largest) as pool:
        result.workers = pool.workers
        pending: dict[cf.Future, _Task] = {}

        def submit(task: _Task) -> None:
            pending[pool.submit(_timed, options.analysis.memory_limit_mb, pool.host_threads, *task.call)] = task

        # Ingest units wait here and go out two per worker at a time, so that a run's model unit, sent as
        # soon as its sources are read, overtakes them: runs are committed while the batch goes on, and
        # staging holds the parts of a few runs, not of the whole batch.
        def ingest_tasks(planned: _PlannedRun, deaths: int = 0) -> list[_Task]:
            return [_Task(planned, index, (ingest_source, source, staging / planned.generation / f"source-{index}",
                                           options.analysis.strict), deaths)
                    for index, source in enumerate(planned.sources)]

        waiting = deque(task for planned in todo for task in ingest_tasks(planned))
        while pending or waiting:
            while waiting and len(pending) < 2 * pool.workers:
                task = waiting.popleft()
                if task.run.outcomes is not None:
                    task.run.started = task.run.started or time.perf_counter()
                    submit(task)
            if not pending:
                continue
            done, _ = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
            for future in done:
                task = pending.pop(future, None)
                if task is None or task.run.outcomes is None:
                    continue  # resubmitted after a worker died, or its run already failed
                planned = task.run
                try:
                    value, seconds = future.result()
                except cf.process.BrokenProcessPool:
                    # A worker died (the kernel's OOM killer, a crash in a native library): every task in
                    # flight lost its worker. Each goes to a fresh pool once more; a task that was in
                    # flight at two deaths fails its run.
                    raise_if_interrupted()
                    pool.renew()
                    lost = [task] + [pending.pop(f) for f in list(pending)]
                    for again in lost:
                        if again.run.outcomes is None:
                            continue
                        if again.deaths >= 1:
                            _fail(warehouse, version, again.run, f"{again.run.folder.path}: a worker died twice while "
                                  "analysing this run (out of memory? see --workers)", result, reporter)
                            continue
                        again.deaths += 1
                        if again.source_index is None:
                            # the model unit's merge moves the parts into its output: run from them once more, it
                            # would find them gone (a run of no event). Its sources are read again first.
                            again.run.outcomes = {}
                            waiting.extendleft(reversed(ingest_tasks(again.run, again.deaths)))
                        else:
                            submit(again)
                    continue
                except Exception as exc:  # noqa: BLE001 - a worker's failure is its run's, never the batch's
                    raise_if_interrupted()
                    _fail(warehouse, version, planned, str(source_error(exc, planned.folder.path)), result, reporter)
                    continue
                if task.source_index is None:
                    _commit_success(warehouse, version, planned, value, seconds, result)
                    reporter.advance(1)
                    continue
                planned.outcomes[task.source_index] = value
                planned.ingest_s += seconds
                if len(planned.outcomes) == len(planned.sources):
                    outcomes = [planned.outcomes[i] for i in range(len(planned.sources))]
                    submit(_Task(planned, None, (_build_run, planned.folder, planned.sources, outcomes,
                                                 planned.discover_events, options.analysis, warehouse.root,
                                                 planned.generation)))
    shutil.rmtree(staging, ignore_errors=True)


@dataclass
class _Task:
    """One unit of work in flight: a source's ingest (source_index) or its run's models (None)."""

    run: _PlannedRun
    source_index: int | None
    call: tuple[Any, ...]
    #: Worker deaths this task was in flight at.
    deaths: int = 0


def _fail(warehouse: Warehouse, version: str, planned: _PlannedRun, error: str, result: BatchResult,
          reporter: Reporter) -> None:
    _commit_failure(warehouse, version, planned, error, result)
    planned.outcomes = None  # type: ignore[assignment]
    reporter.advance(1)


def _commit_success(warehouse: Warehouse, version: str, planned: _PlannedRun, built: dict[str, Any],
                    models_s: float, result: BatchResult) -> None:
    row = _row(planned, version, status=built["status"], error=None, generation=planned.generation)
    row.update(built["row"], models_s=models_s, wall_s=time.perf_counter() - planned.started)
    warehouse.put(RunRecord(row, built["files"]), built["columns"])
    warehouse.commit_soon(version)
    shutil.rmtree(warehouse.root / ".staging" / planned.generation, ignore_errors=True)
    result.analysed.append(planned.folder.run)


def _commit_failure(warehouse: Warehouse, version: str, planned: _PlannedRun, error: str,
                    result: BatchResult, status: str = "failed") -> None:
    """A failed run (or an empty one: no profiler data in its folder): its ledger row says why; its last
    good tables (if any) stay."""
    previous = warehouse.runs.get(planned.folder.run)
    row = _row(planned, version, status=status, error=error,
               generation=previous.generation if previous else None)
    if previous is not None:  # the tables kept are the last good version's, built with its selection
        row.update(selection=previous.row.get("selection"), tables_not_built=previous.row.get("tables_not_built"))
    warehouse.put(RunRecord(row, previous.files if previous else {}))
    warehouse.commit_soon(version)
    shutil.rmtree(warehouse.root / ".staging" / planned.generation, ignore_errors=True)
    (result.failed if status == "failed" else result.empty)[planned.folder.run] = error


def _row(planned: _PlannedRun, version: str, *, status: str, error: str | None,
         generation: str | None) -> dict[str, Any]:
    return {"run": planned.folder.run, "path": str(planned.folder.path), "status": status, "error": error,
            "fingerprint": planned.fingerprint, "content_fingerprint": planned.content_fingerprint,
            "generation": generation, "analysed_at": planned.batch_started_at, "wall_s": None,
            "ingest_s": planned.ingest_s, "models_s": None, "input_bytes": planned.input_bytes,
            "input_files": planned.input_files, "sources": len(planned.sources), "ranks": None,
            "health_events": None, "health_lossy_rows": None, "sources_failed": None,
            "profpipe_version": VERSION, "schema_version": version, "selection": None, "tables_not_built": None}


def _build_run(folder: RunFolder, sources: list[Source], outcomes: list[IngestOutcome],
               discover_events: list[HealthEvent], options: Options, warehouse: Path,
               generation: str) -> dict[str, Any]:
    """The unit of model work, run in a worker: merge the run's parts, build its profile.duckdb in staging
    and publish its public tables under `generation`. Returns the ledger columns it knows and the files."""
    out = warehouse / ".staging" / generation / "out"
    shutil.rmtree(out, ignore_errors=True)  # an earlier attempt's, when a worker died under it
    out.mkdir(parents=True)
    health = HealthLedger()
    for event in discover_events:
        health.add(event)
    built = build_output(folder.path, out, sources, outcomes, options, health, QuietReporter(), StageMeter(),
                         exports=False)
    selection = options.selection
    lacks = [] if selection is None else not_built(selection)  # never published: the run did not build them
    files, columns = publish_run(out / "profile.duckdb", warehouse, folder.run, generation,
                                 (built.models.empty if built.models else set()) | set(lacks))
    shutil.rmtree(out, ignore_errors=True)
    lossy_rows = sum(int(r["rows"] or 0) for r in health.rows() if r["action"] in ("dropped", "clamped", "repaired"))
    return {"status": "partial" if built.skipped or health.lossy else "ok", "files": files, "columns": columns,
            "row": {"ranks": len(built.ranks), "health_events": len(health.events), "health_lossy_rows": lossy_rows,
                    "sources_failed": len(built.skipped), "selection": selection_text(selection),
                    "tables_not_built": None if selection is None else lacks}}


def _timed(memory_mb: int | None, host_threads: dict[str, int] | None, function: Callable[..., Any],
           *args: Any) -> tuple[Any, float]:
    """A unit of work in a worker, under the batch's memory limit (analyse's --memory-limit) and, on a Dask
    worker, with its host's share of DuckDB threads; and its seconds."""
    started = time.perf_counter()
    with configured(threads=_dask_duckdb_threads(host_threads), memory_mb=memory_mb):
        return function(*args), time.perf_counter() - started


def _dask_duckdb_threads(host_threads: dict[str, int] | None) -> int | None:
    """DuckDB threads for a unit on a Dask worker: the host's cores shared among the task threads of all the Dask
    workers on that host (`host_threads`, counted by the driver), so that they do not each start one DuckDB
    thread per core. None (keep the process's setting) for a local pool, whose workers got their share when
    they started, or when this is not a Dask worker."""
    if not host_threads:
        return None
    from distributed import get_worker

    try:
        address = get_worker().address
    except ValueError:
        return None
    share = host_threads.get(urlsplit(address).hostname or "")
    return max(1, cores() // share) if share else None


def _threads_by_host(scheduler_info: dict[str, Any]) -> dict[str, int]:
    """Task threads per host over a Dask cluster's workers (scheduler_info()["workers"] is keyed by address)."""
    threads: dict[str, int] = {}
    for address, worker in scheduler_info.get("workers", {}).items():
        host = urlsplit(address).hostname or ""
        threads[host] = threads.get(host, 0) + int(worker.get("nthreads", 1))
    return threads


class _Pool:
    """The executor the work goes to (a concurrent.futures.Executor) and its worker count; a local
    process pool can be renewed after a worker died (a Dask cluster replaces its workers itself)."""

    def __init__(self, make: Callable[[], cf.Executor], workers: int,
                 host_threads: dict[str, int] | None = None) -> None:
        self._make = make
        self.executor = make()
        self.workers = workers
        #: Dask only: task threads per host, for each unit's share of DuckDB threads (_dask_duckdb_threads).
        self.host_threads = host_threads

    def submit(self, function: Callable[..., Any], *args: Any) -> cf.Future:
        return submit(self.executor, function, *args)

    def renew(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.executor = self._make()
        sweep_scratch_folders()  # of the workers the broken pool killed (those not yet gone: by the next run)


@contextmanager
def _executor(options: BatchOptions, largest_source_bytes: int) -> Iterator[_Pool]:
    """The pool for this batch: a local process pool, or a Dask cluster's (`options.scheduler`, else a
    LocalCluster of local_workers processes)."""
    workers = options.workers or local_workers(largest_source_bytes)
    if options.executor == "local":
        pool = _Pool(lambda: process_pool(workers), workers)
        try:
            yield pool
        except BaseException:  # interrupted: leave the workers' current units, they end on their own
            pool.executor.shutdown(wait=False, cancel_futures=True)
            raise
        pool.executor.shutdown(wait=True)
        return
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise UsageError("--executor dask needs the dask distributed package: pip install 'dask[distributed]'") from None
    cluster = None
    if options.scheduler is None:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    else:
        try:
            client = Client(options.scheduler, timeout=30)
        except OSError as exc:
            raise UsageError(f"cannot reach the Dask scheduler {options.scheduler}: {exc}") from None
    host_threads = _threads_by_host(client.scheduler_info())
    workers = sum(host_threads.values()) if options.scheduler is not None else workers
    try:
        yield _Pool(lambda: client.get_executor(pure=False), workers, host_threads)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
