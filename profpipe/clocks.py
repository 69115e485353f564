"""The clock model: which clock each source's times are on, how it relates to the Unix epoch, and how the
timeline and the cross-source views put sources on one reference clock.

Every reader states its clock in `run_info.clock` (vocabulary: CLOCKS) and, where the dump relates that
clock to the Unix epoch, `epoch_offset_ns` (add to a time to get Unix-epoch ns) with
`epoch_offset_uncertainty_ns`. MindData logs read with another source are on MindData's steady clock; the
rank's `host_epoch_offset_ns` relates the host's monotonic clock to the epoch where the dump allows it.
The helpers `*_clock(...)` below give a reader those run_info columns from what its dump holds.

After ingest, `resolve` decides per rank and clock domain ("main": the source's own tables; "minddata":
queue_sample, data_cpu_sample and data_batch_time; "get_next": their rows of the device's get_next
queue, on the device counter's clock on Ascend ranks (the AICPU writes µs of it), else on MindData's)
whether its times can be put on the Unix epoch:

* aligned: the offset is known and the shifted times lie between 1990 and 2100;
* promoted: no offset is known, the clock is a host clock the format does not pin down (host, host
  monotonic, steady) and its times already lie between 1990 and 2100 as Unix-epoch ns, which no
  monotonic clock (time since boot) can reach: taken as the epoch (a trace_health row says so);
* implausible: an offset is known but the shifted times fall outside 1990-2100 (e.g. a Kineto trace
  cut before its baseTimeNanoseconds): kept on its own clock, with a trace_health row;
* unaligned: nothing relates the clock to the epoch: kept on its own clock.

Aligned and promoted domains form the "unix_epoch" group; the others are grouped by clock name (ranks on
device_syscnt share one group, each on its own device counter, as MindInsight shows them). The timeline
puts every group on its own base (so no subtraction can overflow), names the processes of every group
but the reference one "... (unaligned clock: <clock>)", and `clock_findings` gives the trace_health rows.
All arithmetic here is on Python integers (unbounded), so no clock value can overflow it.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from typing import Any

import duckdb

from .health import HealthEvent
from .ingest.scratch import memory_database

#: run_info.clock values and what they mean.
CLOCKS: dict[str, str] = {
    "unix_epoch": "ns since the Unix epoch (host CLOCK_REALTIME): Kineto traces (absolute µs or relative to "
                  "baseTimeNanoseconds), MindSpore 2.5+ *_ascend_ms (CPU ops and Ascend data)",
    "cupti": "CUPTI timestamps (MindSpore GPU runs): Unix-epoch ns on Linux; host ops are shifted onto it "
             "with start_time_N.txt",
    "host_monotonic": "a host monotonic clock (ns since boot): MindSpore <= 2.4 CPU-only runs",
    "host_monotonic_raw": "the host CLOCK_MONOTONIC_RAW (msprof exports); start_info relates it to the epoch",
    "steady": "MindData's std::chrono::steady_clock (CLOCK_MONOTONIC on Linux): MindData logs",
    "device_syscnt": "Ascend device counter ticks converted to ns with tick_hz (raw Ascend data, MindSpore 1.x "
                     "Ascend result files); related to the host only by a host_start/dev_start cntvct pair",
    "nsys_session": "ns since the Nsight Systems capture session started; TARGET_INFO_SESSION_START_TIME gives "
                    "its UTC start",
    "kineto_relative": "Kineto times relative to a baseTimeNanoseconds the trace does not hold (cut short): "
                       "the base is unknown",
    "host_syscnt": "MindSpore's host counter (syscnt) ticks as ns at MindSpore's default 100 MHz, where the dump "
                   "lacks the files that relate the counter to the epoch (framework op_range data)",
    "host": "a host clock the source does not name (older rows; treated as host_monotonic)",
}
#: Clocks whose times may already be Unix-epoch ns without the format saying so (see the module doc).
PROMOTABLE = frozenset({"host", "host_monotonic", "steady"})
#: The plausible range of Unix-epoch ns for a profile: 1990-01-01 to 2100-01-01.
EPOCH_MIN_NS = 631_152_000 * 10**9
EPOCH_MAX_NS = 4_102_444_800 * 10**9
#: Resolution assumed for a pair of clock reads taken back to back (host_start.log, start_time_N.txt).
PAIR_UNCERTAINTY_NS = 1_000
#: Most NTP may slew CLOCK_MONOTONIC against CLOCK_MONOTONIC_RAW: 500 ppm (adjtimex's limit).
SLEW_PPM = 500
EPOCH_GROUP = "unix_epoch"
DOMAINS = {"main": "", "minddata": "MindData ", "get_next": "MindData get_next "}
#: Tables whose times are in each domain: (table, time column, rows).
DOMAIN_TABLES = {
    "main": [("host_op", "start_ns", "true"), ("host_api", "start_ns", "true"), ("device_exec", "start_ns", "true"),
             ("step_point", "ts_ns", "true"), ("comm_task", "start_ns", "true"), ("memory_event", "ts_ns", "true"),
             ("collective_event", "start_ns", "true"), ("memory_record", "ts_ns", "true"),
             ("memory_block", "alloc_ns", "true"), ("memory_module", "ts_ns", "true")],
    "minddata": [("queue_sample", "ts_ns", "queue <> 'get_next'"), ("data_cpu_sample", "ts_ns", "true"),
                 ("data_batch_time", "ts_ns", "kind <> 'get_next_wait'")],
    "get_next": [("queue_sample", "ts_ns", "queue = 'get_next'"), ("data_batch_time", "ts_ns", "kind = 'get_next_wait'")],
}


# --- what each reader's dump says (run_info columns) ------------------------------------------------------

def _int64(value: int | None) -> int | None:
    """`value` when an int64 column holds it; None for a value that damaged clock files pushed beyond."""
    return value if value is not None and -(2**63) <= value < 2**63 else None


def _epoch(offset: int | None, uncertainty: int | None) -> dict[str, int | None]:
    offset = _int64(offset)
    uncertainty = _int64(uncertainty)
    return {"epoch_offset_ns": offset, "epoch_offset_uncertainty_ns": None if offset is None else uncertainty}


def _host(offset: int | None, uncertainty: int | None) -> dict[str, int | None]:
    offset = _int64(offset)
    uncertainty = _int64(uncertainty)
    return {"host_epoch_offset_ns": offset, "host_epoch_offset_uncertainty_ns": None if offset is None else uncertainty}


def epoch_clock() -> dict[str, Any]:
    """A source whose times are Unix-epoch ns by its format (Kineto with its base, *_ascend_ms era F)."""
    return {"clock": "unix_epoch", **_epoch(0, 0)}


def mindspore_framework_clock(device_type: str, layout: str, host_to_clock_offset_ns: int | None) -> dict[str, Any]:
    """MindSpore CPU/GPU framework files: GPU runs are on CUPTI's clock (the epoch), their host ops shifted
    with start_time_N.txt, whose pair also relates the host monotonic clock to the epoch; 2.5+ CPU runs
    (layout 'framework') write epoch ns; older CPU runs a host monotonic clock."""
    if device_type == "gpu":
        return {"clock": "cupti", **_epoch(0, 0), **_host(host_to_clock_offset_ns, PAIR_UNCERTAINTY_NS)}
    if layout == "framework":
        return {"clock": "unix_epoch", **_epoch(0, 0)}
    return {"clock": "host_monotonic", **_epoch(None, None)}


def msprof_clock(layout: str, epoch_offset_ns: int | None, local_time: bool) -> dict[str, Any]:
    """msprof exports: era F is on the epoch; eras D/E on CLOCK_MONOTONIC_RAW, related to the epoch by start_info's
    `epoch_offset_ns` (from µs collectionTimeBegin: ±1 µs), or, with `local_time` (msprof_local_time), on the
    epoch already: msprof added that offset itself (its float µs arithmetic: ±1 µs). Either way start_info's offset
    is the host monotonic clock's (MindData's logs)."""
    if layout == "ascend_era_f":
        return {"clock": "unix_epoch", **_epoch(0, 0)}
    if local_time:
        return {"clock": "unix_epoch", **_epoch(0, 1_000), **_host(epoch_offset_ns, 1_000)}
    return {"clock": "host_monotonic_raw", **_epoch(epoch_offset_ns, 1_000), **_host(epoch_offset_ns, 1_000)}


#: A time at or past this (2001-09-09 on the epoch) is no CLOCK_MONOTONIC_RAW reading: 31 years of uptime.
LOCAL_TIME_FROM_NS = 10**18


def msprof_local_time(earliest_ns: int | None, epoch_offset_ns: int | None) -> bool:
    """Whether an era D/E export's times are msprof's "local time" (newer msprof: CLOCK_MONOTONIC_RAW plus
    start_info's collectionTimeBegin - clockMonotonicRaw, i.e. the Unix epoch) rather than CLOCK_MONOTONIC_RAW
    (older msprof, and the real era D sample): its earliest time is nearer the collection start on the epoch
    than on the monotonic clock (past half start_info's offset: the monotonic start itself is small beside it);
    without start_info, when it is at or past LOCAL_TIME_FROM_NS."""
    if earliest_ns is None:
        return False
    if epoch_offset_ns is not None and epoch_offset_ns > 0:
        return earliest_ns > epoch_offset_ns // 2
    return earliest_ns >= LOCAL_TIME_FROM_NS


def nsys_clock(metadata: dict) -> dict[str, Any]:
    """Nsight Systems: session ns; TARGET_INFO_SESSION_START_TIME.utcEpochNs is the session's UTC start (ns,
    as nsys states it), unless the export says its times were not normalized to the session start."""
    start = metadata.get("session_start_utc_ns")
    start = start if isinstance(start, int) and not isinstance(start, bool) else None
    return {"clock": "nsys_session", **_epoch(start, 0)}


def kineto_clock(relative: bool) -> dict[str, Any]:
    """Kineto: with baseTimeNanoseconds or absolute epoch µs the times are Unix-epoch ns; `relative` when the
    reader found times relative to a base the trace does not hold (cut before it: Kineto writes it last)."""
    return {"clock": "kineto_relative", **_epoch(None, None)} if relative else epoch_clock()


def ascend_raw_clock(slices: dict[str, list[Path]], tick_hz: int) -> dict[str, Any]:
    """Raw Ascend data (device_syscnt). host_start.log's clock_realtime/clock_monotonic_raw pair (era A)
    relates the host monotonic clock to the epoch (else start_info beside it does); a host_start/dev_start
    pair of cntvct readings (era C) relates the device counter to the host monotonic clock."""
    host = _key_values(slices.get("host_start"))
    host_epoch, host_uncertainty = None, None
    if "clock_realtime" in host and "clock_monotonic_raw" in host:
        host_epoch, host_uncertainty = _int64(host["clock_realtime"] - host["clock_monotonic_raw"]), PAIR_UNCERTAINTY_NS
    else:
        for paths in (slices.get("host_start"), slices.get("dev_start")):
            info = _start_info(paths[0].parent) if paths else None
            if info is not None:
                host_epoch, host_uncertainty = info, 1_000
                break
    offset = uncertainty = None
    device_ahead = device_minus_host_ns(slices, tick_hz)
    if host_epoch is not None and device_ahead is not None:
        # device ns (ticks * 1e9 / tick_hz) -> host monotonic ns -> epoch ns (msprof's formula)
        offset = host_epoch - device_ahead
        uncertainty = PAIR_UNCERTAINTY_NS + 10**9 // tick_hz + host_uncertainty
    return {"clock": "device_syscnt", **_epoch(offset, uncertainty), **_host(host_epoch, host_uncertainty)}


def device_minus_host_ns(slices: dict[str, list[Path]], tick_hz: int) -> int | None:
    """Era C: the device counter's ns (ticks * 1e9 / tick_hz, as the raw reader gives them) minus the host's
    CLOCK_MONOTONIC_RAW ns at one instant, from dev_start.log's cntvct and host_start.log's clock_monotonic_raw
    (msprof: host ns = (ticks - cntvct) / freq + clock_monotonic_raw); None without that pair."""
    host = _key_values(slices.get("host_start"))
    device = _key_values(slices.get("dev_start"))
    if "cntvct" not in device or "clock_monotonic_raw" not in host or tick_hz <= 0:
        return None
    return _int64(device["cntvct"] * 10**9 // tick_hz - host["clock_monotonic_raw"])


@dataclass(frozen=True)
class HostCounter:
    """How MindSpore turns its host counter (syscnt, in its framework op_range data) into Unix-epoch ns:
    ns = (syscnt - cntvct) * 1000 / freq_mhz + offset_ns. 2.5+ (TimeConverter) rounds that sum half to even;
    2.4 (ProfilerInfoParser) rounds the counter's ns first, then adds the offset. `where` names the files the
    parameters came from; `known` is False when the dump lacks them (MindSpore's defaults: 100 MHz, no offset)."""

    freq_mhz: float
    cntvct: int
    offset_ns: int
    round_sum: bool
    known: bool
    where: str

    def to_ns(self, syscnt: np.ndarray) -> np.ndarray:
        """Counter values (uint64) -> ns (int64) as MindSpore computes them (float64 counter ns, as in Python);
        OUT_OF_RANGE where the counter's ns are beyond ±2^61 (no int64 can hold them with the offset)."""
        delta = syscnt.astype(np.int64) - np.int64(self.cntvct)
        if not self.round_sum:  # 2.4: round(delta * (1000 / freq)) + offset
            scaled = np.rint(delta.astype(np.float64) * (1000.0 / self.freq_mhz))
            whole, up = scaled, np.zeros(len(scaled), dtype=bool)
        else:  # 2.5+: Decimal(delta * 1000 / freq) + offset, quantized to the ns half to even
            scaled = (delta.astype(np.float64) * 1000.0) / self.freq_mhz
            whole = np.floor(scaled)
        beyond = ~(np.abs(whole) <= _BOUND)
        total = np.where(beyond, 0, whole).astype(np.int64) + np.int64(self.offset_ns)
        if self.round_sum:
            fraction = scaled - whole
            up = (fraction > 0.5) | ((fraction == 0.5) & (total % 2 == 1))
        return np.where(beyond, OUT_OF_RANGE, total + up)

    def run_info(self) -> dict[str, Any]:
        """run_info's clock columns for times converted with these parameters."""
        if self.known:
            return {"clock": "unix_epoch", **_epoch(0, 1_000), "tick_hz": round(self.freq_mhz * 1e6)}
        return {"clock": "host_syscnt", **_epoch(None, None), "tick_hz": round(self.freq_mhz * 1e6)}


#: Counter ns kept below this, so adding an offset (below 2^62) cannot overflow int64.
_BOUND = float(2**61)
#: What HostCounter.to_ns gives for a counter value whose ns no int64 holds (negative: never a time).
OUT_OF_RANGE = np.iinfo(np.int64).min
#: MindSpore's host counter frequency when the dump does not give one (MHz).
DEFAULT_COUNTER_MHZ = 100.0


def mindspore_host_counter(folder: Path, rank: int) -> HostCounter:
    """The host counter parameters of a MindSpore profiler folder (the one holding FRAMEWORK/): 2.4's
    profiler_info_<rank>.json `system_cnt` / `system_time` beside FRAMEWORK/, else 2.5+'s
    `PROF_*/host/host_start.log` (cntvct, clock_monotonic_raw) with `PROF_*/host/start_info` (the epoch offset of
    CLOCK_MONOTONIC_RAW), the frequency from `PROF_*/host/info.json` (CPU[0].Frequency, MHz: what msprof's
    get_msprof_info reports to MindSpore), else 100 MHz. Without either pair the times stay on the counter."""
    host = next((p / "host" for p in sorted(folder.glob("PROF_*")) if (p / "host").is_dir()), None)
    freq = _host_frequency(host / "info.json") if host is not None else None
    mhz = freq or DEFAULT_COUNTER_MHZ
    info = _json_object(folder / f"profiler_info_{rank}.json")
    system_cnt, system_time = info.get("system_cnt"), info.get("system_time")
    if _is_int(system_cnt) and _is_int(system_time) and system_cnt > 0:  # 2.4
        return HostCounter(mhz, system_cnt, system_time, False, True, f"profiler_info_{rank}.json")
    if host is not None:
        start = _key_values([host / "host_start.log"])
        epoch = _start_info(host)
        if (start.get("cntvct", 0) > 0 and start.get("clock_monotonic_raw", 0) > 0 and epoch is not None
                and _is_int(start["cntvct"]) and _is_int(start["clock_monotonic_raw"] + epoch)):
            return HostCounter(mhz, start["cntvct"], start["clock_monotonic_raw"] + epoch, True, True,
                               f"{host}/host_start.log, start_info")
    return HostCounter(mhz, 0, 0, True, False, "")


def msprof_host_counter(host: Path) -> HostCounter:
    """msprof's conversion of host counter ticks (raw host data such as msproftx) to CLOCK_MONOTONIC_RAW ns of a
    PROF folder's `host/`: with host/info.json's CPU[0].Frequency (MHz), ns = (ticks - cntvct) * 1000 / MHz +
    clock_monotonic_raw from host/host_start.log; without a frequency msprof reads the ticks as ns. `known` is
    False when the frequency is given but host_start.log's pair is not (the times then stay on the counter)."""
    freq = _host_frequency(host / "info.json")
    if freq is None:
        return HostCounter(1000.0, 0, 0, True, True, f"{host}/info.json gives no CPU frequency: ticks read as ns")
    start = _key_values([host / "host_start.log"])
    cntvct, mono = start.get("cntvct", 0), start.get("clock_monotonic_raw", 0)
    if cntvct > 0 and mono > 0 and _is_int(cntvct) and _is_int(mono):
        return HostCounter(freq, cntvct, mono, True, True, f"{host}/info.json, host_start.log")
    return HostCounter(freq, 0, 0, True, False, "")


def _host_frequency(path: Path) -> float | None:
    try:
        value = float(_json_object(path)["CPU"][0]["Frequency"])
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    return value if np.isfinite(value) and 0 < value < 1e6 else None


def _json_object(path: Path) -> dict:
    try:
        value = json.loads(_head(path, 1 << 20) or "")
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) < 2**62


def _key_values(paths: list[Path] | None) -> dict[str, int]:
    """`name: <integer>` lines of a small clock file (host_start.log / dev_start.log); unreadable: {}."""
    if not paths:
        return {}
    text = _head(paths[0])
    if text is None:
        return {}
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^[ \t]*([A-Za-z_]+)[ \t]*[:=][ \t]*(-?[0-9]{1,20})[ \t\r]*$", text,
                                                             re.MULTILINE)}


