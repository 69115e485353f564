"""Damage tests for the host info reader (profpipe/ingest/host_info.py): property-based, on copies of the generated
fixture (fixtures/host_info).

Each test damages host_info_0.csv and reads the folder as the runner does (tests/fuzzing.read_damaged: no reader
bug, input untouched). The counts are checked, not only the absence of a crash: every data line of the damaged file
is either a host_info_record row or counted in a ledger row; a cut keeps exactly the complete lines before it; a bad
number in a field drops exactly that row and names its line; the other rank's file is never touched by the damage.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES, query
from fuzzing import BAD_NUMBERS, FUZZ, analyse_damaged, byte_flips, read_damaged, truncations
from profpipe.ingest.host_info import HEADER

HOST = FIXTURES / "host_info"
FILE = "profiler/host_info/host_info_0.csv"
DATA = (HOST / FILE).read_bytes()
DATA_LINES = DATA.split(b"\n")[1:-1]
OTHER_RANK_ROWS = len((HOST / "profiler/host_info/host_info_1.csv").read_bytes().split(b"\n")) - 2
NUMERIC_FIELDS = {0: "tid", 1: "pid", 2: "parent_pid", 6: "level", 7: "start_end", 9: "memory_usage(kB)",
                  10: "time_stamp(us)"}


def _damaged(tmp_path: Path, data: bytes) -> Path:
    folder = tmp_path / "in"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(HOST / "profiler", folder / "profiler")
    (folder / FILE).write_bytes(data)
    return folder


def _rank0_rows(outcome) -> int:
    table = outcome.tables.get("host_info_record")
    return 0 if table is None else sum(1 for r in table.column("rank").to_pylist() if r == 0)


def _rank1_rows(outcome) -> int:
    table = outcome.tables.get("host_info_record")
    return 0 if table is None else sum(1 for r in table.column("rank").to_pylist() if r == 1)


def _dropped_rows(outcome) -> int:
    return sum(e.rows or 0 for e in outcome.health if e.action == "dropped" and e.check != "truncated")


@FUZZ
@given(data=st.data())
def test_a_cut_keeps_exactly_the_complete_lines(data: st.DataObject, tmp_path: Path) -> None:
    cut = data.draw(truncations(DATA))
    outcome = read_damaged(_damaged(tmp_path, cut))
    assert _rank1_rows(outcome) == OTHER_RANK_ROWS  # one bad file never costs the others
    complete = cut[:cut.rfind(b"\n") + 1]
    header_whole = complete.startswith(HEADER.encode() + b"\n")
    if not header_whole:  # nothing or a cut header: the log is left out with a ledger row (or there is no file)
        assert _rank0_rows(outcome) == 0
        if cut.strip():
            assert any(e.action == "dropped" and e.tables == "host_info_record" for e in outcome.health)
        return
    kept = complete.count(b"\n") - 1
    assert _rank0_rows(outcome) == kept
    partial = cut[len(complete):]
    truncated = [e for e in outcome.health if e.check == "truncated"]
    assert bool(truncated) == bool(partial.strip())
    if truncated:
        assert truncated[0].rows == 1 and truncated[0].line == kept + 2


@FUZZ
@given(row=st.integers(0, len(DATA_LINES) - 1), field=st.sampled_from(sorted(NUMERIC_FIELDS)),
       value=st.sampled_from([v for v in BAD_NUMBERS if b"," not in v and b'"' not in v and v.isascii()]))
def test_a_bad_number_drops_exactly_its_row_and_names_its_line(row: int, field: int, value: bytes,
                                                                tmp_path: Path) -> None:
    fields = DATA_LINES[row].split(b",")
    if b'"' in DATA_LINES[row]:  # the quoted custom info holds commas: fields counted from the end there
        field = field if field < 8 else field - 11
    fields[field] = value
    lines = list(DATA_LINES)
    lines[row] = b",".join(fields)
    damaged = HEADER.encode() + b"\n" + b"\n".join(lines) + b"\n"
    outcome = read_damaged(_damaged(tmp_path, damaged))
    try:
        still_valid = int(value) >= 0 and (NUMERIC_FIELDS[field % 11] != "start_end" or int(value) in (0, 1, 2)) \
            and int(value) < 2**62 // 1024
    except ValueError:
        still_valid = False
    if still_valid:  # e.g. "-1" is no valid value anywhere, but a huge tid is out of range only by size
        assert _rank0_rows(outcome) == len(DATA_LINES)
        return
    assert _rank0_rows(outcome) == len(DATA_LINES) - 1
    [event] = [e for e in outcome.health if e.action == "dropped"]
    assert event.rows == 1 and event.line == row + 2
    assert event.check in {"malformed_record", "out_of_range", "unknown_tag"}


@FUZZ
@given(data=st.data())
def test_byte_flips_leave_every_line_kept_or_counted(data: st.DataObject, tmp_path: Path) -> None:
    damaged = data.draw(byte_flips(DATA))
    outcome = read_damaged(_damaged(tmp_path, damaged))
    assert _rank1_rows(outcome) == OTHER_RANK_ROWS
    left_out = [e for e in outcome.health if e.tables == "host_info_record" and e.rows is None]
    if left_out:  # not UTF-8, a NUL byte, a damaged header: the whole log left out
        assert _rank0_rows(outcome) == 0
        return
    body = damaged[:damaged.rfind(b"\n") + 1].split(b"\n")[1:-1]
    lines = [line for line in body if line.strip() and line.strip() != HEADER.encode()]
    assert _rank0_rows(outcome) + _dropped_rows(outcome) == len(lines)


@pytest.mark.parametrize("damage", [lambda d: d[:len(d) // 2], lambda d: b"\xff" * 40, lambda d: b"",
                                    lambda d: d.replace(b",1,0,", b",1,7,", 1)])
def test_the_rank_s_gpu_data_survives_a_damaged_host_info(damage, tmp_path: Path) -> None:
    folder = tmp_path / "in" / "profiler"
    shutil.copytree(FIXTURES / "mindspore_gpu" / "graph_2x" / "profiler", folder)
    shutil.copytree(HOST / "profiler" / "host_info", folder / "host_info")
    (folder / "host_info" / "host_info_0.csv").write_bytes(damage(DATA))
    result = analyse_damaged(tmp_path / "in", tmp_path / "out")
    assert not isinstance(result, Exception)
    assert query(tmp_path / "out", "SELECT count(*) > 0 FROM op_detail_stats WHERE rank = 0") == [(True,)]
    assert result.exit_code == 3  # partial: the ledger says what was lost
