"""Bad input: empty, truncated, garbage and wrongly-typed files give one clear error naming file and line.

Each case copies a good fixture, damages one file, and checks the message; with several ranks
a bad rank is skipped and reported unless strict.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, run
from profpipe.cli import app
from profpipe.errors import InputError, ProfpipeError, UsageError, first_line_of

GPU = FIXTURES / "mindspore_gpu" / "graph_2x"
CPU = next((FIXTURES / "mindspore_cpu" / "mlp_graph").glob("*_ascend_ms"))

FILES = {
    "cpu_op": (CPU, "FRAMEWORK/cpu_op_execute_timestamp_0.txt"),
    "cpu_framework": (CPU, "FRAMEWORK/cpu_framework_0.txt"),
    "gpu_op": (GPU, "profiler/gpu_op_execute_timestamp_0.txt"),
    "activity": (GPU, "profiler/activity_execute_timestamp_0.txt"),
    "gpu_framework": (GPU, "profiler/gpu_framework_0.txt"),
    "step_trace": (GPU, "profiler/step_trace_profiling_0.txt"),
    "start_time": (GPU, "profiler/start_time_0.txt"),
    "kernel_summary": (GPU, "profiler/gpu_activity_data_0.csv"),
    "profiler_info": (GPU, "profiler/profiler_info_0.json"),
}


def _damaged(tmp_path: Path, kind: str, damage) -> tuple[Path, Path]:
    source, relative = FILES[kind]
    copy = tmp_path / "in"
    shutil.copytree(source, copy)
    target = copy / relative
    target.write_bytes(damage(target.read_bytes()))
    return copy, target


def _error(tmp_path: Path, kind: str, damage) -> InputError:
    copy, target = _damaged(tmp_path, kind, damage)
    with pytest.raises(InputError) as caught:
        run(copy, tmp_path / "out", strict=True)
    assert caught.value.path == str(target)
    assert not (tmp_path / "out").exists()
    return caught.value


@pytest.mark.parametrize("kind", [k for k in FILES if k != "step_trace"])
def test_empty_file(tmp_path, kind):
    error = _error(tmp_path, kind, lambda data: b"")
    assert "empty" in error.problem


def test_empty_step_trace_is_pynative_not_an_error(tmp_path):
    copy, _ = _damaged(tmp_path, "step_trace", lambda data: b"")
    result = run(copy, tmp_path / "out", strict=True)
    assert result.summary["ranks"][0]["steps"] == {"count": 0}


@pytest.mark.parametrize("kind", ["step_trace", "start_time"])
def test_truncated_file(tmp_path, kind):
    error = _error(tmp_path, kind, lambda data: data[: len(data) * 2 // 3])
    assert error.line is not None and error.line >= 1


@pytest.mark.parametrize("kind", ["cpu_op", "cpu_framework", "gpu_op", "activity", "gpu_framework"])
def test_truncated_file_keeps_the_complete_lines(tmp_path, kind):
    """A file cut inside a line: the complete lines are read, the partial one is dropped and reported;
    --strict makes that loss fatal."""
    copy, target = _damaged(tmp_path, kind, lambda data: data[: len(data) * 2 // 3])
    complete = target.read_bytes().count(b"\n")
    result = run(copy, tmp_path / "out")
    assert result.exit_code == 3
    [row] = [r for r in result.summary["health"]["rows"] if r["check_name"] == "truncated"]
    assert (row["action"], row["rows"], row["first_file"], row["first_line"]) == ("dropped", 1, str(target),
                                                                                   complete + 1)
    with pytest.raises(ProfpipeError, match="--strict: .*ends in the middle of this line"):
        run(copy, tmp_path / "out2", strict=True)


@pytest.mark.parametrize("kind", ["cpu_op", "gpu_op", "activity", "gpu_framework", "step_trace", "start_time",
                                  "kernel_summary", "profiler_info"])
def test_binary_garbage(tmp_path, kind):
    error = _error(tmp_path, kind, lambda data: bytes(range(256)) * 4)
    assert error.offset is not None or error.line is not None


def test_wrong_number_names_the_line(tmp_path):
    def damage(data: bytes) -> bytes:
        lines = data.split(b"\n")
        lines[2] = lines[2].replace(b";7;", b";seven;", 1)
        return b"\n".join(lines)

    error = _error(tmp_path, "activity", damage)
    assert error.line == 3
    assert "seven" in str(error)


def test_wrong_duration_in_op_file_names_the_line(tmp_path):
    def damage(data: bytes) -> bytes:
        lines = data.split(b"\n")
        head, _, executions = lines[1].partition(b";GpuOps;")
        lines[1] = head + b";GpuOps;" + executions.replace(b",", b",abc", 1)
        return b"\n".join(lines)

    error = _error(tmp_path, "gpu_op", damage)
    assert error.line == 2


def test_step_trace_with_unequal_point_lines(tmp_path):
    def damage(data: bytes) -> bytes:
        lines = data.split(b"\n")
        lines[1] = lines[1].rsplit(b" ", 1)[0]
        return b"\n".join(lines)

    error = _error(tmp_path, "step_trace", damage)
    assert error.line == 2


def test_bad_rank_is_skipped_unless_strict(tmp_path):
    copy = tmp_path / "in"
    shutil.copytree(FIXTURES / "mindspore_gpu" / "two_ranks", copy)
    (copy / "profiler" / "activity_execute_timestamp_1.txt").write_bytes(b"\x00\x01garbage")
    result = run(copy, tmp_path / "out")
    assert result.ranks == [0]
    assert [s["rank"] for s in result.skipped] == [1]
    assert result.exit_code == 3
    assert "activity_execute_timestamp_1.txt" in result.skipped[0]["error"]
    with pytest.raises(InputError):
        run(copy, tmp_path / "out2", strict=True)


def test_cli_reports_bad_input_without_traceback(tmp_path):
    copy, target = _damaged(tmp_path, "gpu_op", lambda data: data[:-5])
    outcome = CliRunner().invoke(app, ["analyse", str(copy), "-o", str(tmp_path / "out"), "--strict"])
    assert outcome.exit_code == 1  # nothing usable: --strict made the damaged source fatal
    assert str(target) in outcome.output and "line" in outcome.output
    assert "Traceback" not in outcome.output


def test_cli_exit_3_when_a_rank_is_skipped(tmp_path):
    copy = tmp_path / "in"
    shutil.copytree(FIXTURES / "mindspore_gpu" / "two_ranks", copy)
    (copy / "profiler" / "start_time_1.txt").write_text("host_monotonic_raw_time(ns): x\n")
    outcome = CliRunner().invoke(app, ["analyse", str(copy), "-o", str(tmp_path / "out")])
    assert outcome.exit_code == 3
    assert "rank 1: source_failed -> source_skipped" in outcome.output
    assert "start_time_1.txt" in outcome.output


def test_no_profiler_data(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ProfpipeError, match="no profiler data"):
        run(tmp_path / "empty", tmp_path / "out")


def test_missing_input_folder(tmp_path):
    with pytest.raises(UsageError, match="no such file"):
        run(tmp_path / "absent", tmp_path / "out")


def test_first_line_of_a_library_message():
    """A library's message is quoted by its first line; an empty one (DuckDB's, on CPython 3.11.2, where it
    quotes bytes that are not UTF-8) by the exception's type name and a fallback, never an IndexError."""
    assert first_line_of(duckdb.ParserException("Parser Error: syntax error\n\nLINE 1: SELEC")) == \
        "Parser Error: syntax error"
    assert first_line_of(duckdb.InvalidInputException()) == "InvalidInputException: no message"
    assert first_line_of(OSError(" \n"), "unreadable") == "OSError: unreadable"
