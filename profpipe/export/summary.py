"""The run summary (reports/summary.json): per rank, the top op types and kernels, the average step, the
memory peaks and the input pipeline; for the run, the sources skipped and the trace-health ledger.

The same numbers feed the human summary the CLI prints. The file is checked against
schemas/summary.schema.json before it is written.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import jsonschema

from ..resources import data_dir

TOP_N = 10


def build_summary(con: duckdb.DuckDBPyConnection, version: str, input_path: str,
                  skipped: list[dict[str, Any]], timeline: dict[str, Any] | None,
                  health: dict[str, Any]) -> dict[str, Any]:
    """Collect the summary of every rank in `con`, with the run's trace-health ledger."""
    ranks = []
    for rank, device_type, layout, model_id, models in con.execute("""
            SELECT rank, device_type, layout, try_cast(metadata_json->>'$.model_id' AS INTEGER),
                   try_cast(metadata_json->'$.models' AS INTEGER[])
            FROM (SELECT DISTINCT ON (rank) * FROM run_info ORDER BY rank, capture, device_type = 'cpu', layout)
            ORDER BY rank""").fetchall():  # one entry per rank: its first capture's device source describes it
        ranks.append({
            "rank": rank, "device_type": device_type, "layout": layout, "model_id": model_id, "models": models,
            "host_ops": _scalar(con, "SELECT count(*) FROM host_op WHERE rank = ?", rank),
            "device_execs": _scalar(con, "SELECT count(*) FROM device_exec WHERE rank = ?", rank),
            "top_op_types": _rows(con, f"""
                SELECT side, op_type, occurrences, total_ns / 1e6 AS total_ms, share
                FROM op_type_stats WHERE rank = ? ORDER BY total_ns DESC, op_type LIMIT {TOP_N}""", rank),
            "top_kernels": _rows(con, f"""
                SELECT name, stream_id, instances, total_ns / 1e6 AS total_ms, share, op_name
                FROM kernel_stats WHERE rank = ? ORDER BY total_ns DESC, name LIMIT {TOP_N}""", rank),
            "steps": _steps(con, rank),
            "memory": _rows(con, """
                SELECT device_type, device_id, allocations, frees, peak_in_use_bytes, peak_reserved_bytes,
                       in_use_from_trace_start
                FROM memory_stats WHERE rank = ? ORDER BY device_type, device_id""", rank),
            "input_pipeline": _input_pipeline(con, rank),
        })
    return {"profpipe_version": version, "input": input_path, "ranks": ranks,
            "skipped": skipped, "timeline": timeline, "health": health}


def write_summary(summary: dict[str, Any], path: Path, indent: int | None = 2) -> None:
    """Validate `summary` against its JSON Schema and write it."""
    schema = json.loads((data_dir("schemas") / "summary.schema.json").read_text(encoding="utf-8"))
    jsonschema.validate(summary, schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary, indent=indent) + "\n", encoding="utf-8")


def _steps(con: duckdb.DuckDBPyConnection, rank: int) -> dict[str, Any]:
    row = con.execute("""
        SELECT count(*), avg(total_ns) / 1e6, avg(iteration_interval_ns) / 1e6,
               avg(fp_and_bp_ns) / 1e6, avg(tail_ns) / 1e6
        FROM step_phases WHERE rank = ?""", [rank]).fetchone()
    if not row[0]:
        return {"count": 0}
    keys = ("count", "avg_total_ms", "avg_iteration_interval_ms", "avg_fp_and_bp_ms", "avg_tail_ms")
    return dict(zip(keys, row))


def _input_pipeline(con: duckdb.DuckDBPyConnection, rank: int) -> dict[str, Any] | None:
    """The rank's MindData answers: its wait for input and the findings; None without MindData logs."""
    has_logs = _scalar(con, "SELECT (SELECT count(*) FROM data_op WHERE rank = ?) + "
                            "(SELECT count(*) FROM data_batch_time WHERE rank = ?)", rank, rank)
    if not has_logs:
        return None
    steps, source, share = con.execute("""
        SELECT count(wait_share), any_value(wait_source), avg(wait_share) FROM step_input_wait WHERE rank = ?""",
        [rank]).fetchone()
    bound = None if share is None else "highly" if share > 0.2 else "moderately" if share >= 0.05 else "no"
    findings = _rows(con, """
        SELECT analyzer, rule, op, finding, suggestion FROM data_findings WHERE rank = ?
        ORDER BY CASE analyzer WHEN 'profpipe' THEN 0 WHEN 'mindspore' THEN 1 ELSE 2 END, rule, op_id""", rank)
    slowest = [f["op"] for f in findings if f["rule"] == "slowest_op"]
    return {"steps_measured": steps, "wait_source": source, "avg_wait_share": share, "input_bound": bound,
            "slowest_op": slowest[0] if slowest else None, "findings": findings}


def _scalar(con: duckdb.DuckDBPyConnection, sql: str, *params: Any) -> Any:
    return con.execute(sql, list(params)).fetchone()[0]


def _rows(con: duckdb.DuckDBPyConnection, sql: str, *params: Any) -> list[dict[str, Any]]:
    cursor = con.execute(sql, list(params))
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]
