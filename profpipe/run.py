"""The pipeline end to end: discover -> ingest -> tables -> models -> export, into one output folder.

This is the only module that knows the order of the stages. The CLI and the Python API both
call `analyse`; progress goes to a `Reporter` (the CLI draws bars, the API stays quiet).
"""
from __future__ import annotations

import concurrent.futures as cf
import json
import platform
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from . import ingest
from .captures import number_captures, source_span
from .clocks import clock_findings
from .database import configured, transaction
from .discover import Source, discover
from .errors import (EXIT_COMPLETE, EXIT_PARTIAL, InputError, NoProfilerData, ProfpipeError, UsageError,
                     first_line_of)
from .models import Model, ModelRun, Selection, comment_on, load_models, run_models, set_run_options
from .profile_db import fill_tables, open_profile
from .health import HealthEvent, HealthLedger
from .ingest import user_metadata
from .ingest.scratch import sweep_scratch_folders
from .unread import DESCRIPTIVE_TABLES, inventory, nothing_read, report_unread
from .meter import StageMeter, peak_rss_bytes
from .options import Options
from .parallel import local_workers, process_pool, stop_workers, submit
from .version import VERSION
from .output import check_output, fingerprint, staged_output
from .safety import full_disk_error, interruptible, out_of_space_named, raise_if_interrupted, stop_on_signals
from .step_filter import keep_steps
from .step_health import unfinished_steps
from .tables import TableSink, catalog, merge_parts, table_row_counts

if TYPE_CHECKING:
    from .advisor import Finding

# The advisor, the exports and the visual report are imported where the run reaches them: a worker process that
# reads sources (ingest_source, here and in a batch) imports this module and needs none of them.


class Reporter(Protocol):
    """Receives progress: a stage starts with a total amount of work, then advances."""

    def stage(self, name: str, total: float) -> None: ...

    def advance(self, amount: float) -> None: ...


class QuietReporter:
    """A Reporter that reports nothing."""

    def stage(self, name: str, total: float) -> None:
        pass

    def advance(self, amount: float) -> None:
        pass


@dataclass
class RunResult:
    """What one analysis produced."""

    output: Path
    ranks: list[int]
    skipped: list[dict[str, Any]]
    summary: dict[str, Any]
    row_counts: dict[str, int]
    #: Seconds and peak memory per stage (manifest.json's timings_s and peak_rss_bytes).
    meter: StageMeter = field(default_factory=StageMeter)
    #: What the user should know beyond the trace-health ledger (a step_list a rank cannot apply, a timeline cut).
    notices: list[str] = field(default_factory=list)
    #: The advisor's verdict on every rule (findings.json, table advisor_finding), fired ones first.
    findings: list[Finding] = field(default_factory=list)
    #: Seconds per model run, and the models created empty because their inputs held no rows.
    models: ModelRun | None = None

    @property
    def health(self) -> dict[str, Any]:
        """The trace-health block of the summary (also the trace_health table)."""
        return self.summary["health"]

    @property
    def exit_code(self) -> int:
        """0 when every source was read whole; 3 (partial) when a source was skipped or a number was
        dropped, clamped or repaired (see trace_health)."""
        return EXIT_PARTIAL if self.skipped or self.health["partial"] else EXIT_COMPLETE


def analyse(path: str | Path, output: str | Path, options: Options | None = None,
            reporter: Reporter | None = None) -> RunResult:
    """Analyse the profiler folder (or single trace file) `path` into the output folder `output`, with
    `options` (profpipe.options.Options; default: MindSpore's defaults).

    `output` is replaced atomically, and only when it is empty, a folder profpipe wrote, or
    `options.force` is given; never when it is, holds or lies inside the input. With `options.strict`
    any data loss is fatal (a source that cannot be read, or a number dropped, clamped or repaired:
    the trace-health ledger), and the earlier output is kept. `reporter` receives progress.
    """
    options = (options or Options()).resolved()
    reporter = reporter or QuietReporter()
    path, output = Path(path), Path(output)
    if not path.exists():
        raise UsageError(f"{path}: no such file or folder")
    check_output(output, path, options.force)
    with stop_on_signals(), out_of_space_named(output.resolve().parent), configured(memory_mb=options.memory_limit_mb):
        sweep_scratch_folders()
        return _analyse(path, output, options, reporter)


