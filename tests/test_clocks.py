"""The clock model (profpipe/clocks.py): each source's clock and epoch offset in run_info, and a timeline that
opens whatever clocks the sources of a run are on (issue 16)."""
from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from decimal import Decimal
import tempfile
from pathlib import Path

import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES, query, realdata, run
from fuzzing import FUZZ
from profpipe.clocks import EPOCH_MAX_NS, EPOCH_MIN_NS, clock_findings
from profpipe.export.chrome_trace import write_timeline
from profpipe.health import HealthLedger

KINETO = FIXTURES / "kineto" / "current"
MSPROF = FIXTURES / "msprof_timeline"
NSYS = FIXTURES / "nsys" / "report1.sqlite"


def _trace(out: Path) -> dict:
    """The timeline, its numbers read exactly (a float would hide a wrong digit)."""
    return json.loads((out / "timeline" / "trace.json").read_text(), parse_float=Decimal)


def _processes(trace: dict) -> dict[int, str]:
    return {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}


def _ns(us: Decimal | int) -> int:
    exact = Decimal(us) * 1000
    assert exact == exact.to_integral_value()
    return int(exact)


def _run_info(out: Path) -> dict[int, dict]:
    with duckdb.connect(str(out / "profile.duckdb"), read_only=True) as con:
        cursor = con.execute("SELECT * FROM run_info")
        names = [c[0] for c in cursor.description]
        return {row[0]: dict(zip(names, row)) for row in cursor.fetchall()}


def _assert_opens(trace: dict) -> None:
    """Valid Chrome trace: every timed event has a finite ts >= 0 on its group's base, and each track's
    complete events are in the order of their source's times."""
    events = trace["traceEvents"]
    assert isinstance(trace["baseTimeNanoseconds"], int)
    timed = [e for e in events if e["ph"] in ("X", "C")]
    assert timed and all(isinstance(e["ts"], (int, Decimal)) and e["ts"] >= 0 for e in timed)
    assert all(e["dur"] >= 0 for e in timed if e["ph"] == "X")
    names = _processes(trace)
    assert all(e["pid"] in names for e in timed)


# --- MindData's steady clock beside an epoch-clock dump ---------------------------------------------------

def _cpu_dump_with_minddata(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "in"
    shutil.copytree(FIXTURES / "mindspore_cpu" / "lenet_graph", folder)
    framework = next(folder.glob("*_ascend_ms/FRAMEWORK"))
    logs = FIXTURES / "minddata_mindspore" / "slow_map"
    for name in ("pipeline_profiling_0.json", "minddata_cpu_utilization_0.json", "dataset_iterator_profiling_0.txt"):
        shutil.copy(logs / name, framework / name)
    return folder, framework


def test_minddata_steady_clock_beside_an_epoch_dump_keeps_its_own_group(tmp_path: Path) -> None:
    folder, framework = _cpu_dump_with_minddata(tmp_path)
    out = run(folder, tmp_path / "out").output
    info = _run_info(out)[0]
    assert (info["clock"], info["epoch_offset_ns"], info["epoch_offset_uncertainty_ns"]) == ("unix_epoch", 0, 0)
    assert info["host_epoch_offset_ns"] is None  # a 2.x CPU dump holds no host clock pair
    trace = _trace(out)
    _assert_opens(trace)
    names = _processes(trace)
    assert names[1] == "rank 0"  # named with the clock of its ops; its MindData counters say their own
    # the CPU ops are on the epoch: baseTimeNanoseconds + ts is the file's own start time
    starts = [int(execution.split(",")[0]) for line in (framework / "cpu_op_execute_timestamp_0.txt").read_text().split("\n")
              if line for execution in line.split(";")[2].split()]
    assert trace["baseTimeNanoseconds"] == min(starts)
    ops = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] == 1 and e["cat"] == "op"]
    assert sorted(trace["baseTimeNanoseconds"] + _ns(e["ts"]) for e in ops) == sorted(starts)
    # the MindData counters start at 0 on their own base: the CPU monitor's first sample (ms)
    stamps = json.loads((framework / "minddata_cpu_utilization_0.json").read_text())["time_stamp"]
    group = {g["clock"]: g for g in trace["otherData"]["clock_groups"]}
    assert group["steady"]["base_ns"] <= min(stamps) * 1_000_000 and group["steady"]["ranks"] == [0]
    counters = [e for e in trace["traceEvents"] if e["ph"] == "C"]
    assert counters and min(e["ts"] for e in counters) == 0 and all(e["pid"] == 1 for e in counters)
    assert all(e["name"].endswith(" (unaligned clock: steady)") for e in counters)
    # and the ledger says why
    rows = clock_findings(out / "tables")
    assert [(r.rank, r.check, r.action, r.tables) for r in rows] == [
        (0, "clock", "kept", "queue_sample,data_cpu_sample,data_batch_time")]
    assert "steady" in rows[0].message and "unaligned clock: steady" in rows[0].message
    assert rows[0].rows == sum(query(out, f"SELECT count(ts_ns) FROM {table}")[0][0]
                               for table in ("queue_sample", "data_cpu_sample", "data_batch_time"))
    ledger = HealthLedger()  # what the runner does with them: trace_health rows, the run stays complete
    for row in rows:
        ledger.add(row)
    assert ledger.table().num_rows == 1 and not ledger.lossy


