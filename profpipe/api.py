"""The Python API, shaped like MindSpore's: `offline_analyse` and `op_analyse`, and profpipe's `search`.

All are thin: `offline_analyse` calls the pipeline runner, `op_analyse` and `search` query the
profile.duckdb an analysis left behind.
"""
from __future__ import annotations

import json
from pathlib import Path


from .database import connect as duckdb_connect
from .errors import ProfpipeError
from .models import query_rows
from .options import DEFAULT_TIMELINE_LIMIT_MB, Options, ReportOptions
from .run import RunResult, analyse


def offline_analyse(path: str | Path, pretty: bool = False, step_list: list[int] | None = None,
                    data_simplification: bool = True, output_path: str | Path | None = None, *,
                    subgraph: str = "all", optypes_to_deal: str = "", optypes_not_deal: str = "Variable",
                    is_show_op_path: bool = False, report_style: str = "latest", rank_map: str | Path | None = None,
                    timeline_limit: float | None = DEFAULT_TIMELINE_LIMIT_MB, strict: bool = False,
                    force: bool = False, workers: int | None = 1, select: str | list[str] | None = None,
                    visual_report: bool | None = None) -> RunResult:
    """Analyse the saved profiler folder (or one trace file) `path`, as MindSpore's
    `Profiler.offline_analyse(path, pretty, step_list, data_simplification)` does.

    MindSpore's parameters:
      pretty: indent the JSON reports.
      step_list: keep only these consecutive steps (ranks without a step trace keep everything); a step
        outside a rank's step trace is an error naming the steps it has.
      data_simplification: keep the deliverables only (True, the default): the normalized tables live in
        profile.duckdb; False also keeps them as Parquet files under tables/.
    profpipe's own (keywords; unlike MindSpore, nothing is ever written into `path`):
      output_path: the output folder (default `./<folder name>.profpipe`); replaced only when it is
        empty or written by profpipe (or with `force`), never when it is, holds or lies in the input.
      subgraph, optypes_to_deal, optypes_not_deal (comma-separated), is_show_op_path: MindSpore's
        Profiler arguments for the Ascend op detail report.
      report_style: "latest" or "legacy" MindSpore behaviour for the compatible reports (docs/mindspore.md).
      rank_map: a file giving traces without a rank theirs (lines "<path or glob> <rank>" or a JSON
        object, paths relative to `path`; see `profpipe analyse --rank-map`).
      timeline_limit: MindSpore's Profiler(timeline_limit=500): cap timeline/trace.json at this many MiB (the
        latest events are dropped first, steps kept); None or 0: no cap.
      strict: make any data loss an error.  force: see output_path.
      select: build only these models and what they read, as dbt's --select ("op_type_stats", "step_phases+",
        or a list); only their CSVs (and report pages) are written, and no timeline. See `profpipe analyse --select`.
      visual_report: write report.html (default: yes, unless `select` is given).
      workers: processes that read the sources (default 1: this one). More, or None (one per core once the input
        passes 64 MiB), start worker processes, which import the calling script's main module: call from
        under `if __name__ == "__main__":` (the multiprocessing rule), as the profpipe command does.
    The result's `health` and `exit_code` say whether anything was dropped or repaired.
    """
    options = Options(
        step_list=step_list, data_simplification=data_simplification, pretty=pretty, rank_map=rank_map,
        timeline_limit_mb=timeline_limit, strict=strict, force=force, workers=workers, visual_report=visual_report,
        select=None if select is None else tuple([select] if isinstance(select, str) else select),
        report=ReportOptions(style=report_style, subgraph=subgraph,
                             optypes_to_deal=tuple(t for t in optypes_to_deal.split(",") if t),
                             optypes_not_deal=tuple(t for t in optypes_not_deal.split(",") if t),
                             show_op_path=is_show_op_path))
    source = Path(path)
    output = Path(output_path) if output_path is not None else Path.cwd() / f"{source.resolve().name}.profpipe"
    return analyse(source, output, options)


class OpNotFound(ProfpipeError, RuntimeError):
    """op_analyse's unknown op type or rank: a RuntimeError, as MindSpore's Profiler.op_analyse raises."""


def op_analyse(output_path: str | Path, op_name: str | list[str], device_id: int | None = None) -> str:
    """Per-op statistics grouped by input shapes, like MindSpore's `Profiler.op_analyse`.

    `op_name` is one name or a list; each must equal an op type (MatMul), an op's name as MindSpore's framework
    files write it (MatMul-op0: the name without its scope) or, beyond MindSpore, a full scoped name
    (Default/network/MatMul-op0). Returns MindSpore's JSON string: `{name: [{op_side, input_shape,
    op_occurrences, op_total_time(us), op_avg_time(us)}, ...], ..., "device_id": id}`, one entry per op side and
    input shape of the ops the name matches (report op_analyse, summed by sql/queries/op_analyse.sql). Where
    MindSpore takes the first op instance of a short name, this sums every instance that shares it; an instance
    launched with several shapes is reported under all of them, sorted and joined by ' | '.
    A name that matches no op, or an unknown device_id, raises a RuntimeError (profpipe.api.OpNotFound), as
    MindSpore's does.
    """
    names = [op_name] if isinstance(op_name, str) else list(op_name)
    if not names or not all(isinstance(n, str) and n for n in names):
        raise TypeError("op_name must be a non-empty str or list of str")
    database = Path(output_path) / "profile.duckdb"
    if not database.is_file():
        raise ProfpipeError(f"{output_path}: not a profpipe output folder (no profile.duckdb)")
    with duckdb_connect(database, read_only=True) as con:
        ranks = [r for (r,) in con.execute("SELECT DISTINCT rank FROM rank_info ORDER BY rank").fetchall()]
        if device_id is None:
            if len(ranks) != 1:
                raise ProfpipeError(f"several ranks {ranks} in {output_path}: pass device_id")
            device_id = ranks[0]
        elif device_id not in ranks:
            raise OpNotFound(f"no rank {device_id} in {output_path} (ranks: {ranks})")
        result: dict[str, object] = {}
        for name in names:
            found = query_rows(con, "op_analyse", rank=device_id, name=name)
            if not found:
                raise OpNotFound(f"op type or op name {name!r} not found on rank {device_id}")
            result[name] = found
        result["device_id"] = device_id
    return json.dumps(result)


def search(output_path: str | Path, term: str, kind: str = "all", limit: int = 20) -> list[dict[str, object]]:
    """Ops and kernels of an analysis whose name or type matches `term`, best first, as `profpipe search` prints
    them: case-insensitive; exact (full name, short name or type), then prefix, substring and fuzzy
    (subsequence) matches, each class by device time. `output_path` is an output folder of `profpipe analyse`
    or a warehouse (rows then carry their `run`); `kind` "op", "kernel" or "all"; `limit` 0 for every match.
    Each row: kind, name, type, rank, calls, total_ns, device_ns, source (the marts), side, match."""
    from .op_search import search as find
    from .warehouse import connect, is_warehouse

    path = Path(output_path)
    if is_warehouse(path):
        con = connect(path)
    else:
        database = path / "profile.duckdb"
        if not database.is_file():
            raise ProfpipeError(f"{output_path}: not a profpipe output folder (no profile.duckdb)")
        con = duckdb_connect(database, read_only=True)
    with con:
        return find(con, term, kind, limit)