def _analyse(path: Path, output: Path, options: Options, reporter: Reporter) -> RunResult:
    health = HealthLedger()
    meter = StageMeter()
    notices: list[str] = []
    with meter.stage("discover"):
        sources = selected_sources(find_sources(path, options, health), options.selection, notices)
    with staged_output(output) as tmp:
        with meter.stage("ingest"):
            outcomes = ingest_sources(sources, tmp / "parts", options, reporter, meter, notices)
        result = build_output(path, tmp, sources, outcomes, options, health, reporter, meter, notices=notices)
    result.output = output
    return result


#: Below this much input, sources are read one after the other: starting worker processes (each imports
#: DuckDB and pyarrow) costs more than reading small sources in parallel saves.
PARALLEL_MIN_BYTES = 64 * 2**20


def ingest_sources(sources: list[Source], parts: Path, options: Options, reporter: Reporter, meter: StageMeter,
                   notices: list[str]) -> list[IngestOutcome]:
    """Every source read into its part folder under `parts` (the outcomes in source order): by a pool of
    worker processes when there are several sources and enough input to pay for starting them (or
    `options.workers` says how many), else here, one after the other. A worker that dies (the system's
    out-of-memory killer) costs nothing: every source the pool did not finish is read here, one at a time. With
    `options.strict`, the error raised is that of the first failing source in order, as when reading here. Workers
    that were killed (an interrupt, a broken pool) leave scratch folders under $TMPDIR: they are swept at once."""
    sizes = [source.size_bytes() for source in sources]
    reporter.stage("ingest", sum(sizes))
    workers = options.workers if options.workers is not None else (
        local_workers(max(sizes)) if sum(sizes) >= PARALLEL_MIN_BYTES else 1)
    workers = min(workers, len(sources))
    outcomes: dict[int, IngestOutcome] = {}
    if workers > 1:
        pool = process_pool(workers, options.memory_limit_mb)
        try:
            futures = {submit(pool, ingest_source, sources[i], parts / f"source-{i}", options.strict): i
                       for i in sorted(range(len(sources)), key=lambda i: -sizes[i])}  # the largest first
            failed: dict[int, BaseException] = {}  # --strict: the error of the first source in order is raised
            pending = set(futures)
            while pending:
                done, pending = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
                for future in done:
                    index = futures[future]
                    if future.cancelled():
                        continue
                    try:
                        outcomes[index] = future.result()
                    except cf.process.BrokenProcessPool:
                        continue
                    except Exception as error:  # noqa: BLE001 - raised below once no earlier source can fail
                        failed[index] = error
                        continue
                    meter.worker_peak("ingest", outcomes[index].peak_rss_bytes)
                    reporter.advance(sizes[index])
                if failed:
                    first = min(failed)
                    for future in pending:
                        if futures[future] > first:
                            future.cancel()
                    if all(futures[future] > first for future in pending):
                        raise failed[first]
        except BaseException:
            stop_workers(pool)
            sweep_scratch_folders()
            raise
        pool.shutdown(wait=True)
        if len(outcomes) < len(sources):
            sweep_scratch_folders()  # the pool killed its other workers too
            notices.append(f"a worker process died while reading (out of memory? see --workers); the "
                           f"{len(sources) - len(outcomes)} sources the pool did not finish were read again here, "
                           "one at a time")
    for index, source in enumerate(sources):
        if index not in outcomes:
            outcomes[index] = ingest_source(source, parts / f"source-{index}", options.strict)
            reporter.advance(sizes[index])
    return [outcomes[index] for index in range(len(sources))]


def selected_sources(sources: list[Source], selection: Selection | None, notices: list[str]) -> list[Source]:
    """The sources a run with `selection` (--select) reads: those whose family may write a table a selected model
    reads (ingest.tables_of), each told the tables wanted (Source.wanted); all of them without a selection. The
    others are named in `notices`; when none is left, NoProfilerData says so."""
    if selection is None:
        return sources
    kept = [source for source in sources if ingest.tables_of(source) & selection.tables]
    left = [str(_location(source)) for source in sources if source not in kept]
    kept = [replace(source, wanted=selection.tables) for source in kept]
    if not kept:
        raise NoProfilerData(f"--select {' '.join(selection.asked)} reads the tables {sorted(selection.tables) or 'none'}, "
                             f"which none of the {len(sources)} sources found writes ({', '.join(left[:5])})")
    if left:
        notices.append(f"--select: {len(left)} sources not read, no selected model reads their tables: "
                       + ", ".join(left[:5]) + (" ..." if len(left) > 5 else ""))
    return kept


