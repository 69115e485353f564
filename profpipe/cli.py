"""The `profpipe` command: analyse a saved profiler folder, query the result, list its tables.

A thin layer over profpipe.run and profile.duckdb: argument parsing, progress bars and
plain-text tables for people, CSV/JSON for machines. Errors in the input are printed as one
line naming the file and line, never as a traceback.

Unlike the other modules, this one does not use `from __future__ import annotations`: typer reads each command's
parameters from their annotations at every start, and annotations kept as strings are compiled and evaluated twice
per parameter (a fifth of `profpipe --help`'s time). Hints that name what only type checkers import are strings.
"""
import json
import math
import os
import sys
from pathlib import Path
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from typer.core import TyperCommand

from .errors import EXIT_INTERRUPTED, EXIT_NOTHING_USABLE, EXIT_REGRESSION, Interrupted, ProfpipeError, UsageError
from .options import DEFAULT_TIMELINE_LIMIT_MB, Options, ReportOptions
from .version import VERSION

if TYPE_CHECKING:
    import click
    from rich.console import Console
    from rich.progress import Progress
    import duckdb
    import pyarrow as pa

    from .run import QuietReporter, RunResult

# The heavy modules (duckdb, pyarrow, polars, the pipeline) and rich are imported inside the commands, so that
# `profpipe --help` and `--version` answer at once; tests/test_startup.py keeps it so.

# default_map: the group's own --help is False unless given. Typer leaves it None, and a None is coerced through
# a pydantic TypeAdapter, which imports pydantic (0.1-0.2 s) for `profpipe COMMAND --help`.
app = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode=None,
                  context_settings={"default_map": {"help": False}},
                  epilog="\b\nExample:\n" + "  profpipe analyse ./profiler_data -o out && profpipe query out "
                         "\"SELECT * FROM op_type_stats LIMIT 5\"")  # apart: the example is no SQL of profpipe's

#: Option groups of the commands with many options (each option's rich_help_panel), in the order --help shows them;
#: options without one are listed last, under "Options".
HELP_PANELS = ("Input", "Output", "Runs", "Steps and analysis", "Timeline", "MindSpore reports", "Execution",
               "Performance")


