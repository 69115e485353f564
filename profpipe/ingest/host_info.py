"""Stage 2, ingest: MindSpore 2.1-2.3 host info (`profile_framework`) -> host_info_record.

MindSpore's C++ `CollectHostInfo` appends one CSV row per host event to
`<profiler dir>/host_info/host_info_<id>.csv` (shared/reference/formats-mindspore-extras.md §4): the header
`tid,pid,parent_pid,module_name,event,stage,level,start_end,custom_info,memory_usage(kB),time_stamp(us)`, then
rows written field by field without quoting, except `custom_info` (`{{key:value}{key:value}}`), which is quoted
when it holds a comma. `start_end` is 0 (start), 1 (end) or 2 (instant); `memory_usage(kB)` is the process's
VmRSS (0 when not collected: profile_framework "time"), `time_stamp(us)` the host clock in µs (0 when not
collected: "memory"): steady_clock in 2.1.x, the Unix epoch from 2.2.0. discover lists the file with the rank's
MindSpore / Ascend source (role "host_info:host_info") or as a "host_info" source of its own.

Each row becomes one host_info_record row, in file order (`line`: MindSpore pairs a start with the next end of
its event, stage, thread and process in that order; sql/marts/host_span.sql does the same): kB become bytes
(x 1024), µs ns (x 1000); a 0 becomes null (not collected). Pairing, statistics and the memory curve are
models' work (host_span, host_stage_stats, host_memory_curve, host_memory_stats, dataset_host_stats).

Bad input: the rows are matched column-wise against the writer's own row format (polars over the lines, no
Python loop per row). A cut last line, a row that is not 11 fields of the writer's form (a number that is not
one), a `start_end` other than 0-2 and a negative or out-of-range time or size are dropped and counted in
trace_health with the file and the first line. A log that cannot be read at all (not UTF-8, no header, no row)
is left out with a ledger row, and the rest of the rank is kept.
"""
from __future__ import annotations

from collections.abc import Iterator

import polars as pl
import pyarrow as pa

from ..discover import HOST_INFO_ROLE, Source
from ..errors import InputError
from ..health import Warn
from .lines import MAX_NS, drop_rows, iter_line_frames
from .run_info import run_info

#: The header MindSpore writes (profiling.cc, HostDataHeader).
HEADER = "tid,pid,parent_pid,module_name,event,stage,level,start_end,custom_info,memory_usage(kB),time_stamp(us)"
#: One data row as the writer makes it: ten plain fields and custom_info, quoted when it holds a comma.
_ROW = (r"^(?<tid>[^,]*),(?<pid>[^,]*),(?<parent_pid>[^,]*),(?<module>[^,]*),(?<event>[^,]*),(?<stage>[^,]*),"
        r"(?<level>[^,]*),(?<start_end>[^,]*),(?<custom_info>\"[^\"]*\"|[^,\"]*),(?<memory_kb>[^,]*),(?<ts_us>[^,]*)$")
_KINDS = {0: "start", 1: "end", 2: "instant"}
#: Largest kB of memory whose bytes fit the int64 column with room for sums.
_MAX_KB = 2**62 // 1024
#: Largest µs whose ns stay within MAX_NS.
_MAX_US = MAX_NS // 1000
#: Times above this many µs are read as Unix-epoch time (MindSpore 2.2+: after 2001-09-09); below, as the
#: steady clock of 2.1.x (µs since boot).
EPOCH_US_FROM = 10**15
_TABLE = "host_info_record"


def read(source: Source, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """A host_info folder alone: its run_info row (clock from its times), then the records."""
    tables = list(read_logs(source, warn))
    times = [t for name, t in tables if name == _TABLE and t.num_rows]
    first = next((t.column("ts_ns").drop_null()[0].as_py() for t in times if t.column("ts_ns").null_count < t.num_rows),
                 None)
    epoch = first is not None and first >= EPOCH_US_FROM * 1000
    yield "run_info", run_info(source, device_type="cpu", framework="mindspore", layout="host_info",
                               clock="unix_epoch" if epoch else "steady",
                               **({"epoch_offset_ns": 0, "epoch_offset_uncertainty_ns": 0} if epoch else {}))
    yield from tables


def read_logs(source: Source, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """The host_info_record rows of the rank's host info file; a file that cannot be read is reported (its
    records dropped) and left out, the rest of the rank is kept."""
    path = source.files[HOST_INFO_ROLE]
    try:
        table = _records(path, warn)
    except InputError as exc:
        warn(f"{exc}; the rank's host info (host spans, host memory, dataset times) is left out",
             check="truncated" if "cut short" in exc.problem else "malformed_record", action="dropped",
             path=exc.path, line=exc.line, offset=exc.offset, tables=_TABLE)
        return
    if table.num_rows:
        yield _TABLE, table


def _records(path, warn: Warn) -> pa.Table:
    frames = list(iter_line_frames(path, warn=warn, allow_blank=False))
    lines = pl.concat(frames)
    first = lines.row(0, named=True)
    if first["line"].strip() != HEADER:
        raise InputError(path, f"expected MindSpore's host info header {HEADER!r}, got {first['line'][:120]!r}",
                         line=first["line_no"])
    lines = lines.filter(pl.col("line").str.strip_chars() != HEADER)  # a header again: the file was reopened
    fields = lines.with_columns(pl.col("line").str.extract_groups(_ROW).alias("g")).unnest("g")
    numbers = ("tid", "pid", "parent_pid", "level", "start_end", "memory_kb", "ts_us")
    fields = fields.with_columns(*[pl.col(c).str.strip_chars().cast(pl.Int64, strict=False).alias(c) for c in numbers])
    fields = drop_rows(fields, pl.any_horizontal(pl.col(c).is_null() for c in (*numbers, "module", "event", "stage")),
                       warn, path, "malformed_record",
                       "rows that are not MindSpore's 11 host info fields (integers where numbers belong)",
                       tables=_TABLE)
    fields = drop_rows(fields, ~pl.col("start_end").is_in(list(_KINDS)), warn, path, "unknown_tag",
                       "rows whose start_end is not 0 (start), 1 (end) or 2 (instant)", tables=_TABLE)
    fields = drop_rows(fields, ~(pl.col("ts_us").is_between(0, _MAX_US) & pl.col("memory_kb").is_between(0, _MAX_KB)
                                 & (pl.col("tid") >= 0) & (pl.col("pid") >= 0) & (pl.col("parent_pid") >= 0)
                                 & pl.col("level").is_between(0, 2**31 - 1)),
                       warn, path, "out_of_range",
                       f"rows with a negative or out-of-range time (beyond {_MAX_US} us), memory, id or level", tables=_TABLE)
    custom = pl.col("custom_info")
    return fields.select(
        pl.col("line_no").alias("line"), "tid", "pid", "parent_pid", "module", "event", "stage",
        pl.col("level").cast(pl.Int32),
        pl.col("start_end").replace_strict(_KINDS, return_dtype=pl.String).alias("kind"),
        pl.when(custom.str.starts_with('"')).then(custom.str.slice(1, custom.str.len_chars() - 2)).otherwise(custom)
        .alias("custom_info"),
        pl.when(pl.col("memory_kb") > 0).then(pl.col("memory_kb") * 1024).alias("memory_bytes"),
        pl.when(pl.col("ts_us") > 0).then(pl.col("ts_us") * 1000).alias("ts_ns"),
    ).to_arrow()