def find_sources(path: Path, options: Options, health: HealthLedger) -> list[Source]:
    """The sources of the run at `path` (discover), or a ProfpipeError saying what was looked for and which files of
    known profilers it found unread. Files of known profilers that no source reads go to `health` (profpipe/unread.py).
    """
    seen: list[Path] = []
    sources = discover(path, options.ranks, options.msprof_models, options.step_range_name,
                       health.for_source(str(path), -1), options.rank_map, seen)
    unread = inventory(path, sources, seen)
    if not sources:
        wanted = f" for ranks {list(options.ranks)}" if options.ranks else ""
        if unread:
            raise NoProfilerData(nothing_read(path, unread, [], [], health).replace(" read no event",
                                                                                  f" read no event{wanted}", 1))
        raise NoProfilerData(f"{path}: no profiler data found{wanted} (looked for MindSpore "
                            "cpu/gpu op_execute_timestamp and activity_execute_timestamp files, raw "
                            "Ascend hwts, training_trace, ts_track, Framework and AICPU files, msprof "
                            "exports, MindData logs, PyTorch and Paddle profiler traces and Nsight Systems "
                            "SQLite exports)")
    if options.ranks is None:  # with --ranks, the files of the other ranks are left out on purpose
        report_unread(unread, sources, path, health)
    return sources


@dataclass
class IngestOutcome:
    """What reading one source gave: its part folder (None when nothing was read), its health events,
    and the skipped-source entry when it failed. Small and picklable: it travels back from a worker."""

    part_dir: Path | None
    events: list[HealthEvent]
    skipped: dict[str, Any] | None = None
    #: The peak resident memory of the process that read this source, since it started.
    peak_rss_bytes: int = 0


def ingest_source(source: Source, part_dir: Path, strict: bool) -> IngestOutcome:
    """Read one source into `part_dir` (one Parquet file per table); the unit of ingest work, run in this
    process or in a worker. A source that fails leaves nothing behind, and its failure, whatever it is,
    becomes its trace_health row (source_failed) and the run goes on (with `strict`, the error is raised).

    Several sources may hold one rank (discover's source model): each row they write carries the source's
    capture (the profiling cycle) where the table has that column. A source discover marked superseded (an
    msprof copy less complete than another of the same job) is not read: it becomes a trace_health row
    (superseded). A source without a rank fails with discover's message. Recoverable problems a reader
    meets (a cut-short last record, unnamed tasks) go to the ledger.
    """
    health = HealthLedger()
    location = _location(source)
    warn = health.for_source(str(location), source.rank)
    if source.superseded_by is not None:
        warn(f"{location}: superseded by {source.superseded_by}, {source.superseded_why}; not read",
             check="superseded", action="superseded", path=location)
        return IngestOutcome(None, health.events)
    shutil.rmtree(part_dir, ignore_errors=True)  # an earlier attempt's, when a batch worker died under it
    sink = TableSink(part_dir)
    try:
        if source.problem is not None:
            raise InputError(location, source.problem)
        for table_name, table in ingest.read(source, warn):
            sink.write(table_name, with_source_keys(table_name, table, source.rank, source.capture))
        sink.close()
        return IngestOutcome(part_dir, health.events, peak_rss_bytes=peak_rss_bytes())
    except Exception as exc:  # noqa: BLE001 - containment: one source's failure, whatever it is, is its own
        raise_if_interrupted()
        sink.close()
        shutil.rmtree(part_dir, ignore_errors=True)
        error = source_error(exc, location)
        if strict:
            raise error from None
        warn(f"source not read: {error}", check="source_failed", action="source_skipped",
             path=getattr(error, "path", None), offset=getattr(error, "offset", None),
             line=getattr(error, "line", None))
        return IngestOutcome(None, health.events,
                             {"source": str(source.directory), "rank": source.rank, "error": str(error)},
                             peak_rss_bytes())