class _ManualCommand(TyperCommand):
    """A command whose --help reads like a manual page without rich (rich_markup_mode=None: `--help` imports no rich,
    tests/test_startup.py): options under their rich_help_panel headings, and the epilog, the command's example, under
    "Example:" with its lines kept as written."""

    def format_options(self, ctx: "click.Context", formatter: "click.HelpFormatter") -> None:
        arguments, panels = [], {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                arguments.append(record)
            else:
                panels.setdefault(getattr(param, "rich_help_panel", None) or "Options", []).append(record)
        if arguments:
            with formatter.section("Arguments"):
                formatter.write_dl(arguments)
        order = {name: i for i, name in enumerate(HELP_PANELS)}
        for name in sorted(panels, key=lambda n: (n == "Options", order.get(n, len(order)))):
            with formatter.section(name):
                formatter.write_dl(panels[name])

    def format_epilog(self, ctx: "click.Context", formatter: "click.HelpFormatter") -> None:
        if not self.epilog:
            return
        import inspect

        lines = inspect.cleandoc(self.epilog).splitlines()
        commands = sum(1 for line in lines if line.startswith("profpipe "))
        with formatter.section("Example" if commands <= 1 else "Examples"):
            for line in lines:
                formatter.write(" " * formatter.current_indent + line + "\n" if line else "\n")


def _command(example: str):
    """app.command with the manual-style help (_ManualCommand) and `example` (shell lines, comments with '#') as its
    epilog."""
    return app.command(cls=_ManualCommand, epilog=example)


@cache
def _console(stderr: bool = False) -> "Console":
    """The rich Console on stdout (or stderr), made by the first command that prints with it."""
    from rich.console import Console

    return Console(stderr=stderr)


@contextmanager
def _progress_bars(quiet: bool) -> "Iterator[_BarReporter | QuietReporter]":
    """A Reporter that draws one bar per stage on stderr; a quiet one when quiet or stderr is no terminal (a nightly
    job's log), which imports nothing. rich.progress is imported here, by the runs that draw bars."""
    if quiet or not sys.stderr.isatty():
        from .run import QuietReporter

        yield QuietReporter()
        return
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

    err = _console(stderr=True)
    with Progress(TextColumn("{task.description:<8}"), BarColumn(), TaskProgressColumn(), TimeElapsedColumn(),
                  console=err, transient=True, disable=not err.is_terminal) as progress:
        yield _BarReporter(progress)


class _BarReporter:
    """Draws one progress bar per stage."""

    def __init__(self, progress: "Progress") -> None:
        self._progress = progress
        self._task = None

    def stage(self, name: str, total: float) -> None:
        if self._task is not None:
            self._progress.update(self._task, completed=self._progress.tasks[self._task].total)
        self._task = self._progress.add_task(name, total=max(total, 1))

    def advance(self, amount: float) -> None:
        self._progress.advance(self._task, amount)


#: Help of --select (analyse and batch).
SELECT_HELP = ("Build only these models and what they read, as dbt's --select: MODEL (or +MODEL, the same), MODEL+ for "
               "every model that reads it too; repeat, or separate names by commas or spaces. Reads only the sources "
               "whose tables they read, writes only their CSVs and report pages, and the timeline only with --timeline "
               "full|summary. `profpipe describe` lists the models.")


@_command('# a profiler folder (MindSpore, PyTorch, msprof...) into out/, steps 3 to 5 only\nprofpipe analyse ./resnet_profile -o out --step-list 3-5')
def analyse(
    path: Annotated[Path, typer.Argument(help="Folder the profiler saved (any level above the data files), or one trace file that stands alone (PyTorch/Paddle trace, Nsight Systems export, MindData log).")],
    output: Annotated[Path, typer.Option("--output", "-o", rich_help_panel='Output', help="Output folder; replaced atomically when the run succeeds.")],
    rank: Annotated[Optional[list[int]], typer.Option("--rank", rich_help_panel='Input', help="Only this rank; repeat for several. Default: all ranks found.")] = None,
    timeline_limit: Annotated[Optional[float], typer.Option("--timeline-limit", metavar="MB", rich_help_panel='Timeline', help="Cap timeline/trace.json at MB mebibytes, as MindSpore's timeline_limit (default 500, MindSpore's, so the timeline of a multi-GB input still opens in a browser); later events are dropped first, steps are always kept. 0: no limit.")] = DEFAULT_TIMELINE_LIMIT_MB,
    timeline: Annotated[str, typer.Option("--timeline", metavar="auto|full|summary|none", rich_help_panel='Timeline', help="What timeline/trace.json holds: full (every lane), summary (steps, their phases and the overlap analysis: small enough for many ranks), none; auto: summary for one rank's PyTorch/Paddle trace (itself a Chrome trace: open it in Perfetto for the ops and kernels), full otherwise.")] = "auto",
    timeline_summary: Annotated[bool, typer.Option("--timeline-summary", hidden=True, rich_help_panel='Timeline', help="The same as --timeline summary.")] = False,
    timeline_gzip: Annotated[Optional[bool], typer.Option("--timeline-gzip/--no-timeline-gzip", rich_help_panel='Timeline', help="Write timeline/trace.json.gz (Perfetto and chrome://tracing open it). Default: when the timeline passes 64 MiB.", show_default=False)] = None,
    model: Annotated[Optional[list[int]], typer.Option("--model", rich_help_panel='Input', help="msprof exports: read this model (graph) id; repeat for several (a rank reads the one with most files). Default: per rank, the model with most files.")] = None,
    strict: Annotated[bool, typer.Option("--strict", rich_help_panel='Input', help="Make any data loss fatal (exit 1, the earlier output kept): an unreadable source, or a number dropped, clamped or repaired (see trace_health).")] = False,
    force: Annotated[bool, typer.Option("--force", rich_help_panel='Output', help="Replace OUTPUT even when it is a non-empty folder profpipe did not write (never one that is, holds or lies inside the input).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", rich_help_panel='Output', help="Print nothing but errors: no summary tables, no health summary.")] = False,
    json_out: Annotated[bool, typer.Option("--json", rich_help_panel='Output', help="Print the run summary as JSON instead of tables.")] = False,
    fp_op: Annotated[Optional[str], typer.Option("--fp-op", metavar="OP", rich_help_panel='Steps and analysis', help="Full name of the op that starts forward propagation; overrides the step trace (default: $FP_POINT or $PROFILING_FP_START).")] = None,
    bp_op: Annotated[Optional[str], typer.Option("--bp-op", metavar="OP", rich_help_panel='Steps and analysis', help="Full name of the op that ends backward propagation (default: $BP_POINT or $PROFILING_BP_END).")] = None,
    peak_tflops: Annotated[Optional[float], typer.Option("--peak-tflops", metavar="TFLOPS", rich_help_panel='Steps and analysis', help="GPU traces: the device's peak in TFLOP/s that op_flops compares each op's achieved FLOP/s with. Default: the peak of the trace's device (deviceProperties name) for the op's input type, where profpipe knows it (A100, H100, H200, V100).")] = None,
    rank_map: Annotated[Optional[Path], typer.Option("--rank-map", metavar="FILE", rich_help_panel='Input', help="Ranks of traces that name none (no distributedInfo, no rank-<n>/worker<n> in the name): lines '<path or glob> <rank>' (or a JSON object {\"path or glob\": rank}), paths relative to PATH; the first pattern that matches a source's file or folder wins. The file and the name come first.")] = None,
    step_range_name: Annotated[Optional[str], typer.Option("--step-range-name", metavar="NAME", rich_help_panel='Steps and analysis', help="PyTorch traces, Nsight Systems exports, msprof exports and raw PROF folders: the annotation, NVTX range or MSTX range that marks a step, named NAME or NAME and its number ('train_step 12', 'step#3'). Default: ProfilerStep#N (msprof: its step_trace).")] = None,
    report_style: Annotated[str, typer.Option("--report-style", rich_help_panel='MindSpore reports', help="MindSpore-compatible reports: 'latest' MindSpore behaviour or 'legacy' (Ascend: MindSpore r0.5-r1.0 file layouts and averages; MindData: 1.x files, as MindInsight expects them).")] = "latest",
    subgraph: Annotated[str, typer.Option("--subgraph", rich_help_panel='MindSpore reports', help="Ascend op detail report: all, Default or Gradients ops.")] = "all",
    optypes_to_deal: Annotated[str, typer.Option("--optypes-to-deal", metavar="TYPES", rich_help_panel='MindSpore reports', help="Ascend op detail report: only these comma-separated op types.")] = "",
    optypes_not_deal: Annotated[str, typer.Option("--optypes-not-deal", metavar="TYPES", rich_help_panel='MindSpore reports', help="Ascend op detail report: leave out these comma-separated op types.")] = "Variable",
    op_path: Annotated[bool, typer.Option("--op-path", rich_help_panel='MindSpore reports', help="Ascend op detail report: add the full op name column.")] = False,
    step_list: Annotated[Optional[str], typer.Option("--step-list", metavar="STEPS", rich_help_panel='Steps and analysis', help="Keep only these consecutive steps, as MindSpore's step_list: '3-5' or '3,4,5'. A step outside the data is an error naming the steps there are.")] = None,
    data_simplification: Annotated[bool, typer.Option("--data-simplification/--keep-parquet", rich_help_panel='Output', help="MindSpore's data_simplification: keep the deliverables only (the normalized tables live in profile.duckdb), or also keep them as Parquet files under OUTPUT/tables/.")] = True,
    pretty: Annotated[bool, typer.Option("--pretty", rich_help_panel='Output', help="Indent the JSON reports.")] = False,
    workers: Annotated[Optional[int], typer.Option("--workers", min=1, rich_help_panel='Performance', help="Worker processes that read the sources in parallel (default: one per core once the input passes 64 MiB, fewer when memory cannot hold one largest source per worker; 1: read them in this process).")] = None,
    memory_limit: Annotated[Optional[int], typer.Option("--memory-limit", metavar="MB", min=64, rich_help_panel='Performance', help="MiB each DuckDB database of the run may hold before it spills to disk (a reader's under $TMPDIR, the output's beside OUTPUT's profile.duckdb while it is written). Default: DuckDB's, 80 % of the machine's memory, and 640 MiB for a reader. Each worker process has its own databases.")] = None,
    visual_report: Annotated[Optional[bool], typer.Option("--report/--no-report", rich_help_panel='Output', help="Write OUTPUT/report.html, the visual report (one self-contained HTML file; see `profpipe report`). Default: yes, unless --select is given.", show_default=False)] = None,
    select: Annotated[Optional[list[str]], typer.Option("--select", "-s", metavar="MODEL[+]", rich_help_panel='Steps and analysis', help=SELECT_HELP)] = None,
    profile_stages: Annotated[bool, typer.Option("--profile-stages", rich_help_panel='Performance', help="After the run, print each stage's wall time and peak memory and the slowest models (also in OUTPUT/manifest.json: timings_s, peak_rss_bytes, slowest_models_s).")] = False,
) -> None:
    """Analyse a saved profiler folder, or one trace file, into OUTPUT (profile.duckdb, reports/, timeline/,
    manifest.json; tables/ with --keep-parquet).

    OUTPUT is replaced only when the run succeeds, and only when it is empty or written by profpipe
    (or with --force); inputs are never written. After the run a health summary lists every value
    dropped, clamped or repaired (table trace_health).

    Exit status: 0 complete; 3 partial (a source skipped, files of a known profiler not read, or data dropped
    or repaired: see the health summary); 1 nothing usable (no event read: the message says what was found and
    why none was read; or --strict met data loss); 2 usage error
    (bad option, an OUTPUT that must not be replaced); 130 / 143 interrupted by SIGINT / SIGTERM.
    """
    with _errors_as_exit("nothing was written, the earlier output is kept"):
        options = Options(
            ranks=rank, step_list=_step_list(step_list), data_simplification=data_simplification, pretty=pretty,
            timeline_limit_mb=timeline_limit, timeline="summary" if timeline_summary else timeline,
            timeline_gzip=timeline_gzip, visual_report=visual_report, select=tuple(select) if select else None,
            msprof_models=model,
            step_range_name=step_range_name, fp_op=fp_op, bp_op=bp_op, peak_tflops=peak_tflops, rank_map=rank_map,
            strict=strict,
            force=force, workers=workers, memory_limit_mb=memory_limit, report=ReportOptions(style=report_style, subgraph=subgraph,
                                              optypes_to_deal=_type_list(optypes_to_deal),
                                              optypes_not_deal=_type_list(optypes_not_deal), show_op_path=op_path))
        with _progress_bars(quiet) as bars:
            from .run import analyse as run_analysis

            result = run_analysis(path, output, options, reporter=bars)
    if json_out:
        sys.stdout.write(json.dumps(result.summary, indent=2) + "\n")
    elif not quiet:
        _print_summary(result)
        from dataclasses import asdict

        _print_findings([asdict(f) for f in result.findings], CONSOLE_FINDINGS, f"{result.output} advise")
    if not quiet:
        for notice in result.notices:
            typer.echo(f"profpipe: note: {notice}", err=True)
        _print_health(result)
    if profile_stages:
        from .export.text_table import simple_table

        typer.echo(simple_table(["stage", "seconds", "peak MiB", "worker peak MiB"], result.meter.rows()), err=True)
        if result.models is not None:
            typer.echo(f"\nslowest models ({len(result.models.seconds)} run, {len(result.models.skipped)} created empty: "
                       "their inputs hold no rows)", err=True)
            typer.echo(simple_table(["model", "seconds"], [[name, round(seconds, 3)] for name, seconds
                                                           in result.models.slowest(10)]), err=True)
    raise typer.Exit(result.exit_code)


#: Help of --fail-above (diff and batch).
FAIL_ABOVE_HELP = ("CI gate: exit 4 when the step time or a top kernel / op type (>= 1 % of the step) is significantly "
                   "(p < 0.05) more than PCT % slower per step; improvements never fail.")


@_command('# every folder in ./profiles is a run (a folder of trace files: each file, or the folder, is one)\nprofpipe batch ./profiles -w ./warehouse')
def batch(
    roots: Annotated[list[Path], typer.Argument(metavar="ROOT", help="Folders that hold runs: run folders (one job's profiler folder each, with its ranks), or trace files.")],
    warehouse: Annotated[Path, typer.Option("--warehouse", "-w", rich_help_panel='Output', help="The warehouse folder: created if missing; must not overlap the ROOTs.")],
    run_depth: Annotated[int, typer.Option("--run-depth", min=0, rich_help_panel='Runs', help="Every folder this many levels below a ROOT is one run (0: each ROOT is one run).")] = 1,
    runs: Annotated[Optional[str], typer.Option("--runs", metavar="GLOB", rich_help_panel='Runs', help="Run folders, or trace files that are each a run, as a glob relative to each ROOT (e.g. '2026-*/job-*', '*.pt.trace.json'); overrides --run-depth.")] = None,
    verify: Annotated[bool, typer.Option("--verify", rich_help_panel='Runs', help="Also compare content hashes (reads every byte), not only file lists, sizes and mtimes.")] = False,
    keep_missing: Annotated[bool, typer.Option("--keep-missing", rich_help_panel='Runs', help="Keep the tables of runs whose folder is gone (status missing); default: drop them.")] = False,
    retry_failed: Annotated[bool, typer.Option("--retry-failed", rich_help_panel='Runs', help="Analyse again runs that failed last time although their input did not change.")] = False,
    executor: Annotated[str, typer.Option("--executor", metavar="local|dask", rich_help_panel='Execution', help="local: a process pool on this machine; dask: a Dask cluster (--scheduler, or a LocalCluster).")] = "local",
    scheduler: Annotated[Optional[str], typer.Option("--scheduler", metavar="ADDRESS", rich_help_panel='Execution', help="--executor dask: the scheduler of an existing cluster (tcp://host:8786). The warehouse must be on a file system every worker shares.")] = None,
    workers: Annotated[Optional[int], typer.Option("--workers", min=1, rich_help_panel='Execution', help="Worker processes (default: one per core, fewer when memory cannot hold one largest source per worker).")] = None,
    strict: Annotated[bool, typer.Option("--strict", rich_help_panel='Steps and analysis', help="A run that loses any data fails (its last good tables stay).")] = False,
    memory_limit: Annotated[Optional[int], typer.Option("--memory-limit", metavar="MB", min=64, rich_help_panel='Execution', help="As for analyse: MiB each DuckDB database of a unit of work may hold before it spills to disk (each worker has its own).")] = None,
    step_range_name: Annotated[Optional[str], typer.Option("--step-range-name", metavar="NAME", rich_help_panel='Steps and analysis', help="As for analyse: the range that marks a step in PyTorch traces, Nsight Systems and msprof exports.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", rich_help_panel='Output', help="Print nothing but errors.")] = False,
    json_out: Annotated[bool, typer.Option("--json", rich_help_panel='Output', help="Print what the batch did as JSON.")] = False,
    visual_report: Annotated[bool, typer.Option("--report/--no-report", rich_help_panel='Output', help="Write WAREHOUSE/report.html: the runs' step-time trend and the latest run's regressions.")] = True,
    fail_above: Annotated[Optional[float], typer.Option("--fail-above", metavar="PCT", min=0, rich_help_panel='Output', help=FAIL_ABOVE_HELP + " Compares the newest run with steps (by analysis time) with the one before it.")] = None,
    select: Annotated[Optional[list[str]], typer.Option("--select", "-s", metavar="MODEL[+]", rich_help_panel='Steps and analysis', help=SELECT_HELP + " The warehouse records it per run (batch_runs.selection, tables_not_built); a run batched with another selection is analysed again.")] = None,
) -> None:
    """Analyse every new or changed run under the ROOTs into one warehouse of Parquet tables.

    A run is analysed as `analyse` would analyse it alone; its public tables (normalized tables,
    trace_health, marts) land in WAREHOUSE/tables/<table>/run=<id>/..., partitioned by rank.
    WAREHOUSE/catalog.duckdb has a view per table over every run (column `run`) and the batch_runs
    ledger; `profpipe query WAREHOUSE "SQL"` reads the same views.

    The runs: every folder --run-depth levels below a ROOT (or what --runs names). A folder above that level
    that holds profiler files directly is not a folder of runs: the folder of a MindSpore, msprof or raw Ascend
    dump is one run; a folder of trace files (PyTorch/Paddle JSON, Nsight Systems SQLite) is one run when every
    trace names its rank (the ranks of one job, as analyse reads the folder) and it holds no folders, else each
    trace file is a run, named by the file. A ROOT with no runs is reported on stderr and in --json (roots:
    runs_found, looked_for, reason).

    Incremental: a run whose files, sizes and mtimes did not change is skipped (unless profpipe's data
    contract changed); runs whose folder is gone are dropped (--keep-missing keeps them). A killed batch
    leaves every run wholly old or wholly new; the next one finishes the work. One batch at a time per
    warehouse (a lock). A run that fails is a ledger row with its error; the batch goes on.

    A CI gate, --fail-above PCT: after the batch, `profpipe diff --fail-above PCT` of the warehouse's newest
    measured run (by analysis time; with a step trace, or without step markers op type or kernel times, compared
    by their executions) against the run before it (the warehouse has no notion of a series of runs); fewer than
    two such runs pass.

    Exit status: 0 every run analysed or unchanged; 3 some run failed (see batch_runs); 4 --fail-above found a
    regression (and no run failed); 2 usage error (bad option, the warehouse locked by another batch);
    130 / 143 interrupted.
    """
    with _errors_as_exit("runs finished so far are in the warehouse; the next batch does the rest"):
        from .batch import BatchOptions, batch as run_batch

        options = BatchOptions(roots=tuple(roots), warehouse=warehouse, run_depth=run_depth, runs_glob=runs,
                               verify=verify, keep_missing=keep_missing, retry_failed=retry_failed,
                               executor=executor, scheduler=scheduler, workers=workers,
                               analysis=Options(strict=strict, step_range_name=step_range_name,
                                                memory_limit_mb=memory_limit, visual_report=visual_report,
                                                select=tuple(select) if select else None))
        with _progress_bars(quiet) as bars:
            result = run_batch(options, reporter=bars)
    document = {"warehouse": str(warehouse), "analysed": result.analysed, "unchanged": result.unchanged,
                "failed": result.failed, "empty": result.empty, "dropped": result.dropped, "missing": result.missing,
                "roots": [scan.as_json() for scan in result.roots], "workers": result.workers, "wall_s": result.wall_s}
    if json_out:
        from .trends import summary as trends_summary
        from .warehouse import is_warehouse

        # null when the batch found no run (nothing was written)
        document["trends"] = _jsonable(trends_summary(warehouse)) if is_warehouse(warehouse) else None
    if json_out and fail_above is None:
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    if not quiet:
        for scan in result.roots:
            for note in scan.notes:
                typer.echo(f"profpipe: {note}", err=True)
            if scan.reason is not None:
                typer.echo(f"profpipe: {scan.root}: no runs found ({scan.reason}); looked for {scan.looked_for}",
                           err=True)
    if not quiet and not json_out:
        from .export.text_table import simple_table

        typer.echo(simple_table(
            ["analysed", "unchanged", "failed", "empty", "dropped", "missing", "workers", "seconds"],
            [[len(result.analysed), len(result.unchanged), len(result.failed), len(result.empty),
              len(result.dropped), len(result.missing), result.workers, round(result.wall_s, 1)]]))
        for run, error in sorted(result.failed.items()):
            typer.echo(f"profpipe: run {run} failed: {error}", err=True)
    if fail_above is not None:
        raise typer.Exit(_batch_gate(warehouse, fail_above, result.exit_code, quiet, json_out, document))
    raise typer.Exit(result.exit_code)


def _jsonable(value: Any) -> Any:
    """`value` with infinities and NaN as None (JSON has neither)."""
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        return None
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def _batch_gate(warehouse: Path, fail_above: float, exit_code: int, quiet: bool, json_out: bool,
                document: dict) -> int:
    """`batch --fail-above`: diff the newest run with steps against the one before it; the exit status (the
    batch's own when not 0, else 4 on a regression). Prints the gate's table (quiet: only a regression, on stderr)
    or, with --json, the document again with `gate` (before, latest, fail_above, regressions)."""
    from .diff import latest_regressions

    try:
        compared = latest_regressions(warehouse, fail_above)
    except ProfpipeError as exc:
        typer.echo(f"profpipe: error: {exc}", err=True)
        return exc.exit_code
    failed = compared[2] if compared else []
    if json_out:
        gate = None if compared is None else {"a": compared[0], "b": compared[1], "fail_above": fail_above,
                                              "regressions": [_json_row(row) for row in failed]}
        sys.stdout.write(json.dumps(document | {"gate": gate}, indent=2) + "\n")
    elif compared is None:
        if not quiet:
            typer.echo(f"profpipe batch --fail-above {fail_above:g}: fewer than two measured runs (with a step "
                       "trace, or op type or kernel times), nothing to compare")
    elif failed or not quiet:
        _print_regressions(*compared, fail_above, err=quiet, command="batch")
    return exit_code or (EXIT_REGRESSION if failed else 0)


@contextmanager
def _errors_as_exit(kept: str) -> Iterator[None]:
    """Turn what ends a command early into one line on stderr and its exit status: a profpipe error, an
    interruption, or (a bug) any other exception; `kept` says what the user still has."""
    try:
        yield
    except ProfpipeError as exc:
        typer.echo(f"profpipe: error: {exc}", err=True)
        raise typer.Exit(exc.exit_code) from None
    except Interrupted as exc:
        typer.echo(f"profpipe: {exc}; {kept}", err=True)
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        typer.echo(f"profpipe: interrupted by SIGINT; {kept}", err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except Exception as exc:  # noqa: BLE001 - a bug outside the readers: one line, not a traceback
        if os.environ.get("PROFPIPE_DEBUG"):
            raise
        typer.echo(f"profpipe: internal error: {type(exc).__name__}: {exc} (a profpipe bug: please report it; "
                   f"PROFPIPE_DEBUG=1 shows the traceback); {kept}", err=True)
        raise typer.Exit(EXIT_NOTHING_USABLE) from None


def _type_list(text: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in text.split(",") if t.strip())


def _step_list(text: str | None) -> list[int] | None:
    """'3-5' or '3,4,5' as a list of steps (Options checks that they are consecutive)."""
    if text is None:
        return None
    try:
        if "-" in text.strip("-"):
            first, last = (int(part) for part in text.split("-", 1))
            return list(range(first, last + 1))
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"--step-list must look like 3-5 or 3,4,5, got {text!r}") from None


#: Rows `query` prints unless --limit says otherwise.
DEFAULT_QUERY_LIMIT = 100


@_command('profpipe query out "SELECT op_type, total_ns FROM op_type_stats ORDER BY total_ns DESC LIMIT 10"')
def query(
    output: Annotated[Path, typer.Argument(help="Output folder of `profpipe analyse`, or a warehouse of `profpipe batch`.")],
    sql: Annotated[str, typer.Argument(help="SQL over the tables and models (see `profpipe tables` and `profpipe describe`); in a warehouse, every table has a `run` column and batch_runs lists the runs.")],
    format: Annotated[str, typer.Option("--format", "-f", help="table (for people), csv, json (an array of objects) or parquet (needs --to).")] = "table",
    limit: Annotated[int, typer.Option("--limit", "-n", help="Print at most this many rows (0: all). A note on stderr says when rows were left out.")] = DEFAULT_QUERY_LIMIT,
    to: Annotated[Optional[Path], typer.Option("--to", metavar="FILE", help="Write to FILE instead of standard output.")] = None,
) -> None:
    """Run SQL over OUTPUT/profile.duckdb (or a warehouse's tables over all runs) and print the result.

    Rows stream out in batches, so `--limit 0 -f csv` works on tables of any size. Names are printed
    as they are (no markup is interpreted).
    """
    if format not in ("table", "csv", "json", "parquet"):
        raise _usage("--format must be table, csv, json or parquet")
    if format == "parquet" and to is None:
        raise _usage("--format parquet writes a file: give it with --to FILE")
    if limit < 0:
        raise _usage("--limit must be 0 (all rows) or more")
    import duckdb

    from .export.query_output import export_query

    try:
        con = _open(output)
        relation = con.sql(sql)
        if relation is None:
            return
        if limit:
            relation = relation.limit(limit + 1)  # one more row says whether any were left out
        written = export_query(relation, format, to, limit)
    except (duckdb.Error, ProfpipeError) as exc:
        raise _usage(str(exc)) from None
    if limit and written > limit:
        typer.echo(f"profpipe: note: showing the first {limit} rows; --limit 0 prints them all", err=True)


@_command('profpipe describe op_type_stats')
def describe(
    table: Annotated[Optional[str], typer.Argument(help="A table or model; without it, the list of them.")] = None,
    format: Annotated[str, typer.Option("--format", "-f", help="table (for people) or json.")] = "table",
    private: Annotated[bool, typer.Option("--private", help="Also list the intermediate (int_) models.")] = False,
) -> None:
    """Document the tables and SQL models: what one row is, and each column's type, unit and meaning.

    The same text is in profile.duckdb (COMMENT ON, see duckdb_columns()) and in sql/**/*.yml.
    """
    from rich.table import Table
    from rich.text import Text

    if format not in ("table", "json"):
        raise _usage("--format must be table or json")
    from .models import documentation

    entries = documentation()
    if table is None:
        shown = [e for e in entries.values() if private or e["layer"] != "intermediate"]
        if format == "json":
            sys.stdout.write(json.dumps([{k: e[k] for k in ("name", "layer", "description", "grain")}
                                         for e in shown], indent=2) + "\n")
            return
        listing = Table("name", "layer", "one row is", "grain")
        for entry in shown:
            listing.add_row(*(Text(v) for v in (entry["name"], entry["layer"], entry["description"],
                                                ", ".join(entry["grain"]))))
        _console().print(listing)
        return
    if table not in entries:
        raise _usage(f"no table or model {table!r}; `profpipe describe` lists them")
    entry = entries[table]
    if format == "json":
        sys.stdout.write(json.dumps(entry, indent=2) + "\n")
        return
    _console().print(Text(f"{entry['name']} ({entry['layer']}): {entry['description']}"))
    if entry["grain"]:
        _console().print(Text(f"one row per: {', '.join(entry['grain'])}"))
    columns = Table("column", "type", "unit", "meaning", "tests")
    for column in entry["columns"]:
        columns.add_row(*(Text(v) for v in (column["name"], column["type"], column["unit"] or "",
                                            column["description"], ", ".join(column["tests"]))))
    _console().print(columns)
    for invariant in entry["invariants"]:
        per = f" per {', '.join(invariant['per'])}" if invariant["per"] else ""
        _console().print(Text(f"invariant{per}: {invariant['expression']} ({invariant['why']})"))


@_command('profpipe check out')
def check(output: Annotated[Path, typer.Argument(help="Output folder of `profpipe analyse`.")]) -> None:
    """Run the models' data tests (unique grain, not null, accepted values, ranges, relationships, and the
    invariants across columns: parts within their whole) on OUTPUT/profile.duckdb; exit 1 if any fails."""
    import duckdb

    from .model_checks import check_models

    try:
        con = _open(output)
        failures = check_models(con)
    except (duckdb.Error, ProfpipeError) as exc:
        raise _usage(str(exc)) from None
    for failure in failures:
        typer.echo(f"FAIL {failure}")
    typer.echo(f"profpipe: {len(failures)} data tests failed" if failures else "profpipe: every data test passed",
               err=True)
    raise typer.Exit(1 if failures else 0)


@_command('profpipe tables out')
def tables(output: Annotated[Path, typer.Argument(help="Output folder of `profpipe analyse`, or a warehouse of `profpipe batch`.")]) -> None:
    """List the tables and SQL models in OUTPUT with row counts and what one row is (`describe` gives
    the columns); "not built" for those a run with --select did not build. A warehouse holds the normalized tables
    and the marts of every run (batch_runs.tables_not_built: what each run did not build)."""
    from rich.table import Table
    from rich.text import Text

    try:
        con = _open(output)
    except ProfpipeError as exc:
        raise _usage(str(exc)) from None
    from .models import documentation

    from .output import built_by

    present = {name for (name,) in con.execute("SELECT table_name FROM duckdb_tables() UNION ALL "
                                               "SELECT view_name FROM duckdb_views()").fetchall()}
    built = built_by(output)  # --select: a model the run did not build has no rows because it was not built
    listing = Table("name", "kind", "rows", "one row is")
    for entry in documentation().values():
        if entry["layer"] == "intermediate" or entry["name"] not in present:
            continue
        rows = "not built" if built is not None and entry["name"] not in built else \
            str(con.execute(f"SELECT count(*) FROM {entry['name']}").fetchone()[0])
        listing.add_row(*(Text(v) for v in (entry["name"], entry["layer"], rows, entry["description"])))
    _console().print(listing)


@_command('profpipe search out matmul --kind kernel')
def search(
    output: Annotated[Path, typer.Argument(help="Output folder of `profpipe analyse`, or a warehouse of `profpipe batch` (every run).")],
    term: Annotated[str, typer.Argument(help="What to look for in op and kernel names and op types; case does not matter.")],
    kind: Annotated[str, typer.Option("--kind", "-k", help="op, kernel or all.")] = "all",
    limit: Annotated[int, typer.Option("--limit", "-n", help="Print at most this many matches, best first (0: all).")] = 20,
    json_out: Annotated[bool, typer.Option("--json", help="Print the matches as a JSON array of objects (times in ns).")] = False,
) -> None:
    """Find ops and kernels by name or type, best match first, as MindInsight's op table searches op_name and
    op_type, but case-insensitive and ranked.

    A match is exact (the full name, the short name after the last '/', or the op type equals TERM), a prefix, a
    substring, or fuzzy (TERM's characters in order in the name or type: `cv2d` finds Conv2D); matches of one
    class are ordered by device time, then own time. Ops come from the marts op_detail_stats (MindSpore CPU/GPU),
    device_op_stats (Ascend) and host_op_stats (PyTorch, Paddle, NVTX), merged where an op is in several; kernels
    from kernel_stats, summed over streams (their type column is the op that launched most of their time, not
    searched). Times are printed in µs; --json gives ns.
    """
    import duckdb

    from .export.text_table import simple_table
    from .op_search import search as find

    if kind not in ("op", "kernel", "all"):
        raise _usage("--kind must be op, kernel or all")
    if limit < 0:
        raise _usage("--limit must be 0 (all matches) or more")
    if not term.strip():
        raise _usage("TERM is empty")
    try:
        rows = find(_open(output), term, kind, limit)
    except (duckdb.Error, ProfpipeError) as exc:
        raise _usage(str(exc)) from None
    if json_out:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    if not rows:
        typer.echo(f"profpipe search: nothing matches {term!r}", err=True)
        return

    def micro(value: int | None) -> float | None:
        return None if value is None else round(value / 1000, 3)

    def short(text: str | None) -> str | None:
        return text if text is None or len(text) <= 70 else "..." + text[-67:]

    runs = ("run",) if "run" in rows[0] else ()
    cells = [(row["match"], row["kind"], short(row["name"]), short(row["type"]), *(row[r] for r in runs), row["rank"],
              row["calls"], micro(row["total_ns"]), micro(row["device_ns"]), row["source"]) for row in rows]
    typer.echo(simple_table(("match", "kind", "name", "type / op", *runs, "rank", "calls", "total us", "device us",
                             "from"), cells))


@_command('profpipe report out -o resnet.html')
def report(
    output: Annotated[Path, typer.Argument(help="An output folder of `profpipe analyse`, or a warehouse of `profpipe batch`.", metavar="OUTPUT")],
    to: Annotated[Optional[Path], typer.Option("--output", "-o", metavar="FILE", help="Write the report to FILE (default: OUTPUT/report.html; a warehouse run: WAREHOUSE/report-<run>.html).")] = None,
    run: Annotated[Optional[str], typer.Option("--run", metavar="ID", help="A warehouse: the report of this run instead of the batch report.")] = None,
) -> None:
    """Write the visual report: one self-contained HTML file (no server, no network) to open in a browser.

    For an output folder: the overview (run, formats, ranks, steps, phases, the advisor's top findings, the
    trace health), the step trace, operators and kernels, GPU/NPU utilisation, the data pipeline,
    communication, memory and a timeline preview; a page the dump has no data for says why. For a
    warehouse: every run's step time and the regressions of the latest run against the one before
    (--run ID: that run's own pages). `analyse` and `batch` write it by default (--no-report to skip).
    """
    from .report import write_report

    with _errors_as_exit("no report was written"):
        written = write_report(output, to, run=run)
    typer.echo(f"profpipe: wrote {written}")


#: Findings the console prints after `analyse` (`profpipe advise OUT` prints them all).
CONSOLE_FINDINGS = 5


@_command('profpipe advise out')
def advise(
    output: Annotated[Path, typer.Argument(help="Output folder of `profpipe analyse`, or a warehouse of `profpipe batch` (every run).")],
    json_out: Annotated[bool, typer.Option("--json", help="Print every rule's row of advisor_finding as JSON (evidence rows decoded).")] = False,
) -> None:
    """Print the advisor's findings of an output (findings.json's rows, table advisor_finding): each rule that fired
    with its severity, the ranks and steps it fired on, its worst value and what to do; then the rules that passed
    or do not apply. Each finding's evidence_sql, run on OUTPUT/profile.duckdb, gives its evidence rows."""
    import duckdb

    from .advisor import read_findings

    try:
        rows = read_findings(_open(output))
    except (duckdb.Error, ProfpipeError) as exc:
        raise _usage(f"{exc} (outputs of profpipe before the advisor have no advisor_finding table: analyse again)"
                     if "advisor_finding" in str(exc) else str(exc)) from None
    if json_out:
        sys.stdout.write(json.dumps(rows, indent=2, default=str) + "\n")
        return
    _print_findings(rows, 0, None)
    for row in rows:
        if row["status"] == "fired":
            typer.echo(f"\n[{row['severity']}] {row['rule_id']}{_run_of(row)}: {row['title']}\n  {row['suggestion']}\n"
                       f"  evidence ({row['fired_rows']} rows): {_one_line(row['evidence_sql'])}")
    quiet = [f"{row['rule_id']}{_run_of(row)} ({row['reason'] or row['status']})"
             for row in rows if row["status"] != "fired"]
    if quiet:
        typer.echo("\nnot fired: " + "; ".join(quiet))


def _one_line(sql: str) -> str:
    """A rule's SQL on one line, without its comments."""
    return " ".join(" ".join(line for line in sql.splitlines() if not line.lstrip().startswith("--")).split())


def _run_of(row: dict) -> str:
    return f" [run {row['run']}]" if "run" in row else ""


def _print_findings(rows: list[dict], top: int, more: str | None) -> None:
    """The fired findings as a plain-text table (severity, rule, ranks, steps, one line); `top` rows at most (0: all),
    `more` the command that prints them all."""
    from .advisor import headline, where
    from .export.text_table import simple_table

    fired = [row for row in rows if row["status"] == "fired"]
    shown = fired[:top] if top else fired
    not_applicable = sum(row["status"] == "not_applicable" for row in rows)
    checked = len({(row.get("run"), row["rule_id"]) for row in rows})
    typer.echo(f"advisor: {len(fired)} findings ({checked} rules checked, {not_applicable} not applicable)"
               + (f"; all of them: profpipe {more}" if more and len(shown) < len(fired) else ""))
    if shown:
        runs = ("run",) if any("run" in row for row in shown) else ()
        cells = [(row["severity"], row["rule_id"], *(row[r] for r in runs), where(row["ranks"]), where(row["steps"]),
                  headline(row)) for row in shown]
        typer.echo(simple_table(("severity", "rule", *runs, "ranks", "steps", "finding"), cells))


#: Rows `diff` prints unless --top says otherwise.
DEFAULT_DIFF_TOP = 20


@_command('# what changed from out_a (the baseline) to out_b, per kernel, op type and step phase\nprofpipe diff out_a out_b --report diff.html\n'
          '# a CI gate: exit 4 when the step time or a top kernel / op type is significantly over 5 % slower\n'
          'profpipe diff baseline.profpipe candidate.profpipe --fail-above 5\n'
          '# a GPU run against an NPU run of the same model: aligned op by op along the op sequence of a step\n'
          'profpipe diff gpu_out npu_out')
def diff(
    a: Annotated[str, typer.Argument(help="Run A (the baseline): an output folder of `profpipe analyse`, or a run id with --warehouse.")],
    b: Annotated[str, typer.Argument(help="Run B (compared with A): an output folder, or a run id with --warehouse.")],
    top: Annotated[int, typer.Option("--top", "-n", help="Print the N rows of largest impact (0: all).")] = DEFAULT_DIFF_TOP,
    json_out: Annotated[bool, typer.Option("--json", help="Print every row as JSON instead of the top list.")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", metavar="FILE", help="Also write the whole table to FILE (.parquet or .csv).")] = None,
    warehouse: Annotated[Optional[Path], typer.Option("--warehouse", "-w", metavar="W", help="A and B are run ids in the warehouse W.")] = None,
    html: Annotated[Optional[Path], typer.Option("--report", metavar="FILE", help="Also write the ranked changes as a self-contained HTML report to FILE.")] = None,
    fail_above: Annotated[Optional[float], typer.Option("--fail-above", metavar="PCT", min=0, help=FAIL_ABOVE_HELP)] = None,
    align: Annotated[str, typer.Option("--align", metavar="auto|names|ops", help="names: match kernels, op types and step phases by name; ops: align the two runs op by op along the op sequence of a representative step, over canonical op types (a GPU run against an NPU run); auto: ops when the runs ran on different device types (run_info.device_type), else names.")] = "auto",
) -> None:
    """Compare run B with run A per kernel, op type and step phase: counts, total and per-step time, their
    change, ranked by the change of the per-step time, with Welch's t test over the steps.

    A row is significant when p < 0.05 and the per-step time changed by at least 1 %. Keys found in one
    run only are listed as only_a / only_b.

    A CI gate, --fail-above PCT: exit status 4 when a significant regression of more than PCT % of run A's
    per-step time exists on the step time (step phase total) or on a top kernel or op type (one whose per-step
    time in A or B is at least 1 % of A's step time; a key new in B counts as a regression of any size).
    Improvements never fail. The regressions are printed after the table (--json: the list `regressions`).

    --align ops (the default, auto, chooses it when the runs ran on different device types, a GPU run and an NPU
    run): the runs are aligned op by op instead (docs/batch.md, Comparing a GPU run with an NPU run): the
    op sequence of one representative step per run, op types mapped onto canonical types (aten::conv2d and
    Conv2D are conv2d), aligned with difflib.SequenceMatcher; per aligned op the time per step on each side,
    the difference and the kernels it launched; ops on one side only are listed as only_a / only_b; then the
    per op type and per collective type summaries and the peak memory of each side. -o writes the aligned ops;
    --fail-above does not apply.

    Exit status: 0 compared (with --fail-above: nothing regressed beyond PCT); 4 --fail-above found a
    regression; 2 usage error (a folder without profile.duckdb, a run not in the warehouse).
    """
    if top < 0:
        raise _usage("--top must be 0 (all rows) or more")
    if output is not None and output.suffix not in (".parquet", ".csv"):
        raise _usage(f"-o {output}: the file name must end in .parquet or .csv")
    if align not in ("auto", "names", "ops"):
        raise _usage(f"--align {align}: choose auto, names or ops")
    if align == "ops" and fail_above is not None:
        raise _usage("--fail-above compares runs by name; it does not apply with --align ops")
    import duckdb

    from .diff import diff_runs

    try:
        if warehouse is not None:
            from .warehouse import open_run

            con_a, con_b = open_run(warehouse, a), open_run(warehouse, b)
        else:
            con_a, con_b = _open(Path(a)), _open(Path(b))
        if align == "auto":
            from .align import device_types, needs_op_alignment

            align = "ops" if needs_op_alignment(con_a, con_b) else "names"
            if align == "ops":
                if fail_above is not None:
                    raise UsageError(f"A ran on {', '.join(sorted(device_types(con_a)))} and B on "
                                     f"{', '.join(sorted(device_types(con_b)))}: they are aligned op by op, and "
                                     "--fail-above compares runs by name (--align names compares them by name)")
                typer.echo(f"profpipe: A ran on {', '.join(sorted(device_types(con_a)))} and B on "
                           f"{', '.join(sorted(device_types(con_b)))}: aligned op by op (--align ops; --align names "
                           "matches names)", err=True)
        if align == "ops":
            from .align import align_runs

            alignment = align_runs(con_a, con_b)
        else:
            table = diff_runs(con_a, con_b)
    except (duckdb.Error, ProfpipeError) as exc:
        raise _usage(str(exc)) from None
    if align == "ops":
        _align_outputs(a, b, alignment, top, json_out, output, html)
        return
    if output is not None:
        _write_table(table, output)
    if html is not None:
        from .report import write_diff_report

        write_diff_report(table, a, b, html)
    failed = None
    if fail_above is not None:
        from .diff import regressions

        failed = regressions(table, fail_above)
    if json_out:
        rows = [_json_row(row) for row in table.to_pylist()]
        document = {"a": a, "b": b, "samples": _samples(table), "rows": rows}
        if failed is not None:
            document |= {"fail_above": fail_above, "regressions": [_json_row(row) for row in failed]}
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        _print_diff(a, b, table, top)
        if failed is not None:
            _print_regressions(a, b, failed, fail_above)
    if failed:
        raise typer.Exit(EXIT_REGRESSION)


def _align_outputs(a: str, b: str, alignment: dict, top: int, json_out: bool, output: Path | None,
                   html: Path | None) -> None:
    """`diff --align ops`: the aligned ops to -o, the report, and the text or JSON answer."""
    if output is not None:
        _write_table(alignment["ops"], output)
    if html is not None:
        from .report import write_align_report

        write_align_report(alignment, a, b, html)
    if json_out:
        document = {"a": a, "b": b, "align": "ops", "side_a": alignment["a"], "side_b": alignment["b"],
                    **{key: [_json_row(row) for row in alignment[key].to_pylist()]
                       for key in ("ops", "op_types", "collectives")}}
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return
    from .export.text_table import simple_table

    def micro(value: float | None) -> float | None:
        return None if value is None else round(value / 1000, 3)

    def cut(text: str | None, width: int = 40) -> str | None:
        return text if text is None or len(text) <= width else text[:width - 3] + "..."

    ops = alignment["ops"].to_pylist()
    matched = sum(row["status"] == "both" for row in ops)
    for label, name, side in (("A", a, alignment["a"]), ("B", b, alignment["b"])):
        memory = "" if side["peak_allocated_bytes"] is None else \
            f", peak memory {side['peak_allocated_bytes'] / 2 ** 20:.1f} MiB allocated" + (
                "" if side["peak_reserved_bytes"] is None else f", {side['peak_reserved_bytes'] / 2 ** 20:.1f} MiB reserved")
        typer.echo(f"{label} {name}: rank {side['rank']}, {side['ops']} ops from {side['source']} in step "
                   f"{side['representative_step']} (capture {side['representative_capture']}), {side['steps']} steps"
                   f"{memory or ', no memory peak'}")
    shown = ops[:top] if top else ops
    typer.echo(f"profpipe diff --align ops: {len(ops)} aligned positions, {matched} matched, "
               f"{sum(r['status'] == 'only_a' for r in ops)} only in A, {sum(r['status'] == 'only_b' for r in ops)} "
               f"only in B; showing {len(shown)} in sequence order (times per step, us)")
    cells = [(row["position"], row["canonical_type"], row["status"], cut(row["op_name_a"]), cut(row["op_name_b"]),
              micro(row["time_a_ns"]), micro(row["time_b_ns"]), micro(row["difference_ns"]),
              None if row["kernels_a"] is None else round(row["kernels_a"], 2),
              cut(row["top_kernel_a"], 30),
              None if row["kernels_b"] is None else round(row["kernels_b"], 2),
              cut(row["top_kernel_b"], 30)) for row in shown]
    typer.echo(simple_table(("pos", "type", "status", "op A", "op B", "A us", "B us", "B - A us", "kernels A",
                             "top kernel A", "kernels B", "top kernel B"), cells))
    for key, title in (("op_types", "per op type"), ("collectives", "per collective type")):
        rows = alignment[key].to_pylist()
        if not rows:
            typer.echo(f"{title}: none")
            continue
        typer.echo(f"{title} (us per step):")
        typer.echo(simple_table(("type", "ops A", "ops B", "matched", "A us", "B us", "B - A us"), [
            (row["canonical_type"], row["ops_a"], row["ops_b"], row["matched"], micro(row["time_a_ns"]),
             micro(row["time_b_ns"]), micro(row["difference_ns"])) for row in rows]))


def _samples(table: "pa.Table") -> str:
    """What the diff's test compared (profpipe/diff.py): 'steps', or 'executions' where a run has no step
    markers."""
    from .diff import STEPS

    return table.column("samples")[0].as_py() if table.num_rows else STEPS


def _json_row(row: dict) -> dict:
    """A diff row for JSON: +-inf and NaN as null."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}


def _print_regressions(a: str, b: str, failed: list[dict], fail_above: float, err: bool = False,
                       command: str = "diff") -> None:
    """What the gate --fail-above found, as a short plain-text table (times in µs); one line when nothing."""
    from .export.text_table import simple_table

    if not failed:
        typer.echo(f"profpipe {command} --fail-above {fail_above:g}: no significant regression above {fail_above:g} % "
                   f"from {a} to {b}", err=err)
        return
    typer.echo(f"profpipe {command} --fail-above {fail_above:g}: {len(failed)} significant "
               f"regression{'s' if len(failed) != 1 else ''} above "
               f"{fail_above:g} % from {a} to {b} (samples: {failed[0]['samples']}):", err=err)
    cells = [(row["kind"], row["key"] if len(row["key"]) <= 60 else row["key"][:57] + "...",
              None if row["per_step_a_ns"] is None else round(row["per_step_a_ns"] / 1000, 3),
              None if row["per_step_b_ns"] is None else round(row["per_step_b_ns"] / 1000, 3),
              "new" if row["relative_change"] is None else round(100 * row["relative_change"], 1),
              None if row["p_value"] is None else float(f"{row['p_value']:.3g}")) for row in failed]
    typer.echo(simple_table(("kind", "key", "per step A us", "per step B us", "change %", "p"), cells), err=err)


def _write_table(table: "pa.Table", path: Path) -> None:
    """The whole diff table as Parquet or CSV."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, path)
    else:
        import pyarrow.csv as pa_csv

        pa_csv.write_csv(table, path)


def _print_diff(a: str, b: str, table: "pa.Table", top: int) -> None:
    """The top rows of a diff as a plain-text table (times in µs)."""
    from .export.text_table import simple_table

    rows = table.to_pylist()
    shown = rows[:top] if top else rows
    significant = sum(row["significant"] for row in rows)
    steps_a, steps_b = (rows[0]["steps_a"], rows[0]["steps_b"]) if rows else (0, 0)
    samples = _samples(table)
    units = "steps" if samples == "steps" else "cycles"
    typer.echo(f"profpipe diff: A {a} ({steps_a} {units}) -> B {b} ({steps_b} {units}), samples: {samples}: "
               f"{len(rows)} keys, {significant} significant (p < 0.05, change >= 1 %); showing {len(shown)} by "
               "|change per step|")

    def micro(value: float | None) -> float | None:
        return None if value is None else round(value / 1000, 3)

    cells = [(row["kind"], row["key"] if len(row["key"]) <= 60 else row["key"][:57] + "...", row["status"],
              row["count_a"], row["count_b"], micro(row["per_step_a_ns"]), micro(row["per_step_b_ns"]),
              micro(row["per_step_change_ns"]),
              None if row["relative_change"] is None else round(100 * row["relative_change"], 1),
              None if row["p_value"] is None else float(f"{row['p_value']:.3g}"),
              "yes" if row["significant"] else "") for row in shown]
    typer.echo(simple_table(("kind", "key", "status", "count A", "count B", "per step A us", "per step B us",
                             "change us", "change %", "p", "significant"), cells))


def _open(output: Path) -> "duckdb.DuckDBPyConnection":
    """A read-only connection to an output folder's profile.duckdb, or to a warehouse's views."""
    from .database import connect as duckdb_connect
    from .warehouse import connect, is_warehouse

    if is_warehouse(output):
        return connect(output)
    database = output / "profile.duckdb"
    if not database.is_file():
        raise UsageError(f"{output}: not a profpipe output folder (no profile.duckdb)")
    return duckdb_connect(database, read_only=True)


def _usage(message: str) -> typer.Exit:
    """Print `message` as a usage error and return the exit to raise."""
    typer.echo(f"profpipe: error: {message}", err=True)
    return typer.Exit(2)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"profpipe {VERSION}")
        raise typer.Exit(0)


@app.callback()
def _main(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                               help="Print profpipe's version and exit.")] = False) -> None:
    """profpipe: offline analysis of deep-learning profiler dumps.

    Point `analyse` at a folder a profiler saved; read the result with `query`, `tables` and `describe`,
    or open OUTPUT/profile.duckdb with any DuckDB client.
    """


