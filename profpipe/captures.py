"""Between ingest and the merge: number each rank's sources into captures (profiling cycles) by time.

A rank may hold several sources: its host and device data of one profiling cycle (sources of different
families, e.g. a MindSpore framework folder and its raw Ascend job), and several cycles (two Kineto
traces of one rank, raw jobs of successive runs). Each source's time span is read from the Parquet
footers of its part (the min and max start times of its timed tables) and put on the Unix epoch where
its run_info row relates its clock to the epoch. Then, per rank, in time order: a source whose span
overlaps a capture's span on a comparable clock, and whose family that capture does not hold yet,
joins it; a source without any times (MindSpore 1.x's memory_usage .pb, tensor lifetimes by node index)
joins the rank's first capture that lacks its family; any other source opens the next capture. So capture 0
is the rank's first cycle whatever the file names, and the sources of one cycle share its number. Sources whose
clocks cannot be compared with the epoch (device counters, a steady clock without an offset) follow, ordered
by clock and start time; when a rank mixes such clocks the order across clocks is a guess, and a trace_health
row (ambiguous, kept) says so. Two sources of one rank and family whose times overlap (discover already set aside
byte-for-byte copies) cannot be two cycles of that rank: both are read, as two captures, and a trace_health row
(conflicting_entry, kept) names them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq

from .health import HealthEvent

#: The timed tables and their time column, read from the footers (MindData's tables are on MindData's
#: steady clock and are used only for a source that has nothing else).
_MAIN_TIMES = {"host_op": "start_ns", "device_exec": "start_ns", "host_api": "start_ns", "step_point": "ts_ns",
               "comm_task": "start_ns", "memory_event": "ts_ns", "collective_event": "start_ns",
               "memory_record": "ts_ns", "memory_block": "alloc_ns", "memory_module": "ts_ns"}
_MINDDATA_TIMES = {"queue_sample": "ts_ns", "data_batch_time": "ts_ns", "data_cpu_sample": "ts_ns"}
#: MindSpore's op-range data (host events, Python frames on the rank clock): the times of such a source. Not
#: looked at for other sources: a host info file listed with another source may be on another host clock.
_OP_RANGE_TIMES = {"host_info_record": "ts_ns", "python_frame": "start_ns"}
#: Clocks whose times are Unix-epoch ns by definition (profpipe/clocks.py).
_EPOCH_CLOCKS = ("unix_epoch", "cupti")
EPOCH = "epoch"


@dataclass
class SourceSpan:
    """Where one source's times lie: on the epoch (clock "epoch") or on its own clock."""

    part: Path
    rank: int
    family: str
    location: str
    clock: str
    low: int | None
    high: int | None


@dataclass(eq=False)  # captures are told apart by identity (two may hold equal spans)
class _Capture:
    clock: str
    low: int | None
    high: int | None
    #: The source of each family it holds: family -> that source's span.
    families: dict[str, SourceSpan] = field(default_factory=dict)

    def takes(self, span: SourceSpan) -> bool:
        return span.family not in self.families and _overlap(self.clock, self.low, self.high, span)

    def rival(self, span: SourceSpan) -> SourceSpan | None:
        """The source of `span`'s family this capture holds whose times overlap `span`'s (None: none)."""
        held = self.families.get(span.family)
        return held if held is not None and _overlap(held.clock, held.low, held.high, span) else None


def _overlap(clock: str, low: int | None, high: int | None, span: SourceSpan) -> bool:
    """True when `span` lies on `clock` and its times meet low..high."""
    if span.clock != clock or span.low is None or low is None:
        return False
    return span.low <= high and low <= span.high


def source_span(part: Path, rank: int, family: str, location: str) -> SourceSpan:
    """The span of the source read into the part folder `part`."""
    clock, offset, host_offset = _clock(part)
    low, high = _range(part, _MAIN_TIMES)
    if low is None and family == "mindspore_op_range":
        low, high = _range(part, _OP_RANGE_TIMES)
    if low is None:  # MindData alone: its steady clock, on the epoch where the host's offset is known
        low, high = _range(part, _MINDDATA_TIMES)
        clock, offset = "steady", host_offset
    if offset is None and clock in _EPOCH_CLOCKS:
        offset = 0
    if offset is not None and low is not None:
        return SourceSpan(part, rank, family, location, EPOCH, low + offset, high + offset)
    return SourceSpan(part, rank, family, location, clock, low, high)


