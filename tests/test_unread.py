"""Never an empty success (profpipe/unread.py, run.py): a run that read no event exits 1 and names what it found and
why none of it was read; files of a known profiler that no source reads are a trace_health row (unread_file,
source_skipped: exit 3) unless they are the profiler's own summaries of data that was read beside them."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from conftest import FIXTURES, REPO, run
from fuzzing import FUZZ, analyse_damaged
from profpipe.cli import app
from profpipe.errors import EXIT_NOTHING_USABLE, EXIT_PARTIAL, ProfpipeError
from profpipe.tables import catalog
from profpipe.unread import DESCRIPTIVE_TABLES, KINDS

STACK = FIXTURES / "mindspore_stack"  # one *_ascend_ms folder: kernel_details.csv, trace_view.json, profiler_info_0
KINETO = FIXTURES / "kineto" / "current" / "rank-0.pt.trace.json"


def _analyse(folder: Path, out: Path) -> tuple[int, str]:
    outcome = CliRunner().invoke(app, ["analyse", str(folder), "-o", str(out)])
    assert outcome.exception is None or isinstance(outcome.exception, SystemExit), outcome.exception
    return outcome.exit_code, outcome.output


def test_descriptive_tables_are_tables_and_the_page_lists_them() -> None:
    assert DESCRIPTIVE_TABLES <= set(catalog())
    text = (REPO / "docs" / "health.md").read_text(encoding="utf-8")
    sentence = text.split("the descriptive tables are ", 1)[1].split(" (", 1)[0]
    assert set(re.findall(r"`(\w+)`", sentence)) == set(DESCRIPTIVE_TABLES)
    listed = text.split("## What a run did not read", 1)[1]
    assert {cell.strip() for cell in re.findall(r"^\| ([^|`]+?) \|", listed, flags=re.M)} - {"kind"} == {
        kind.name for kind in KINDS}, "docs/health.md's table of kinds and profpipe/unread.py's KINDS differ"


def test_a_db_export_alone_is_named_not_an_empty_success(tmp_path: Path) -> None:
    """The torch_npu db export (no text files): exit 1, the message names the db files (by the db reader's error
    once there is one, by the inventory before)."""
    rank = tmp_path / "in" / "rank0_ascend_pt"
    (rank / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    (rank / "profiler_info_0.json").write_text('{"rank_id": 0}')
    (rank / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db").write_bytes(b"not a database")
    code, output = _analyse(tmp_path / "in", tmp_path / "out")
    assert code == EXIT_NOTHING_USABLE
    assert "read no event" in output and "ascend_pytorch_profiler_0.db" in output
    assert not (tmp_path / "out").exists()


def test_a_source_read_without_events_exits_1_and_says_so(tmp_path: Path) -> None:
    """A trace with no event used to be "wrote OUT", exit 0, an empty profile."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "rank0.pt.trace.json").write_text('{"traceEvents": [], "distributedInfo": {"rank": 0}}')
    code, output = _analyse(tmp_path / "in", tmp_path / "out")
    assert code == EXIT_NOTHING_USABLE
    assert "read no event" in output and "gave no event" in output and "rank0.pt.trace.json" in output


def test_every_source_failing_names_each_error(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "rank0.pt.trace.json").write_text('{"traceEvents": [{"ph": "X", ')
    (tmp_path / "in" / "report1.nsys-rep").write_bytes(b"\0" * 16)
    code, output = _analyse(tmp_path / "in", tmp_path / "out")
    assert code == EXIT_NOTHING_USABLE
    assert "every source failed to read" in output and "rank0.pt.trace.json" in output
    assert "report1.nsys-rep" in output and "nsys export --type sqlite" in output


