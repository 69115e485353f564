"""msprof-analyze 26.2's cluster numbers on the real torch_npu Level 1 pair (fixtures/msprof_analyze/level1.json,
written by fixtures/generators/msprof_analyze.py, which runs the peer) are a second oracle for issue 43's step
phases and communication: here they are checked against the tool's own per-rank files (step_trace_time.csv,
analysis.db's StepTraceTime), so that a comparison with either is a comparison with both, against their own
sums, and against profpipe's step_overlap computed from each rank's events."""
from __future__ import annotations

import csv
import json
import sqlite3
from decimal import Decimal
from pathlib import Path

import pytest

from conftest import FIXTURES, query, realdata, run

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
    with sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True) as con:
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


#: step_overlap's columns for msprof-analyze's phases (docs/formats.md, sql/marts/step_overlap.yml).
OURS = {"Computing": "computation_ns", "Communication(Not Overlapped)": "pure_communication_ns",
        "Overlapped": "overlapped_communication_ns", "Communication": "communication_ns", "Free": "free_ns",
        "Stage": "stage_ns", "Bubble": "bubble_ns", "Preparing": "preparing_ns"}
#: µs: the text tool sums float µs from kernel_details' 0.001 µs (§4.4), and quantizes Stage and Preparing to 0.25 µs
#: at the epoch's magnitude; the db tool works in integer ns (exact).
TOLERANCE = {"text": {"Stage": Decimal("0.25"), "Preparing": Decimal("0.25")}, "db": {}}


@pytest.mark.parametrize("export", ["text", "db"])
def test_profpipe_s_step_overlap_is_the_peer_s_cluster_step_trace(export: str, tmp_path: Path) -> None:
    """profpipe's step_overlap, computed from the events of each rank of the real pair, against msprof-analyze's
    cluster_step_trace_time (fixtures/msprof_analyze/level1.json)."""
    result = run(realdata(f"{SAMPLE}/{export}/level1"), tmp_path / export)
    assert result.ranks == [0, 1]
    for row in EXPECTED[export]["step_trace"]:
        (got,) = query(result.output, f"SELECT {', '.join(OURS.values())} FROM step_overlap "
                                      f"WHERE rank = {row['index']} AND step = {int(row['step'])}")
        for (phase, column), value in zip(OURS.items(), got):
            expected = Decimal(str(row[phase]))
            tolerance = TOLERANCE[export].get(phase, Decimal("0.03") if export == "text" else Decimal("0.0005"))
            assert abs(Decimal(value) / 1000 - expected) <= tolerance, (export, row["index"], phase, value, expected)
