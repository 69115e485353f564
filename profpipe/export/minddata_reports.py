"""MindSpore-compatible MindData reports, from the MindData marts (stage 5, export).

* `minddata_pipeline_raw_<rank>.csv`: the pipeline tree in MindSpore's walk order (shared/reference/
  algorithms.md §4.1, formats-ascend-minddata.md §5.2), numbers printed as MindSpore's Python
  writes them. A root without queue metrics (DeviceQueue) has no usage (MindSpore 2.x), or usage 0
  with style "legacy" (MindSpore 1.x, as in MindInsight's expected files).
* `minddata_pipeline_summary_<rank>.json` / `.csv`: MindSpore's summary (algorithms.md §4.4), a dict
  of lists by op id, written only where the pipeline, CPU and device-trace logs all exist, as
  MindSpore does. The CPU and queue details and the bottleneck come from data_findings. On
  purpose unlike MindSpore: op names drop a trailing "Op" (MindSpore cuts the last two
  characters, so 1.x names like "Batch" became "Bat"), and ops without CPU samples get no CPU
  finding (MindSpore reads their -1 % as low usage).

A rank's later profiling cycles (capture 1, 2, ...) get the same files with `_capture<c>` after the rank;
MindSpore has one cycle per folder.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import duckdb

_RAW_COLUMNS = ["op_id", "op_type", "num_workers", "output_queue_size", "output_queue_average_size",
                "output_queue_length", "output_queue_usage_rate", "sample_interval", "parent_id", "children_id"]


def write_minddata_reports(con: duckdb.DuckDBPyConnection, reports_dir: Path, style: str = "latest") -> list[Path]:
    """Write the MindData reports of every rank with a pipeline file; return their paths.
    `style` is the MindSpore version imitated: "latest" (2.x) or "legacy" (1.x)."""
    written = []
    for rank, capture in con.execute("SELECT DISTINCT rank, capture FROM data_op ORDER BY ALL").fetchall():
        reports_dir.mkdir(parents=True, exist_ok=True)
        key = {"rank": rank, "capture": capture}
        suffix = f"{rank}" if capture == 0 else f"{rank}_capture{capture}"  # a later profiling cycle of the rank
        written.append(_pipeline_raw(con, key, reports_dir / f"minddata_pipeline_raw_{suffix}.csv",
                                     root_usage=0 if style == "legacy" else None))
        summary = _summary(con, key)
        if summary:
            json_path = reports_dir / f"minddata_pipeline_summary_{suffix}.json"
            json_path.write_text(json.dumps(summary, ensure_ascii=False), encoding="utf-8")
            csv_path = json_path.with_suffix(".csv")
            with open(csv_path, "w", newline="", encoding="utf-8") as handle:
                csv.writer(handle).writerows([[key, *values] for key, values in summary.items()])
            written += [json_path, csv_path]
    return written


def _rows(con: duckdb.DuckDBPyConnection, sql: str, key: dict[str, int]) -> list[dict[str, Any]]:
    relation = con.sql(sql, params=key)
    return [dict(zip(relation.columns, row)) for row in relation.fetchall()]


def _ms(ns: int | None) -> int | float | None:
    """ns as the ms MindSpore's file had: integral values as integers, exact (12_300_000 -> 12.3)."""
    return None if ns is None else ns // 1_000_000 if ns % 1_000_000 == 0 else ns / 1_000_000


def _pipeline_raw(con: duckdb.DuckDBPyConnection, key: dict[str, int], path: Path, root_usage: int | None) -> Path:
    rows = _rows(con, """
        SELECT s.op_id, s.op_type, s.num_workers, s.queue_sizes, s.queue_average_size, s.queue_capacity,
               s.queue_usage_share, s.sampling_interval_ns, s.pipeline_parent_id, s.pipeline_children
        FROM data_op_stats s
        WHERE s.rank = $rank AND s.capture = $capture AND s.pipeline_order IS NOT NULL
        ORDER BY s.pipeline_order""", key)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(_RAW_COLUMNS)
        for row in rows:
            usage = row["queue_usage_share"]
            if row["pipeline_parent_id"] is None and row["queue_capacity"] is None:
                usage = root_usage  # the root without queue metrics
            writer.writerow([row["op_id"], row["op_type"], row["num_workers"],
                             row["queue_sizes"],
                             row["queue_average_size"], row["queue_capacity"], usage,
                             _ms(row["sampling_interval_ns"]), row["pipeline_parent_id"],
                             row["pipeline_children"]])
    return path