def _print_input_pipeline(rank: int, pipeline: dict) -> None:
    """The MindData answer of one rank: how input-bound its steps are, then profpipe's and MindInsight's findings."""
    if pipeline["avg_wait_share"] is not None:
        _console().print(f"rank {rank}: input pipeline: {pipeline['input_bound']} input-bound "
                   f"({100 * pipeline['avg_wait_share']:.1f}% of a step waits for data, "
                   f"{pipeline['steps_measured']} steps, {pipeline['wait_source']})", markup=False)
    for finding in pipeline["findings"]:
        if finding["analyzer"] != "mindspore":
            _console().print(f"  {finding['finding']} -> {finding['suggestion']}", markup=False)


def _print_health(result: "RunResult") -> None:
    """The trace-health summary, on stderr: counts per check, the first rows, where the whole ledger is."""
    health = result.health
    if not health["rows"]:
        return
    state = "partial: data was dropped or changed" if health["partial"] else "warnings only"
    typer.echo(f"profpipe: trace health: {len(health['rows'])} checks fired ({state}):", err=True)
    from .health import describe as describe_health

    for line in describe_health(health["rows"]):
        typer.echo(f"  {line}", err=True)
    typer.echo(f"  full ledger: table trace_health ({result.output / 'reports' / 'trace_health.csv'})", err=True)