def _head(path: Path, limit: int = 65536) -> str | None:
    """The first `limit` bytes of a small clock file as text; None unless it is a regular file that reads
    (a FIFO or device named like one is never opened)."""
    try:
        if not path.is_file():
            return None
        with open(path, "rb") as file:
            return file.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return None


def _start_info(folder: Path) -> int | None:
    """collectionTimeBegin * 1000 - clockMonotonicRaw of a start_info.<n> in `folder` (None without one)."""
    for path in sorted(folder.glob("start_info*")):  # start_info.<n> (devices), start_info (2.5+ host/)
        if path.suffix == ".done":
            continue
        try:
            info = json.loads(_head(path) or "")
            return int(info["collectionTimeBegin"]) * 1000 - int(info["clockMonotonicRaw"])
        except (ValueError, KeyError, TypeError, RecursionError):
            continue
    return None


# --- resolution after ingest ----------------------------------------------------------------------------

@dataclass
class DomainClock:
    """The clock of one rank's capture's times in one domain and where the timeline puts them."""

    rank: int
    capture: int
    domain: str
    clock: str
    source: str
    rows: int
    min_ns: int | None
    max_ns: int | None
    offset_ns: int | None
    uncertainty_ns: int | None
    status: str = "unaligned"  # aligned, promoted, implausible, unaligned
    group: str = ""
    shift_ns: int = 0
    conflict: str | None = None  # the other clocks a rank's sources are on, when they disagree

    @property
    def aligned(self) -> bool:
        return self.status in ("aligned", "promoted")


