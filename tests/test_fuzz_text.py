"""Damage tests for the text readers (MindSpore framework files, MindData logs, MindSpore 1.x step-trace CSV
and HCCL traces, msprof CSV/JSON exports): property-based, on copies of the committed fixtures.

Each test copies a fixture into tmp_path, damages one file (truncation, byte flips, line edits, a bad
number in a time or duration field, empty/blank/binary/deeply nested contents) and reads it with
tests/fuzzing.read_damaged (no reader bug, input untouched, no scratch left). On top of that, each
asserts what the damage allows: an error naming the damaged file, or ledger rows for what was lost;
a cut at a line boundary keeps exactly the complete lines' records; a repeated record is counted once
and reported; a value that is never a valid time never reaches a table in silence.
"""
from __future__ import annotations

import csv
import io
import json
import math
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow.compute as pc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES
from fuzzing import BAD_NUMBERS, FUZZ, ReadOutcome, byte_flips, line_edits, read_damaged, truncations
from profpipe.ingest import json_files, msprof_export
from profpipe.ingest.lines import MAX_NS

GPU_GRAPH = FIXTURES / "mindspore_gpu" / "graph_2x"
GPU_ASYNC = FIXTURES / "mindspore_gpu" / "async_1x"
CPU = FIXTURES / "mindspore_cpu" / "mlp_graph"
CPU_FRAMEWORK = next(CPU.glob("*_ascend_ms")).name + "/FRAMEWORK"
MSPROF = FIXTURES / "msprof_timeline"
MSPROF_DEVICE = next(MSPROF.glob("PROF_*")).name + "/device_0"
ERA_F = FIXTURES / "ascend_ms_era_f"
ERA_F_DIR = next(ERA_F.glob("*_ascend_ms")).name


def _lines(data: bytes) -> list[bytes]:
    """The complete, non-blank lines of `data` (a cut last line left out)."""
    return [line for line in data.split(b"\n")[:-1] if line.strip()]


def _executions(data: bytes) -> int:
    """Op executions of an op-timestamp file: the space-separated tokens after the second ';'."""
    return sum(len(line.split(b";", 2)[2].split()) for line in _lines(data) if line.count(b";") >= 2)


def _csv_rows(skip: Callable[[list[str]], bool] = lambda row: False) -> Callable[[bytes], int]:
    def count(data: bytes) -> int:
        rows = list(csv.reader(io.StringIO(b"\n".join(_lines(data)).decode())))
        return sum(1 for row in rows[1:] if not skip(row))
    return count


@dataclass(frozen=True)
class Role:
    """One damaged file: the fixture folder, its path inside, and what the test knows about its format."""

    fixture: Path
    relative: str
    kind: str  # "lines" (one record per line), "csv", "json", "binary_records", "other"
    #: the table whose rows the file's records give, and an independent count of them in the file's bytes
    table: str | None = None
    count: Callable[[bytes], int] | None = None
    #: records are unique (a repeated line is damage, counted once) and their order does not matter
    unique: bool = True
    #: where time and duration fields are: a regex (groups are fields), a CSV column list or JSON keys
    times: str | tuple[str, ...] | None = None
    #: rows of a CSV whose values are not read (MindSpore's average row, msprof's marker rows)
    skip_row: Callable[[list[str]], bool] = lambda row: False


