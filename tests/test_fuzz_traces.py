"""Damage tests for the one-file trace readers: Kineto / Paddle JSON traces (plain and gzip) and Nsight Systems
SQLite exports (issue 16, "tests that hunt").

Each test copies a committed fixture, damages one file (hypothesis draws the damage) and reads it with
tests/fuzzing.read_damaged, which already asserts the trust properties (no reader bug, input unchanged, no
scratch left). On top, every test checks what was kept against an independent reading of the damaged file
(Python's json on the trace, sqlite3 on the export): the rows that survive are exactly the ones expected,
and every record lost or changed is a ledger row with the right check, action and count.
"""
from __future__ import annotations

import gzip
import json
import re
import shutil
import sqlite3
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from conftest import FIXTURES
from fuzzing import FUZZ, ReadOutcome, analyse_damaged, byte_flips, read_damaged
from profpipe.errors import EXIT_PARTIAL, InputError
from profpipe.health import CHECKS

KINETO = FIXTURES / "kineto" / "current" / "rank-0.pt.trace.json"
PADDLE = FIXTURES / "paddle" / "worker0.paddle_trace.json"
NSYS = FIXTURES / "nsys" / "report1.sqlite"
BASE_NS = 1_727_740_800_000_000_000

HOST_CATS = {"cpu_op", "user_annotation", "Operator", "OperatorInner", "PythonOp", "ProfileStep", "Dataloader",
             "UserDefined", "PythonUserDefined", "Forward", "Backward", "Optimization", "Communication"}
API_CATS = {"cuda_runtime", "cuda_driver", "Runtime", "CudaRuntime"}
DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_sync", "Kernel", "Memcpy", "Memset"}
TIMED_TABLES = ("host_op", "host_api", "device_exec")


@contextmanager
def _folder(name: str, data: bytes) -> Iterator[Path]:
    """A fresh folder holding `data` as `name` (hypothesis runs many examples in one test call)."""
    with tempfile.TemporaryDirectory(prefix="fuzz-traces-") as folder:
        (Path(folder) / name).write_bytes(data)
        yield Path(folder)


def _assert_well_formed(outcome: ReadOutcome, path: Path) -> None:
    """Every ledger row of the source names a known check, the file, and how many records it touched; every
    error is an InputError naming the file."""
    for event in outcome.health:
        assert event.check in CHECKS and (event.check != "other" or event.action == "kept"), event
        assert event.path == str(path), event
        assert event.rows is not None, event
        assert str(path) in event.message, event
    for error in outcome.errors:
        assert isinstance(error, InputError) and str(path) in str(error), error


def _rows(outcome: ReadOutcome, check: str, action: str | None = None) -> int:
    return sum(e.rows or 0 for e in outcome.health if e.check == check and action in (None, e.action))


# --- an independent reading of a (damaged) Chrome trace -----------------------------------------------------

_DECODER = json.JSONDecoder(parse_float=Decimal)
_ARRAY = re.compile(rb'"traceEvents"\s*:\s*\[')


def _walk(data: bytes) -> tuple[list[dict], int | None, bool]:
    """The complete events of the trace's array, the offset just after the last one, and whether the array
    is closed after it."""
    match = _ARRAY.search(data)
    if not match:
        return [], None, False
    text = data.decode("latin-1")
    events: list[dict] = []
    index, end = match.end(), None
    while True:
        index = len(text) - len(text[index:].lstrip())
        if text.startswith("]", index):
            return events, end, True
        try:
            event, after = _DECODER.raw_decode(text, index)
        except ValueError:
            return events, end, False
        events.append(event)
        end = after
        index = len(text) - len(text[after:].lstrip())
        if not text.startswith(",", index):
            return events, end, text.startswith("]", index)
        index += 1