@dataclass
class ClockModel:
    """Every (rank, domain) clock, the groups and the reference group."""

    domains: list[DomainClock]
    bases: dict[str, int]  # group -> smallest shifted time (ns)
    primary: str | None

    def group_label(self, group: str) -> str:
        """'' for the reference group, else the suffix for process names."""
        return "" if group == self.primary else f" (unaligned clock: {group})"

    def describe(self) -> str:
        """otherData.clock of the timeline."""
        if self.primary is None:
            return "no timed events"
        if self.primary == EPOCH_GROUP:
            ranks = sorted({d.rank for d in self.domains if d.group == EPOCH_GROUP})
            text = f"Unix epoch (ranks {', '.join(map(str, ranks))} aligned by their clocks' epoch offsets)"
        else:
            text = f"{self.primary} (not related to the Unix epoch; every rank on its own {self.primary} clock)"
        others = [g for g in self.bases if g != self.primary]
        if others:
            text += "; unaligned groups on their own bases: " + ", ".join(others)
        return text + ", ns since baseTimeNanoseconds"

    def groups(self) -> list[dict[str, Any]]:
        """otherData.clock_groups of the timeline."""
        return [{"clock": group, "reference": group == self.primary, "aligned_to_epoch": group == EPOCH_GROUP,
                 "base_ns": base, "ranks": sorted({d.rank for d in self.domains if d.group == group})}
                for group, base in self.bases.items()]


