"""msprof-analyze 26.2's cluster numbers on the real torch_npu Level 1 pair (fixtures/msprof_analyze/level1.json,
written by fixtures/generators/msprof_analyze.py, which runs the peer) are a second oracle for issue 43's step
phases and communication: here they are checked against the tool's own per-rank files (step_trace_time.csv,
analysis.db's StepTraceTime), so that a comparison with either is a comparison with both, and against their own
sums."""
from __future__ import annotations

import csv
import json
import sqlite3
from decimal import Decimal
from pathlib import Path

import pytest

from conftest import FIXTURES, realdata

EXPECTED = json.loads((FIXTURES / "msprof_analyze" / "level1.json").read_text(encoding="utf-8"))
SAMPLE = "Ascend-msinsight/test/data/pytorch"
PHASES = ("Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free", "Stage", "Bubble",
          "Communication(Not Overlapped and Exclude Receive)", "Preparing")


@pytest.mark.parametrize("rank", [0, 1])
def test_cluster_step_trace_is_each_rank_s_step_trace_time(rank: int) -> None:
    path = realdata(f"{SAMPLE}/text/level1/rank{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT/step_trace_time.csv")
    with open(path, newline="", encoding="utf-8") as handle:
        own = list(csv.DictReader(handle))
    cluster = [row for row in EXPECTED["text"]["step_trace"] if row["index"] == rank]
    assert [(row["Step"], [Decimal(row[p]) for p in PHASES]) for row in own] == [
        (row["step"], [Decimal(row[p]) for p in PHASES]) for row in cluster]


@pytest.mark.parametrize("rank", [0, 1])
def test_cluster_step_trace_of_the_db_is_each_rank_s_analysis_db(rank: int) -> None:
    path = realdata(f"{SAMPLE}/db/level1/rank{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT/analysis.db")
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        own = con.execute("SELECT * FROM StepTraceTime").fetchall()
    cluster = [row for row in EXPECTED["db"]["step_trace"] if row["index"] == rank]
    assert [(str(row[0]), list(row[1:])) for row in own] == [(row["step"], [row[p] for p in PHASES])
                                                             for row in cluster]


@pytest.mark.parametrize("export", ["text", "db"])
def test_the_peer_s_phases_add_up(export: str) -> None:
    """Communication = not overlapped + overlapped; excluding receives changes nothing without receives (all-reduce
    only); the two ranks are one all-reduce group of rank set (0, 1)."""
    for row in EXPECTED[export]["step_trace"]:
        value = {phase: Decimal(str(row[phase])) for phase in PHASES}
        assert abs(value["Communication"] - value["Communication(Not Overlapped)"] - value["Overlapped"]) < Decimal(
            "0.001")
        assert value["Communication(Not Overlapped and Exclude Receive)"] == value["Communication(Not Overlapped)"]
        assert 0 <= value["Computing"] <= value["Stage"] and value["Bubble"] == 0
    assert sorted(EXPECTED[export]["communication"]["step50"]) == ["0", "1"]
    links = EXPECTED[export]["matrix"]["step50"]
    assert {link: entry["Transport Type"] for link, entry in links.items()} == {
        "0-0": "LOCAL", "0-1": "HCCS", "1-0": "HCCS", "1-1": "LOCAL"}
    for entry in links.values():  # bandwidth = size / time: MB / ms = GB/s (10^6 B, 10^-3 s)
        assert entry["Bandwidth(GB/s)"] == pytest.approx(entry["Transit Size(MB)"] / entry["Transit Time(ms)"],
                                                         rel=1e-3)


def test_the_fixture_names_its_peer() -> None:
    assert EXPECTED["msprof_analyze"] == "26.2.0" and set(EXPECTED) >= {"text", "db"}
    assert Path(FIXTURES.parent / "fixtures" / "generators" / "msprof_analyze.py").is_file()