def _table_counts(events: list[dict]) -> dict[str, int]:
    """Rows per table the reader must keep from these events: exact duplicates once."""
    seen, counts = set(), {"host_op": 0, "host_api": 0, "device_exec": 0, "memory_event": 0}
    for event in events:
        key = json.dumps(event, sort_keys=True, default=str)
        if key in seen:
            continue
        seen.add(key)
        cat, ph = event.get("cat"), event.get("ph")
        if ph == "X" and cat in HOST_CATS:
            counts["host_op"] += 1
        elif ph == "X" and cat in API_CATS:
            counts["host_api"] += 1
        elif ph == "X" and cat in DEVICE_CATS:
            counts["device_exec"] += 1
        elif ph == "i" and event.get("name") == "[memory]":
            counts["memory_event"] += 1
    return counts


def _launches_lost(full: list[dict], kept: list[dict]) -> int:
    """Runtime calls kept whose device activity (same correlation id) the full trace has but the kept part lacks."""
    def correlation(event: dict) -> object:
        return (event.get("args") or {}).get("correlation")

    launched = {correlation(e) for e in full if e.get("cat") in DEVICE_CATS}
    present = {correlation(e) for e in kept if e.get("cat") in DEVICE_CATS}
    return sum(1 for e in kept if e.get("cat") in API_CATS and correlation(e) in launched - present)


def _check_cut_trace(outcome: ReadOutcome, path: Path, original: bytes, cut: bytes, gzip_cut: bool = False) -> None:
    """What a trace cut after `len(cut)` bytes (of the inflated trace) must give (`gzip_cut`: the gzip stream
    stops early too, which is reported even where every byte of the trace was inflated)."""
    full, _, _ = _walk(original)
    events, end, closed = _walk(cut)
    if not events:
        assert outcome.errors, "a trace with no complete event must be refused"
        return
    assert not outcome.errors, outcome.errors
    for table, count in _table_counts(events).items():
        assert outcome.rows(table) == count, (table, outcome.rows(table), count)
    whole = cut.rstrip() == original.rstrip()
    truncated = [e for e in outcome.health if e.check == "truncated"]
    if whole:
        assert bool(truncated) == gzip_cut
    elif not closed:  # cut among the events: where, and the device work lost
        row = next(e for e in truncated if e.action == "dropped")
        assert row.offset == end
        assert f"at byte {end}" in row.message
        lost = _launches_lost(full, events)
        if lost:
            assert "device_exec" in (row.tables or "") and f"at least {lost} rows" in row.message, row
    else:  # cut in the members after the array: every event read, the cut said
        assert truncated
    base = re.search(rb'"baseTimeNanoseconds"\s*:\s*(\d+)[\s,}]', cut)
    clock = outcome.tables["run_info"].column("clock")[0].as_py()
    starts = outcome.tables["host_op"].column("start_ns").to_pylist() if outcome.rows("host_op") else []
    epoch = max(e["ts"] for e in events if "ts" in e) * 1000 >= 10 ** 17  # times on the epoch without a base
    if base or epoch:
        assert clock == "unix_epoch"
        assert all(s >= (BASE_NS if base else 10 ** 17) for s in starts)
    else:  # the clock is lost with the cut: times stay relative, and the ledger says so
        assert clock == "kineto_relative"
        assert _rows(outcome, "clock") > 0
        assert all(s < BASE_NS for s in starts)


def _boundaries(data: bytes) -> list[int]:
    """Offsets just after each complete event of the trace (truncation at every event boundary)."""
    match = _ARRAY.search(data)
    text = data.decode("latin-1")
    index, ends = match.end(), []
    while True:
        index = len(text) - len(text[index:].lstrip())
        try:
            _, index = _DECODER.raw_decode(text, index)
        except ValueError:
            return ends
        ends.append(index)
        index = len(text) - len(text[index:].lstrip()) + 1


# --- Kineto / Paddle: truncation ---------------------------------------------------------------------------

@pytest.mark.parametrize("fixture, name", [(KINETO, "rank-0.pt.trace.json"), (PADDLE, "rank-0.pt.trace.json")],
                         ids=["kineto", "paddle"])