def number_captures(spans: list[SourceSpan]) -> tuple[dict[Path, int], list[HealthEvent]]:
    """The capture of each source (by its part folder), and the trace_health rows of ranks whose captures
    could be ordered only partly by time."""
    numbers: dict[Path, int] = {}
    events = []
    for rank in sorted({s.rank for s in spans}):
        own = [s for s in spans if s.rank == rank]
        own.sort(key=lambda s: (s.clock != EPOCH, s.clock, s.low is None, s.low or 0, _natural(s.location)))
        captures: list[_Capture] = []
        for span in own:
            capture = next((c for c in captures if c.takes(span)), None)
            if capture is None and span.low is None:  # no times (MindSpore 1.x memory_usage .pb): the first
                capture = next((c for c in captures if span.family not in c.families), None)  # cycle lacking it
            if capture is None:
                rival = next((r for c in captures if (r := c.rival(span)) is not None), None)
                if rival is not None:
                    events.append(_conflict(rank, rival, span, len(captures)))
                capture = _Capture(span.clock, span.low, span.high)
                captures.append(capture)
            capture.families[span.family] = span
            if span.low is not None:
                capture.low = span.low if capture.low is None else min(capture.low, span.low)
                capture.high = span.high if capture.high is None else max(capture.high, span.high)
            numbers[span.part] = captures.index(capture)
        clocks = sorted({c.clock for c in captures})
        if len(captures) > 1 and len(clocks) > 1:
            events.append(HealthEvent(
                message=f"rank {rank}: its {len(captures)} profiling cycles are on clocks that cannot be compared "
                        f"({', '.join(clocks)}): captures are numbered by time within each clock, the clocks one "
                        "after the other", check="ambiguous", action="kept", rank=rank, source=own[0].location))
    return numbers, events


def _conflict(rank: int, first: SourceSpan, second: SourceSpan, capture: int) -> HealthEvent:
    """The trace_health row of two different sources of one rank and family whose times overlap: two profiling
    cycles of one rank do not overlap, so one of them is likely another rank's or another run's."""
    return HealthEvent(
        message=f"rank {rank}: {second.location} and {first.location} are both its {first.family} data over "
                "overlapping times but hold different data (not copies); both are read, the second as capture "
                f"{capture}: statistics over the rank's captures count both. If one belongs to another rank or "
                "run, move it or give it its rank with --rank-map",
        check="conflicting_entry", action="kept", rank=rank, source=second.location, path=second.location)


def _natural(text: str) -> list[object]:
    """A sort key that orders the numbers in a path by value (worker0.9 before worker0.10): equal start
    times fall back on file order."""
    return [int(piece) if piece.isdigit() else piece for piece in re.split(r"(\d+)", text)]


def _clock(part: Path) -> tuple[str, int | None, int | None]:
    """(clock, epoch offset, host epoch offset) of the part's run_info row."""
    path = part / "run_info.parquet"
    if not path.is_file():
        return "unknown", None, None
    table = pq.read_table(path, columns=None)
    row = table.slice(0, 1).to_pylist()[0] if table.num_rows else {}
    return (row.get("clock") or "unknown", row.get("epoch_offset_ns"), row.get("host_epoch_offset_ns"))


def _range(part: Path, columns: dict[str, str]) -> tuple[int | None, int | None]:
    """The smallest and largest value of the time columns of the part's tables, from the footers."""
    low = high = None
    for table, column in columns.items():
        path = part / f"{table}.parquet"
        if not path.is_file():
            continue
        metadata = pq.ParquetFile(path).metadata
        if column not in metadata.schema.names:
            continue
        index = metadata.schema.names.index(column)
        stats = [metadata.row_group(g).column(index).statistics for g in range(metadata.num_row_groups)]
        if all(s is not None and s.has_min_max for s in stats):
            values = [v for s in stats for v in (s.min, s.max)]
        else:  # a writer without statistics: read the column
            import pyarrow.compute as pc

            extremes = pc.min_max(pq.read_table(path, columns=[column])[column])
            values = [v for v in (extremes["min"].as_py(), extremes["max"].as_py()) if v is not None]
        if values:
            low = min(values) if low is None else min(low, *values)
            high = max(values) if high is None else max(high, *values)
    return low, high
