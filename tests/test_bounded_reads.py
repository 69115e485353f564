"""Every read has a bound in memory: long lines, chunked CSV readers, capped whole-file reads.

* A line longer than MAX_LINE_BYTES (made small here) is a source error naming the file, the line and its
  byte offset, found without reading the rest of the line; a side JSON over MAX_JSON_BYTES and a
  whole-read record file over MAX_WHOLE_FILE_BYTES are source errors naming the file and its size.
* The CSV readers (msprof op_summary / kernel_details / step_trace, MindSpore gpu_activity_data and 1.x
  step_trace_raw) read in chunks of whole lines (CSV_CHUNK_BYTES, made small here): whatever the chunk
  size, the tables and the ledger are exactly those of a read in one chunk, duplicates spanning chunks,
  N/A rows and a cut last row included; and the numbers match an independent count of the file.
"""
from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES
from fuzzing import FUZZ, ReadOutcome, read_damaged
from profpipe.errors import InputError
from profpipe.ingest import lines

MSPROF = FIXTURES / "msprof_timeline"
MSPROF_SUMMARY = next(MSPROF.glob("PROF_*")).name + "/device_0/summary"
GPU_GRAPH = FIXTURES / "mindspore_gpu" / "graph_2x"
ERA_F = FIXTURES / "ascend_ms_era_f"
ERA_F_DETAILS = next(ERA_F.glob("*_ascend_ms")).name + "/ASCEND_PROFILER_OUTPUT/kernel_details.csv"
CPU = FIXTURES / "mindspore_cpu" / "mlp_graph"
CPU_OPS = next(CPU.glob("*_ascend_ms")).name + "/FRAMEWORK/cpu_op_execute_timestamp_0.txt"

#: (fixture, CSV inside it) of every CSV reader that streams.
CSVS = {
    "op_summary": (MSPROF, f"{MSPROF_SUMMARY}/op_summary_0_1_1.csv"),
    "msprof_step_trace": (MSPROF, f"{MSPROF_SUMMARY}/step_trace_0_1_1.csv"),
    "kernel_details": (ERA_F, ERA_F_DETAILS),
    "kernel_summary": (GPU_GRAPH, "profiler/gpu_activity_data_0.csv"),
    "step_trace_raw": (FIXTURES / "mindspore_hccl", "profiler/step_trace_raw_3_detail_time.csv"),
}