def _in_epoch_window(low: int | None, high: int | None, shift: int) -> bool:
    return low is None or (EPOCH_MIN_NS <= low + shift <= EPOCH_MAX_NS and EPOCH_MIN_NS <= high + shift <= EPOCH_MAX_NS)


def resolve(con: duckdb.DuckDBPyConnection, ranges: str) -> ClockModel:
    """The clock model of the run in `con` (a `run_info` relation) for the time ranges of the SQL query
    `ranges` (columns rank, capture, domain, rows, min_ns, max_ns; one row per rank, capture and domain that
    has times): each capture of a rank is aligned by the run_info rows of that capture."""
    columns = {c for (c,) in con.execute("SELECT column_name FROM (DESCRIBE run_info)").fetchall()}
    wanted = ["rank", "capture", "clock", "layout", "source_dir", "epoch_offset_ns", "epoch_offset_uncertainty_ns",
              "host_epoch_offset_ns", "host_epoch_offset_uncertainty_ns"]
    select = ", ".join(c if c in columns else f"NULL AS {c}" for c in wanted)
    infos: dict[tuple[int, int], list[tuple]] = {}
    for row in con.execute(f"SELECT {select} FROM run_info ORDER BY rank, capture, source_dir").fetchall():
        infos.setdefault((row[0], row[1] or 0), []).append(row[:1] + row[2:])
    domains = []
    for rank, capture, domain, rows, low, high in con.execute(ranges).fetchall():
        rows_info = infos.get((rank, capture)) or [(rank, "unknown", None, "", None, None, None, None)]
        # a capture read from several sources: the one that knows its epoch offset leads
        first = min(rows_info, key=lambda r: (r[4] is None, r[3] or ""))
        _, clock, layout, source, offset, uncertainty, host_offset, host_uncertainty = first
        clock = clock or "unknown"
        if offset is None and clock in ("unix_epoch", "cupti"):  # epoch times by the clock's definition
            offset, uncertainty = 0, 0
        conflict = sorted({f"{r[1]} (offset {r[4]})" for r in rows_info} - {f"{clock} (offset {offset})"}) or None
        if domain == "get_next" and clock == "device_syscnt":
            pass  # Ascend: the AICPU's get_next times are device-counter µs, the rank's own clock
        elif domain != "main" and layout != "minddata":
            clock, offset, uncertainty = "steady", host_offset, host_uncertainty
            if offset is not None and uncertainty is not None:
                uncertainty += SLEW_PPM * max(abs(low or 0), abs(high or 0)) // 10**6
        domains.append(DomainClock(rank, capture, domain, clock, source or "", rows, low, high, offset, uncertainty,
                                   conflict=", ".join(conflict) if conflict else None))
    bases: dict[str, int] = {}
    counts: dict[str, tuple[int, int]] = {}  # group -> (rows of main domains, rows)
    for d in domains:
        if d.offset_ns is not None:
            d.status = "aligned" if _in_epoch_window(d.min_ns, d.max_ns, d.offset_ns) else "implausible"
        elif d.clock in PROMOTABLE and d.rows and _in_epoch_window(d.min_ns, d.max_ns, 0):
            d.status = "promoted"
        d.shift_ns = d.offset_ns if d.status == "aligned" else 0
        d.group = EPOCH_GROUP if d.aligned else d.clock if d.status == "unaligned" else f"{d.clock}, implausible times"
        if d.min_ns is not None:
            bases[d.group] = min(bases.get(d.group, d.min_ns + d.shift_ns), d.min_ns + d.shift_ns)
        main, rows = counts.get(d.group, (0, 0))
        counts[d.group] = (main + (d.rows if d.domain == "main" else 0), rows + d.rows)
    # the reference: the epoch, else the clock of most of the sources' own times (not their MindData logs)
    primary = EPOCH_GROUP if EPOCH_GROUP in bases else (
        min(bases, key=lambda g: (-counts[g][0], -counts[g][1], g)) if bases else None)
    return ClockModel(domains, dict(sorted(bases.items(), key=lambda kv: (kv[0] != primary, kv[0]))), primary)