def _summary(con: duckdb.DuckDBPyConnection, key: dict[str, int]) -> dict[str, list[Any]] | None:
    """MindSpore's summary dict, or None when one of its three inputs is missing."""
    present = con.execute("""
        SELECT (SELECT count(*) FROM data_cpu_sample WHERE rank = $rank AND capture = $capture AND scope = 'op') > 0,
               (SELECT count(*) FROM data_batch_stats
                WHERE rank = $rank AND capture = $capture AND trace IN ('device_queue', 'iterator')) > 0
        """, key).fetchall()[0]
    if not all(present):
        return None
    ops = _rows(con, """
        SELECT s.*, (SELECT list(c.op_id ORDER BY c.child_index) FROM data_op c
                     WHERE c.rank = s.rank AND c.capture = s.capture AND c.parent_id = s.op_id) AS children
        FROM data_op_stats s WHERE s.rank = $rank AND s.capture = $capture ORDER BY s.op_id""", key)
    summary: dict[str, list[Any]] = {"op_ids": [], "op_names": [], "pipeline_ops": [], "num_workers": [],
                                     "queue_average_size": [], "queue_utilization_pct": [],
                                     "queue_empty_freq_pct": [], "children_ids": [], "parent_id": []}
    for op in ops:
        average = round(op["queue_average_size"], 2) if op["queue_samples"] else -1
        summary["op_ids"].append(op["op_id"])
        summary["op_names"].append(op["op_name"])
        summary["pipeline_ops"].append(f"{op['op_name']}(id={op['op_id']})")
        summary["num_workers"].append(op["num_workers"])
        summary["queue_average_size"].append(average)
        summary["queue_utilization_pct"].append(
            round(100 * average / op["queue_capacity"], 2) if op["queue_samples"] and op["queue_capacity"] else -1)
        summary["queue_empty_freq_pct"].append(
            round(100.0 * op["queue_empty_samples"] / op["queue_samples"], 2) if op["queue_samples"] else -1)
        summary["children_ids"].append(op["children"] or [])
        summary["parent_id"].append(op["parent_id"] if op["parent_id"] is not None else -1)
    cpu = {op["op_id"]: round(round(100 * op["avg_cpus"], 9), 2) for op in ops if op["cpu_samples"]}
    summary["avg_cpu_pct"] = [cpu.get(op_id, -1) for op_id in range(len(cpu))]
    summary.update(_batch_times(con, key))
    if len(cpu) == len(ops):
        summary["avg_cpu_pct_per_worker"] = [
            round(cpu[op["op_id"]] / op["num_workers"], 2) if op["num_workers"] and op["op_id"] in cpu else -1
            for op in ops]
        findings = _rows(con, """
            SELECT rule, op, finding || ' ' || suggestion AS text FROM data_findings
            WHERE rank = $rank AND capture = $capture AND analyzer = 'mindspore' ORDER BY op_id, rule""", key)
        for key, rules in (("cpu_analysis_details", ("cpu_high", "cpu_low")),
                           ("queue_analysis_details", ("queue_leaf", "queue_device", "queue_internal"))):
            texts = [f["text"] for f in findings if f["rule"] in rules]
            if texts:
                summary[key] = texts
        bottleneck = [f for f in findings if f["rule"] == "bottleneck"]
        if bottleneck:
            summary["bottleneck_warning"] = [bottleneck[0]["op"]]
            summary["bottleneck_suggestion"] = [bottleneck[0]["text"]]
    return summary


def _batch_times(con: duckdb.DuckDBPyConnection, key: dict[str, int]) -> dict[str, list[float]]:
    """Mean pipeline, push and batch time of the batches after the first (MindSpore skips batch 1),
    from the device-queue trace, else the iterator trace, whose batch times MindSpore averages
    together with the times between its queue records; -1 where there are none."""
    means = con.execute("""
        WITH trace AS (
            SELECT * FROM data_batch_stats WHERE rank = $rank AND capture = $capture AND batch >= 2 AND trace = (
                SELECT CASE WHEN bool_or(trace = 'device_queue') THEN 'device_queue' ELSE 'iterator' END
                FROM data_batch_stats WHERE rank = $rank AND capture = $capture)
        ), batch_times AS (
            SELECT batch_ns / 1e6 AS ms FROM trace
            UNION ALL
            SELECT since_previous_ns / 1e6 FROM trace WHERE trace = 'iterator'
        )
        SELECT (SELECT avg(pipeline_ns / 1e6) FROM trace), (SELECT avg(push_ns / 1e6) FROM trace),
               (SELECT avg(ms) FROM batch_times)
        """, key).fetchall()[0]
    return {name: [round(value, 3) if value is not None else -1]
            for name, value in zip(("per_pipeline_time", "per_push_queue_time", "per_batch_time"), means)}