ROLES: dict[str, Role] = {
    "cpu_op": Role(CPU, f"{CPU_FRAMEWORK}/cpu_op_execute_timestamp_0.txt", "lines", "host_op", _executions,
                   times=r"(?<=[; ])(\d+),([0-9.]+),\d+(?= )"),
    "cpu_framework": Role(CPU, f"{CPU_FRAMEWORK}/cpu_framework_0.txt", "lines", unique=False),
    "gpu_op": Role(GPU_GRAPH, "profiler/gpu_op_execute_timestamp_0.txt", "lines", "host_op", _executions,
                   times=r"(?<=[; ])(\d+),([0-9.]+)(?= )"),
    "gpu_op_host": Role(GPU_GRAPH, "profiler/cpu_op_execute_timestamp_0.txt", "lines", "host_op", _executions,
                        times=r"(?<=[; ])(\d+),([0-9.]+),\d+(?= )"),
    "activity": Role(GPU_GRAPH, "profiler/activity_execute_timestamp_0.txt", "lines", "device_exec",
                     lambda data: len(_lines(data)), times=r";(\d+);([0-9.]+)$"),
    "gpu_framework": Role(GPU_GRAPH, "profiler/gpu_framework_0.txt", "lines", unique=False),
    "step_trace_graph": Role(GPU_GRAPH, "profiler/step_trace_profiling_0.txt", "other", times=r"(?<= )(\d+),(\d+)"),
    "step_trace_async": Role(GPU_ASYNC, "profiler/step_trace_profiling_0.txt", "lines", times=r",(\d+)"),
    "start_time": Role(GPU_GRAPH, "profiler/start_time_0.txt", "other", unique=False, times=r": (\d+)$"),
    "kernel_summary": Role(GPU_GRAPH, "profiler/gpu_activity_data_0.csv", "csv", "kernel_meta", _csv_rows()),
    "profiler_info": Role(GPU_GRAPH, "profiler/profiler_info_0.json", "json"),
    "md_pipeline": Role(FIXTURES / "minddata_mindspore" / "cpu_bound_map", "pipeline_profiling_0.json", "json",
                        times=("size", "sampling_interval", "length", "num_workers")),
    "md_cpu": Role(FIXTURES / "minddata_mindspore" / "cpu_bound_map", "minddata_cpu_utilization_0.json", "json",
                   times=("time_stamp", "user_utilization", "sys_utilization", "io_utilization",
                          "idle_utilization")),
    "md_iterator": Role(FIXTURES / "minddata_mindspore" / "cpu_bound_map", "dataset_iterator_profiling_0.txt", "lines",
                        "data_batch_time", lambda data: sum(1 for line in _lines(data) if line.startswith(b"0")),
                        times=r"^[01] \d+ \d+ (\d+) (\d+)$"),
    "md_device_queue": Role(FIXTURES / "minddata_sink" / "ascend", "device_queue_profiling_0.txt", "lines",
                            "data_batch_time", lambda data: sum(1 for line in _lines(data) if line.startswith(b"0")),
                            times=r"^[01] \d+ \d+ (\d+)(?: (\d+))?$"),
    "md_aicpu": Role(FIXTURES / "minddata_sink" / "ascend", "minddata_aicpu_0.txt", "lines", "queue_sample",
                     lambda data: sum(1 for line in _lines(data) if line.startswith(b"GetNext")),
                     times=r"^GetNext\S* (\d+) (\d+) \d+$"),
    "md_getnext_gpu": Role(FIXTURES / "minddata_sink" / "gpu", "minddata_getnext_profiling_0.txt", "lines",
                           "data_batch_time", lambda data: sum(1 for line in _lines(data) if line.startswith(b"GetNext")),
                           times=r"^GetNext\S* (\d+) (\d+) \d+$"),
    "md_raw": Role(FIXTURES / "minddata_sink" / "era_a", "JOB/data/DATA_PREPROCESS.dev.AICPUMI.0.slice_0",
                   "binary_records", "queue_sample", lambda data: data.count(b"\x00"), times=r"Run (?:start|end):(\d+)"),
    "step_trace_raw": Role(FIXTURES / "mindspore_hccl", "profiler/step_trace_raw_3_detail_time.csv", "csv",
                           times=("start_point", "end_point", "fp_point", "bp_point", "total", "tail",
                                  "stream_5_0_AllReduce-op10_start_point", "stream_5_0_AllReduce-op10_end_point"),
                           skip_row=lambda row: row[:1] == ["-"]),
    "hccl_trace": Role(FIXTURES / "mindspore_hccl", "profiler/hccl_info/allReduce_1_1_dev3/iter1.trace", "json",
                       "comm_task", times=("ts", "dur")),
    "op_summary": Role(MSPROF, f"{MSPROF_DEVICE}/summary/op_summary_0_1_1.csv", "csv", "device_exec", _csv_rows(),
                       times=("Task Start Time(us)", "Task Duration(us)")),
    "msprof_step_trace": Role(MSPROF, f"{MSPROF_DEVICE}/summary/step_trace_0_1_1.csv", "csv",
                              times=("FP Start(us)", "BP End(us)", "Iteration End(us)", "Iteration Time(us)",
                                     "Reduce Start(us)", "Reduce Duration(us)"),
                              skip_row=lambda row: "4294967295" in row),
    "msprof_json": Role(MSPROF, f"{MSPROF_DEVICE}/timeline/msprof_0_1_1.json", "json", times=("ts", "dur")),
    "msprof_info": Role(MSPROF, f"{MSPROF_DEVICE}/info.json.0", "json"),
    "msprof_start_info": Role(MSPROF, f"{MSPROF_DEVICE}/start_info.0", "json"),
    "kernel_details": Role(ERA_F, f"{ERA_F_DIR}/ASCEND_PROFILER_OUTPUT/kernel_details.csv", "csv", "device_exec",
                           _csv_rows(), times=("Start Time(us)", "Duration(us)")),
    "era_f_profiler_info": Role(ERA_F, f"{ERA_F_DIR}/profiler_info_3.json", "json"),
}
#: Roles whose file may be empty (PyNative step traces).
MAY_BE_EMPTY = {"step_trace_graph", "step_trace_async"}
#: Files the profiler leaves empty when nothing was recorded (the real JOB3's AICPUMI): no rows, a `kept` row.
EMPTY_IS_NO_RECORDS = {"md_raw"}
#: Values that are never a valid time or duration (the others in BAD_NUMBERS may mean "missing").
NEVER_A_TIME = [v for v in BAD_NUMBERS if v not in (b"", b"N/A", b"null")]