def test_cut_at_every_event_boundary(fixture: Path, name: str):
    """Cut just after each event in turn: the complete events are read, exactly (mid-event cuts: test_cut_anywhere)."""
    original = fixture.read_bytes()
    for cut in _boundaries(original):
        with _folder(name, original[:cut]) as folder:
            outcome = read_damaged(folder)
            _assert_well_formed(outcome, folder / name)
            _check_cut_trace(outcome, folder / name, original, original[:cut])


@FUZZ
@given(st.data())
def test_cut_anywhere(data):
    original = KINETO.read_bytes()
    cut = data.draw(st.integers(0, len(original)), label="cut")
    with _folder("rank-0.pt.trace.json", original[:cut]) as folder:
        outcome = read_damaged(folder)
        _assert_well_formed(outcome, folder / "rank-0.pt.trace.json")
        _check_cut_trace(outcome, folder / "rank-0.pt.trace.json", original, original[:cut])


@FUZZ
@given(st.data())
def test_gzip_cut_anywhere(data):
    """A gzip trace whose writer stopped: what its complete blocks hold is read as a cut trace; a cut in the
    gzip header is an error naming the file."""
    original = KINETO.read_bytes()
    packed = gzip.compress(original, mtime=0)
    cut = data.draw(st.integers(0, len(packed)), label="cut")
    inflated = zlib.decompressobj(wbits=31).decompress(packed[:cut]) if cut > 10 else b""
    name = "rank-0.pt.trace.json.gz"
    with _folder(name, packed[:cut]) as folder:
        outcome = read_damaged(folder)
        _assert_well_formed(outcome, folder / name)
        if not cut:
            assert outcome.errors
            return
        _check_cut_trace(outcome, folder / name, original, inflated, gzip_cut=cut < len(packed))
        if cut < len(packed) and not outcome.errors:  # the gzip stream stops early: said, even with every event
            assert any(e.check == "truncated" for e in outcome.health), outcome.health