def findings(model: ClockModel) -> list[HealthEvent]:
    """The trace_health rows (check 'clock', action 'kept': no number changes) of a clock model."""
    events = []
    several = len(model.bases) > 1
    for d in model.domains:
        who = f"rank {d.rank}" + (f" capture {d.capture}" if d.capture else "")
        what = f"{who}'s {DOMAINS[d.domain]}times ({d.rows} rows, clock {d.clock})"
        message = None
        if d.status == "implausible":
            message = (f"{d.source}: {what} with epoch offset {d.offset_ns} ns would lie at {_date(d.min_ns, d.offset_ns)}"
                       f" to {_date(d.max_ns, d.offset_ns)}, outside 1990-2100: the offset or the times are wrong "
                       f"(e.g. a trace cut before its time base); the timeline keeps them on their own clock")
        elif d.status == "promoted":
            message = (f"{d.source}: {what} lie between {_date(d.min_ns, 0)} and {_date(d.max_ns, 0)} as Unix-epoch "
                       "ns, which no monotonic clock can reach; they are taken as Unix-epoch times")
        elif several and d.group != model.primary:
            reference = "the Unix epoch" if model.primary == EPOCH_GROUP else f"the {model.primary} clock"
            message = (f"{d.source}: {what} cannot be aligned with {reference}: the dump holds no clock pair relating "
                       f"{d.clock} to it; the timeline shows them in their own track group "
                       f"\"unaligned clock: {d.group}\"")
        if message:
            events.append(HealthEvent(source=d.source, rank=d.rank, check="clock", action="kept", message=message,
                                      rows=d.rows, path=d.source or None, tables=_tables(d.domain)))
        if d.conflict and d.domain == "main":
            events.append(HealthEvent(
                source=d.source, rank=d.rank, check="clock", action="kept", rows=d.rows, path=d.source or None,
                message=f"{d.source}: {who} was read from sources on different clocks ({d.clock} (offset "
                        f"{d.offset_ns}) and {d.conflict}); the timeline places all of its times as {d.clock}",
                tables=_tables(d.domain)))
    return events