def test_minddata_beside_a_gpu_dump_is_aligned_through_start_time(tmp_path: Path) -> None:
    """start_time_N.txt relates the host's monotonic clock to CUPTI's (the epoch): MindData's logs go there."""
    folder = tmp_path / "in"
    shutil.copytree(FIXTURES / "mindspore_gpu" / "graph_2x", folder)
    profiler = folder / "profiler"
    host, gpu = (int(line.split(":")[1]) for line in (profiler / "start_time_0.txt").read_text().split("\n") if line)
    stamp_ms = (host + 2_000_000_000) // 1_000_000  # a sample 2 s after the start, on the host clock
    cpu = json.loads((FIXTURES / "minddata_mindspore" / "slow_map" / "minddata_cpu_utilization_0.json").read_text())
    cpu["time_stamp"] = [stamp_ms + 10 * i for i in range(len(cpu["time_stamp"]))]
    (profiler / "minddata_cpu_utilization_0.json").write_text(json.dumps(cpu))
    shutil.copy(FIXTURES / "minddata_mindspore" / "slow_map" / "pipeline_profiling_0.json", profiler)
    out = run(folder, tmp_path / "out").output
    info = _run_info(out)[0]
    assert info["clock"] == "cupti" and info["epoch_offset_ns"] == 0
    assert info["host_epoch_offset_ns"] == gpu - host == info["host_to_clock_offset_ns"]
    trace = _trace(out)
    _assert_opens(trace)
    assert [g["clock"] for g in trace["otherData"]["clock_groups"]] == ["unix_epoch"]
    counters = [e for e in trace["traceEvents"] if e["ph"] == "C"]
    assert min(trace["baseTimeNanoseconds"] + _ns(e["ts"]) for e in counters) == stamp_ms * 1_000_000 + gpu - host
    assert clock_findings(out / "tables") == []


# --- Kineto beside Nsight Systems, a truncated Kineto trace -----------------------------------------------

