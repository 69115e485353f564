"""Damage tests for the raw Ascend readers (eras A/B JOB folders, era C PROF_*/device_N): every file role
truncated at record boundaries and mid-record, byte-flipped, with records duplicated, reordered, given
zero/huge/negative values, missing slices, empty files, bad UTF-8 and unknown tags.

Each damage must end in an InputError naming the damaged file, or in tables whose changes are all in the
ledger (check, action, rows); where the kept numbers can be computed from the damaged bytes, they are
compared with an independent parse written here (tests/fuzzing.py: the harness).
"""
from __future__ import annotations

import itertools
import json
import shutil
import struct
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES
from fuzzing import FUZZ, ReadOutcome, byte_flips, line_edits, read_damaged, truncations
from profpipe.errors import InputError

ERA_A = FIXTURES / "ascend_raw" / "era_a"
ERA_C = FIXTURES / "ascend_raw" / "era_c"
DEVICE_C = "PROF_000001_20220101000000000_AAAAAAAAAAAAAAAA/device_0"
INT64_MAX = (1 << 63) - 1

#: (fixture, file, record size (None: text), the table its records go to)
BINARY = {
    "a_hwts": (ERA_A, "JOB1/hwts.log.data.45.dev.profiler_default_tag.0.slice_0", 64, "device_exec"),
    "a_trace": (ERA_A, "JOB1/data/training_trace.46.dev.profiler_default_tag.0.slice_0", 20, "step_point"),
    "c_hwts_0": (ERA_C, f"{DEVICE_C}/data/hwts.data.0.slice_0", 64, "device_exec"),
    "c_hwts_1": (ERA_C, f"{DEVICE_C}/data/hwts.data.0.slice_1", 64, "device_exec"),
    "c_ts_track": (ERA_C, f"{DEVICE_C}/data/ts_track.data.0.slice_0", 40, "step_point"),
    "c_task_desc": (ERA_C, f"{DEVICE_C}/data/Framework.task_desc_info.0.slice_0", 256, "task_desc"),
    "c_step_info": (ERA_C, f"{DEVICE_C}/data/Framework.step_info.0.slice_0", 64, "step_point"),
    "c_tensor_data": (ERA_C, f"{DEVICE_C}/data/Framework.tensor_data_info.0.slice_0", 256, "op_desc"),
    "c_aicpu": (ERA_C, f"{DEVICE_C}/data/aicpu.data.0.slice_0", 128, "aicpu_exec"),
}
TEXT = {
    "a_task_desc": (ERA_A, "JOB1/Framework.host.vm.task_desc_info.0.slice_0", "task_desc"),
    "a_graph_desc": (ERA_A, "JOB1/Framework.host.vm.graph_desc_info.0.slice_0", "op_desc"),
    "a_point": (ERA_A, "JOB1/Framework.host.vm.point.0.slice_0", "step_point"),
    "a_aicpu": (ERA_A, "JOB1/DATA_PREPROCESS.dev.AICPU.0.slice_0", "aicpu_exec"),
    "a_host_start": (ERA_A, "JOB1/host_start.log.0", None),
    "c_hash_dic": (ERA_C, f"{DEVICE_C}/data/Framework.hash_dic.0.slice_0", "task_desc"),
    "c_info": (ERA_C, f"{DEVICE_C}/info.json.0", "run_info"),
}
#: host_start.log is not in the generated fixture (no reader uses it): the tests add this one.
HOST_START = b"[Host Start]\nclock_monotonic_raw: 1000000000\ncntvct: 100000000\n"
_counter = itertools.count()


def _copy(fixture: Path, base: Path) -> Path:
    target = base / f"in{next(_counter)}"
    shutil.copytree(fixture, target)
    if fixture == ERA_A:
        (target / "JOB1" / "host_start.log.0").write_bytes(HOST_START)
    return target


def _original(fixture: Path, name: str) -> bytes:
    return HOST_START if name.endswith("host_start.log.0") else (fixture / name).read_bytes()


def damaged(fixture: Path, name: str, data: bytes | None, base: Path) -> tuple[ReadOutcome, Path]:
    """Read a copy of `fixture` whose file `name` holds `data` (None: removed)."""
    folder = _copy(fixture, base)
    target = folder / name
    if data is None:
        target.unlink()
    else:
        target.write_bytes(data)
    return read_damaged(folder), target


@lru_cache(maxsize=None)
def baseline(fixture: Path) -> ReadOutcome:
    return read_damaged(fixture)


def rows(outcome: ReadOutcome, table: str) -> list[dict]:
    if table not in outcome.tables:
        return []
    return [{k: v for k, v in row.items() if k not in ("source_dir",)} for row in outcome.tables[table].to_pylist()]


def events(outcome: ReadOutcome, check: str, path: Path | None = None) -> list:
    return [e for e in outcome.health if e.check == check and (path is None or e.path == str(path))]


def _identity(event) -> tuple:
    return (event.check, event.action, event.rows, None if event.path is None else Path(event.path).name, event.offset)


def new_events(outcome: ReadOutcome, base: ReadOutcome) -> list:
    """The ledger rows of `outcome` that the undamaged fixture does not have."""
    known = {_identity(e) for e in base.health}
    return [e for e in outcome.health if _identity(e) not in known]