def _ms(value: float | None) -> str:
    """A phase in ms for the console; a phase the data cannot give (no FP or BP point) says so."""
    return "n/a (no FP/BP point)" if value is None else f"{value:.3f}"


def _print_summary(result: "RunResult") -> None:
    from rich.table import Table
    from rich.text import Text

    _console().print(f"profpipe: wrote {result.output} (ranks {', '.join(map(str, result.ranks))})", markup=False)
    if "selection" in result.summary:
        selection = result.summary["selection"]
        _console().print(f"profpipe: --select {' '.join(selection['select'])}: built {len(selection['models'])} models "
                         f"({', '.join(m for m in selection['models'] if not m.startswith(('stg_', 'int_')))} and what "
                         "they read); the others were not built", markup=False)
    for rank in result.summary["ranks"]:
        if rank.get("top_ops"):
            ops = Table(title=f"rank {rank['rank']}: top ops by self time (annotations such as ProfilerStep#N left out)",
                        title_justify="left")
            for column in ("op", "calls", "self ms", "total ms", "device ms", "self share %"):
                ops.add_column(column, justify="left" if column == "op" else "right",
                               overflow="fold" if column == "op" else "ellipsis")
            for row in rank["top_ops"]:
                name = row["op_name"] if len(row["op_name"]) <= 60 else row["op_name"][:57] + "..."
                ops.add_row(Text(name), str(row["calls"]), f"{row['self_ms']:.3f}", f"{row['total_ms']:.3f}",
                            f"{row['device_self_ms']:.3f}",
                            "" if row["self_share"] is None else f"{100 * row['self_share']:.1f}")
            _console().print(ops)
        elif rank["top_op_types"]:
            types = Table(title=f"rank {rank['rank']}: top op types", title_justify="left")
            for column in ("side", "op type", "count", "total ms", "share %"):
                types.add_column(column, justify="right" if column in ("count", "total ms", "share %") else "left")
            for row in rank["top_op_types"]:
                types.add_row(Text(row["side"]), Text(row["op_type"]), str(row["occurrences"]), f"{row['total_ms']:.3f}",
                              "" if row["share"] is None else f"{100 * row['share']:.1f}")
            _console().print(types)
        if rank["top_kernels"]:
            kernels = Table(title=f"rank {rank['rank']}: top kernels", title_justify="left")
            for column in ("kernel", "stream", "count", "total ms", "share %"):
                kernels.add_column(column, justify="left" if column == "kernel" else "right")
            for row in rank["top_kernels"]:
                name = row["name"] if len(row["name"]) <= 60 else row["name"][:57] + "..."
                kernels.add_row(Text(name), str(row["stream_id"]), str(row["instances"]), f"{row['total_ms']:.3f}",
                                "" if row["share"] is None else f"{100 * row['share']:.1f}")
            _console().print(kernels)
        steps = rank["steps"]
        if steps["count"]:
            phases = ", ".join(f"{label} {_ms(steps[key])}" for label, key in (
                ("iteration gap", "avg_iteration_interval_ms"), ("fp+bp", "avg_fp_and_bp_ms"), ("tail", "avg_tail_ms")))
            _console().print(f"rank {rank['rank']}: {steps['count']} steps, avg {_ms(steps['avg_total_ms'])} ms ({phases})",
                       markup=False)
        for device in rank["memory"]:
            where = device["device_type"] + ("" if device["device_id"] is None or device["device_id"] < 0
                                             else f":{device['device_id']}")
            since = " since the trace began" if device["in_use_from_trace_start"] else ""
            _console().print(f"rank {rank['rank']}: memory {where}: peak {device['peak_in_use_bytes'] / 2**20:.1f} MiB "
                       f"in use{since}, {device['allocations']} allocations, {device['frees']} frees", markup=False)
        if rank["input_pipeline"]:
            _print_input_pipeline(rank["rank"], rank["input_pipeline"])