def test_kineto_beside_nsys_share_the_epoch(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(KINETO / "rank-0.pt.trace.json", folder)
    shutil.copy(NSYS, folder / "rank-1.sqlite")
    out = run(folder, tmp_path / "out").output
    with sqlite3.connect(NSYS) as db:
        session_utc = db.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchone()[0]
        first_kernel = db.execute("SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    kineto = json.loads((KINETO / "rank-0.pt.trace.json").read_text())
    info = _run_info(out)
    assert (info[0]["clock"], info[0]["epoch_offset_ns"]) == ("unix_epoch", 0)
    assert (info[1]["clock"], info[1]["epoch_offset_ns"], info[1]["epoch_offset_uncertainty_ns"]) == \
        ("nsys_session", session_utc, 0)
    trace = _trace(out)
    _assert_opens(trace)
    assert [g["clock"] for g in trace["otherData"]["clock_groups"]] == ["unix_epoch"]
    assert not any("unaligned" in name for name in _processes(trace).values())
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel" and e["pid"] == 2]
    assert min(trace["baseTimeNanoseconds"] + _ns(e["ts"]) for e in kernels) == session_utc + first_kernel
    first_op = min(Decimal(str(e["ts"])) for e in kineto["traceEvents"] if e.get("cat") in ("cpu_op", "user_annotation"))
    ops = [e for e in trace["traceEvents"] if e.get("cat") == "op" and e["pid"] == 1]
    assert min(trace["baseTimeNanoseconds"] + _ns(e["ts"]) for e in ops) == kineto["baseTimeNanoseconds"] + _ns(first_op)
    assert clock_findings(out / "tables") == []


def _cut_before_base(source: Path, target: Path) -> None:
    """The trace cut just after its event array: the baseTimeNanoseconds Kineto writes after it is lost."""
    text = source.read_text()
    target.write_text(text[:text.index('"baseTimeNanoseconds"')])


def test_truncated_kineto_trace_without_its_base_is_not_put_on_the_epoch(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    with gzip.open(KINETO / "rank-1.pt.trace.json.gz", "rt") as whole:
        (folder / "rank-1.pt.trace.json").write_text(whole.read())
    _cut_before_base(KINETO / "rank-0.pt.trace.json", folder / "rank-0.pt.trace.json")
    out = run(folder, tmp_path / "out").output
    info = _run_info(out)
    assert (info[0]["clock"], info[0]["epoch_offset_ns"]) == ("kineto_relative", None)
    assert (info[1]["clock"], info[1]["epoch_offset_ns"]) == ("unix_epoch", 0)
    trace = _trace(out)
    _assert_opens(trace)
    names = _processes(trace)
    assert names[1] == "rank 0 (unaligned clock: kineto_relative)" and names[2] == "rank 1"
    relative = json.loads((KINETO / "rank-0.pt.trace.json").read_text())
    groups = {g["clock"]: g for g in trace["otherData"]["clock_groups"]}
    first = min(_ns(Decimal(str(e["ts"]))) for e in relative["traceEvents"] if e.get("ph") == "X" and "ts" in e)
    assert groups["kineto_relative"]["base_ns"] == first and groups["unix_epoch"]["reference"]
    # each track keeps its order and its durations
    for pid in (1, 2):
        ops = [e for e in trace["traceEvents"] if e.get("cat") == "op" and e["pid"] == pid]
        assert ops and min(e["ts"] for e in ops) >= 0
    rows = clock_findings(out / "tables")
    assert [(r.rank, r.check) for r in rows] == [(0, "clock")] and "kineto_relative" in rows[0].message


def test_two_captures_of_one_rank_on_different_clocks_are_aligned_each_by_its_own(tmp_path: Path) -> None:
    """One rank, two cycles: a whole trace (epoch) and one cut before its base (relative times). Each
    capture gets its own clock domain: the whole one on the epoch, the cut one in its own group."""
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(KINETO / "rank-0.pt.trace.json", folder / "worker0.1.pt.trace.json")
    _cut_before_base(KINETO / "rank-0.pt.trace.json", folder / "worker0.2.pt.trace.json")
    out = run(folder, tmp_path / "out").output
    trace = _trace(out)
    _assert_opens(trace)
    names = _processes(trace)
    assert names[1] == "rank 0" and names[1_000_001] == "rank 0 capture 1 (unaligned clock: kineto_relative)"
    whole = json.loads((KINETO / "rank-0.pt.trace.json").read_text())
    first_op = min(Decimal(str(e["ts"])) for e in whole["traceEvents"] if e.get("cat") in ("cpu_op", "user_annotation"))
    ops = [e for e in trace["traceEvents"] if e.get("cat") == "op" and e["pid"] == 1]
    assert min(trace["baseTimeNanoseconds"] + _ns(e["ts"]) for e in ops) == whole["baseTimeNanoseconds"] + _ns(first_op)
    relative = [e for e in trace["traceEvents"] if e.get("cat") == "op" and e["pid"] == 1_000_001]
    assert relative and min(_ns(e["ts"]) for e in relative) == 0  # its own group's base is its first event
    rows = [r for r in clock_findings(out / "tables") if r.check == "clock"]
    assert len(rows) == 1 and "capture 1" in rows[0].message and "kineto_relative" in rows[0].message


# --- times near the int64 limits ---------------------------------------------------------------------------

_EXTREMES = [-(2**63) + 1, -5_000, -1, 0, 1, 2**62, 2**62 + 123_456_789, 2**63 - 10_001]


@pytest.fixture(scope="module")
def empty_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An analysed output whose relations the timeline reads (emptied per test)."""
    return run(KINETO / "rank-0.pt.trace.json", tmp_path_factory.mktemp("clocks") / "out").output


def _timeline_of_times(out: Path, target: Path, ranks: dict[int, tuple[str, int | None, list[int]]]) -> dict:
    """The timeline of a run whose rank r has host ops (timeline_span rows) starting at times (ns, 10 µs each) on
    clock with epoch offset: ranks = {r: (clock, offset, times)}."""
    con = duckdb.connect()
    source = str(out / "profile.duckdb").replace("'", "''")
    con.execute(f"ATTACH '{source}' AS src (READ_ONLY)")
    for (name,) in con.execute("SELECT table_name FROM information_schema.tables WHERE table_catalog = 'src'").fetchall():
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM src.{name} WHERE false")
    for rank, (clock, offset, times) in ranks.items():
        values = ", ".join(f"({rank}, 0, 1, 'CPU ops', 1, 'Thread 1', 'op{i}', 'op', {t}, 10000, 'main')"
                           for i, t in enumerate(times))
        con.execute("INSERT INTO timeline_span (rank, capture, lane, process, tid, thread, name, category, start_ns, "
                    f"dur_ns, clock_domain) VALUES {values}")
        con.execute("INSERT INTO run_info (rank, capture, device_id, device_type, framework, layout, source_dir, clock, "
                    "epoch_offset_ns) VALUES (?, 0, ?, 'cpu', 'pytorch', 'kineto', 'x', ?, ?)", [rank, rank, clock, offset])
    written = write_timeline(con, target.parent, gzip_it=False)  # writes target.parent / "trace.json"
    con.close()
    assert written.path == target
    return json.loads(target.read_text(), parse_float=Decimal)


@pytest.mark.parametrize("clock", ["kineto_relative", "steady"])
def test_times_near_the_int64_limits_are_written_exactly(empty_run: Path, tmp_path: Path, clock: str) -> None:
    trace = _timeline_of_times(empty_run, tmp_path / "trace.json", {0: (clock, None, _EXTREMES)})
    base = min(_EXTREMES)
    assert trace["baseTimeNanoseconds"] == base
    ops = sorted((e for e in trace["traceEvents"] if e["ph"] == "X"), key=lambda e: int(e["name"][2:]))
    assert [_ns(e["ts"]) for e in ops] == [t - base for t in _EXTREMES]
    assert all(e["dur"] == Decimal("10") for e in ops)


def test_epoch_times_beside_extreme_times_of_another_clock(empty_run: Path, tmp_path: Path) -> None:
    """An epoch-clock rank whose times are not plausible epoch times keeps its own base, exactly."""
    times = [EPOCH_MIN_NS - 1, 2**63 - 1]
    trace = _timeline_of_times(empty_run, tmp_path / "trace.json", {0: ("unix_epoch", None, times)})
    assert trace["otherData"]["clock_groups"][0]["clock"] == "unix_epoch, implausible times"
    ops = sorted((e for e in trace["traceEvents"] if e["ph"] == "X"), key=lambda e: int(e["name"][2:]))
    assert [_ns(e["ts"]) for e in ops] == [0, 2**63 - EPOCH_MIN_NS]
    assert EPOCH_MAX_NS < 2**63


_INT64 = st.integers(-(2**63), 2**63 - 1 - 10_000)
#: times of a run (up to ~11 days) and offsets that put them on the epoch, beside any int64
_TIMES = st.one_of(_INT64, st.integers(-10**15, 10**15), st.integers(EPOCH_MIN_NS, EPOCH_MAX_NS - 10**15))
_OFFSETS = st.one_of(st.none(), _INT64, st.integers(EPOCH_MIN_NS + 10**15, EPOCH_MAX_NS - 10**15))
_CLOCKS = st.sampled_from(["unix_epoch", "host_monotonic_raw", "nsys_session", "steady", "device_syscnt",
                           "kineto_relative"])


@FUZZ
@given(st.dictionaries(st.integers(0, 3), st.tuples(_CLOCKS, _OFFSETS, st.lists(_TIMES, min_size=1, max_size=4)),
                       min_size=1, max_size=3))
def test_any_clocks_and_times_give_an_exact_timeline(empty_run: Path, ranks: dict) -> None:
    """Whatever the clocks, offsets and int64 times of the ranks, the timeline is written, each rank's ops
    are at their own time minus their group's base (shifted by the offset when it puts them on the epoch),
    and every group is named."""
    with tempfile.TemporaryDirectory() as scratch:
        trace = _timeline_of_times(empty_run, Path(scratch) / "trace.json", ranks)
    groups = {g["clock"]: g for g in trace["otherData"]["clock_groups"]}
    names = _processes(trace)
    for rank, (clock, offset, times) in ranks.items():
        group = next(g for g in groups.values() if rank in g["ranks"])
        ops = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] == rank + 1]
        shift = offset if group["clock"] == "unix_epoch" and offset is not None else 0
        if group["clock"] == "unix_epoch":
            assert all(EPOCH_MIN_NS <= t + shift <= EPOCH_MAX_NS for t in times)
        assert sorted(_ns(e["ts"]) for e in ops) == sorted(t + shift - group["base_ns"] for t in times)
        assert names[rank + 1].endswith("" if group["reference"] else f"(unaligned clock: {group['clock']})")


# --- run_info offsets against the dump's own numbers -------------------------------------------------------

def test_msprof_offset_is_start_info(tmp_path: Path) -> None:
    out = run(MSPROF, tmp_path / "out").output
    start = json.loads(next(MSPROF.rglob("start_info.0")).read_text())
    offset = int(start["collectionTimeBegin"]) * 1000 - int(start["clockMonotonicRaw"])
    info = _run_info(out)[0]
    assert (info["clock"], info["epoch_offset_ns"], info["epoch_offset_uncertainty_ns"]) == \
        ("host_monotonic_raw", offset, 1000)
    assert info["host_epoch_offset_ns"] == offset
    assert json.loads(info["metadata_json"])["epoch_offset_ns"] == offset  # still there for older readers


def test_ascend_era_a_host_start_relates_the_host_clock(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    shutil.copytree(FIXTURES / "ascend_raw" / "era_a", folder)
    (folder / "JOB1" / "host_start.log.0").write_text(
        "[Device0]\nclock_realtime: 1591183963784568740\nclock_monotonic_raw: 261003032627\n")
    out = run(folder, tmp_path / "out").output
    info = next(iter(_run_info(out).values()))
    assert (info["clock"], info["epoch_offset_ns"]) == ("device_syscnt", None)
    assert info["host_epoch_offset_ns"] == 1591183963784568740 - 261003032627
    assert info["host_epoch_offset_uncertainty_ns"] == 1000


def test_ascend_era_c_clock_pairs_put_the_device_on_the_epoch(tmp_path: Path) -> None:
    """host_start/dev_start cntvct pairs and start_info: device ns -> host monotonic -> epoch (msprof's rule)."""
    from profpipe.clocks import ascend_raw_clock

    (tmp_path / "host_start.log.0").write_text("clock_monotonic_raw: 5000000000000\ncntvct: 111\n")
    (tmp_path / "dev_start.log.0").write_text("clock_monotonic_raw: 5000000000000\ncntvct: 40000000000\n")
    (tmp_path / "start_info.0").write_text(json.dumps({"collectionTimeBegin": "1700000000000000",
                                                       "clockMonotonicRaw": "5000000000000"}))
    slices = {"host_start": [tmp_path / "host_start.log.0"], "dev_start": [tmp_path / "dev_start.log.0"]}
    columns = ascend_raw_clock(slices, 100_000_000)
    host_epoch = 1_700_000_000_000_000 * 1000 - 5_000_000_000_000
    assert columns["host_epoch_offset_ns"] == host_epoch
    # the device read 40 000 000 000 ticks (400 s at 100 MHz) when the host read 5000 s
    assert columns["epoch_offset_ns"] == 5_000_000_000_000 - 400_000_000_000 + host_epoch
    assert columns["clock"] == "device_syscnt" and columns["epoch_offset_uncertainty_ns"] == 1000 + 10 + 1000


# --- the real data tree --------------------------------------------------------------------------------------

def test_realdata_tree_timeline_opens(tmp_path: Path) -> None:
    """Kineto (epoch), msprof (monotonic raw + start_info), Ascend device counters and MindData in one run."""
    result = run(realdata("."), tmp_path / "out")
    trace = _trace(result.output)
    _assert_opens(trace)
    groups = {g["clock"]: g for g in trace["otherData"]["clock_groups"]}
    assert groups["unix_epoch"]["reference"] and "device_syscnt" in groups
    for name in _processes(trace).values():
        rank = int(name.split()[1]) if name.startswith("rank ") else None
        if rank is not None and rank in groups["device_syscnt"]["ranks"] and rank not in groups["unix_epoch"]["ranks"]:
            assert name.endswith("(unaligned clock: device_syscnt)")


def test_ascend_get_next_queue_is_on_the_device_clock(tmp_path: Path) -> None:
    """MindSpore 1.x Ascend result folder with MindData logs: the AICPU's get_next times (µs of the device
    counter) go with the device's steps; the host logs (MindData's steady clock) keep their own group."""
    folder = realdata("mindinsight/tests/utils/resource/run_2/normal_run/profiler")
    out = run(folder, tmp_path / "out").output
    trace = _trace(out)
    _assert_opens(trace)
    names = _processes(trace)
    assert names[2] == "rank 1"  # the get_next queue on the device clock, with the steps: no clock of its own
    counters = {e["name"] for e in trace["traceEvents"] if e["ph"] == "C"}
    assert "get next queue" in counters and "device queue (unaligned clock: steady)" in counters
    assert all(name.endswith(" (unaligned clock: steady)") for name in counters - {"get next queue"})
    first_dequeue_us = int((folder / "minddata_aicpu_1.txt").read_text().split()[1])
    get_next = [e for e in trace["traceEvents"] if e["ph"] == "C" and e["pid"] == 2 and e["name"] == "get next queue"]
    assert min(trace["baseTimeNanoseconds"] + _ns(e["ts"]) for e in get_next) == first_dequeue_us * 1000
    rows = clock_findings(out / "tables")
    assert [(r.rank, r.tables) for r in rows] == [(1, "queue_sample,data_cpu_sample,data_batch_time")]


@FUZZ
@given(st.data())
def test_damaged_clock_files_never_break_the_clock_columns(tmp_path_factory: pytest.TempPathFactory,
                                                            data: st.DataObject) -> None:
    """host_start / dev_start / start_info cut, flipped or edited: the columns are either what the damaged
    numbers say (computed here independently) or null; never an exception. A FIFO is never opened."""
    import os
    import string

    from fuzzing import byte_flips, line_edits, truncations
    from profpipe.clocks import ascend_raw_clock

    folder = tmp_path_factory.mktemp("clockfiles")
    files = {"host_start.log.0": b"clock_realtime: 1591183963784568740\nclock_monotonic_raw: 261003032627\n"
                                 b"cntvct: 5\n",
             "dev_start.log.0": b"clock_monotonic_raw: 261003032627\ncntvct: 40000000000\n"}
    damaged = data.draw(st.sampled_from(sorted(files)))
    huge = st.sampled_from([b"99999999999999999999", b"-9223372036854775808", b"18446744073709551615", b"0"])
    files[damaged] = data.draw(st.one_of(
        truncations(files[damaged]), byte_flips(files[damaged]), line_edits(files[damaged]),
        huge.map(lambda number, old=files[damaged]: old.replace(b"261003032627", number))))
    for name, content in files.items():
        (folder / name).write_bytes(content)
    os.mkfifo(folder / "start_info.0")
    slices = {"host_start": [folder / "host_start.log.0"], "dev_start": [folder / "dev_start.log.0"]}
    columns = ascend_raw_clock(slices, 100_000_000)

    def values(name: str) -> dict[str, int]:
        found = {}
        for line in files[name].decode("utf-8", "replace").split("\n"):
            key, colon, value = line.partition(":")
            key, value = key.strip(" \t"), value.strip(" \t\r")
            digits = value.removeprefix("-")
            if colon and key and set(key) <= set(string.ascii_letters + "_") and digits \
                    and set(digits) <= set(string.digits) and len(digits) <= 20:
                found[key] = int(value)
        return found

    host, device = values("host_start.log.0"), values("dev_start.log.0")
    expected_host = (host["clock_realtime"] - host["clock_monotonic_raw"]
                     if {"clock_realtime", "clock_monotonic_raw"} <= host.keys() else None)
    if expected_host is not None and not -(2**63) <= expected_host < 2**63:
        expected_host = None  # beyond the int64 column: not an offset
    assert columns["host_epoch_offset_ns"] == expected_host
    expected = (host["clock_monotonic_raw"] - device["cntvct"] * 10 + expected_host
                if expected_host is not None and "cntvct" in device else None)
    if expected is not None and not -(2**63) <= expected < 2**63:
        expected = None
    assert columns["epoch_offset_ns"] == expected
    assert (columns["epoch_offset_uncertainty_ns"] is None) == (expected is None)
