"""The `profpipe` command: analyse a saved profiler folder, query the result, list its tables.

A thin layer over pipeline.run and profile.duckdb: argument parsing, progress bars and
plain-text tables for people, CSV/JSON for machines. Errors in the input are printed as one
line naming the file and line, never as a traceback.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import duckdb
import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from .errors import EXIT_INTERRUPTED, EXIT_NOTHING_USABLE, Interrupted, ProfpipeError
from .health import describe
from .export.ascend_reports import ReportOptions
from .models import load_models
from .run import RunResult, analyse as run_analysis
from .tables import catalog

app = typer.Typer(
    help="profpipe: offline analysis of deep-learning profiler dumps.\n\n"
         "Point `analyse` at a folder a profiler saved; open the result with `query` and `tables`, "
         "or with any DuckDB client.",
    no_args_is_help=True, add_completion=False, rich_markup_mode=None)
_err = Console(stderr=True)
_out = Console()


class _BarReporter:
    """Draws one progress bar per stage."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._task = None

    def stage(self, name: str, total: float) -> None:
        if self._task is not None:
            self._progress.update(self._task, completed=self._progress.tasks[self._task].total)
        self._task = self._progress.add_task(name, total=max(total, 1))

    def advance(self, amount: float) -> None:
        self._progress.advance(self._task, amount)


