"""Times that go backwards in MindSpore CPU/GPU framework files and msprof task CSVs, and executions of 0 ns (issue 44).

MindSpore writes an op's executions on its line in time order, and a kernel's executions in time order; msprof
writes a stream's tasks in time order. An execution that starts before the one before it is a damaged time (op
files: left out, clock, dropped) or lines moved (activity file, task CSVs: counted, kept, since the rows are read by
their times and no number changes). Executions of 0 ns are legitimate (below the files' resolution): counted, kept.
Oracles: the fixture files themselves, edited here by hand; hypothesis moves one start.
"""
from __future__ import annotations

import shutil
from decimal import Decimal
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES
from fuzzing import FUZZ, read_damaged

GPU = FIXTURES / "mindspore_gpu" / "graph_2x"
GPU_OPS = "profiler/gpu_op_execute_timestamp_0.txt"
ACTIVITY = "profiler/activity_execute_timestamp_0.txt"
CPU = FIXTURES / "mindspore_cpu" / "mlp_graph"
CPU_OPS = next(p.relative_to(CPU) for p in CPU.rglob("cpu_op_execute_timestamp_0.txt"))
MSPROF = FIXTURES / "msprof_smallnet"
OP_SUMMARY = next(p.relative_to(MSPROF) for p in MSPROF.rglob("op_summary_0_1_1.csv"))


def _edited(folder: Path, fixture: Path, relative: str | Path, edit) -> Path:
    """A copy of `fixture` in `folder` with the lines of `relative` passed through `edit`."""
    shutil.copytree(fixture, folder, dirs_exist_ok=True)
    target = folder / relative
    target.write_text("\n".join(edit(target.read_text().splitlines())) + "\n")
    return folder


def _executions(lines: list[str]) -> list[list[str]]:
    return [line.split(";")[2].split() for line in lines]


def _with_execution(lines: list[str], line: int, index: int, text: str) -> list[str]:
    """`lines` with execution `index` of line `line` replaced by `text`."""
    out = list(lines)
    name, kind, executions = out[line].split(";")
    parts = executions.split()
    parts[index] = text
    out[line] = f"{name};{kind};{' '.join(parts)} "
    return out


def _ledger(outcome) -> dict[tuple[str, str], int]:
    rows: dict[tuple[str, str], int] = {}
    for e in outcome.health:
        rows[(e.check, e.action)] = rows.get((e.check, e.action), 0) + (e.rows or 0)
    return rows


def _ops(outcome) -> list[tuple[str, int, int]]:
    table = outcome.tables["host_op"]
    return sorted(zip(table.column("op_name").to_pylist(), table.column("start_ns").to_pylist(),
                      table.column("dur_ns").to_pylist()))


def test_a_gpu_op_execution_that_goes_back_in_time_is_left_out_and_counted(tmp_path: Path):
    clean = read_damaged(_edited(tmp_path / "clean", GPU, GPU_OPS, lambda lines: lines))
    lines = (GPU / GPU_OPS).read_text().splitlines()
    first_start = int(_executions(lines)[1][0].split(",")[0])
    moved = f"{first_start - 1_000},12.5"  # execution 3 of line 2 now starts 1 µs before execution 1
    outcome = read_damaged(_edited(tmp_path / "in", GPU, GPU_OPS, lambda ls: _with_execution(ls, 1, 2, moved)))
    assert _ledger(outcome)[("clock", "dropped")] == 1
    lost = lines[1].split(";")[0], int(_executions(lines)[1][2].split(",")[0])
    assert _ops(outcome) == [op for op in _ops(clean) if op[:2] != lost]
    assert outcome.lossy


def test_a_cpu_op_execution_that_goes_back_in_time_is_left_out_and_counted(tmp_path: Path):
    lines = (CPU / CPU_OPS).read_text().splitlines()
    start, dur, tid = _executions(lines)[0][1].split(",")
    earlier = f"{int(_executions(lines)[0][0].split(',')[0]) - 5},{dur},{tid}"
    outcome = read_damaged(_edited(tmp_path / "in", CPU, CPU_OPS, lambda ls: _with_execution(ls, 0, 1, earlier)))
    clean = read_damaged(_edited(tmp_path / "clean", CPU, CPU_OPS, lambda ls: ls))
    assert _ledger(outcome)[("clock", "dropped")] == 1
    assert len(_ops(outcome)) == len(_ops(clean)) - 1
    assert "clock" not in {e.check for e in clean.health}


def test_activity_lines_moved_are_counted_and_keep_every_number(tmp_path: Path):
    lines = (GPU / ACTIVITY).read_text().splitlines()
    name = lines[0].rsplit(";", 3)[0]
    later = next(i for i, line in enumerate(lines[1:], 1) if line.rsplit(";", 3)[0] == name)
    swapped = [lines[later], *lines[1:later], lines[0], *lines[later + 1:]]
    outcome = read_damaged(_edited(tmp_path / "in", GPU, ACTIVITY, lambda ls: swapped))
    clean = read_damaged(_edited(tmp_path / "clean", GPU, ACTIVITY, lambda ls: ls))
    assert _ledger(outcome) == {**_ledger(clean), ("clock", "kept"): 1}
    assert sorted(outcome.tables["device_exec"].to_pylist(), key=str) == \
        sorted(clean.tables["device_exec"].to_pylist(), key=str)
    assert not outcome.lossy