_BASELINES: dict[Path, ReadOutcome] = {}


def _baseline(fixture: Path, tmp_path_factory: pytest.TempPathFactory) -> ReadOutcome:
    if fixture not in _BASELINES:
        copy = tmp_path_factory.mktemp("baseline") / "in"
        shutil.copytree(fixture, copy)
        outcome = read_damaged(copy)
        assert not outcome.errors and not outcome.health, (fixture, outcome.errors, outcome.health)
        _BASELINES[fixture] = outcome
    return _BASELINES[fixture]


def _damage(tmp_path: Path, role: Role, data: bytes) -> tuple[Path, Path]:
    """A fresh copy of the role's fixture in tmp_path with the role's file replaced by `data`."""
    folder = tmp_path / "in"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(role.fixture, folder)
    target = folder / role.relative
    target.write_bytes(data)
    return folder, target


def _names_file(outcome: ReadOutcome, target: Path) -> bool:
    """The outcome says what happened to `target`: an error naming it (or its folder, for a source whose
    files are read together), or a ledger row naming it."""
    named = [str(target), str(target.parent)]
    return (any(any(n in str(e) for n in named) for e in outcome.errors)
            or any(e.path in named or any(n in e.message for n in named) for e in outcome.health))


def _lossy_about(outcome: ReadOutcome, target: Path) -> bool:
    """An error, or a lossy ledger row, that names `target`."""
    errors = [e for e in outcome.errors if str(target) in str(e) or str(target.parent) in str(e)]
    rows = [e for e in outcome.health if e.lossy and (e.path == str(target) or str(target) in e.message)]
    return bool(errors or rows)


def _check_counts(role: Role, outcome: ReadOutcome, base: ReadOutcome, original: bytes, damaged: bytes) -> None:
    """The role's table holds the fixture's rows less the records lost from the file, as counted in its bytes."""
    if role.table and role.count and not outcome.errors:
        expected = base.rows(role.table) - role.count(original) + role.count(damaged)
        assert outcome.rows(role.table) == expected, (outcome.rows(role.table), expected, outcome.health)


