"""msprof's AI Core PMU data -> frames for the msprof export reader (stage 2, ingest).

Two kinds of input (shared/reference/formats-mindspore-extras.md §3):

* the metric columns of the task CSVs (`op_summary_*.csv` of eras D/E, era F `kernel_details.csv`), whose
  set depends on the `aicore_metrics` level and the chip (ArithmeticUtilization, PipeUtilization, Memory,
  MemoryL0, ResourceConflictRatio, MemoryUB, L2Cache; A2 prefixes each with `aic_` (cube core) or `aiv_`
  (vector core)). msprof_csv reads the task rows; for each chunk it calls `unpivot_metrics`, which turns
  the metric columns into long rows (line, column, value) column-wise (polars unpivot, no Python per row):
  `metric_columns` says which columns are metrics and how each value becomes profpipe's unit;
* the device summaries: `l2_cache` (L2 hit and victim rate per task), `hbm` / `ddr` (read and write
  bandwidth per memory unit) and `pcie` (min / max / average per PCIe mode), from msprof's `summary/`
  (`<kind>_<device>[_<model>_<iteration>].csv`), era E's `mindstudio_profiler_output/<kind>_<ts>.csv` and
  the copies MindSpore 2.5+ puts in `ASCEND_PROFILER_OUTPUT/<kind>.csv`.

`N/A` (and an empty cell) is a missing value, normal in these files: no row, not a zero. A value that is
not a number, not finite or negative is malformed: it is left out and counted in trace_health with its file
and first line. msprof's K, M and G are taken as decimal (10^3, 10^6, 10^9): its documents do not say.
"""
from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from ..errors import InputError
from ..health import Warn
from .lines import drop_rows, iter_csv_frames

#: A unit suffix of a column name, e.g. `aic_mac_time(us)`, `main_mem_read_bw(GB/s)`, `cube_utilization(%)`.
_SUFFIX = re.compile(r"^(?P<name>[^()\s]+)\((?P<unit>[^()]*)\)$")
#: msprof unit -> (profpipe unit, factor).
_UNITS = {"us": ("ns", 1e3), "ns": ("ns", 1.0), "%": ("share", 1e-2), "GB/s": ("bytes_per_second", 1e9),
          "MB/s": ("bytes_per_second", 1e6), "KB/s": ("bytes_per_second", 1e3), "kB/s": ("bytes_per_second", 1e3),
          "B/s": ("bytes_per_second", 1.0), "KB": ("bytes", 1e3), "kB": ("bytes", 1e3), "MB": ("bytes", 1e6),
          "GB": ("bytes", 1e9), "B": ("bytes", 1.0)}
_METRIC_SCHEMA = {"column": pl.String, "core": pl.String, "metric": pl.String, "unit": pl.String,
                  "factor": pl.Float64}


def metric_unit(name: str) -> tuple[str, float]:
    """(profpipe unit, factor) of a metric column written without a unit suffix."""
    if name == "memory_bound":  # mte2_ratio / max(mac_ratio, vec_ratio): above 1 is memory bound
        return "ratio", 1.0
    if name.endswith(("_ratio", "_rate")):
        return "share", 1.0
    if name.endswith(("_cycles", "_fops", "_hit", "_allocate", "_miss")):
        return "count", 1.0
    return "number", 1.0


def metric_columns(header: list[str]) -> pl.DataFrame:
    """The PMU metric columns of a task CSV header, one row each: column (as written), core (`aic`, `aiv`,
    or null), metric (the name without core prefix and unit suffix), unit (profpipe's: ns, share, count,
    bytes, bytes_per_second, ratio, number, or msprof's own text for a unit profpipe does not know) and
    the factor that converts a value to it. A metric column is one whose name has no blank and starts with
    a lower-case letter, or joins words with '_' and ends with a unit in brackets (MemoryAccess'
    GM_to_L1_datas(KB)); msprof's task columns (Op Name, Task ID, Name, Duration(us), Device_id, ...) are
    capitalised single words or have blanks."""
    rows = []
    for column in header:
        if column == "line" or any(ch.isspace() for ch in column):
            continue
        match = _SUFFIX.fullmatch(column)
        if not (column[:1].islower() or (match and "_" in match["name"])):  # not Duration(us), Device_id
            continue
        name, unit_text = (match["name"], match["unit"]) if match else (column, None)
        core = name[:3] if name.startswith(("aic_", "aiv_")) else None
        metric = name[4:] if core else name
        unit, factor = _UNITS.get(unit_text, (unit_text, 1.0)) if unit_text is not None else metric_unit(metric)
        rows.append({"column": column, "core": core, "metric": metric, "unit": unit, "factor": factor})
    return pl.DataFrame(rows, schema=_METRIC_SCHEMA)