def test_executions_of_0_ns_are_counted_and_kept(tmp_path: Path):
    def zero(lines: list[str]) -> list[str]:
        return [line.rsplit(";", 1)[0] + ";0" if i in (2, 5) else line for i, line in enumerate(lines)]

    outcome = read_damaged(_edited(tmp_path / "in", GPU, ACTIVITY, zero))
    assert _ledger(outcome) == {("out_of_range", "kept"): 2}
    durations = outcome.tables["device_exec"].column("dur_ns").to_pylist()
    assert durations.count(0) == 2 and len(durations) == len((GPU / ACTIVITY).read_text().splitlines())
    start = _executions((GPU / GPU_OPS).read_text().splitlines())[0][1].split(",")[0]
    ops = read_damaged(_edited(tmp_path / "ops", GPU, GPU_OPS, lambda ls: _with_execution(ls, 0, 1, f"{start},0")))
    assert _ledger(ops) == {("out_of_range", "kept"): 1}
    assert not outcome.lossy and not ops.lossy


@FUZZ
@given(line=st.integers(0, 9), index=st.integers(1, 4), back_ns=st.integers(1, 10**12))
def test_a_start_moved_back_is_never_silent(line: int, index: int, back_ns: int, tmp_path_factory):
    """Any execution's start moved before the execution before it: left out and counted, every other execution
    as it was (their total less the one left out)."""
    lines = (GPU / GPU_OPS).read_text().splitlines()
    line %= len(lines)
    executions = _executions(lines)[line]
    index %= len(executions)
    index = max(index, 1)
    previous = int(executions[index - 1].split(",")[0])
    start, dur = executions[index].split(",")
    folder = tmp_path_factory.mktemp("moved")
    outcome = read_damaged(_edited(folder, GPU, GPU_OPS,
                                   lambda ls: _with_execution(ls, line, index, f"{previous - back_ns},{dur}")))
    clean_total = sum(round(float(e.split(",")[1]) * 1000) for ex in _executions(lines) for e in ex)
    assert _ledger(outcome) == {("clock", "dropped"): 1}
    device = [r["dur_ns"] for r in outcome.tables["host_op"].to_pylist() if r["side"] == "Device"]
    assert sum(device) == clean_total - round(float(dur) * 1000)


def _tasks(outcome) -> list[tuple]:
    return sorted((r["stream_id"], r["task_id"], r["start_ns"], r["dur_ns"], r["name"])
                  for r in outcome.tables["device_exec"].to_pylist())


def test_msprof_task_rows_moved_are_counted_and_keep_every_number(tmp_path: Path):
    clean = read_damaged(_edited(tmp_path / "clean", MSPROF, OP_SUMMARY, lambda ls: ls))
    swapped = read_damaged(_edited(tmp_path / "in", MSPROF, OP_SUMMARY, lambda ls: [ls[0], ls[2], ls[1], *ls[3:]]))
    assert _ledger(swapped) == {("clock", "kept"): 1}
    assert _tasks(swapped) == _tasks(clean)
    assert not swapped.lossy and not clean.health


@FUZZ
@given(row=st.integers(2, 40), back_us=st.integers(1, 5_000_000))
def test_an_msprof_task_that_goes_back_on_its_stream_is_counted(row: int, back_us: int, tmp_path_factory):
    """A task row's start moved before the row before it on its stream: counted (clock, kept); that task moved by
    exactly the change and every other task as it was."""
    lines = (MSPROF / OP_SUMMARY).read_text().splitlines()
    row = 2 + row % (len(lines) - 2)
    fields = lines[row].split(",")
    stream = fields[2]
    previous = next(line.split(",") for line in reversed(lines[1:row]) if line.split(",")[2] == stream)
    start = int(Decimal(previous[6]) * 1000) - back_us * 1000  # ns, exact
    fields[6] = str(Decimal(start) / 1000)
    edited = [*lines[:row], ",".join(fields), *lines[row + 1:]]
    outcome = read_damaged(_edited(tmp_path_factory.mktemp("moved"), MSPROF, OP_SUMMARY, lambda ls: edited))
    clean = read_damaged(_edited(tmp_path_factory.mktemp("clean"), MSPROF, OP_SUMMARY, lambda ls: ls))
    assert _ledger(outcome) == {("clock", "kept"): 1}
    moved = set(_tasks(outcome)) - set(_tasks(clean))
    assert len(moved) == 1 and len(_tasks(outcome)) == len(_tasks(clean))
    assert next(iter(moved))[2] == start