def assert_error_names(outcome: ReadOutcome, path: Path) -> InputError:
    assert outcome.errors, "expected the source to fail"
    error = outcome.errors[0]
    assert isinstance(error, InputError), error
    assert path.name in str(error) or (path.name.startswith("Framework.hash_dic") and "hash_dic" in str(error)), error
    return error


def assert_sane(outcome: ReadOutcome) -> None:
    """What no damage may produce silently: negative durations, times beyond int64 ns, steps going back."""
    for row in rows(outcome, "device_exec"):
        assert row["dur_ns"] >= 0 and 0 <= row["start_ns"] <= INT64_MAX - row["dur_ns"], row
    ends = [r["ts_ns"] for r in sorted(rows(outcome, "step_point"), key=lambda r: (r["step"], r["seq"]))
            if r["kind"] == "step_end"]
    assert ends == sorted(ends), "iteration ends go back in time"
    for row in rows(outcome, "step_point"):
        assert 0 <= row["ts_ns"] <= INT64_MAX
    for row in rows(outcome, "aicpu_exec"):
        assert 0 <= row["run_start_ns"] <= row["run_end_ns"] <= INT64_MAX, row
    for event in outcome.health:
        assert event.path is None or Path(event.path).name, event
        if event.lossy:
            assert event.rows is None or event.rows > 0, event


# ---- independent parses of the binary streams ---------------------------------------------------

def _named_keys(fixture: Path) -> set:
    tasks = rows(baseline(fixture), "task_desc")
    if fixture == ERA_A:
        return {r["task_id"] for r in tasks}
    return {(r["stream_id"], r["task_id"]) for r in tasks}


