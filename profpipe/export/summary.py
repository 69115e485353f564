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

from ..models import query_rows
from ..resources import json_schema_validator

TOP_N = 10


def build_summary(con: duckdb.DuckDBPyConnection, version: str, input_path: str,
                  skipped: list[dict[str, Any]], timeline: dict[str, Any] | None,
                  health: dict[str, Any]) -> dict[str, Any]:
    """Collect the summary of every rank in `con` (the mart rank_summary and the top rows of other marts), with
    the run's trace-health ledger."""
    ranks = []
    for summary in _rank_summaries(con):
        rank = summary["rank"]
        ranks.append({
            **{key: summary[key] for key in ("rank", "device_type", "layout", "model_id", "models", "host_ops",
                                             "device_execs")},
            "top_op_types": query_rows(con, "summary_top_op_types", rank=rank, limit=TOP_N),
            **_top_ops(con, rank),
            "top_kernels": query_rows(con, "summary_top_kernels", rank=rank, limit=TOP_N),
            "steps": _steps(summary),
            "memory": query_rows(con, "summary_memory", rank=rank),
            "input_pipeline": _input_pipeline(con, summary),
        })
    return {"profpipe_version": version, "input": input_path, "ranks": ranks,
            "skipped": skipped, "timeline": timeline, "health": health}


def write_summary(summary: dict[str, Any], path: Path, indent: int | None = 2) -> None:
    """Validate `summary` against its JSON Schema and write it."""
    json_schema_validator("summary.schema.json").validate(summary)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary, indent=indent) + "\n", encoding="utf-8")


def _steps(summary: dict[str, Any]) -> dict[str, Any]:
    """The rank's average step in ms ({"count": 0} without a step trace)."""
    if not summary["steps"]:
        return {"count": 0}
    return {"count": summary["steps"], **{f"avg_{key}_ms": _ms(summary[f"avg_{key}_ns"])
                                          for key in ("total", "iteration_interval", "fp_and_bp", "tail")}}


def _top_ops(con: duckdb.DuckDBPyConnection, rank: int) -> dict[str, Any]:
    """Where the rank's host ops are nested (Kineto, Paddle, Nsight Systems: host_op.parent_index), the top ops by
    self time and by the device time they launched themselves; nothing for sources without nesting."""
    nested = con.execute("SELECT count(*) FROM host_op WHERE rank = ? AND parent_index IS NOT NULL", [rank]).fetchone()[0]
    if not nested:
        return {}
    top = [query_rows(con, "top_ops", rank=rank, order=order, limit=TOP_N) for order in ("host_self_ns", "device_self_ns")]
    return {"top_ops": top[0], "top_ops_by_device": [row for row in top[1] if row["device_self_ms"] > 0]}


def _input_pipeline(con: duckdb.DuckDBPyConnection, summary: dict[str, Any]) -> dict[str, Any] | None:
    """The rank's MindData answers: its wait for input and the findings; None without MindData logs."""
    if not summary["input_logs"]:
        return None
    findings = query_rows(con, "summary_input_findings", rank=summary["rank"])
    slowest = [f["op"] for f in findings if f["rule"] == "slowest_op"]
    return {"steps_measured": summary["input_steps_measured"], "wait_source": summary["input_wait_source"],
            "avg_wait_share": summary["avg_input_wait_share"], "input_bound": summary["input_bound"],
            "slowest_op": slowest[0] if slowest else None, "findings": findings}


def _ms(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e6


def _rank_summaries(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Every row of the mart rank_summary, as a dict."""
    relation = con.sql("SELECT * FROM rank_summary ORDER BY rank")
    return [dict(zip(relation.columns, row)) for row in relation.fetchall()]