def build_output(path: Path, tmp: Path, sources: list[Source], outcomes: list[IngestOutcome], options: Options,
                 health: HealthLedger, reporter: Reporter, meter: StageMeter, *, exports: bool = True,
                 notices: list[str] | None = None) -> RunResult:
    """From the sources' parts (`outcomes`, one per source, in order) to the output folder `tmp`: captures,
    merged tables, the trace-health ledger, profile.duckdb with every model, and (with `exports`) the
    reports, the timeline, summary.json, findings.json and manifest.json. The advisor's findings are saved in
    profile.duckdb (table advisor_finding) in both cases. `meter` times each stage; `notices` are the
    earlier stages' (more are added)."""
    from .advisor import advise, findings_document, rules_reading, save_findings, write_findings

    notices = notices if notices is not None else []
    selection = options.selection
    user_metadata = _user_metadata(path, sources, health)
    failed = [str(o.skipped["error"]) for o in outcomes if o.skipped is not None]
    if not any(o.part_dir is not None for o in outcomes):
        raise NoProfilerData(nothing_read(path, [], failed, [], health))
    with meter.stage("merge"):
        tables, ranks_read, skipped, row_counts = _merge(tmp, sources, outcomes, options, health, notices,
                                                         user_metadata)
    if not any(count for table, count in row_counts.items() if table not in DESCRIPTIVE_TABLES):
        empty = [s for s, o in zip(sources, outcomes) if o.part_dir is not None]
        raise NoProfilerData("\n".join([nothing_read(path, [], failed, empty, health), *notices]))
    con = None
    try:
        with meter.stage("models"):
            con = open_profile(tmp / "profile.duckdb")
            with transaction(con):
                models_to_run = [m for m in load_models() if selection is None or m.name in selection.models]
                reporter.stage("models", len(models_to_run))
                fill_tables(con, tmp, row_counts if selection is None else  # only the tables the selection reads
                            {name: count for name, count in row_counts.items() if name in selection.built})
                set_run_options(con, options.model_options)
                model_run = run_models(con, models_to_run, row_counts, prepared=True)
                findings = advise(con, rules_reading(None if selection is None else selection.models))
                save_findings(con, findings)
            reporter.advance(len(models_to_run))
        with meter.stage("checks"):
            _check_output(con, tmp, models_to_run, model_run, health, row_counts)
        summary: dict[str, Any] = {"health": health.summary()}
        if exports:  # the documentation goes into profile.duckdb while the exports read it (a batch reads the Parquet)
            cursor = interruptible(con.cursor())  # a connection of its own: a signal interrupts it too
            with meter.stage("export"), _beside(lambda: _document(cursor, set(model_run.tables), notices)):
                summary = _export(con, path, tmp, models_to_run, model_run.empty,
                                  timeline_content(options.timeline, sources, selection), skipped, health, options,
                                  reporter, notices, user_metadata, selection)
    finally:
        if con is not None:
            con.close()
    if exports:
        write_findings(findings_document(findings, VERSION), tmp / "findings.json", indent=2 if options.pretty else None)
        _write_manifest(tmp / "manifest.json", path, sources, skipped,
                        [event.message for event in health.events] + notices, row_counts, meter,
                        indent=2 if options.pretty else None, user_metadata=user_metadata, model_run=model_run,
                        selection=selection)
    if options.data_simplification:  # the tables live on in profile.duckdb
        shutil.rmtree(tables)
    return RunResult(output=tmp, ranks=ranks_read, skipped=skipped, summary=summary, row_counts=row_counts,
                     notices=notices, meter=meter, findings=findings, models=model_run)


def _check_output(con: duckdb.DuckDBPyConnection, tmp: Path, models: list[Model], model_run: ModelRun,
                  health: HealthLedger, row_counts: dict[str, int]) -> None:
    """Run the data tests of every model this run saved as a table with rows (marts, reports, models computed in
    Python; a view's tests would run its query again: `profpipe check` and the test suite run those too), with
    profpipe/model_checks.py; each failure becomes a trace-health row (check model_test, action flagged: the run is
    partial) naming the model and a breaking row, written to the ledger in profile.duckdb and tables/ alike."""
    from .model_checks import check_models

    failures = check_models(con, [m for m in models if m.kind == "TABLE"], skip=model_run.empty)
    if not failures:
        return
    for failure in failures:
        health.add(HealthEvent(source=f"model {failure.model}", rank=-1, check="model_test", action="flagged",
                               message=f"model {failure.model} breaks its data test {failure.test!r}: {failure.rows} "
                                       "rows, e.g. " + failure.example,
                               rows=failure.rows, example=failure.example, tables=failure.model))
    con.register("ledger_rows", _write_ledger(tmp, health, row_counts))
    con.execute("DELETE FROM trace_health; INSERT INTO trace_health SELECT * FROM ledger_rows")
    con.unregister("ledger_rows")
    model_run.empty.discard("trace_health")