def _tables(domain: str) -> str:
    return ",".join(table for table, _, _ in DOMAIN_TABLES[domain])


def _date(value: int | None, shift: int) -> str:
    """A time as an ISO date when it is one, else its ns."""
    import datetime

    if value is None:
        return "?"
    ns = value + shift
    try:
        return datetime.datetime.fromtimestamp(ns // 10**9, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return f"{ns} ns"


def table_ranges_sql(tables: set[str]) -> str:
    """The `ranges` query of `resolve` over the normalized tables in `tables` (those that exist)."""
    parts = [f"SELECT rank, capture, '{domain}' AS domain, {column} AS t FROM {table} WHERE {rows}"
             for domain, members in DOMAIN_TABLES.items() for table, column, rows in members if table in tables]
    if not parts:
        return "SELECT NULL::INTEGER, NULL::INTEGER, NULL::VARCHAR, 0, NULL::BIGINT, NULL::BIGINT WHERE false"
    return ("SELECT rank, capture, domain, count(*), min(t), max(t) FROM (" + " UNION ALL ".join(parts) + ") "
            "WHERE t IS NOT NULL GROUP BY rank, capture, domain ORDER BY rank, capture, domain")


def clock_findings(tables_dir: Path, row_counts: dict[str, int] | None = None) -> list[HealthEvent]:
    """The clock rows of trace_health for the normalized tables in `tables_dir` (after ingest, before
    trace_health.parquet is written); the runner adds them to the run's ledger. `row_counts` (rows per table, when
    known) spares reading the tables that hold none."""
    tables_dir = Path(tables_dir)
    if not (tables_dir / "run_info.parquet").is_file():
        return []
    timed = {table for members in DOMAIN_TABLES.values() for table, _, _ in members}
    con = memory_database()
    try:
        present = set()
        for name in sorted(timed | {"run_info"}):
            path = tables_dir / f"{name}.parquet"
            if path.is_file() and (name == "run_info" or row_counts is None or row_counts.get(name)):
                quoted = str(path).replace("'", "''")
                con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{quoted}')")
                present.add(name)
        return findings(resolve(con, table_ranges_sql(present)))
    finally:
        con.close()