def test_an_unexported_nsys_report_beside_a_trace_is_a_health_row(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    shutil.copy(KINETO, tmp_path / "in")
    (tmp_path / "in" / "report1.nsys-rep").write_bytes(b"\0" * 16)
    result = run(tmp_path / "in", tmp_path / "out")
    rows = [r for r in result.health["rows"] if r["check_name"] == "unread_file"]
    assert [(r["action"], r["rows"], Path(str(r["first_file"])).name) for r in rows] == [
        ("source_skipped", 1, "report1.nsys-rep")]
    assert "nsys export --type sqlite" in str(rows[0]["message"])
    assert result.exit_code == EXIT_PARTIAL


def test_a_report_beside_its_sqlite_export_is_silent(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    shutil.copy(FIXTURES / "nsys" / "report1.sqlite", tmp_path / "in")
    (tmp_path / "in" / "report1.nsys-rep").write_bytes(b"\0" * 16)
    result = run(tmp_path / "in", tmp_path / "out")
    assert not [r for r in result.health["rows"] if r["check_name"] == "unread_file"]
    assert result.exit_code == run(FIXTURES / "nsys", tmp_path / "original").exit_code


def test_summaries_beside_read_data_are_silent_and_unknown_result_files_are_named(tmp_path: Path) -> None:
    copy = tmp_path / "in"
    shutil.copytree(STACK, copy)
    output = next(copy.glob("*/ASCEND_PROFILER_OUTPUT"))
    (output / "op_statistic.csv").write_text("OP Type,Core Type,Count\n")  # the profiler's summary: recomputed
    (output / "communication.json").write_text("{}")
    before = run(copy, tmp_path / "out1")
    assert not [r for r in before.health["rows"] if r["check_name"] == "unread_file"]
    assert before.exit_code == run(STACK, tmp_path / "out0").exit_code
    (output / "soc_pmu.csv").write_text("Stream Id,Task Id\n")  # data no reader takes
    after = run(copy, tmp_path / "out2")
    rows = [r for r in after.health["rows"] if r["check_name"] == "unread_file"]
    assert [(r["action"], Path(str(r["first_file"])).name) for r in rows] == [("source_skipped", "soc_pmu.csv")]
    assert after.exit_code == EXIT_PARTIAL


def test_a_trimmed_rank_beside_a_full_one_is_named(tmp_path: Path) -> None:
    """A rank folder holding only the profiler's summaries (msprof-analyze's trimmed ranks): its summaries are the
    only copy of its data, so they are named (until a reader takes them) and the run is partial."""
    copy = tmp_path / "in"
    shutil.copytree(STACK, copy / "rank0")
    trimmed = copy / "rank1" / "worker-1_5001_20260101000000000_ascend_ms"
    (trimmed / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    (trimmed / "profiler_info_1.json").write_text('{"rank_id": 1}')
    (trimmed / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv").write_text("Step,Computing\n")
    result = run(copy, tmp_path / "out")
    rows = [r for r in result.health["rows"] if r["check_name"] == "unread_file"]
    named = [Path(str(r["first_file"])).name for r in rows]
    assert named == ["step_trace_time.csv"] or (1 in result.ranks and not named)  # named, or read (a cluster reader)
    assert result.exit_code == EXIT_PARTIAL or not named


def test_no_profiler_file_at_all_keeps_the_looked_for_message(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "notes.txt").write_text("nothing here")
    code, output = _analyse(tmp_path / "in", tmp_path / "out")
    assert code == EXIT_NOTHING_USABLE and "no profiler data found" in output


CLUSTER = FIXTURES / "ascend_ms_cluster"  # two *_ascend_ms ranks: text export, PROF_* export, FRAMEWORK, summaries
CLUSTER_FILES = sorted(p.relative_to(CLUSTER) for p in CLUSTER.rglob("*") if p.is_file())


@settings(FUZZ, max_examples=max(FUZZ.max_examples // 5, 5))
@given(removed=st.sets(st.sampled_from(CLUSTER_FILES), min_size=1))
def test_files_removed_never_give_an_empty_success(removed: set[Path], tmp_path_factory: pytest.TempPathFactory) -> None:
    """Any files of a two-rank result removed (a trimmed or half-copied result): the run reads events or says why not
    (exit 1 naming what it found); never "wrote OUT" with no event, and what is left unread is named."""
    folder = tmp_path_factory.mktemp("removed")
    shutil.copytree(CLUSTER, folder / "in")
    for relative in removed:
        (folder / "in" / relative).unlink()
    outcome = analyse_damaged(folder / "in", folder / "out")
    if isinstance(outcome, ProfpipeError):
        assert outcome.exit_code == EXIT_NOTHING_USABLE
        assert "read no event" in str(outcome) or "no profiler data found" in str(outcome)
        return
    assert any(rows for table, rows in outcome.row_counts.items() if table not in DESCRIPTIVE_TABLES)