def unpivot_metrics(chunk: pl.DataFrame, metrics: pl.DataFrame) -> pl.DataFrame:
    """The metric values of a chunk of task rows, long: line, column, value (in profpipe's unit) and `bad`
    (the text where it is malformed: not a number, not finite or negative; value null then). Missing
    values (N/A, empty) give no row."""
    if not metrics.height:
        return pl.DataFrame(schema={"line": pl.Int64, "column": pl.Categorical, "value": pl.Float64, "bad": pl.String})
    long = (chunk.select("line", *metrics["column"].to_list())
            .unpivot(index="line", variable_name="column", value_name="text")
            .filter(pl.col("text").is_not_null() & (pl.col("text").str.strip_chars() != "")))
    number = pl.col("text").str.strip_chars().cast(pl.Float64, strict=False)
    good = number.is_finite() & (number >= 0)
    return (long.join(metrics.select("column", "factor"), on="column", how="left")
            .select("line", pl.col("column").cast(pl.Categorical),  # a few distinct names: held once
                    pl.when(good).then(number * pl.col("factor")).alias("value"),
                    pl.when(good.fill_null(False)).then(None).otherwise(pl.col("text")).alias("bad")))


def report_bad_metrics(long: pl.DataFrame, warn: Warn) -> pl.DataFrame:
    """`long` (file, line, column, value, bad) without its malformed values, each file's reported as one
    ledger row (the first line and an example)."""
    for path in long.filter(pl.col("bad").is_not_null())["file"].unique(maintain_order=True).to_list():
        long = drop_rows(long, (pl.col("file") == path) & pl.col("bad").is_not_null(), warn, path, "malformed_record",
                         "PMU metric values that are not a non-negative finite number", line_column="line",
                         tables="device_exec_metric", example=pl.format("{}={}", pl.col("column"), pl.col("bad")))
    return long.drop("bad")


def _read(paths: list[Path], warn: Warn, required: list[str], what: str) -> pl.DataFrame:
    """The rows of summary CSVs (string columns, N/A null) with `file` and `line`; a header without the
    `required` columns is an error naming the file."""
    frames = []
    for path in paths:
        for chunk in iter_csv_frames(path, warn, null_values=["N/A"], what=what):
            missing = [c for c in required if c not in chunk.columns]
            if missing:
                raise InputError(path, f"not an msprof {what} (missing columns {missing})", line=1)
            frames.append(chunk.with_columns(pl.lit(str(path)).alias("file")))
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()


def _number(column: str, alias: str, factor: float = 1.0) -> list[pl.Expr]:
    """A numeric column as `alias` (scaled by factor; null when missing or bad) and `alias__bad` (true where
    the text is present but not a non-negative finite number)."""
    value = pl.col(column).str.strip_chars().cast(pl.Float64, strict=False)
    good = value.is_finite() & (value >= 0)
    return [pl.when(good).then(value * factor).alias(alias),
            (pl.col(column).is_not_null() & ~good.fill_null(False)).alias(f"{alias}__bad")]


def _integer(column: str, alias: str) -> list[pl.Expr]:
    """An id column as `alias` (Int64; null when missing or bad) and `alias__bad` (present but not a
    non-negative integer)."""
    value = pl.col(column).str.strip_chars().cast(pl.Int64, strict=False)
    good = value >= 0
    return [pl.when(good).then(value).alias(alias),
            (pl.col(column).is_not_null() & ~good.fill_null(False)).alias(f"{alias}__bad")]


def _drop_bad(frame: pl.DataFrame, warn: Warn, columns: list[str], table: str, example: str) -> pl.DataFrame:
    bad = pl.any_horizontal([pl.col(f"{c}__bad") for c in columns])
    for path in frame["file"].unique(maintain_order=True).to_list():
        frame = drop_rows(frame, (pl.col("file") == path) & bad, warn, path, "malformed_record",
                          f"rows whose {' or '.join(columns)} is not a non-negative number", line_column="line",
                          tables=table, example=pl.col(example).cast(pl.String))
    return frame.drop([f"{c}__bad" for c in columns])