def expected_executions(fixture: Path, stream: bytes) -> int:
    """device_exec rows from an HWTS stream: named start records directly followed (among named task
    records) by the end of the same task, the end not before the start, exact repeats once."""
    named = _named_keys(fixture)
    records = []
    for i in range(len(stream) // 64):
        head, task, syscnt, stream_id = struct.unpack_from("<B5xHQI", stream, i * 64)
        key = task if fixture == ERA_A else (stream_id, task)
        if head & 7 <= 1 and key in named:
            records.append((head & 7, key, syscnt))
    pairs = set()
    count = 0
    for (kind, key, start), (next_kind, next_key, end) in zip(records, records[1:]):
        if kind == 0 and next_kind == 1 and key == next_key and start <= end <= INT64_MAX // 10:
            count += (key, start, end) not in pairs
            pairs.add((key, start, end))
    return count


def _hwts_stream(folder: Path, fixture: Path) -> bytes:
    if fixture == ERA_A:
        return (folder / BINARY["a_hwts"][1]).read_bytes()
    return b"".join((folder / BINARY[k][1]).read_bytes() for k in ("c_hwts_0", "c_hwts_1"))


# ---- truncation -----------------------------------------------------------------------------------

@pytest.mark.parametrize("role", sorted(BINARY))
@FUZZ
@given(data=st.data())
def test_binary_truncation(role: str, data: st.DataObject, tmp_path: Path) -> None:
    """Cut at a record boundary: the whole records are read, nothing reported as cut; cut inside a
    record: one `truncated` row (dropped, 1 record, its bytes and table named) at the cut record."""
    fixture, name, size, table = BINARY[role]
    raw = _original(fixture, name)
    # slice 1 of the era-C HWTS log starts inside a record that slice 0 began
    lead = len(_original(ERA_C, BINARY["c_hwts_0"][1])) % size if role == "c_hwts_1" else 0
    at_boundary = st.integers(0, (len(raw) + lead) // size).map(lambda n: max(n * size - lead, 0))
    cut = data.draw(st.one_of(at_boundary, st.integers(0, len(raw) - 1)), label="cut")
    outcome, path = damaged(fixture, name, raw[:cut], tmp_path)
    partial = (cut + lead) % size
    if cut == 0 or role == "c_hwts_0" or (cut < size and role.endswith("task_desc")):
        # an empty file is an error; a cut first slice misaligns the next slice's records (the stream's
        # cut-short end is reported); a task_desc with no whole record names nothing: an error
        if outcome.errors:
            assert_error_names(outcome, path)
        elif role == "c_hwts_0" and cut < len(raw):
            assert events(outcome, "truncated") or outcome.lossy
        assert_sane(outcome)
        return
    assert_sane(outcome)
    truncated = events(outcome, "truncated")
    if partial == 0:
        assert not truncated
    else:
        assert len(truncated) == 1, outcome.health
        event = truncated[0]
        assert (event.action, event.rows) == ("dropped", 1)
        if cut >= partial:  # the cut record starts in this file (else in the slice before it)
            assert (event.path, event.offset) == (str(path), cut - partial)
        assert f"{partial} bytes lost" in event.message and event.tables
    if outcome.errors:  # a framework file cut short may leave a task unnamed: a named error
        assert_error_names(outcome, path)
        return
    if role in ("a_hwts", "c_hwts_1"):
        folder = path.parents[len(Path(name).parts) - 1]
        assert outcome.rows("device_exec") == expected_executions(fixture, _hwts_stream(folder, fixture))
    if role in ("a_trace", "c_ts_track"):
        end_tag, tag_at = (255, 0) if role == "a_trace" else (4, 36)
        whole = raw[: cut - cut % size]
        ends = sum(1 for i in range(0, len(whole), size)
                   if struct.unpack_from("<Q" if role == "a_trace" else "<H", whole, i + tag_at)[0] == end_tag
                   and (role == "a_trace" or whole[i + 1] == 10))
        assert len([r for r in rows(outcome, "step_point") if r["kind"] == "step_end"]) == ends


@pytest.mark.parametrize("role", sorted(TEXT))
@FUZZ
@given(data=st.data())
def test_text_truncation(role: str, data: st.DataObject, tmp_path: Path) -> None:
    """Text files cut at a line (or NUL record) end keep exactly the whole lines' rows; cut inside one,
    the file is an error naming its line and offset, or (AI CPU records) the cut record is reported."""
    fixture, name, table = TEXT[role]
    raw = _original(fixture, name)
    cut_data = data.draw(truncations(raw), label="cut")
    outcome, path = damaged(fixture, name, cut_data, tmp_path)
    assert_sane(outcome)
    if role == "a_host_start":  # not read: nothing may change
        assert rows(outcome, "device_exec") == rows(baseline(fixture), "device_exec") and not outcome.errors
        return
    if outcome.errors:
        error = assert_error_names(outcome, path)
        assert error.line is not None or error.offset is not None or not cut_data.strip(b"\0 \n") or role == "c_info"
        return
    if role == "a_aicpu":
        whole = cut_data.endswith(b"\0") or not cut_data
        if len(cut_data) < len(raw):
            assert outcome.rows("aicpu_exec") == 0
            if cut_data.strip(b"\0 \n"):
                assert {"malformed_record", "unlinked"} & outcome.checks(), outcome.health
            assert whole or events(outcome, "malformed_record") or events(outcome, "unlinked")
        return
    assert cut_data.endswith(b"\n") or role == "c_info", "a cut line must not be read as a record"
    lines = [line for line in cut_data.decode().splitlines() if line.strip()]
    if role == "a_task_desc":
        assert outcome.rows("task_desc") == len(lines)
    elif role == "a_graph_desc":
        assert outcome.rows("op_desc") == len(lines)
    elif role == "c_hash_dic":
        assert outcome.rows("task_desc") == baseline(fixture).rows("task_desc")


# ---- byte flips -----------------------------------------------------------------------------------

@pytest.mark.parametrize("role", sorted(BINARY) + sorted(TEXT))
@FUZZ
@given(data=st.data())
def test_byte_flips(role: str, data: st.DataObject, tmp_path: Path) -> None:
    """Any bytes of any field replaced: a named error, or tables without negative durations, times beyond
    int64 ns or iteration ends going back; fewer executions or steps only with a lossy ledger row (or a new
    `excluded` one: a task id flipped to one with no op reads as one of the profiler's own tasks)."""
    fixture, name, *_ = BINARY.get(role) or TEXT[role]
    raw = _original(fixture, name)
    outcome, path = damaged(fixture, name, data.draw(byte_flips(raw), label="flipped"), tmp_path)
    assert_sane(outcome)
    if outcome.errors:
        assert_error_names(outcome, path)
        return
    base = baseline(fixture)
    for table in ("device_exec", "aicpu_exec"):
        if outcome.rows(table) < base.rows(table):  # a flipped task id is a task of no op: left out as excluded
            assert outcome.lossy or any(e.action == "excluded" for e in new_events(outcome, base)), \
                (table, outcome.health)


# ---- duplicated, reordered and edited records ----------------------------------------------------

@pytest.mark.parametrize("role", sorted(BINARY))
@FUZZ
@given(data=st.data())
def test_duplicated_records(role: str, data: st.DataObject, tmp_path: Path) -> None:
    """One to three records repeated right after themselves: every table as without the copies, and the
    copies in the ledger (`duplicate_record`, or for an HWTS start/end copy `unlinked`)."""
    fixture, name, size, table = BINARY[role]
    raw = _original(fixture, name)
    count = len(raw) // size
    index = data.draw(st.integers(0, count - 1), label="record")
    span = data.draw(st.integers(1, min(3, count - index)), label="records")
    copy = raw[index * size:(index + span) * size]
    outcome, path = damaged(fixture, name, raw[:(index + span) * size] + copy + raw[(index + span) * size:], tmp_path)
    assert not outcome.errors
    base = baseline(fixture)
    for table_name in ("device_exec", "step_point", "task_desc", "op_desc", "aicpu_exec"):
        assert rows(outcome, table_name) == rows(base, table_name), table_name
    new = new_events(outcome, base)
    if role == "c_ts_track" and all(copy[i + 1] != 10 for i in range(0, len(copy), size)):
        return  # records of other report types: no table reads them, repeated or not
    assert new, "the repeated records are not in the ledger"
    assert {e.check for e in new} <= {"duplicate_record", "unlinked", "malformed_record"}, new
    assert all(e.action == "dropped" or (e.check, e.action) == ("unlinked", "excluded") for e in new)
    if role not in ("a_hwts", "c_hwts_0", "c_hwts_1"):
        read = span if role != "c_ts_track" else sum(copy[i + 1] == 10 for i in range(0, len(copy), size))
        assert [e.check for e in new] == ["duplicate_record"] and new[0].rows == read, new


@pytest.mark.parametrize("role", ["a_hwts", "a_trace", "c_hwts_1", "c_ts_track"])
@FUZZ
@given(data=st.data())
def test_reordered_records(role: str, data: st.DataObject, tmp_path: Path) -> None:
    """Two records swapped: the same executions and step points, or a lossy ledger row."""
    fixture, name, size, table = BINARY[role]
    raw = _original(fixture, name)
    count = len(raw) // size
    i = data.draw(st.integers(0, count - 2), label="record")
    j = data.draw(st.integers(i + 1, min(count - 1, i + 4)), label="other")
    records = [raw[k * size:(k + 1) * size] for k in range(count)]
    records[i], records[j] = records[j], records[i]
    outcome, _ = damaged(fixture, name, b"".join(records) + raw[count * size:], tmp_path)
    assert not outcome.errors
    assert_sane(outcome)
    base = baseline(fixture)
    same_exec = sorted(map(str, rows(outcome, "device_exec"))) == sorted(map(str, rows(base, "device_exec")))
    points = lambda o: sorted((r["step"], r["kind"], r["ts_ns"]) for r in rows(o, "step_point"))  # noqa: E731
    if not (same_exec and points(outcome) == points(base)):
        assert outcome.lossy or events(outcome, "ambiguous"), outcome.health


@pytest.mark.parametrize("role", ["a_task_desc", "a_graph_desc", "a_point", "c_hash_dic"])
@FUZZ
@given(data=st.data())
def test_text_line_edits(role: str, data: st.DataObject, tmp_path: Path) -> None:
    """A line duplicated, dropped or swapped: a duplicated line is read once and reported; a dropped line
    loses only its own row (or names what it named: an error or an unlinked row)."""
    fixture, name, table = TEXT[role]
    raw = _original(fixture, name)
    edited = data.draw(line_edits(raw), label="edited")
    outcome, path = damaged(fixture, name, edited, tmp_path)
    assert_sane(outcome)
    if outcome.errors:
        assert_error_names(outcome, path)
        return
    base = baseline(fixture)
    if len(edited) > len(raw):  # a duplicated line
        assert [e.check for e in new_events(outcome, base)] == ["duplicate_record"]
        for table_name in ("device_exec", "step_point", "task_desc", "op_desc"):
            assert rows(outcome, table_name) == rows(base, table_name), table_name
    elif len(edited) == len(raw):  # swapped: the same rows up to order
        for table_name in ("device_exec", "step_point"):
            assert sorted(map(str, rows(outcome, table_name))) == sorted(map(str, rows(base, table_name)))


# ---- values: zero, huge, negative ----------------------------------------------------------------

#: (role, byte offset of a u64 time field within its record)
TIME_FIELDS = [("a_hwts", 8), ("a_trace", 12), ("c_hwts_1", 8), ("c_ts_track", 8), ("c_aicpu", 8), ("c_aicpu", 40)]
BAD_U64 = [0, 1, INT64_MAX // 10, INT64_MAX // 10 + 1, INT64_MAX, 1 << 63, (1 << 64) - 1, (1 << 64) - 1000]


@pytest.mark.parametrize("role,field", TIME_FIELDS)
@FUZZ
@given(data=st.data())
def test_bad_time_values(role: str, field: int, data: st.DataObject, tmp_path: Path) -> None:
    """A counter or time set to zero, to what int64 ns cannot hold, or to a "negative" (wrapped) value:
    never a negative duration or a wrapped time in a table; what is dropped is in the ledger."""
    fixture, name, size, table = BINARY[role]
    raw = bytearray(_original(fixture, name))
    first = (size - len(_original(ERA_C, BINARY["c_hwts_0"][1])) % size) % size if role == "c_hwts_1" else 0
    index = data.draw(st.integers(0, (len(raw) - first) // size - 1), label="record")
    value = data.draw(st.sampled_from(BAD_U64) | st.integers(0, (1 << 64) - 1), label="value")
    struct.pack_into("<Q", raw, first + index * size + field, value)
    outcome, path = damaged(fixture, name, bytes(raw), tmp_path)
    assert not outcome.errors
    assert_sane(outcome)
    base = baseline(fixture)
    if outcome.rows(table) < base.rows(table) or (
            table == "step_point" and len({r["step"] for r in rows(outcome, table)}) < len(
                {r["step"] for r in rows(base, table)})):
        assert outcome.lossy, outcome.health
    if role in ("a_hwts", "c_hwts_1"):  # the executions are exactly those of the damaged stream
        folder = path.parents[len(Path(name).parts) - 1]
        assert outcome.rows("device_exec") == expected_executions(fixture, _hwts_stream(folder, fixture))


def test_end_before_start_is_dropped(tmp_path: Path) -> None:
    """An HWTS end counter below its start: the execution is dropped with one negative_duration row."""
    fixture, name, size, _ = BINARY["a_hwts"]
    raw = bytearray(_original(fixture, name))
    start = struct.unpack_from("<Q", raw, 8)[0]
    struct.pack_into("<Q", raw, size + 8, start - 5)
    outcome, path = damaged(fixture, name, bytes(raw), tmp_path)
    [event] = events(outcome, "negative_duration")
    assert (event.action, event.rows, event.path, event.offset) == ("dropped", 1, str(path), 0)
    assert outcome.rows("device_exec") == baseline(fixture).rows("device_exec") - 1


def test_zero_length_task_is_kept_and_counted(tmp_path: Path) -> None:
    """An HWTS end counter equal to its start (issue 33): a task shorter than one counter tick, which real hardware
    reports; kept as recorded (0 ns, its start unchanged) and counted as Kineto's and nsys's 0 ns activities are
    (out_of_range, kept), with the file and byte offset of its start record."""
    fixture, name, size, _ = BINARY["a_hwts"]
    raw = bytearray(_original(fixture, name))
    start = struct.unpack_from("<Q", raw, 8)[0]
    struct.pack_into("<Q", raw, size + 8, start)
    outcome, path = damaged(fixture, name, bytes(raw), tmp_path)
    [event] = events(outcome, "out_of_range")
    assert (event.action, event.rows, event.path, event.offset, event.tables) == ("kept", 1, str(path), 0, "device_exec")
    assert "last 0 ns" in event.message and not outcome.lossy
    clean = sorted(rows(baseline(fixture), "device_exec"), key=lambda r: (r["start_ns"], r["task_id"]))
    got = sorted(rows(outcome, "device_exec"), key=lambda r: (r["start_ns"], r["task_id"]))
    changed = [(c, g) for c, g in zip(clean, got) if c != g]
    assert len(got) == len(clean) and len(changed) == 1
    [(before, after)] = changed
    assert after == {**before, "dur_ns": 0}


def test_end_record_before_its_start_record(tmp_path: Path) -> None:
    """The end record written before its start: neither forms an execution; both counted as unlinked."""
    fixture, name, size, _ = BINARY["a_hwts"]
    raw = _original(fixture, name)
    swapped = raw[size:2 * size] + raw[:size] + raw[2 * size:]
    outcome, _ = damaged(fixture, name, swapped, tmp_path)
    unlinked = [e for e in events(outcome, "unlinked") if "not a start directly followed" in e.message]
    assert [(e.action, e.rows) for e in unlinked] == [("dropped", 2)]
    assert outcome.rows("device_exec") == baseline(fixture).rows("device_exec") - 1


def test_huge_counter_is_dropped_not_wrapped(tmp_path: Path) -> None:
    fixture, name, size, _ = BINARY["c_hwts_1"]
    raw = bytearray(_original(fixture, name))
    first_whole = 64 - 17  # slice 1 starts with the last 47 bytes of a straddling record
    struct.pack_into("<Q", raw, first_whole + 8, (1 << 64) - 7)  # a start counter that wraps to -7 in int64
    outcome, _ = damaged(fixture, name, bytes(raw), tmp_path)
    assert_sane(outcome)
    assert [(e.action, e.rows) for e in events(outcome, "out_of_range")] == [("dropped", 1)]


def test_aicpu_text_end_before_start_and_huge_times(tmp_path: Path) -> None:
    fixture, name, _ = TEXT["a_aicpu"]
    raw = _original(fixture, name)
    outcome, _ = damaged(fixture, name, raw.replace(b"Run end:500130", b"Run end:400000"), tmp_path)
    assert [(e.action, e.rows) for e in events(outcome, "negative_duration")] == [("dropped", 1)]
    assert outcome.rows("aicpu_exec") == 0
    outcome, _ = damaged(fixture, name, raw.replace(b"Run end:500130", b"Run end:99999999999999999999999"), tmp_path)
    assert [(e.action, e.rows) for e in events(outcome, "out_of_range")] == [("dropped", 1)]
    doubled = raw + raw
    outcome, _ = damaged(fixture, name, doubled, tmp_path)
    assert [(e.action, e.rows) for e in events(outcome, "duplicate_record")] == [("dropped", 1)]
    assert rows(outcome, "aicpu_exec") == rows(baseline(fixture), "aicpu_exec")


@pytest.mark.parametrize("frequency", ["0", 0, -100, "nan", "inf", "-inf", 1e-12, 1e30, "abc", None, [], {}, True])
def test_bad_hwts_frequency(frequency: object, tmp_path: Path) -> None:
    """A frequency no tick can be converted with: an error naming info.json, or the documented 100 MHz
    fallback with a `repaired` row (never ZeroDivisionError or an overflow)."""
    fixture, name, _ = TEXT["c_info"]
    info = json.dumps({"DeviceInfo": [{"id": 0, "hwts_frequency": frequency}]}).encode()
    outcome, path = damaged(fixture, name, info, tmp_path)
    if outcome.errors:
        assert_error_names(outcome, path)
        return
    [event] = [e for e in outcome.health if e.path == str(path)]
    assert event.check in ("out_of_range", "non_finite") and event.action == "repaired" and event.rows == 1
    assert rows(outcome, "device_exec") == rows(baseline(fixture), "device_exec")
    assert outcome.tables["run_info"]["tick_hz"].to_pylist() == [100_000_000]


def test_missing_info_json_is_reported(tmp_path: Path) -> None:
    fixture, name, _ = TEXT["c_info"]
    outcome, _ = damaged(fixture, name, None, tmp_path)
    assert [e.action for e in events(outcome, "missing_file")] == ["kept"]
    assert rows(outcome, "device_exec") == rows(baseline(fixture), "device_exec")


# ---- dictionaries: conflicting and repeated entries ------------------------------------------------

def test_hash_dic_conflicting_entry_keeps_the_last(tmp_path: Path) -> None:
    fixture, name, _ = TEXT["c_hash_dic"]
    raw = _original(fixture, name)
    key, value = raw.split(b"\n")[0].split(b":", 1)
    outcome, path = damaged(fixture, name, raw + key + b":Default/Renamed-op99\n", tmp_path)
    [event] = events(outcome, "conflicting_entry")
    assert (event.action, event.rows, event.path, event.line) == ("dropped", 1, str(path), 1)
    assert "Default/Renamed-op99" in event.message
    names = {r["op_name"] for r in rows(outcome, "task_desc")}
    assert "Default/Renamed-op99" in names and value.decode() not in names
    outcome, _ = damaged(fixture, name, raw + raw.split(b"\n")[0] + b"\n", tmp_path)
    assert [(e.check, e.rows) for e in new_events(outcome, baseline(fixture))] == [
        ("duplicate_record", 1)]
    assert rows(outcome, "task_desc") == rows(baseline(fixture), "task_desc")


def test_task_desc_conflicting_registration(tmp_path: Path) -> None:
    fixture, name, _ = TEXT["a_task_desc"]
    raw = _original(fixture, name)
    first = raw.split(b"\n")[0].split(b" ")
    outcome, _ = damaged(fixture, name, raw + b"Default/Other-op77 " + b" ".join(first[1:]) + b"\n", tmp_path)
    [event] = events(outcome, "conflicting_entry")
    assert event.rows == 1 and "Default/Other-op77" in event.message
    assert "Default/Other-op77" in {r["op_name"] for r in rows(outcome, "device_exec")}


def test_point_conflict_and_step_info_conflict(tmp_path: Path) -> None:
    fixture, name, _ = TEXT["a_point"]
    raw = _original(fixture, name)
    outcome, _ = damaged(fixture, name, raw + b"1 Default/Other-op77\n", tmp_path)
    assert [(e.check, e.rows) for e in new_events(outcome, baseline(fixture))] == [
        ("conflicting_entry", 1)]
    fixture, name, size, _ = BINARY["c_step_info"]
    raw = bytearray(_original(fixture, name))
    second = bytearray(raw[size:2 * size])
    second[36] = raw[36]  # the BP record given the FP tag
    outcome, _ = damaged(fixture, name, bytes(raw + second), tmp_path)
    assert [e.check for e in new_events(outcome, baseline(fixture))] == ["conflicting_entry"]


# ---- unknown tags and enums ------------------------------------------------------------------------

def test_unknown_era_a_tag_and_log_type(tmp_path: Path) -> None:
    fixture, name, size, _ = BINARY["a_trace"]
    raw = bytearray(_original(fixture, name))
    assert struct.unpack_from("<Q", raw, 0)[0] == 10010  # the job-id step marker
    struct.pack_into("<Q", raw, 0, 9999)
    outcome, path = damaged(fixture, name, bytes(raw), tmp_path)
    [event] = events(outcome, "unknown_tag")
    assert (event.action, event.rows, event.offset, event.path) == ("dropped", 1, 0, str(path))
    assert rows(outcome, "step_point") == rows(baseline(fixture), "step_point")
    # a lone 65535 in an era-A trace: an ambiguity, not a switch of every 255 tag to a communication point
    struct.pack_into("<Q", raw, 0, 65535)
    outcome, _ = damaged(fixture, name, bytes(raw), tmp_path)
    assert events(outcome, "ambiguous") and rows(outcome, "step_point") == rows(baseline(fixture), "step_point")
    fixture, name, size, _ = BINARY["a_hwts"]
    raw = bytearray(_original(fixture, name))
    raw[0] = (raw[0] & 0xF8) | 6
    outcome, _ = damaged(fixture, name, bytes(raw), tmp_path)
    assert [(e.action, e.rows) for e in events(outcome, "unknown_tag")] == [("dropped", 1)]


# ---- lost step-trace points (issue 33) -----------------------------------------------------------------

#: (tag field offset and width, type byte (None: no type byte)) of the step-trace records, per role
TRACE_FIELDS = {"a_trace": ((0, 8), None), "c_ts_track": ((36, 2), 1)}


def _trace_records(role: str, raw: bytes) -> list[tuple[int, int]]:
    """(record index, tag) of the records the step trace reads (era C: rptType 10 only)."""
    fixture, name, size, _ = BINARY[role]
    (at, width), type_at = TRACE_FIELDS[role]
    fmt = "<Q" if width == 8 else "<H"
    return [(i, struct.unpack_from(fmt, raw, i * size + at)[0]) for i in range(len(raw) // size)
            if type_at is None or raw[i * size + type_at] == 10]


def _step_shape(outcome: ReadOutcome) -> list[tuple[int, str]]:
    """The steps and the FP / BP / iteration-end / step-start points each holds (times left aside: a changed
    counter is a changed value, test_bad_time_values' business, not a lost step)."""
    return sorted((r["step"], r["kind"]) for r in rows(outcome, "step_point")
                  if r["kind"] in ("fp_start", "bp_end", "step_end", "step_start"))


def _flips_at_trace_fields(role: str, raw: bytes) -> st.SearchStrategy[bytes]:
    """`raw` with one to four bytes replaced anywhere, or in the tag and type bytes of the step records."""
    fixture, name, size, _ = BINARY[role]
    (at, width), type_at = TRACE_FIELDS[role]
    spots = [i * size + at + k for i, _ in _trace_records(role, raw) for k in range(min(width, 2))]
    spots += [i * size + type_at for i, _ in _trace_records(role, raw)] if type_at is not None else []

    def flip(changes: list[tuple[int, int]]) -> bytes:
        out = bytearray(raw)
        for spot, value in changes:
            out[spot] = value
        return bytes(out)

    targeted = st.lists(st.tuples(st.sampled_from(spots), st.integers(0, 255)), min_size=1, max_size=3).map(flip)
    return st.one_of(byte_flips(raw), targeted)


@pytest.mark.parametrize("role", ["a_trace", "c_ts_track"])
@FUZZ
@given(data=st.data())
def test_step_trace_flip_changes_no_step_silently(role: str, data: st.DataObject, tmp_path: Path) -> None:
    """Bytes flipped anywhere in the step trace (and often in its tag and record-type bytes): the steps and
    their FP / BP / end points are as before, or a lossy row says what was lost. Exempt, as a capture may
    start or stop mid-iteration: the first FP record and the last iteration-end record (kept undamaged)."""
    fixture, name, size, _ = BINARY[role]
    raw = _original(fixture, name)
    records = _trace_records(role, raw)
    fp_tag, end_tag = (1, 255) if role == "a_trace" else (2, 4)
    exempt = [next(i for i, tag in records if tag == fp_tag), [i for i, tag in records if tag == end_tag][-1]]
    flipped = bytearray(data.draw(_flips_at_trace_fields(role, raw), label="flipped"))
    for i in exempt:
        flipped[i * size:(i + 1) * size] = raw[i * size:(i + 1) * size]
    outcome, path = damaged(fixture, name, bytes(flipped), tmp_path)
    assert_sane(outcome)
    if outcome.errors:
        assert_error_names(outcome, path)
        return
    base = baseline(fixture)
    if _step_shape(outcome) != _step_shape(base):
        assert any(e.lossy for e in new_events(outcome, base)), (_step_shape(outcome), outcome.health)


@pytest.mark.parametrize("role,record,tag", [("a_trace", 5, 254), ("a_trace", 5, 1), ("c_ts_track", 4, 0),
                                             ("c_ts_track", 4, 2), ("c_ts_track", 4, None)],
                         ids=["a_end_to_comm", "a_end_to_fp", "c_end_to_model_start", "c_end_to_fp", "c_type_99"])
def test_lost_iteration_end_is_counted(role: str, record: int, tag: int | None, tmp_path: Path) -> None:
    """The first iteration end lost (its tag changed to another defined tag, or era C its record type to one no
    msprof defines): two iterations are one step, and the ledger says so at the merged step (malformed_record,
    dropped, 1 step); an unknown record type is also counted itself (unknown_tag, dropped, at its offset)."""
    fixture, name, size, _ = BINARY[role]
    raw = bytearray(_original(fixture, name))
    index = [i for i, _ in _trace_records(role, bytes(raw))][record]
    (at, width), type_at = TRACE_FIELDS[role]
    if tag is None:
        raw[index * size + type_at] = 99
    else:
        struct.pack_into("<Q" if width == 8 else "<H", raw, index * size + at, tag)
    outcome, path = damaged(fixture, name, bytes(raw), tmp_path)
    base = baseline(fixture)
    ends = lambda o: len([r for r in rows(o, "step_point") if r["kind"] == "step_end"])  # noqa: E731
    assert ends(outcome) == ends(base) - 1
    [merged] = [e for e in new_events(outcome, base) if e.check == "malformed_record"]
    assert (merged.action, merged.rows, merged.path) == ("dropped", 1, str(path))
    assert "iterations merged into one step" in merged.message
    unknown = events(outcome, "unknown_tag")
    if tag is None:
        assert [(e.action, e.rows, e.offset) for e in unknown] == [("dropped", 1, index * size)]
    else:
        assert not unknown


def test_missing_fp_or_bp_is_counted_except_at_the_capture_edges(tmp_path: Path) -> None:
    """A step without the FP or BP the other steps have: malformed_record, dropped, at the step's end record.
    The first step's FP and the points after the last iteration end are exempt (no lossy row)."""
    fixture, name, size, _ = BINARY["c_ts_track"]
    original = _original(fixture, name)
    steps = [i for i, _ in _trace_records("c_ts_track", original)]  # 5 points per iteration: FP comm comm BP END
    base = baseline(fixture)

    def with_tag(record: int, tag: int) -> ReadOutcome:
        raw = bytearray(original)
        struct.pack_into("<H", raw, steps[record] * size + 36, tag)
        return damaged(fixture, name, bytes(raw), tmp_path)[0]

    for record, what in ((5, "FP start"), (8, "BP end"), (13, "BP end")):
        outcome = with_tag(record, 0)
        [event] = [e for e in new_events(outcome, base) if e.lossy]
        assert (event.check, event.action, event.rows) == ("malformed_record", "dropped", 1), event
        assert what in event.message
        step_end = steps[(record // 5) * 5 + 4]
        assert event.offset == step_end * size
    for record in (0, 14):  # the first FP; the last iteration end
        assert not [e for e in new_events(with_tag(record, 0), base) if e.lossy]


def test_other_report_type_unknown_to_msprof_is_excluded(tmp_path: Path) -> None:
    """A ts_track record of a report type no msprof defines that does not read as a step point: counted
    (unknown_tag, excluded: MindSpore reads type 10 only), the steps unchanged, the run complete."""
    fixture, name, size, _ = BINARY["c_ts_track"]
    raw = bytearray(_original(fixture, name))
    other = next(i for i in range(len(raw) // size) if raw[i * size + 1] != 10)
    raw[other * size + 1] = 99
    outcome, path = damaged(fixture, name, bytes(raw), tmp_path)
    assert [(e.check, e.action, e.rows, e.offset, e.path) for e in new_events(outcome, baseline(fixture))] == [
        ("unknown_tag", "excluded", 1, other * size, str(path))]
    assert rows(outcome, "step_point") == rows(baseline(fixture), "step_point") and not outcome.lossy


def test_unknown_enums_in_era_c_framework(tmp_path: Path) -> None:
    fixture, name, size, _ = BINARY["c_task_desc"]
    raw = bytearray(_original(fixture, name))
    struct.pack_into("<I", raw, 4, 99)  # task type
    struct.pack_into("<H", raw, 2, 77)  # data tag
    outcome, _ = damaged(fixture, name, bytes(raw), tmp_path)
    assert sorted((e.check, e.action, e.rows) for e in new_events(outcome, baseline(fixture))) == [
        ("unknown_tag", "kept", 1), ("unknown_tag", "kept", 1)]
    fixture, name, size, _ = BINARY["c_tensor_data"]
    raw = bytearray(_original(fixture, name))
    raw[24] = 9  # tensor count beyond the 5 a record holds
    struct.pack_into("<I", raw, 32, 250)  # format 50: unknown
    outcome, _ = damaged(fixture, name, bytes(raw), tmp_path)
    assert sorted((e.check, e.action) for e in new_events(outcome, baseline(fixture))) == [
        ("out_of_range", "clamped"), ("unknown_tag", "kept")]


def test_bad_utf8_inline_name_is_repaired(tmp_path: Path) -> None:
    fixture, name, size, _ = BINARY["c_task_desc"]
    raw = bytearray(_original(fixture, name))
    assert raw[8] == 1  # an inline name
    raw[16] = 0xFF
    outcome, path = damaged(fixture, name, bytes(raw), tmp_path)
    [event] = events(outcome, "bad_encoding")
    assert (event.action, event.rows, event.offset, event.path) == ("repaired", 1, 16, str(path))


@pytest.mark.parametrize("role", ["a_task_desc", "a_graph_desc", "a_point", "a_aicpu", "c_hash_dic"])
def test_bad_utf8_in_text_is_an_error_with_offset(role: str, tmp_path: Path) -> None:
    fixture, name, _ = TEXT[role]
    raw = _original(fixture, name)
    outcome, path = damaged(fixture, name, raw[:5] + b"\xff\xfe" + raw[5:], tmp_path)
    error = assert_error_names(outcome, path)
    assert error.offset == 5


# ---- missing and empty files -----------------------------------------------------------------------

@pytest.mark.parametrize("role", sorted(BINARY) + sorted(TEXT))
@pytest.mark.parametrize("content", [b"", b" \n \n", None], ids=["empty", "blank", "missing"])
def test_empty_blank_or_missing_file(role: str, content: bytes | None, tmp_path: Path) -> None:
    """An empty, whitespace-only or missing file: a named error, or what is lost is in the ledger (or the
    file gives nothing: AI CPU data, host_start.log, an optional framework file)."""
    fixture, name, *rest = BINARY.get(role) or TEXT[role]
    outcome, path = damaged(fixture, name, content, tmp_path)
    assert_sane(outcome)
    base = baseline(fixture)
    if outcome.errors:
        error = assert_error_names(outcome, path) if content is not None else outcome.errors[0]
        assert isinstance(error, InputError)
        return
    if role in ("a_host_start", "a_aicpu", "c_aicpu", "c_tensor_data", "c_step_info", "a_point", "a_graph_desc"):
        for table in ("device_exec", "task_desc"):
            assert rows(outcome, table) == rows(base, table), (role, table)
        return
    if role == "c_hwts_1" and content is None:
        return  # a missing last slice cannot be told from a shorter capture
    lost = [t for t in ("device_exec", "step_point", "task_desc") if outcome.rows(t) < base.rows(t)]
    if lost:
        assert outcome.lossy or events(outcome, "missing_file"), (role, lost, outcome.health)


def test_missing_first_slice_is_an_error(tmp_path: Path) -> None:
    fixture, name, *_ = BINARY["c_hwts_0"]
    outcome, path = damaged(fixture, name, None, tmp_path)
    assert_error_names(outcome, path)


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3), st.integers(-2, 2)), max_size=60))
def test_first_of_each_keeps_the_earliest_record_of_every_exact_key(rows):
    """binary_records.first_of_each (duplicate records): against the plain definition, on keys that repeat often
    (small value ranges), negative values included."""
    import numpy as np

    from profpipe.ingest.binary_records import first_of_each

    columns = [np.array([row[i] for row in rows], dtype=np.int64) for i in range(3)]
    seen: set[tuple[int, ...]] = set()
    expected = []
    for row in rows:
        expected.append(row not in seen)
        seen.add(row)
    assert first_of_each(columns).tolist() == expected