def _document(con: duckdb.DuckDBPyConnection, tables: set[str], notices: list[str]) -> None:
    """Write the documentation of the `tables` the models re-created into profile.duckdb (models.comment_on; the
    template documents the rest). A failure costs the comments only: the run goes on and a notice says so."""
    try:
        comment_on(con, tables)
    except duckdb.Error as exc:
        notices.append(f"profile.duckdb has no column documentation ({first_line_of(exc)}); its tables are "
                       "complete (see profpipe describe)")


@contextmanager
def _beside(work: Callable[[], None]) -> Iterator[None]:
    """Run `work` in a thread while the body runs (DuckDB releases the GIL: both use the cores); its error, if
    any, is raised when both are done."""
    errors: list[BaseException] = []

    def target() -> None:
        try:
            work()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            errors.append(exc)

    thread = threading.Thread(target=target, name="profpipe-beside")
    thread.start()
    try:
        yield
    finally:
        thread.join()
    if errors:
        raise errors[0]


def _user_metadata(path: Path, sources: list[Source], health: HealthLedger) -> list[user_metadata.UserMetadata]:
    """The profiler_metadata.json files of the sources (MindSpore's add_metadata; discover found them), their
    problems in the ledger under the rank of a source beside them."""
    def warn_for(file: Path) -> Any:
        ranks = [s.rank for s in sources if s.user_metadata == file]
        return health.for_source(str(file), min(ranks) if ranks else 0)

    files = {s.user_metadata for s in sources if s.user_metadata is not None}
    return user_metadata.read_all(list(files), path.parent if path.is_file() else path, warn_for)


def _with_user_metadata(run_info_path: Path, sources: list[Source], files: list[user_metadata.UserMetadata]) -> None:
    """run_info.metadata_json with member `profiler_metadata`: the user metadata of each row's source."""
    read = {item.path: item.metadata for item in files}
    by_folder = {str(s.directory): read[s.user_metadata] for s in sources if s.user_metadata in read}
    table = pq.read_table(run_info_path)
    texts = []
    for source_dir, text in zip(table.column("source_dir").to_pylist(), table.column("metadata_json").to_pylist()):
        found = by_folder.get(source_dir) if source_dir else None
        if found is not None:
            try:
                merged = json.loads(text) if text else {}
            except ValueError:
                merged = None
            if isinstance(merged, dict):
                text = json.dumps({**merged, "profiler_metadata": found})
        texts.append(text)
    index = table.schema.get_field_index("metadata_json")
    table = table.set_column(index, table.schema.field(index), pa.array(texts, pa.string()))
    pq.write_table(table, run_info_path)


def _merge(tmp: Path, sources: list[Source], outcomes: list[IngestOutcome], options: Options, health: HealthLedger,
           notices: list[str], user_files: list[user_metadata.UserMetadata] | None = None,
           ) -> tuple[Path, list[int], list[dict[str, Any]], dict[str, int]]:
    """The sources' parts merged into `tmp`/tables (with the step filter, the clock findings and the
    trace-health ledger); returns that folder, the ranks read, the skipped sources and the row counts."""
    for outcome in outcomes:
        for event in outcome.events:
            health.add(event)
    part_dirs = {i: o.part_dir for i, o in enumerate(outcomes) if o.part_dir is not None}
    skipped = [o.skipped for o in outcomes if o.skipped is not None]
    ranks_read = sorted({sources[i].rank for i in part_dirs})
    captures = _number_captures(sources, part_dirs, health)
    if options.strict and health.lossy:
        first = health.lossy[0]
        raise ProfpipeError(f"--strict: {len(health.lossy)} reports of data dropped or changed; the first: "
                            f"{first.message}")
    merge_parts(list(part_dirs.values()), tmp / "tables", captures)
    if user_files:
        _with_user_metadata(tmp / "tables" / "run_info.parquet", sources, user_files)
    shutil.rmtree(tmp / "parts", ignore_errors=True)
    for part in part_dirs.values():  # parts written elsewhere (a batch's workers)
        shutil.rmtree(part, ignore_errors=True)
    if options.step_list is not None:
        notices += keep_steps(tmp / "tables", list(options.step_list))
    row_counts = table_row_counts(tmp / "tables")
    for finding in [*clock_findings(tmp / "tables", row_counts), *unfinished_steps(tmp / "tables", row_counts)]:
        health.add(finding)
    _write_ledger(tmp, health, row_counts)
    return tmp / "tables", ranks_read, skipped, row_counts