def read_l2_cache(paths: list[Path], warn: Warn) -> pl.DataFrame:
    """l2_cache_task rows: one per task row of the files (Stream Id, Task Id, Hit Rate, Victim Rate, Op
    Name). Rows without a stream or task id, or with a bad id or rate, are left out and reported."""
    frame = _read(paths, warn, ["Stream Id", "Task Id", "Hit Rate", "Victim Rate"], "l2_cache CSV")
    if not frame.height:
        return frame
    op = pl.col("Op Name") if "Op Name" in frame.columns else pl.lit(None, pl.String)
    frame = frame.select("file", "line", *_integer("Stream Id", "stream_id"), *_integer("Task Id", "task_id"),
                         *_number("Hit Rate", "hit_share"), *_number("Victim Rate", "victim_ratio"),
                         op.alias("op_name"))
    frame = _drop_bad(frame, warn, ["stream_id", "task_id", "hit_share", "victim_ratio"], "l2_cache_task", "op_name")
    for path in frame["file"].unique(maintain_order=True).to_list():
        frame = drop_rows(frame, (pl.col("file") == path) & (pl.col("stream_id").is_null() | pl.col("task_id").is_null()),
                          warn, path, "malformed_record", "rows without a stream or task id (N/A or empty)",
                          line_column="line", tables="l2_cache_task", example=pl.col("op_name"))
    return frame.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("seq"), "stream_id", "task_id", "op_name", "hit_share", "victim_ratio")


def read_memory_bandwidth(paths: dict[str, list[Path]], warn: Warn) -> pl.DataFrame:
    """memory_bandwidth rows of hbm / ddr summaries (`paths` by memory kind): Metric (a memory unit id, or
    msprof's label), Read(MB/s), Write(MB/s) as bytes per second. Rows with a bad rate are left out and
    reported."""
    frames = []
    for memory, files in paths.items():
        frame = _read(files, warn, ["Metric", "Read(MB/s)", "Write(MB/s)"], f"{memory} CSV")
        if not frame.height:
            continue
        frame = frame.select("file", "line", pl.lit(memory).alias("memory"), pl.col("Metric").alias("metric"),
                             *_number("Read(MB/s)", "read_bytes_per_second", 1e6),
                             *_number("Write(MB/s)", "write_bytes_per_second", 1e6))
        frames.append(_drop_bad(frame, warn, ["read_bytes_per_second", "write_bytes_per_second"],
                                "memory_bandwidth", "metric"))
    if not frames:
        return pl.DataFrame()
    frame = pl.concat(frames)
    return frame.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("seq"), "memory", "metric",
                        "read_bytes_per_second", "write_bytes_per_second")


def read_pcie(paths: list[Path], warn: Warn) -> pl.DataFrame:
    """pcie_bandwidth rows: one per Mode (Tx_p_avg(MB/s), ..., Tx_latency_avg(us), Rx_cpl_avg(MB/s)) with
    its Min, Max and Avg in profpipe's unit: bandwidths MB/s -> bytes per second, the latency µs -> ns (a
    mode naming a latency is µs whatever its label: older msprof documents label it MB/s)."""
    frame = _read(paths, warn, ["Mode", "Min", "Max", "Avg"], "pcie CSV")
    if not frame.height:
        return frame
    latency = pl.col("Mode").str.to_lowercase().str.contains("latency")
    unit = pl.when(latency).then(pl.lit("ns")).otherwise(pl.lit("bytes_per_second"))
    factor = pl.when(latency).then(pl.lit(1e3)).otherwise(pl.lit(1e6))
    frame = frame.with_columns(unit.alias("unit"), factor.alias("factor"))
    frame = frame.select("file", "line", pl.col("Mode").alias("mode"), "unit", "factor",
                         *_number("Min", "min_value"), *_number("Max", "max_value"), *_number("Avg", "avg_value"))
    frame = _drop_bad(frame, warn, ["min_value", "max_value", "avg_value"], "pcie_bandwidth", "mode")
    for path in frame["file"].unique(maintain_order=True).to_list():
        frame = drop_rows(frame, (pl.col("file") == path) & pl.col("mode").is_null(), warn, path, "malformed_record",
                          "rows without a mode", line_column="line", tables="pcie_bandwidth", example=pl.lit("N/A"))
    return frame.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("seq"), "mode",
                        pl.col("mode").str.replace(r"\([^()]*\)$", "").str.to_lowercase().alias("metric"), "unit",
                        *[pl.col(c) * pl.col("factor") for c in ("min_value", "max_value", "avg_value")])