def test_cut_at_70_percent_names_the_device_events_lost():
    """The issue's case: a trace cut at 70 % keeps its host events; the truncated row says the bytes and events,
    and that device_exec lost rows."""
    original = KINETO.read_bytes()
    with _folder("rank-0.pt.trace.json", original[:len(original) * 7 // 10]) as folder:
        outcome = read_damaged(folder)
        row = next(e for e in outcome.health if e.check == "truncated")
        assert row.action == "dropped" and "device_exec" in row.tables and row.offset is not None
        assert re.search(r"its \d+ complete events are read", row.message)
        assert re.search(r"device_exec lost at least \d+ rows", row.message)
        assert outcome.tables["run_info"].column("clock")[0].as_py() == "kineto_relative"


# --- Kineto: byte damage, values, duplicates ---------------------------------------------------------------

@FUZZ
@given(st.data())
def test_byte_flips(data):
    """Any flipped bytes: the trace is read (each change it notices in the ledger) or refused with its name."""
    gz = data.draw(st.booleans(), label="gzip")
    original = KINETO.read_bytes()
    raw = gzip.compress(original, mtime=0) if gz else original
    damaged = data.draw(byte_flips(raw), label="damaged")
    name = "rank-0.pt.trace.json" + (".gz" if gz else "")
    with _folder(name, damaged) as folder:
        outcome = read_damaged(folder)
        _assert_well_formed(outcome, folder / name)


#: JSON tokens put in place of a number, and what the reader must do with the event (by field kind).
_TIME_VALUES = {"NaN": "non_finite", "Infinity": "non_finite", "-Infinity": "non_finite", "1e400": "non_finite",
                "99999999999999999999999": "out_of_range", "9223372036854775808": "out_of_range",
                "1e30": "out_of_range", '"abc"': "malformed_record", "true": "malformed_record",
                "[]": "malformed_record", "{}": "malformed_record", "null": "malformed_record",
                '"\\u00ff\\u0000"': "malformed_record"}
_ID_VALUES = ["NaN", "1e30", "99999999999999999999", '"x"', "[1]", "{}", "true"]


def _with_value(event_index: int, field: str, token: str) -> bytes:
    """The Kineto fixture with one field of one event replaced by a raw JSON token (args fields inside args)."""
    trace = json.loads(KINETO.read_text(), parse_float=Decimal)
    event = trace["traceEvents"][event_index]
    holder = event.setdefault("args", {}) if field in ("External id", "correlation", "Bytes", "stream", "wait_on_stream",
                                                       "wait_on_cuda_event_record_corr_id") else event
    holder[field] = "__BAD__"
    return json.dumps(trace, default=str, indent=1).replace('"__BAD__"', token).encode()


def _table_of(event: dict) -> str:
    cat = event.get("cat")
    return ("host_op" if cat in HOST_CATS else "host_api" if cat in API_CATS else "device_exec"
            if cat in DEVICE_CATS else "memory_event" if event.get("name") == "[memory]" else "")


@FUZZ
@given(st.data())
def test_bad_times_and_durations(data):
    """NaN, infinities, numbers beyond int64 and wrong types in ts or dur: the event is left out, counted under the
    right check; a negative duration is a negative_duration row; nothing else changes."""
    trace = json.loads(KINETO.read_text(), parse_float=Decimal)
    candidates = [i for i, e in enumerate(trace["traceEvents"]) if _table_of(e) and e.get("ph") == "X"]
    index = data.draw(st.sampled_from(candidates), label="event")
    field = data.draw(st.sampled_from(["ts", "dur"]), label="field")
    token = data.draw(st.sampled_from([*_TIME_VALUES, "-1", "-1e30"]), label="value")
    expected = _TIME_VALUES.get(token) or ("out_of_range" if token == "-1e30" else
                                           "negative_duration" if field == "dur" else None)
    table = _table_of(trace["traceEvents"][index])
    before = _table_counts(trace["traceEvents"])
    damaged = _with_value(index, field, token)
    with _folder("rank-0.pt.trace.json", damaged) as folder:
        outcome = read_damaged(folder)
        _assert_well_formed(outcome, folder / "rank-0.pt.trace.json")
        assert not outcome.errors
        if expected is None:  # a negative start is a time like any other
            assert outcome.rows(table) == before[table]
            return
        assert outcome.rows(table) == before[table] - 1
        assert _rows(outcome, expected, "dropped") == 1, outcome.health
        row = next(e for e in outcome.health if e.check == expected)
        event_start = damaged.index(b"{", ([_ARRAY.search(damaged).end()] + _boundaries(damaged))[index])
        assert row.offset in (None, event_start)  # where the copy keeps the file's bytes: the bad event


@FUZZ
@given(st.data())
def test_bad_ids_and_sizes(data):
    """An External id, correlation id, stream, CUDA event sync id (wait_on_stream, its cudaEventRecord's correlation)
    or allocation size that is not an integer: the event is kept with no id (a repaired row); an allocation without a
    readable size is left out (a malformed_record row)."""
    trace = json.loads(KINETO.read_text(), parse_float=Decimal)
    events = trace["traceEvents"]
    field = data.draw(st.sampled_from(["External id", "correlation", "stream", "Bytes", "wait_on_stream",
                                       "wait_on_cuda_event_record_corr_id"]), label="field")
    wanted = "memory_event" if field == "Bytes" else "device_exec" if field.startswith(("stream", "wait")) else None
    candidates = [i for i, e in enumerate(events) if _table_of(e) and (wanted is None or _table_of(e) == wanted)
                  and (field != "Bytes" or e.get("ph") == "i")]
    index = data.draw(st.sampled_from(candidates), label="event")
    token = data.draw(st.sampled_from(_ID_VALUES), label="value")
    table = _table_of(events[index])
    before = _table_counts(events)
    with _folder("rank-0.pt.trace.json", _with_value(index, field, token)) as folder:
        outcome = read_damaged(folder)
        _assert_well_formed(outcome, folder / "rank-0.pt.trace.json")
        if field == "Bytes":
            assert outcome.rows(table) == before[table] - 1
            assert _rows(outcome, "malformed_record", "dropped") == 1
        else:
            assert outcome.rows(table) == before[table]
            assert _rows(outcome, "malformed_record", "repaired") == 1


@FUZZ
@given(st.data())
def test_duplicated_and_reordered_events(data):
    """An event repeated exactly is counted once (a duplicate_record row); events swapped change no count."""
    trace = json.loads(KINETO.read_text(), parse_float=Decimal)
    events = trace["traceEvents"]
    index = data.draw(st.integers(0, len(events) - 2), label="event")
    kind = data.draw(st.sampled_from(["duplicate", "swap"]), label="edit")
    before = _table_counts(events)
    table_event = bool(_table_of(events[index])) and (events[index].get("ph") == "X"
                                                      or events[index].get("name") == "[memory]")
    if kind == "duplicate":
        events.insert(data.draw(st.integers(0, len(events)), label="where"), dict(events[index]))
    else:
        events[index], events[index + 1] = events[index + 1], events[index]
    with _folder("rank-0.pt.trace.json", json.dumps(trace, default=str).encode()) as folder:
        outcome = read_damaged(folder)
        _assert_well_formed(outcome, folder / "rank-0.pt.trace.json")
        for table, count in before.items():
            assert outcome.rows(table) == count, table
        assert _rows(outcome, "duplicate_record", "dropped") == (kind == "duplicate" and table_event)
        assert not [e for e in outcome.health if e.lossy and e.check != "duplicate_record"]


@pytest.mark.parametrize("text, refused", [
    (b"", "empty file"), (b"  \n\t \n", "no \"traceEvents\" array"), (b"{", "no \"traceEvents\" array"),
    (b'{"traceEvents": {"a": 1}}', "no \"traceEvents\" array"),
    (b'{"traceEvents": [', "before its first complete event"),
    (b'{"x": ' + b"[" * 100_000 + b"]" * 100_000 + b', "traceEvents": []}', "nested too deeply"),
    (b'{"traceEvents": [{"ph": "X"}], "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
    (b'{"traceEvents": [{"ph": "X", "args": {"x": ' + b"[" * 100_000, "ends before its first complete event"),
], ids=["empty", "whitespace", "brace", "object", "no event", "deep head", "deep tail", "deep unclosed event"])
def test_unreadable_traces_are_refused_with_their_name(text: bytes, refused: str):
    with _folder("rank-0.pt.trace.json", text) as folder:
        outcome = read_damaged(folder)
        assert len(outcome.errors) == 1 and refused in str(outcome.errors[0]), outcome.errors
        _assert_well_formed(outcome, folder / "rank-0.pt.trace.json")
        if "nested" in refused or "complete event" in refused:
            assert outcome.errors[0].offset is not None


def test_deep_nesting_inside_args_is_read():
    """100000 nested '[' inside an event's args: the event is read (its args are not needed)."""
    event = '{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 10, "dur": 5, "args": {"x": '
    text = ('{"traceEvents": [' + event + "[" * 100_000 + "]" * 100_000 + "}}]}").encode()
    with _folder("rank-0.pt.trace.json", text) as folder:
        outcome = read_damaged(folder)
        assert not outcome.errors and outcome.rows("host_op") == 1


def test_elements_that_are_not_events_are_counted():
    trace = json.loads(KINETO.read_text())
    trace["traceEvents"][3:3] = [[1, 2], 5, "x"]
    with _folder("rank-0.pt.trace.json", json.dumps(trace).encode()) as folder:
        outcome = read_damaged(folder)
        _assert_well_formed(outcome, folder / "rank-0.pt.trace.json")
        assert _rows(outcome, "malformed_record", "dropped") == 3
        assert outcome.rows("host_op") == _table_counts(json.loads(KINETO.read_text())["traceEvents"])["host_op"]


@pytest.mark.parametrize("value", ['"soon"', "-5", "1e400", "99999999999999999999999", "17.5"])
def test_a_bad_base_time_is_a_clock_row(value: str):
    text = KINETO.read_bytes().replace(b'"baseTimeNanoseconds": 1727740800000000000',
                                       b'"baseTimeNanoseconds": ' + value.encode())
    with _folder("rank-0.pt.trace.json", text) as folder:
        outcome = read_damaged(folder)
        _assert_well_formed(outcome, folder / "rank-0.pt.trace.json")
        assert outcome.tables["run_info"].column("clock")[0].as_py() == "kineto_relative"
        assert _rows(outcome, "clock") > 0


def test_bad_utf8_is_repaired_and_counted():
    text = KINETO.read_bytes().replace(b'"aten::linear"', b'"aten::lin\xff\xfear"', 1)
    with _folder("rank-0.pt.trace.json", text) as folder:
        outcome = read_damaged(folder)
        _assert_well_formed(outcome, folder / "rank-0.pt.trace.json")
        assert _rows(outcome, "bad_encoding", "repaired") == 2
        assert "aten::lin\ufffd\ufffdar" in outcome.tables["host_op"].column("op_name").to_pylist()


# --- Nsight Systems -----------------------------------------------------------------------------------------

_NSYS_TIMED = {"CUPTI_ACTIVITY_KIND_KERNEL": "device_exec", "CUPTI_ACTIVITY_KIND_MEMCPY": "device_exec",
               "CUPTI_ACTIVITY_KIND_MEMSET": "device_exec", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": "device_exec",
               "CUPTI_ACTIVITY_KIND_RUNTIME": "host_api"}


def _export(folder: Path, *sql: str) -> Path:
    path = folder / "report1.sqlite"
    shutil.copy(NSYS, path)
    with sqlite3.connect(path) as db:
        for statement in sql:
            db.execute(statement)
    db.close()
    return path


def _count(path: Path, sql: str) -> int:
    """One number from the export (0 where a table it names is missing)."""
    with sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True) as db:
        try:
            value = db.execute(sql).fetchone()[0]
        except sqlite3.OperationalError as exc:
            assert "no such table" in str(exc)
            value = 0
    db.close()
    return value


def _expected_nsys(path: Path) -> dict[str, int]:
    """Rows per table from the export itself: intervals with integer times in range, end >= start, once each; device
    activities that start no earlier than their launching call."""
    ok = ('typeof(start) IN (\'integer\', \'real\') AND typeof("end") IN (\'integer\', \'real\') AND abs(start) < 4.6e18 '
          'AND abs("end") < 4.6e18 AND round("end") >= round(start)')
    calls = (f"SELECT (globalTid >> 24) & 16777215 AS pid, correlationId, min(start) AS call_start "
             f"FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE {ok} GROUP BY 1, 2")
    launched_after = (f"NOT EXISTS (SELECT 1 FROM ({calls}) c WHERE c.correlationId = a.correlationId "
                      "AND c.pid = (a.globalPid >> 24) & 16777215 AND a.start < c.call_start)")  # else a damaged time
    device = sum(_count(path, f"SELECT count(*) FROM (SELECT DISTINCT * FROM {t} a WHERE {ok} AND {launched_after})")
                 for t, table in _NSYS_TIMED.items() if table == "device_exec")
    api = _count(path, f"SELECT count(*) FROM (SELECT DISTINCT * FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE {ok})")
    return {"device_exec": device, "host_api": api}


@FUZZ
@given(st.data())
def test_nsys_bad_values(data):
    """A value of the wrong storage class, NULL, huge or an end before the start in an activity or runtime row: the
    row is kept (exact or rounded REAL, id read as none: ledger rows) or left out (times unusable), as counted."""
    table = data.draw(st.sampled_from(sorted(_NSYS_TIMED)), label="table")
    column = data.draw(st.sampled_from(["start", "end", "correlationId", "streamId" if table != "CUPTI_ACTIVITY_KIND_"
                                        "RUNTIME" else "globalTid"]), label="column")
    value = data.draw(st.sampled_from(["NULL", "'soon'", "X'00ff'", "1e30", "-1e30", "start - 5", "start + 0.5",
                                       "CAST(start AS REAL)", "9223372036854775807", "-1"]), label="value")
    rowid = data.draw(st.integers(1, 2), label="row")
    with tempfile.TemporaryDirectory() as folder:
        try:
            path = _export(Path(folder), f'UPDATE {table} SET "{column}" = {value} WHERE rowid = {rowid}')
        except sqlite3.IntegrityError:  # a NOT NULL column: nsys never writes it so
            assume(False)
        expected = _expected_nsys(path)
        outcome = read_damaged(Path(folder))
        _assert_well_formed(outcome, path)
        assert not outcome.errors
        for name, count in expected.items():
            assert outcome.rows(name) == count, (name, outcome.rows(name), count)
        if column in ("start", "end") and value not in ("CAST(start AS REAL)", "-1") and expected != _expected_nsys(NSYS):
            assert any(e.action == "dropped" for e in outcome.health), outcome.health
        if value in ("'soon'", "X'00ff'", "1e30", "-1e30") or (value == "start + 0.5" and column != "start"):
            assert any(e.check == "malformed_record" and e.action == "repaired" for e in outcome.health)
        negative = _count(path, f'SELECT count(*) FROM {table} WHERE typeof(start) = \'integer\' AND '
                                f'typeof("end") = \'integer\' AND "end" < start AND abs(start) < 4.6e18')
        assert _rows(outcome, "negative_duration", "dropped") == negative


@FUZZ
@given(st.data())
def test_nsys_duplicates_missing_tables_and_blobs(data):
    table = data.draw(st.sampled_from(sorted(_NSYS_TIMED) + ["NVTX_EVENTS", "StringIds"]), label="table")
    edit = data.draw(st.sampled_from(["duplicate", "drop", "blob text", "blob metadata"]), label="edit")
    statements = {"duplicate": [f"INSERT INTO {table} SELECT * FROM {table} WHERE rowid = 1"]
                  if table != "StringIds" else ["CREATE TABLE s2 AS SELECT * FROM StringIds", "DROP TABLE StringIds",
                                                "CREATE TABLE StringIds AS SELECT * FROM s2 UNION ALL "
                                                "SELECT id, value || '?' FROM s2 WHERE rowid = 2"],
                  "drop": [f"DROP TABLE {table}"],
                  "blob text": ["UPDATE StringIds SET value = X'6B65726E656CFF00' WHERE rowid = 2"],
                  "blob metadata": ["UPDATE META_DATA_EXPORT SET value = X'00FF'",
                                    "UPDATE TARGET_INFO_GPU SET name = X'FF'",
                                    "UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = 1e400"]}[edit]
    with tempfile.TemporaryDirectory() as folder:
        path = _export(Path(folder), *statements)
        outcome = read_damaged(Path(folder))
        _assert_well_formed(outcome, path)
        if edit == "drop" and table == "StringIds":
            return  # names fall back to ids; nothing to count
        assert not outcome.errors
        if edit == "duplicate":
            expected = _expected_nsys(NSYS)
            for name, count in expected.items():
                assert outcome.rows(name) == count
            check = "conflicting_entry" if table == "StringIds" else "duplicate_record"
            assert _rows(outcome, check, "dropped") == 1
        if edit == "drop" and table in _NSYS_TIMED:
            assert outcome.rows(_NSYS_TIMED[table]) == _expected_nsys(path)[_NSYS_TIMED[table]]
        if edit == "blob text":
            assert _rows(outcome, "malformed_record", "repaired") == 1
            assert _rows(outcome, "bad_encoding", "repaired") == 1


@FUZZ
@given(st.data())
def test_nsys_cut_or_flipped(data):
    """A cut or flipped SQLite file: read (what it holds) or refused, naming the file; never a reader bug."""
    raw = NSYS.read_bytes()
    if data.draw(st.booleans(), label="cut"):
        damaged = raw[:data.draw(st.integers(0, len(raw)), label="at")]
    else:
        damaged = data.draw(byte_flips(raw), label="damaged")
    with _folder("report1.sqlite", damaged) as folder:
        outcome = read_damaged(folder)
        _assert_well_formed(outcome, folder / "report1.sqlite")


# --- the whole pipeline on damaged traces --------------------------------------------------------------------

@pytest.mark.parametrize("damage", ["kineto cut at 70 %", "kineto gzip cut", "nsys end before start"])
def test_analyse_a_damaged_trace(damage: str, tmp_path: Path):
    """The run completes as partial: the ledger's rows reach the summary, and the timeline is written."""
    folder = tmp_path / "in"
    folder.mkdir()
    if damage.startswith("nsys"):
        _export(folder, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET \"end\" = start - 5 WHERE rowid = 2")
        expected = {"negative_duration"}
    else:
        original = KINETO.read_bytes()
        if "gzip" in damage:
            packed = gzip.compress(original, mtime=0)
            (folder / "rank-0.pt.trace.json.gz").write_bytes(packed[:len(packed) * 2 // 3])
        else:
            (folder / "rank-0.pt.trace.json").write_bytes(original[:len(original) * 7 // 10])
        expected = {"truncated", "clock"}
    result = analyse_damaged(folder, tmp_path / "out")
    assert not isinstance(result, Exception), result
    assert result.exit_code == EXIT_PARTIAL
    assert expected <= set(result.health["checks"])
    assert (result.output / "timeline" / "trace.json").exists()


#: The committed trace's steps (ProfilerStep#1 from 0, #2 from 10,000 µs after its first event, 10,000 µs each).
_STEP_US = 10_000


@FUZZ
@given(step=st.sampled_from(["ProfilerStep#1", "ProfilerStep#2"]), shift=st.integers(-15_000, 15_000),
       swap=st.booleans())
def test_a_moved_profiler_step_never_takes_another_steps_ops(step: str, shift: int, swap: bool):
    """A ProfilerStep#N moved in time (time going backwards) or renumbered: a step that is kept holds only ops of
    its own step in the undamaged trace, and its FP point is one of them; a step left out is a lossy row (clock,
    dropped) naming how many. Oracle: the undamaged step of each cpu_op, from its start in the raw file (by hand:
    the steps are back to back). Exempt (documented): a step moved within its ops' gaps loses them to no step."""
    trace = json.loads(KINETO.read_text(), parse_float=Decimal)
    origin = min(e["ts"] for e in trace["traceEvents"] if e.get("ph") == "X")
    own_step = {}
    for event in trace["traceEvents"]:
        if event.get("cat") == "cpu_op":
            own_step[(event["name"], int((event["ts"] - origin) * 1000))] = int((event["ts"] - origin) // _STEP_US) + 1
        if event.get("cat") == "user_annotation" and event.get("name", "").startswith("ProfilerStep#"):
            if event["name"] == step:
                event["ts"] += shift
            if swap:
                event["name"] = {"ProfilerStep#1": "ProfilerStep#2", "ProfilerStep#2": "ProfilerStep#1"}[event["name"]]
    with _folder("rank-0.pt.trace.json", json.dumps(trace, default=str).encode()) as folder:
        outcome = read_damaged(folder)
    assert not outcome.errors
    base = int(origin * 1000) + BASE_NS
    points = outcome.tables["step_point"].to_pylist() if "step_point" in outcome.tables else []
    windows = {p["step"]: (next(q["ts_ns"] for q in points if q["step"] == p["step"] and q["kind"] == "step_start"),
                           next(q["ts_ns"] for q in points if q["step"] == p["step"] and q["kind"] == "step_end"))
               for p in points}
    ops = [(o["op_name"], o["start_ns"] - base) for o in outcome.tables["host_op"].to_pylist()
           if o["category"] == "cpu_op" or (o["op_name"], o["start_ns"] - base) in own_step]
    for number, (start, end) in windows.items():
        held = {own_step[op] for op in ops if op in own_step and start <= op[1] + base < end}
        assert held <= {number}, (number, held)
        fp = next((p for p in points if p["step"] == number and p["kind"] == "fp_start"), None)
        assert fp is None or own_step.get((fp["op_name"], fp["ts_ns"] - base)) == number
    left_out = 2 - len(windows)
    assert _rows(outcome, "clock", "dropped") == left_out