# --- truncation -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(ROLES))
@FUZZ
@given(data=st.data())
def test_truncation(name: str, data: st.DataObject, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A cut file: at a line boundary the complete lines' records are all kept; inside a line, the partial
    line is dropped with a `truncated` row (or the file is an error); a cut JSON value is an error or a
    lossy row naming the file."""
    role = ROLES[name]
    original = (role.fixture / role.relative).read_bytes()
    cut = data.draw(truncations(original))
    base = _baseline(role.fixture, tmp_path_factory)
    folder, target = _damage(tmp_path, role, cut)
    outcome = read_damaged(folder)
    if cut == original or cut.strip() == original.strip() and role.kind != "binary_records":
        return
    if not cut.strip():
        if name in EMPTY_IS_NO_RECORDS and not cut:
            assert not outcome.lossy and "ambiguous" in outcome.checks(), outcome
        elif name not in MAY_BE_EMPTY:
            assert _lossy_about(outcome, target), outcome
        return
    at_line_end = cut.endswith(b"\n")
    if role.kind in ("json", "binary_records") or not at_line_end:
        if role.kind != "binary_records" or not cut.endswith(b"\x00"):
            assert _lossy_about(outcome, target), (outcome.errors, outcome.health)
    if not at_line_end and not outcome.errors and role.kind in ("lines", "csv"):
        truncated = [e for e in outcome.health if e.check == "truncated"]
        assert truncated and truncated[0].rows == 1 and truncated[0].path == str(target), outcome.health
    if role.kind in ("lines", "csv", "binary_records"):
        _check_counts(role, outcome, base, original, cut)


# --- line edits -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(n for n, r in ROLES.items() if r.kind in ("lines", "csv", "other")))
@FUZZ
@given(data=st.data())
def test_line_edits(name: str, data: st.DataObject, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A repeated line is counted once and reported as duplicate_record (or the file is an error); a line
    moved keeps every record of order-free files; a dropped line loses only its records."""
    role = ROLES[name]
    original = (role.fixture / role.relative).read_bytes()
    edited = data.draw(line_edits(original))
    base = _baseline(role.fixture, tmp_path_factory)
    folder, target = _damage(tmp_path, role, edited)
    outcome = read_damaged(folder)
    old, new = _lines(original), _lines(edited)
    if len(new) > len(old) and role.unique:  # a duplicated line
        repeated = next(line for line, before in zip(new, old + [b""]) if line != before)
        unread = role.kind == "csv" and (repeated == new[0] or role.skip_row(next(csv.reader([repeated.decode()]))))
        if not unread and not outcome.errors:
            assert "duplicate_record" in outcome.checks(), outcome.health
            if role.table:
                assert outcome.rows(role.table) == base.rows(role.table)
    elif len(new) == len(old) and role.table and role.unique and not outcome.errors:
        assert outcome.rows(role.table) == base.rows(role.table)  # lines swapped
    elif len(new) < len(old) and role.count:
        _check_counts(role, outcome, base, original, edited)


# --- bad numbers in time and duration fields ----------------------------------------------------------

def _field_spans(role: Role, data: bytes) -> list[tuple[int, int]]:
    """Byte spans of the role's time and duration fields in a text file (regex roles)."""
    spans = []
    for match in re.finditer(role.times.encode(), data, flags=re.MULTILINE):
        spans += [match.span(g) for g in range(1, (match.lastindex or 0) + 1) if match.span(g)[0] >= 0]
    return spans


def _with_csv_value(role: Role, data: bytes, pick: int, value: bytes) -> bytes | None:
    """The CSV with one time field of a read row replaced by `value` (None when there is none)."""
    text = data.decode()
    lines = text.split("\n")
    header = next(csv.reader([lines[0]]))
    places = [(i, header.index(c)) for i, line in enumerate(lines[1:], 1) if line.strip()
              for c in role.times if c in header and not role.skip_row(next(csv.reader([line])))]
    if not places:
        return None
    row_index, column = places[pick % len(places)]
    row = next(csv.reader([lines[row_index]]))
    row[column] = "\x00MARK\x00"
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(row)
    lines[row_index] = out.getvalue()
    return "\n".join(lines).encode().replace(b"\x00MARK\x00", value)


def _with_json_value(role: Role, data: bytes, pick: int, value: bytes) -> bytes | None:
    """The JSON with one value under one of the role's keys (or an item of a list under it) replaced by
    the raw token `value` (None when there is none)."""
    document = json.loads(data)
    places: list[tuple[object, object]] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, child in node.items():
                if key in role.times and isinstance(child, list):
                    places.extend((child, i) for i in range(len(child)))
                elif key in role.times and not isinstance(child, (dict, list)):
                    if not (isinstance(node.get("ph"), str) and node.get("ph") != "X"):
                        places.append((node, key))
                walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(document)
    if not places:
        return None
    container, key = places[pick % len(places)]
    container[key] = "\x00MARK\x00"  # type: ignore[index]
    return json.dumps(document).encode().replace(b'"\\u0000MARK\\u0000"', value)


def _with_bad_number(role: Role, data: bytes, pick: int, value: bytes) -> bytes | None:
    if isinstance(role.times, str):
        spans = _field_spans(role, data)
        if not spans:
            return None
        start, end = spans[pick % len(spans)]
        return data[:start] + value + data[end:]
    if role.kind == "csv":
        return _with_csv_value(role, data, pick, value)
    return _with_json_value(role, data, pick, value)


@pytest.mark.parametrize("name", sorted(n for n, r in ROLES.items() if r.times))
@FUZZ
@given(pick=st.integers(0, 10_000), value=st.sampled_from(BAD_NUMBERS))
def test_bad_number_in_a_time_field(name: str, pick: int, value: bytes, tmp_path: Path) -> None:
    """NaN, inf, beyond int64, negative, empty, wrong type or bad bytes in a time or duration: never a
    traceback, and a value that is never a valid time is an error or a lossy ledger row naming the file."""
    role = ROLES[name]
    original = (role.fixture / role.relative).read_bytes()
    damaged = _with_bad_number(role, original, pick, value)
    assert damaged is not None, f"no time field found in {role.relative}"
    folder, target = _damage(tmp_path, role, damaged)
    outcome = read_damaged(folder)
    if value in NEVER_A_TIME:
        assert _lossy_about(outcome, target), (value, outcome.errors, outcome.health)
    for table in ("host_op", "device_exec", "comm_task"):
        if table in outcome.tables:
            durations = outcome.tables[table].column("dur_ns").to_pylist()
            assert all(d is None or 0 <= d <= MAX_NS for d in durations)


# --- byte flips and whole-file damage --------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(ROLES))
@FUZZ
@given(data=st.data())
def test_byte_flips(name: str, data: st.DataObject, tmp_path: Path) -> None:
    """Any bytes flipped: no traceback; an error names the file; no negative or out-of-range duration."""
    role = ROLES[name]
    original = (role.fixture / role.relative).read_bytes()
    folder, target = _damage(tmp_path, role, data.draw(byte_flips(original)))
    outcome = read_damaged(folder)
    for error in outcome.errors:
        assert str(target) in str(error) or str(target.parent) in str(error) or str(folder) in str(error), error
    for table in ("host_op", "device_exec", "comm_task"):
        if table in outcome.tables:
            assert all(d is None or 0 <= d <= MAX_NS for d in outcome.tables[table].column("dur_ns").to_pylist())


CONTENTS = {
    "empty": b"",
    "whitespace": b"  \n\t\n   \n",
    "bad_utf8": None,  # the fixture with invalid UTF-8 in its middle
    "nul": None,  # the fixture with a NUL byte in its middle
    "deep_json": b"[" * 100_000 + b"]" * 100_000,
    "deep_object": b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    "binary": bytes(range(256)) * 8,
}


@pytest.mark.parametrize("content", sorted(CONTENTS))
@pytest.mark.parametrize("name", sorted(ROLES))
def test_whole_file_damage(name: str, content: str, tmp_path: Path) -> None:
    """Empty, blank, binary, deeply nested or badly encoded files: an error or a lossy ledger row naming
    the file (an empty step trace is PyNative's: no steps; a blank one is read so and reported)."""
    role = ROLES[name]
    original = (role.fixture / role.relative).read_bytes()
    middle = len(original) // 2
    data = CONTENTS[content]
    if content == "bad_utf8":
        data = original[:middle] + b"\xff\xfe\xc3" + original[middle:]
    elif content == "nul":
        data = original[:middle] + b"\x00" + original[middle:]
    folder, target = _damage(tmp_path, role, data)
    outcome = read_damaged(folder)
    if name in MAY_BE_EMPTY and content == "empty":
        assert not outcome.errors and outcome.rows("step_point") == 0
    elif name in EMPTY_IS_NO_RECORDS and content == "empty":
        assert not outcome.lossy and outcome.rows(role.table) == 0 and "ambiguous" in outcome.checks()
    elif name in MAY_BE_EMPTY and content == "whitespace":
        assert not outcome.errors and "malformed_record" in outcome.checks()
    elif role.kind == "binary_records" and content == "nul":
        assert not outcome.errors  # NUL separates the records
    else:
        assert _lossy_about(outcome, target), (outcome.errors, outcome.health)


# --- specific cases the issue names ---------------------------------------------------------------------

def test_newer_empty_msprof_export_does_not_hide_an_older_complete_one(tmp_path: Path) -> None:
    """Era E: of two op_summary exports, the one with the most records is read, whatever its age; the other
    is a `superseded` ledger row."""
    device = MSPROF / MSPROF_DEVICE
    prof = tmp_path / "in" / "PROF_000001_20260101000000000_ERAEERAEERAEERAE"
    output = prof / "mindstudio_profiler_output"
    output.mkdir(parents=True)
    shutil.copytree(device, prof / "device_0", ignore=shutil.ignore_patterns("summary", "timeline"))
    summary = (device / "summary" / "op_summary_0_1_1.csv").read_text()
    (output / "op_summary_20250101120000.csv").write_text(summary)  # older, complete
    (output / "op_summary_20260101120000.csv").write_text(summary.splitlines()[0] + "\n")  # newer, empty
    outcome = read_damaged(tmp_path / "in")
    assert outcome.rows("device_exec") == len(summary.splitlines()) - 1
    [row] = [e for e in outcome.health if e.check == "superseded"]
    assert (row.action, row.rows, Path(row.path).name) == ("superseded", 0, "op_summary_20260101120000.csv")


def test_record_count_of_an_export(tmp_path: Path) -> None:
    csv_file, json_file = tmp_path / "a.csv", tmp_path / "a.json"
    csv_file.write_bytes(b"h\n1\n2\n")
    json_file.write_bytes(b'[{"ph": "X"}, {"ph": "M"}]')
    assert (msprof_export._record_count(csv_file), msprof_export._record_count(json_file)) == (2, 2)


def test_whitespace_only_op_file_is_an_error_not_zero_ops(tmp_path: Path) -> None:
    role = ROLES["gpu_op"]
    folder, target = _damage(tmp_path, role, b" \n\n  \n")
    outcome = read_damaged(folder)
    [error] = outcome.errors
    assert str(target) in str(error) and "blank" in str(error)


def test_nan_and_negative_durations_are_dropped_and_counted(tmp_path: Path, tmp_path_factory) -> None:
    role = ROLES["activity"]
    lines = (role.fixture / role.relative).read_bytes().split(b"\n")
    lines[0] = lines[0].rsplit(b";", 1)[0] + b";-3.5"
    lines[1] = lines[1].rsplit(b";", 1)[0] + b";1e400"
    folder, target = _damage(tmp_path, role, b"\n".join(lines))
    outcome = read_damaged(folder)
    rows = {(e.check, e.action, e.rows, e.line) for e in outcome.health}
    assert rows == {("negative_duration", "dropped", 1, 1), ("non_finite", "dropped", 1, 2)}
    assert outcome.rows("device_exec") == _baseline(role.fixture, tmp_path_factory).rows("device_exec") - 2


def test_deeply_nested_minddata_json_is_left_out_with_a_ledger_row(tmp_path: Path) -> None:
    role = ROLES["md_pipeline"]
    folder, target = _damage(tmp_path, role, b"[" * 100_000)
    outcome = read_damaged(folder)
    [row] = [e for e in outcome.health if e.path == str(target)]
    assert (row.check, row.action) == ("malformed_record", "dropped") and "nested" in row.message
    assert outcome.rows("data_op") == 0 and outcome.rows("data_batch_time") > 0


def test_short_and_na_rows_of_a_cut_csv(tmp_path: Path, tmp_path_factory) -> None:
    """op_summary rows with N/A or missing times are left out and counted, the others kept."""
    role = ROLES["op_summary"]
    lines = (role.fixture / role.relative).read_text().splitlines()
    lines[1] = ",".join(lines[1].split(",")[:5])  # short row: no times
    lines[2] = lines[2].replace("5000120.000", "N/A")
    folder, target = _damage(tmp_path, role, ("\n".join(lines) + "\n").encode())
    outcome = read_damaged(folder)
    [row] = outcome.health
    assert (row.check, row.action, row.rows, row.line, row.path) == ("malformed_record", "dropped", 2, 2, str(target))
    assert outcome.rows("device_exec") == _baseline(role.fixture, tmp_path_factory).rows("device_exec") - 2


def test_minddata_raw_record_without_its_nul_is_dropped(tmp_path: Path) -> None:
    role = ROLES["md_raw"]
    data = (role.fixture / role.relative).read_bytes()
    folder, target = _damage(tmp_path, role, data[:-3])
    outcome = read_damaged(folder)
    [row] = outcome.health
    assert (row.check, row.action, row.rows) == ("truncated", "dropped", 1)
    assert outcome.rows("queue_sample") == data.count(b"\x00") - 1


def test_minddata_nan_queue_sizes_keep_their_sample_numbers(tmp_path: Path) -> None:
    role = ROLES["md_pipeline"]
    document = json.loads((role.fixture / role.relative).read_bytes())
    sizes = document["op_info"][0]["metrics"]["output_queue"]["size"]
    folder, target = _damage(tmp_path, role, json.dumps(document).replace(
        json.dumps(sizes), json.dumps([float("nan")] + sizes[1:]), 1).encode())
    outcome = read_damaged(folder)
    [row] = outcome.health
    assert (row.check, row.action, row.rows) == ("non_finite", "dropped", 1)
    samples = outcome.tables["queue_sample"].filter(
        pc.equal(outcome.tables["queue_sample"]["op_id"], 0))["sample"].to_pylist()
    assert samples == list(range(1, len(sizes)))


_MS = st.one_of(st.integers(0, 10**13), st.decimals(0, 10**13, places=6, allow_nan=False).map(float),
                st.floats(0, 1e14), st.sampled_from([float("nan"), float("inf"), -1.5]))


@FUZZ
@given(interval=_MS, trace_ms=st.integers(0, 10**13), memory_mib=st.floats(0, 1e13), host_pct=st.floats(0, 200),
       op_pct=st.floats(0, 1e4))
def test_minddata_units_convert_exactly_and_out_of_range_is_reported(
        interval: float, trace_ms: int, memory_mib: float, host_pct: float, op_pct: float, tmp_path: Path) -> None:
    """ms x gives round(x * 10^6) ns (half to even, of the decimal written), MiB m gives round(m * 2^20) bytes,
    a percent p the fraction p / 100; a value whose ns or bytes would not fit int64 (or a host CPU percent above
    100) is left out and reported in the ledger, never wrapped."""
    folder = tmp_path / "md"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    (folder / "pipeline_profiling_0.json").write_text(json.dumps(
        {"sampling_interval": interval, "op_info": [{"op_id": 0, "op_type": "BatchOp", "num_workers": 1,
                                                     "metrics": {"output_queue": {"size": [1], "length": 2}}}]}))
    (folder / "minddata_cpu_utilization_0.json").write_text(json.dumps(
        {"time_stamp": [1], "device_info": {"user_utilization": [host_pct]},
         "system_memory_info": {"used_sys_memory_mbytes": [memory_mib]},
         "op_info": [{"op_id": 0, "metrics": {"user_utilization": [op_pct]}}]}))
    (folder / "dataset_iterator_profiling_0.txt").write_text(f"0 0 1 {trace_ms} 5\n")
    outcome = read_damaged(folder)
    expected: dict[tuple[str, str], int] = {}  # (table, check) -> values left out

    def expect(value: float, limit: float, factor: int, got: int | None, table: str) -> None:
        if math.isfinite(value) and 0 <= value <= limit:
            assert got == round(Decimal(repr(value)) * factor) and got <= 2**63 - 1
        else:
            assert got is None
            key = (table, "out_of_range" if math.isfinite(value) else "non_finite")
            expected[key] = expected.get(key, 0) + 1

    expect(interval, MAX_NS // 10**6, 10**6, outcome.tables["data_op"]["sampling_interval_ns"][0].as_py(), "data_op")
    cpu = outcome.tables["data_cpu_sample"].to_pylist()
    [device] = [r for r in cpu if r["scope"] == "device"]
    expect(memory_mib, 2**62 / 2**20, 2**20, device["memory_bytes"], "data_cpu_sample")
    assert device["user_share"] == (host_pct / 100 if host_pct <= 100 else None)  # above all the host's CPU: damage
    if host_pct > 100:
        expected[("data_cpu_sample", "out_of_range")] = expected.get(("data_cpu_sample", "out_of_range"), 0) + 1
    assert [r["user_cpus"] for r in cpu if r["scope"] == "op"] == [op_pct / 100]
    times = outcome.tables.get("data_batch_time")
    expect(trace_ms, MAX_NS // 10**6, 10**6, times["dur_ns"][0].as_py() if times else None,
           "data_batch_time,queue_sample")
    assert {(e.tables, e.check): e.rows for e in outcome.health} == expected


@pytest.mark.parametrize("name", ["step_trace_graph", "step_trace_async"])
@pytest.mark.parametrize("first", [0, 1, 2])
def test_step_trace_lines_moved_are_reported(name: str, first: int, tmp_path: Path) -> None:
    """Step-trace lines swapped (points of the graph layout, steps of the per-step one) change what each
    point means: the steps whose points fall out of order are named in a ledger row (kept)."""
    role = ROLES[name]
    lines = (role.fixture / role.relative).read_bytes().split(b"\n")
    lines[first], lines[first + 1] = lines[first + 1], lines[first]
    folder, target = _damage(tmp_path, role, b"\n".join(lines))
    outcome = read_damaged(folder)
    [row] = outcome.health
    assert (row.check, row.action, row.path) == ("malformed_record", "kept", str(target)) and row.rows >= 1


def _cut_inside_last_line(data: bytes) -> bytes:
    return data[: data.rstrip(b"\n").rfind(b"\n") + 4]


def _duplicate_second_line(data: bytes) -> bytes:
    lines = data.split(b"\n")
    return b"\n".join(lines[:2] + lines[1:])


@pytest.mark.parametrize("name, damage", [
    ("cpu_op", _cut_inside_last_line), ("activity", _duplicate_second_line), ("md_iterator", _cut_inside_last_line),
    ("op_summary", _duplicate_second_line), ("step_trace_raw", _cut_inside_last_line),
    ("hccl_trace", lambda data: data.replace(b'"dur": 120.25', b'"dur": -120.25')),
])
def test_whole_pipeline_on_damaged_text(name: str, damage: Callable[[bytes], bytes], tmp_path: Path) -> None:
    """The whole pipeline on a damaged file: a partial run (exit 3) whose trace_health names the file."""
    from fuzzing import analyse_damaged

    role = ROLES[name]
    folder, target = _damage(tmp_path, role, damage((role.fixture / role.relative).read_bytes()))
    result = analyse_damaged(folder, tmp_path / "out")
    assert not isinstance(result, Exception), result
    assert result.exit_code == 3
    rows = result.summary["health"]["rows"]
    assert any(r["first_file"] == str(target) and r["action"] == "dropped" for r in rows), rows


@pytest.mark.parametrize("value", [b"NaN", b"Infinity", b"true", b"1e400"])
def test_msprof_event_time_that_is_no_number_is_dropped_whichever_table_reads_it(value: bytes, tmp_path: Path) -> None:
    """A task event's time that is not a number, in a timeline beside summary CSVs (which give the tasks, so
    no table reads that event): still one malformed_record row naming the file; the tables are unchanged."""
    base = read_damaged(MSPROF)
    role = ROLES["msprof_json"]
    data = (role.fixture / role.relative).read_bytes()
    start = data.index(b'"ts": ', data.index(b'"Default/Conv2D-op1"')) + len(b'"ts": ')
    damaged = data[:start] + value + data[data.index(b",", start):]
    folder, target = _damage(tmp_path, role, damaged)
    outcome = read_damaged(folder)
    [row] = outcome.health
    assert (row.check, row.action, row.rows, row.path) == ("malformed_record", "dropped", 1, str(target))
    for table in ("device_exec", "step_point", "comm_task"):
        assert outcome.rows(table) == base.rows(table) > 0


def test_repeated_msprof_events_are_counted_once(tmp_path: Path) -> None:
    """A timeline-only export whose events are repeated: the tasks are counted once, the repeats reported."""
    folder = tmp_path / "in"
    shutil.copytree(MSPROF, folder)
    shutil.rmtree(folder / MSPROF_DEVICE / "summary")
    base = read_damaged(folder)
    target = folder / ROLES["msprof_json"].relative
    events = json.loads(target.read_text())
    tasks = [e for e in events if e.get("ph") == "X"]
    target.write_text(json.dumps(events + tasks))
    outcome = read_damaged(folder)
    [row] = outcome.health
    assert (row.check, row.action, row.rows, row.path) == ("duplicate_record", "dropped", len(tasks), str(target))
    for table in ("device_exec", "step_point", "comm_task"):
        assert outcome.rows(table) == base.rows(table) > 0


@pytest.mark.parametrize("name", ["activity", "md_device_queue", "op_summary", "md_aicpu"])
def test_every_line_boundary_and_mid_line_cut(name: str, tmp_path: Path, tmp_path_factory) -> None:
    """Exhaustively for small files: a cut at every line boundary keeps exactly the complete lines' records
    with no ledger row; a cut inside every line also drops that partial line, with one `truncated` row."""
    role = ROLES[name]
    original = (role.fixture / role.relative).read_bytes()
    base = _baseline(role.fixture, tmp_path_factory)
    ends = [i + 1 for i, byte in enumerate(original) if byte == 0x0A]
    for end in ends[:-1]:
        for cut, partial in ((original[:end], False), (original[: end + 3], True)):
            folder, target = _damage(tmp_path, role, cut)
            outcome = read_damaged(folder)
            if outcome.errors:  # only a header, or nothing complete left: the file has no records
                assert role.count(cut) == 0 and _lossy_about(outcome, target)
                continue
            _check_counts(role, outcome, base, original, cut)
            assert [(e.check, e.rows) for e in outcome.health] == ([("truncated", 1)] if partial else []), end


def test_json_array_cut_after_a_comma_is_an_error(tmp_path: Path) -> None:
    """DuckDB reads `[{...}, {...}, ` as a complete array: the readers check that the value is closed."""
    role = ROLES["msprof_json"]
    data = (role.fixture / role.relative).read_bytes()
    folder, target = _damage(tmp_path, role, data[: data.index(b"}, {", 400) + 3])
    [error] = read_damaged(folder).errors
    assert str(target) in str(error) and "cut short" in str(error)


class _MessageLost:
    """A DuckDB connection whose errors arrive without a message, as CPython 3.11.2 raises one whose message
    quotes bytes that are not UTF-8 (later CPythons raise UnicodeDecodeError)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con

    def execute(self, *args: object) -> duckdb.DuckDBPyConnection:
        try:
            return self._con.execute(*args)
        except (duckdb.Error, UnicodeDecodeError) as exc:
            raise (type(exc) if isinstance(exc, duckdb.Error) else duckdb.InvalidInputException)() from None


@pytest.mark.parametrize("message_lost", [False, True], ids=["message", "message_lost"])
@pytest.mark.parametrize("name", ["msprof_json", "hccl_trace"])
def test_json_trace_starting_with_bad_utf8_is_an_error(name: str, message_lost: bool, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """DuckDB quotes the bad bytes in its message, which Python cannot decode (or, on an older CPython, drops):
    still an InputError naming the file and saying what is wrong."""
    if message_lost:
        create = json_files.create_table
        monkeypatch.setattr(json_files, "create_table", lambda con, *args: create(_MessageLost(con), *args))
    role = ROLES[name]
    data = (role.fixture / role.relative).read_bytes()
    folder, target = _damage(tmp_path, role, b"\x80" + data[1:])
    [error] = read_damaged(folder).errors
    problem = "not UTF-8 text?" if message_lost or name == "msprof_json" else "unexpected character"
    assert str(target) in str(error) and problem in str(error), str(error)