@app.command()
def analyse(
    path: Annotated[Path, typer.Argument(help="Folder the profiler saved (any level above the data files), or one trace file that stands alone (PyTorch/Paddle trace, Nsight Systems export, MindData log).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Output folder; replaced atomically when the run succeeds.")],
    rank: Annotated[Optional[list[int]], typer.Option("--rank", help="Only this rank; repeat for several. Default: all ranks found.")] = None,
    timeline_limit: Annotated[Optional[float], typer.Option("--timeline-limit", metavar="MB", help="Cap timeline/trace.json at MB mebibytes; later events are dropped first, steps are always kept.")] = None,
    timeline_summary: Annotated[bool, typer.Option("--timeline-summary", help="Timeline with steps, their phases and the overlap analysis only (no ops, kernels or tasks): small enough for many ranks.")] = False,
    model: Annotated[Optional[list[int]], typer.Option("--model", help="msprof exports: read this model (graph) id; repeat for several (a rank reads the one with most files). Default: per rank, the model with most files.")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Make any data loss fatal (exit 1, the earlier output kept): an unreadable source, or a number dropped, clamped or repaired (see trace_health).")] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace OUTPUT even when it is a non-empty folder profpipe did not write (never one that is, holds or lies inside the input).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but errors: no summary tables, no health summary.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the run summary as JSON instead of tables.")] = False,
    fp_op: Annotated[Optional[str], typer.Option("--fp-op", metavar="OP", help="Full name of the op that starts forward propagation; overrides the step trace (default: $FP_POINT or $PROFILING_FP_START).")] = None,
    bp_op: Annotated[Optional[str], typer.Option("--bp-op", metavar="OP", help="Full name of the op that ends backward propagation (default: $BP_POINT or $PROFILING_BP_END).")] = None,
    rank_map: Annotated[Optional[Path], typer.Option("--rank-map", metavar="FILE", help="Ranks of traces that name none (no distributedInfo, no rank-<n>/worker<n> in the name): lines '<path or glob> <rank>' (or a JSON object {\"path or glob\": rank}), paths relative to PATH; the first pattern that matches a source's file or folder wins. The file and the name come first.")] = None,
    step_range_name: Annotated[Optional[str], typer.Option("--step-range-name", metavar="NAME", help="PyTorch traces and Nsight Systems exports: the annotation or NVTX range that marks a step, named NAME or NAME and its number ('train_step 12', 'step#3'). Default: ProfilerStep#N.")] = None,
    report_style: Annotated[str, typer.Option("--report-style", help="MindSpore-compatible reports: 'latest' MindSpore behaviour or 'legacy' (Ascend: MindSpore r0.5-r1.0 file layouts and averages; MindData: 1.x files, as MindInsight expects them).")] = "latest",
    subgraph: Annotated[str, typer.Option("--subgraph", help="Ascend op detail report: all, Default or Gradients ops.")] = "all",
    optypes_to_deal: Annotated[str, typer.Option("--optypes-to-deal", metavar="TYPES", help="Ascend op detail report: only these comma-separated op types.")] = "",
    optypes_not_deal: Annotated[str, typer.Option("--optypes-not-deal", metavar="TYPES", help="Ascend op detail report: leave out these comma-separated op types.")] = "Variable",
    op_path: Annotated[bool, typer.Option("--op-path", help="Ascend op detail report: add the full op name column.")] = False,
) -> None:
    """Analyse a saved profiler folder, or one trace file, into OUTPUT (tables/, profile.duckdb, reports/,
    timeline/, manifest.json).

    OUTPUT is replaced only when the run succeeds, and only when it is empty or written by profpipe
    (or with --force); inputs are never written. After the run a health summary lists every value
    dropped, clamped or repaired (table trace_health).

    Exit status: 0 complete; 3 partial (a source skipped, or data dropped or repaired: see the health
    summary); 1 nothing usable (no source could be read, or --strict met data loss); 2 usage error
    (bad option, an OUTPUT that must not be replaced); 130 / 143 interrupted by SIGINT / SIGTERM.
    """
    try:
        options = ReportOptions(style=report_style, subgraph=subgraph,
                                optypes_to_deal=_type_list(optypes_to_deal),
                                optypes_not_deal=_type_list(optypes_not_deal), show_op_path=op_path)
        with Progress(TextColumn("{task.description:<8}"), BarColumn(), TaskProgressColumn(),
                      TimeElapsedColumn(), console=_err, transient=True,
                      disable=quiet or not _err.is_terminal) as bars:
            result = run_analysis(path, output, ranks=rank, timeline_limit_mb=timeline_limit,
                                  strict=strict, reporter=_BarReporter(bars), fp_op=fp_op, bp_op=bp_op,
                                  report_options=options, timeline_summary=timeline_summary,
                                  models=model, step_range=step_range_name, force=force,
                                  rank_map=rank_map)
    except ProfpipeError as exc:
        typer.echo(f"profpipe: error: {exc}", err=True)
        raise typer.Exit(exc.exit_code) from None
    except Interrupted as exc:
        typer.echo(f"profpipe: {exc}; nothing was written, the earlier output is kept", err=True)
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        typer.echo("profpipe: interrupted by SIGINT; nothing was written, the earlier output is kept", err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except Exception as exc:  # noqa: BLE001 - a bug outside the readers: one line, not a traceback
        if os.environ.get("PROFPIPE_DEBUG"):
            raise
        typer.echo(f"profpipe: internal error: {type(exc).__name__}: {exc} (a profpipe bug: please report it; "
                   "PROFPIPE_DEBUG=1 shows the traceback); the earlier output is kept", err=True)
        raise typer.Exit(EXIT_NOTHING_USABLE) from None
    if json_out:
        sys.stdout.write(json.dumps(result.summary, indent=2) + "\n")
    elif not quiet:
        _print_summary(result)
    if not quiet:
        for notice in result.notices:
            typer.echo(f"profpipe: note: {notice}", err=True)
        _print_health(result)
    raise typer.Exit(result.exit_code)


def _type_list(text: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in text.split(",") if t.strip())


@app.command()
def query(
    output: Annotated[Path, typer.Argument(help="Output folder of `profpipe analyse`.")],
    sql: Annotated[str, typer.Argument(help="SQL over the tables and models (see `profpipe tables`).")],
    format: Annotated[str, typer.Option("--format", "-f", help="table, csv or json.")] = "table",
) -> None:
    """Run SQL over OUTPUT/profile.duckdb and print the result."""
    if format not in ("table", "csv", "json"):
        typer.echo("profpipe: error: --format must be table, csv or json", err=True)
        raise typer.Exit(2)
    try:
        con = _open(output)
        relation = con.sql(sql)
        if relation is None:
            return
        frame = relation.pl()
    except (duckdb.Error, ProfpipeError) as exc:
        typer.echo(f"profpipe: error: {exc}", err=True)
        raise typer.Exit(2) from None
    if format == "csv":
        sys.stdout.write(frame.write_csv())
    elif format == "json":
        sys.stdout.write(json.dumps(frame.to_dicts(), default=str) + "\n")
    else:
        table = Table(*frame.columns, show_lines=False)
        for row in frame.iter_rows():
            table.add_row(*("" if v is None else str(v) for v in row))
        _out.print(table)


@app.command()
def tables(output: Annotated[Path, typer.Argument(help="Output folder of `profpipe analyse`.")]) -> None:
    """List the normalized tables and the SQL models in OUTPUT with row counts and what one row is."""
    try:
        con = _open(output)
    except ProfpipeError as exc:
        typer.echo(f"profpipe: error: {exc}", err=True)
        raise typer.Exit(2) from None
    table = Table("name", "kind", "rows", "one row is")
    for name, spec in catalog().items():
        table.add_row(name, "table", str(con.execute(f"SELECT count(*) FROM {name}").fetchone()[0]), spec.description)
    for model in load_models():
        rows = con.execute(f"SELECT count(*) FROM {model.name}").fetchone()[0]
        table.add_row(model.name, model.kind.lower(), str(rows), model.description)
    _out.print(table)


def _open(output: Path) -> duckdb.DuckDBPyConnection:
    database = output / "profile.duckdb"
    if not database.is_file():
        raise ProfpipeError(f"{output}: not a profpipe output folder (no profile.duckdb)")
    con = duckdb.connect(str(database), read_only=True)
    con.execute("SET file_search_path = ?", [str(output.resolve())])
    return con


def _print_input_pipeline(rank: int, pipeline: dict) -> None:
    """The MindData answer of one rank: how input-bound its steps are, then profpipe's and MindInsight's findings."""
    if pipeline["avg_wait_share"] is not None:
        _out.print(f"rank {rank}: input pipeline: {pipeline['input_bound']} input-bound "
                   f"({100 * pipeline['avg_wait_share']:.1f}% of a step waits for data, "
                   f"{pipeline['steps_measured']} steps, {pipeline['wait_source']})", markup=False)
    for finding in pipeline["findings"]:
        if finding["analyzer"] != "mindspore":
            _out.print(f"  {finding['finding']} -> {finding['suggestion']}", markup=False)


def _print_health(result: RunResult) -> None:
    """The trace-health summary, on stderr: counts per check, the first rows, where the whole ledger is."""
    health = result.health
    if not health["rows"]:
        return
    state = "partial: data was dropped or changed" if health["partial"] else "warnings only"
    typer.echo(f"profpipe: trace health: {len(health['rows'])} checks fired ({state}):", err=True)
    for line in describe(health["rows"]):
        typer.echo(f"  {line}", err=True)
    typer.echo(f"  full ledger: table trace_health ({result.output / 'reports' / 'trace_health.csv'})", err=True)


def _print_summary(result: RunResult) -> None:
    _out.print(f"profpipe: wrote {result.output} (ranks {', '.join(map(str, result.ranks))})", markup=False)
    for rank in result.summary["ranks"]:
        if rank["top_op_types"]:
            types = Table(title=f"rank {rank['rank']}: top op types", title_justify="left")
            for column in ("side", "op type", "count", "total ms", "share %"):
                types.add_column(column, justify="right" if column in ("count", "total ms", "share %") else "left")
            for row in rank["top_op_types"]:
                types.add_row(row["side"], row["op_type"], str(row["occurrences"]), f"{row['total_ms']:.3f}",
                              "" if row["share"] is None else f"{100 * row['share']:.1f}")
            _out.print(types)
        if rank["top_kernels"]:
            kernels = Table(title=f"rank {rank['rank']}: top kernels", title_justify="left")
            for column in ("kernel", "stream", "count", "total ms", "share %"):
                kernels.add_column(column, justify="left" if column == "kernel" else "right")
            for row in rank["top_kernels"]:
                name = row["name"] if len(row["name"]) <= 60 else row["name"][:57] + "..."
                kernels.add_row(name, str(row["stream_id"]), str(row["instances"]), f"{row['total_ms']:.3f}",
                                "" if row["share"] is None else f"{100 * row['share']:.1f}")
            _out.print(kernels)
        steps = rank["steps"]
        if steps["count"]:
            _out.print(f"rank {rank['rank']}: {steps['count']} steps, avg {steps['avg_total_ms']:.3f} ms "
                       f"(iteration gap {steps['avg_iteration_interval_ms']:.3f}, "
                       f"fp+bp {steps['avg_fp_and_bp_ms']:.3f}, tail "
                       f"{steps['avg_tail_ms'] if steps['avg_tail_ms'] is None else round(steps['avg_tail_ms'], 3)})",
                       markup=False)
        for device in rank["memory"]:
            where = device["device_type"] + ("" if device["device_id"] is None or device["device_id"] < 0
                                             else f":{device['device_id']}")
            since = " since the trace began" if device["in_use_from_trace_start"] else ""
            _out.print(f"rank {rank['rank']}: memory {where}: peak {device['peak_in_use_bytes'] / 2**20:.1f} MiB "
                       f"in use{since}, {device['allocations']} allocations, {device['frees']} frees", markup=False)
        if rank["input_pipeline"]:
            _print_input_pipeline(rank["rank"], rank["input_pipeline"])