def _write_ledger(tmp: Path, health: HealthLedger, row_counts: dict[str, int]) -> pa.Table:
    """The trace-health ledger as tmp/tables/trace_health.parquet, its rows counted in `row_counts`."""
    ledger = health.table()
    pq.write_table(ledger, tmp / "tables" / "trace_health.parquet")
    row_counts["trace_health"] = ledger.num_rows
    return ledger


def _export(con: duckdb.DuckDBPyConnection, path: Path, tmp: Path, models_to_run: list[Model], empty: set[str],
            content: str, skipped: list[dict[str, Any]], health: HealthLedger, options: Options, reporter: Reporter, notices: list[str],
            user_files: list[user_metadata.UserMetadata] | None = None, selection: Selection | None = None,
            ) -> dict[str, Any]:
    """The files for people and other tools: the compatible reports, the mart CSVs, the timeline (with `content`:
    full, summary or none) and summary.json (returned). Models known to hold no rows (`empty`) write no file; with a
    `selection`, only the models built (`models_to_run`) write theirs, summary.json records it, and report.html
    shows only the pages whose inputs were built."""
    from .export.ascend_reports import write_ascend_reports
    from .export.chrome_trace import write_timeline
    from .export.mart_csv import write_marts
    from .export.memory_reports import write_memory_reports
    from .export.minddata_reports import write_minddata_reports
    from .export.mindspore_reports import write_reports
    from .export.summary import build_summary, write_summary

    reporter.stage("export", 4)
    reports = [m for m in models_to_run if m.layer == "reports" and m.file and m.name not in empty]
    write_reports(con, tmp / "reports", reports, options.report.style)
    write_ascend_reports(con, tmp / "reports", options.report, None if selection is None else selection.models)
    write_minddata_reports(con, tmp / "reports", reports, options.report.style)
    write_memory_reports(con, tmp / "reports", reports)
    write_marts(con, tmp / "reports", [m for m in models_to_run if m.layer == "marts"], empty)
    reporter.advance(1)
    timeline_info = None
    if content != "none":
        timeline = write_timeline(con, tmp / "timeline", options.timeline_limit_mb, content == "summary",
                                  options.timeline_gzip)
        timeline_info = {"path": timeline.path.relative_to(tmp).as_posix(), "content": content,
                         "events_written": timeline.events_written, "events_dropped": timeline.events_dropped,
                         "bytes": timeline.bytes_written, "limit_mb": options.timeline_limit_mb}
        if timeline.events_dropped:
            notices.append(f"timeline truncated: {timeline.events_dropped} events dropped (--timeline-limit)")
    reporter.advance(1)
    summary = build_summary(con, VERSION, str(path), skipped, timeline_info, health.summary())
    summary["user_metadata"] = _user_metadata_list(user_files)
    if selection is not None:
        summary["selection"] = selection.as_json()
    write_summary(summary, tmp / "reports" / "summary.json", indent=2 if options.pretty else None)
    reporter.advance(1)
    if options.visual_report:
        from .report import RunContext, write_run_report

        write_run_report(con, tmp / "report.html", RunContext(input=str(path), profpipe_version=VERSION,
                                                               timeline=timeline_info, timeline_content=content,
                                                               built=None if selection is None else selection.built))
    reporter.advance(1)
    return summary


def timeline_content(choice: str, sources: list[Source], selection: Selection | None = None) -> str:
    """What the timeline holds ("full", "summary" or "none") for Options.timeline `choice` and the run's sources:
    "auto" is "none" for a run with a `selection` (--select writes the timeline only when --timeline asks for it),
    "summary" for an input that is one rank's Chrome trace (PyTorch or Paddle: its ops and kernels open in
    Perfetto as they are; profpipe adds the steps, phases and overlap), "full" for every other input."""
    if choice != "auto":
        return choice
    if selection is not None:
        return "none"
    read = [source for source in sources if source.superseded_by is None]
    one_trace = read and all(source.family == "kineto" for source in read) and len({s.rank for s in read}) == 1
    return "summary" if one_trace else "full"