def _copy(fixture: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    shutil.copytree(fixture, folder)
    return folder


def _outcome(outcome: ReadOutcome) -> tuple[dict[str, object], list[tuple[object, ...]], list[str]]:
    """What a read gave, comparable: the tables' rows, the ledger events, the errors."""
    events = [(e.check, e.action, e.rows, e.path, e.line, e.offset, e.example, e.tables, e.message)
              for e in outcome.health]
    return ({name: table.to_pylist() for name, table in sorted(outcome.tables.items())}, events,
            [str(e) for e in outcome.errors])


def _read_with_chunk(folder: Path, chunk: int, monkeypatch: pytest.MonkeyPatch):
    with monkeypatch.context() as patch:
        patch.setattr(lines, "CSV_CHUNK_BYTES", chunk)
        return _outcome(read_damaged(folder))


def _scaled_op_summary(source: Path, copies: int) -> tuple[bytes, list[list[str]], int]:
    """The op_summary text repeated `copies` times (distinct task ids and times per copy), with a repeat of
    an early row near the end (a duplicate in another chunk), an N/A start and a cut last row; and the
    rows an independent parse expects to survive, and the line of the duplicate."""
    header, *rows = list(csv.reader(io.StringIO(source.read_text())))
    task, start = header.index("Task ID"), header.index("Task Start Time(us)")
    body = []
    for copy in range(copies):
        for row in rows:
            row = list(row)
            row[task] = str(int(row[task]) + 1000 * copy)
            row[start] = f"{float(row[start]) + 10_000 * copy:.3f}"
            body.append(row)
    duplicate = len(body) - 3
    body.insert(duplicate, list(body[1]))  # a duplicate far from its original
    body[1 + (len(body) - 5) // 2][start] = "N/A"
    kept = [row for i, row in enumerate(body) if row[start] != "N/A" and row not in body[:i]]
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([header, *body])
    return out.getvalue().encode() + b"1,99999,2,Default/Cut-op9,Cut,AI_CORE,50", kept, duplicate + 2


@FUZZ
@given(chunk=st.integers(1, 4000), copies=st.integers(2, 30))
def test_op_summary_in_chunks_is_the_read_in_one(chunk: int, copies: int, tmp_path_factory: pytest.TempPathFactory,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A many-chunk op_summary (a duplicate across chunks, an N/A start, a cut last row) gives exactly the
    tables and ledger of a read in one chunk, and the device_exec rows an independent parse expects."""
    folder = _copy(MSPROF, tmp_path_factory.mktemp("chunks"))
    target = folder / MSPROF_SUMMARY / "op_summary_0_1_1.csv"
    header_only = target.read_bytes().split(b"\n")[0] + b"\n"
    target.write_bytes(header_only)
    others = _read_with_chunk(folder, 1 << 30, monkeypatch)[0]["device_exec"]  # the rows of the other files
    text, kept, duplicate_line = _scaled_op_summary(FIXTURES / "msprof_timeline" / MSPROF_SUMMARY /
                                                    "op_summary_0_1_1.csv", copies)
    target.write_bytes(text)
    whole = _read_with_chunk(folder, 1 << 30, monkeypatch)
    chunked = _read_with_chunk(folder, chunk, monkeypatch)
    assert chunked == whole
    tables, events, errors = chunked
    assert not errors
    ours = {e[0]: e for e in events if e[3] == str(target)}
    assert {(e[0], e[1], e[2]) for e in ours.values()} == {
        ("truncated", "dropped", 1), ("duplicate_record", "dropped", 1), ("malformed_record", "dropped", 1)}
    assert ours["duplicate_record"][4] == duplicate_line
    assert ours["truncated"][4] == len(kept) + 4  # header, kept rows, the duplicate and the N/A row before it
    execs = tables["device_exec"]
    assert len(execs) == len(others) + len(kept)
    expected = sorted(round(float(row[6]) * 1000) for row in kept)  # Task Start Time(us) -> ns
    assert sorted(row["start_ns"] for row in execs if row not in others) == expected


@FUZZ
@given(name=st.sampled_from(sorted(CSVS)), chunk=st.integers(1, 600), repeat=st.integers(0, 3))
def test_every_csv_reader_in_chunks_is_the_read_in_one(name: str, chunk: int, repeat: int,
                                                       tmp_path_factory: pytest.TempPathFactory,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Each streaming CSV reader, its file with a data row repeated at the end (a duplicate in another chunk)
    and cut inside a last row: the same tables and ledger whatever the chunk size."""
    fixture, relative = CSVS[name]
    folder = _copy(fixture, tmp_path_factory.mktemp("csv"))
    target = folder / relative
    text = target.read_bytes()
    rows = text.splitlines(keepends=True)
    data_rows = [r for r in rows[1:] if r.strip()]
    extra = data_rows[min(repeat, len(data_rows) - 1)] if data_rows else b""
    target.write_bytes(text + extra + data_rows[0][: len(data_rows[0]) // 2].rstrip(b"\n"))
    whole = _read_with_chunk(folder, 1 << 30, monkeypatch)
    assert _read_with_chunk(folder, chunk, monkeypatch) == whole
    checks = {(e[0], e[3]) for e in whole[1]}
    assert ("truncated", str(target)) in checks or whole[2]


def _expect_too_long(outcome: ReadOutcome, target: Path, line: int, offset: int) -> None:
    [error] = outcome.errors
    assert isinstance(error, InputError)
    assert (error.path, error.line, error.offset) == (str(target), line, offset)
    assert "MAX_LINE_BYTES" in str(error)


@pytest.mark.parametrize("chunk", [16, 1 << 20])
def test_a_line_longer_than_the_limit_is_an_error_naming_line_and_offset(chunk: int, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """An op-timestamp line over MAX_LINE_BYTES: the source fails with the line and the line's offset, whether
    the line spans many read blocks (small chunk) or lies inside one."""
    folder = _copy(CPU, tmp_path)
    target = folder / CPU_OPS
    text = target.read_bytes().splitlines(keepends=True)
    longest = max(len(line) for line in text)
    long_line = text[2].rstrip(b"\n") + b" " + b"1,2,3 " * (longest // 6 + 10) + b"\n"
    text[2] = long_line
    target.write_bytes(b"".join(text))
    monkeypatch.setattr(lines, "MAX_LINE_BYTES", longest + 20)
    monkeypatch.setattr(lines, "CHUNK_BYTES", chunk)
    from profpipe.ingest import mindspore_framework
    original = lines.iter_line_frames

    def small_chunks(path, chunk_bytes=None, **options):  # the readers pass no chunk size: use the test's
        return original(path, chunk, **options)

    monkeypatch.setattr(mindspore_framework, "iter_line_frames", small_chunks)
    _expect_too_long(read_damaged(folder), target, 3, len(text[0]) + len(text[1]))


@pytest.mark.parametrize("chunk", [7, 1 << 20])
def test_a_csv_row_longer_than_the_limit_is_an_error(chunk: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _copy(MSPROF, tmp_path)
    target = folder / MSPROF_SUMMARY / "op_summary_0_1_1.csv"
    rows = target.read_bytes().splitlines(keepends=True)
    rows.insert(3, b"x" * 5000 + b"\n")
    target.write_bytes(b"".join(rows))
    monkeypatch.setattr(lines, "MAX_LINE_BYTES", 1000)
    monkeypatch.setattr(lines, "CSV_CHUNK_BYTES", chunk)
    _expect_too_long(read_damaged(folder), target, 4, sum(len(r) for r in rows[:3]))


def test_a_file_without_newline_is_refused_before_it_is_read_whole(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A huge file with no newline stops at the limit: the reads asked for stay near MAX_LINE_BYTES."""
    target = tmp_path / "one_line.txt"
    target.write_bytes(b"a" * (1 << 20))
    monkeypatch.setattr(lines, "MAX_LINE_BYTES", 10_000)
    read = []
    original = open

    class Counting:
        def __init__(self, handle):
            self.handle = handle

        def read(self, size):
            block = self.handle.read(size)
            read.append(len(block))
            return block

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

    monkeypatch.setattr("builtins.open", lambda path, mode="r", *a, **k: Counting(original(path, mode, *a, **k)))
    with pytest.raises(InputError) as caught:
        list(lines.iter_line_frames(target, chunk_bytes=4096))
    monkeypatch.undo()
    assert (caught.value.line, caught.value.offset) == (1, 0)
    assert sum(read) <= 10_000 + 4096


def test_a_side_json_over_the_cap_is_an_error_naming_its_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _copy(GPU_GRAPH, tmp_path)
    target = folder / "profiler" / "profiler_info_0.json"
    monkeypatch.setattr(lines, "MAX_JSON_BYTES", target.stat().st_size - 1)
    [error] = read_damaged(folder).errors
    assert isinstance(error, InputError) and error.path == str(target)
    assert f"{target.stat().st_size} bytes" in str(error) and "more than" in str(error)
    monkeypatch.setattr(lines, "MAX_JSON_BYTES", target.stat().st_size)
    assert not read_damaged(folder).errors


def test_read_capped_stops_at_the_cap(tmp_path: Path) -> None:
    target = tmp_path / "big.bin"
    target.write_bytes(b"\0" * 5000)
    assert lines.read_capped(target, 5000, "x") == b"\0" * 5000
    with pytest.raises(InputError, match="5000 bytes, more than the 4999 bytes"):
        lines.read_capped(target, 4999, "x")