def _number_captures(sources: list[Source], part_dirs: dict[int, Path], health: HealthLedger) -> dict[Path, int]:
    """Each source's capture by time (profpipe/captures.py), also set on the source for the manifest."""
    spans = [source_span(part, sources[i].rank, sources[i].family, str(_location(sources[i])))
             for i, part in part_dirs.items()]
    numbers, events = number_captures(spans)
    for index, part in part_dirs.items():
        sources[index].capture = numbers[part]
    for event in events:
        health.add(event)
    return numbers


def with_source_keys(table_name: str, table: pa.Table, rank: int, capture: int) -> pa.Table:
    """The table with the source's rank and capture in its `rank` and `capture` columns, where the table
    declares them and the reader left them out: the one place a row gets its source's keys (the capture
    is renumbered by time at the merge: profpipe/captures.py)."""
    spec = catalog().get(table_name)
    for name, value in (("rank", rank), ("capture", capture)):
        if spec is not None and name in spec.schema.names and name not in table.column_names:
            table = table.append_column(name, pa.repeat(pa.scalar(value, pa.int32()), table.num_rows))
    return table


def source_error(exc: Exception, location: Path) -> ProfpipeError:
    """The plain message of a failure while reading the source at `location`: a reader's InputError as
    it is; an unexpected exception named by type, with the source, so that a user can report it."""
    full = full_disk_error(exc)
    if full is not None:  # the disk-full error itself: a reader's wrapper loses it on the way back from a worker
        raise full
    if isinstance(exc, ProfpipeError):
        return exc
    if isinstance(exc, OSError):
        return InputError(exc.filename or location, exc.strerror or first_line_of(exc))
    if isinstance(exc, RecursionError):
        return InputError(location, "nested too deeply to read")
    if isinstance(exc, MemoryError):
        return InputError(location, "needs more memory than this machine has (is it a profiler file?)")
    return InputError(location, f"could not be read ({type(exc).__name__}: {exc}); "
                                "this is a profpipe bug, please report it with the file")


def _location(source: Source) -> Path:
    """Where a source was read from: its one file, else its folder."""
    files = source.all_files()
    return files[0][1] if len(files) == 1 else source.directory


def _user_metadata_list(files: list[user_metadata.UserMetadata] | None) -> list[dict[str, Any]]:
    """The user metadata for summary.json and the manifest: one entry per profiler_metadata.json."""
    return [{"path": item.relative, "metadata": item.metadata} for item in files or []]


def _write_manifest(path: Path, input_path: Path, sources: list[Source], skipped: list[dict[str, Any]],
                    warnings: list[str], row_counts: dict[str, int], meter: StageMeter,
                    indent: int | None, user_metadata: list[user_metadata.UserMetadata] | None = None,
                    model_run: ModelRun | None = None, selection: Selection | None = None) -> None:
    """manifest.json: inputs with size and fingerprint, versions, timings, warnings, and the selection (--select:
    what was asked, the models built and the tables read; null: every model). Written last."""
    versions = {"profpipe": VERSION, "python": platform.python_version()}
    for package in ("duckdb", "pyarrow", "polars"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:  # polars is imported only by the readers that need it
            versions[package] = None
    manifest = {
        "input": str(input_path.resolve()),
        "created_unix_s": time.time(),
        "versions": versions,
        "sources": [{
            "family": s.family, "layout": s.layout, "rank": s.rank, "device_id": s.device_id,
            "capture": s.capture, "rank_from": s.rank_from,
            **({"superseded_by": str(s.superseded_by)} if s.superseded_by is not None else {}),
            "directory": str(s.directory),
            "files": [{"role": role, "path": str(p), "bytes": p.stat().st_size, "fingerprint": fingerprint(p)}
                      for role, p in s.all_files()],
        } for s in sources],
        "skipped": skipped,
        "selection": None if selection is None else selection.as_json(),
        "user_metadata": _user_metadata_list(user_metadata),
        "warnings": warnings,
        "row_counts": row_counts,
        "timings_s": meter.timings,
        "peak_rss_bytes": meter.peaks,
        **({"slowest_models_s": dict(model_run.slowest(10)), "models_created_empty": len(model_run.skipped)}
           if model_run is not None else {}),
        **({"worker_peak_rss_bytes": meter.worker_peaks} if meter.worker_peaks else {}),
    }
    path.write_text(json.dumps(manifest, indent=indent) + "\n", encoding="utf-8")
