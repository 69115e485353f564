"""MindSpore's host info (profile_framework, 2.1-2.3): discovery in every layout, the reader, the marts and MindSpore's
own derived files.

Oracle: fixtures/host_info/expected/, what MindSpore 2.2's _parse_host_info and _calculate_dataset_execution_time
write from the generated host_info_<id>.csv (fixtures/generators/host_info.py follows their algorithm as the
reference gives it), and numbers worked out by hand from the generator's rows below.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, assert_generator_reproduces, query, realdata, run
from profpipe.discover import discover
from profpipe.health import HealthLedger
from profpipe.ingest import host_info

HOST = FIXTURES / "host_info"
RAW = HOST / "profiler" / "host_info"
T0_NS = 1_724_861_689_218_598 * 1000


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("host_info") / "out"
    run(HOST, folder)
    return folder


def test_generator_reproduces_the_fixture(tmp_path: Path) -> None:
    assert_generator_reproduces("host_info.py", HOST, tmp_path)


def test_a_host_info_folder_alone_is_a_source_per_rank_and_joins_its_rank_s_source_elsewhere(tmp_path: Path) -> None:
    alone = discover(HOST)
    assert [(s.family, s.rank, sorted(s.files)) for s in alone] == [("host_info", 0, ["host_info"]),
                                                                     ("host_info", 1, ["host_info"])]
    # a GPU profiler folder with host_info/ inside: the file is listed with the rank's MindSpore source
    gpu = tmp_path / "profiler"
    shutil.copytree(FIXTURES / "mindspore_gpu" / "graph_2x" / "profiler", gpu)
    shutil.copytree(RAW, gpu / "host_info")
    sources = discover(tmp_path)
    owners = {s.rank: s for s in sources if s.family == "mindspore_framework"}
    assert owners[0].files["host_info:host_info"] == gpu / "host_info" / "host_info_0.csv"
    # rank 1 has no MindSpore source here: its host info stands alone
    assert 1 not in owners
    assert [(s.family, s.rank) for s in sources if s.family == "host_info"] == [("host_info", 1)]
    # the single file stands alone too
    assert [s.family for s in discover(RAW / "host_info_0.csv")] == ["host_info"]


def test_host_info_beside_a_gpu_run_adds_its_tables_to_the_rank(tmp_path: Path) -> None:
    gpu = tmp_path / "in" / "profiler"
    shutil.copytree(FIXTURES / "mindspore_gpu" / "graph_2x" / "profiler", gpu)
    shutil.copytree(RAW, gpu / "host_info")
    run(tmp_path / "in", tmp_path / "out")
    spans = query(tmp_path / "out", "SELECT rank, count(*) FROM host_span WHERE kind = 'span' GROUP BY rank ORDER BY rank")
    # DeviceInit, CompileGraphs, 3 steps x (WorkerGet, WorkerProcess, GetNextAsMap, GetInputs, Run, RunGraph), the
    # last GetNextAsMap; rank 1: two RunGraph
    assert spans == [(0, 21), (1, 2)]
    assert query(tmp_path / "out", "SELECT count(*) FROM op_detail_stats WHERE rank = 0")[0][0] > 0


def test_records_keep_every_row_with_units_converted() -> None:
    ledger = HealthLedger()
    [source] = discover(RAW / "host_info_0.csv")
    tables = dict(host_info.read(source, ledger.for_source("x", 0)))
    records = tables["host_info_record"].to_pylist()
    lines = (RAW / "host_info_0.csv").read_text().splitlines()
    assert len(records) == len(lines) - 1 and not ledger.events
    first = records[0]
    assert (first["line"], first["tid"], first["pid"], first["parent_pid"], first["module"], first["kind"]) == \
        (2, 139_842_520_725_312, 2_493_488, 2_478_644, "Runtime", "start")
    assert first["memory_bytes"] == 2_415_492 * 1024 and first["ts_ns"] == T0_NS
    quoted = next(r for r in records if "shape" in r["custom_info"])
    assert quoted["custom_info"] == "{{shape:32,3,224,224}{TensorRowFlags:EOF}}"
    # the developer-level Dataset op rows have no memory (profile_framework kTime)
    assert all(r["memory_bytes"] is None for r in records if r["event"] == "Batch(ID:1)")
    assert tables["run_info"].column("clock").to_pylist() == ["unix_epoch"]


def test_spans_are_mindspore_s_timeline_events(out: Path) -> None:
    """host_span's spans, instants and open starts are the X, i and B events of MindSpore's timeline_<id>.json."""
    for rank in (0, 1):
        expected = json.loads((HOST / "expected" / f"timeline_{rank}.json").read_text())
        rows = query(out, f"""SELECT kind, name, module, start_ns, dur_ns, pid, tid, parent_pid FROM host_span
                              WHERE rank = {rank} AND kind <> 'orphan_end' ORDER BY kind = 'open_start', line""")
        ours = []
        for kind, name, module, start, dur, pid, tid, parent in rows:
            if kind == "span":
                ours.append({"name": name, "cat": module, "ts": start // 1000, "dur": dur // 1000, "ph": "X",
                             "pid": str(pid), "tid": str(tid), "args": {"parent_pid": str(parent)}})
            elif kind == "instant":
                ours.append({"name": name, "cat": module, "ts": start // 1000, "ph": "i", "pid": str(pid),
                             "tid": str(tid), "args": {"parent_pid": str(parent)}})
            else:  # MindSpore names an open start from its key: event_stage
                ours.append({"name": name.replace("::", "_"), "pid": str(pid), "tid": str(tid), "ph": "B",
                             "ts": start // 1000})
        assert ours == expected


def test_stage_statistics_by_hand(out: Path) -> None:
    rows = {r[0]: r[1:] for r in query(out, """SELECT name, spans, total_ns, min_ns, max_ns, instants, open_starts,
        orphan_ends FROM host_stage_stats WHERE rank = 0""")}
    # RunGraph: 7050, 7150, 7250 µs; a fourth start at 40000 µs never ended
    assert rows["RunGraph::RunGraph"] == (3, 21_450_000, 7_050_000, 7_250_000, 0, 1, 0)
    # CompileGraphs: the second start (2100 µs) replaced the first; it ended at 9100 µs
    assert rows["CompileGraph::CompileGraphs"] == (1, 7_000_000, 7_000_000, 7_000_000, 0, 0, 0)
    assert rows["CompileGraph::GraphPartition"] == (0, 0, None, None, 0, 0, 1)
    assert rows["OptimizeGraph::SetKernelInfo"] == (0, 0, None, None, 1, 0, 0)
    # GetNextAsMap: 10, 40, 90 µs and the EOF one of 90 µs
    assert rows["IteratorConsumer::GetNextAsMap"][:2] == (4, 230_000)
    assert query(out, "SELECT spans, total_ns FROM host_stage_stats WHERE rank = 1") == [(2, 10_000_000)]


def test_dataset_times_are_mindspore_s_file_to_the_byte(out: Path) -> None:
    assert (out / "reports" / "dataset_0.csv").read_bytes() == (HOST / "expected" / "dataset_0.csv").read_bytes()
    # its running mean is not total / count: 10, 40, 90 µs give 46.66666666666667 there, 46.666666666666664 here
    mean, occurrences, total = query(out, """SELECT avg_ns, occurrences, total_ns FROM dataset_host_stats
        WHERE rank = 0 AND event = 'IteratorConsumer' AND custom_info = '{{TensorRowFlags:Data}}'""")[0]
    assert (occurrences, total, mean) == (3, 140_000, 140_000 / 3)
    assert "46.66666666666667" in (out / "reports" / "dataset_0.csv").read_text()


def test_memory_curve_is_mindspore_s_host_memory_file_and_the_peak_is_worked_out(out: Path) -> None:
    assert (out / "reports" / "host_memory_0.csv").read_bytes() == \
        (HOST / "expected" / "host_memory_0.csv").read_bytes()
    assert not (out / "reports" / "host_memory_1.csv").exists()  # profile_framework "time": no memory
    lines = (RAW / "host_info_0.csv").read_text().splitlines()[1:]
    kb = [int(line.rsplit(",", 2)[1]) for line in lines]
    sampled = [k for k in kb if k > 0]
    peak = max(sampled)
    peak_row = lines[kb.index(peak)].split(",")
    stats = query(out, """SELECT samples, peak_bytes, peak_ts_ns, peak_at, first_bytes, last_bytes, growth_bytes
                          FROM host_memory_stats WHERE rank = 0""")[0]
    assert stats == (len(sampled), peak * 1024, int(peak_row[-1]) * 1000, f"{peak_row[4]}::{peak_row[5]}",
                     sampled[0] * 1024, sampled[-1] * 1024, (sampled[-1] - sampled[0]) * 1024)
    assert query(out, "SELECT count(*) FROM host_memory_stats WHERE rank = 1") == [(0,)]


def test_mindbnb_real_sample_gives_mindspore_s_timeline(tmp_path: Path) -> None:
    """A real MindSpore 2.2.14 GPU PyNative dump's host info (hypertseng/mindbnb data/profiler/host_info @e3b232d5,
    shared/reference/formats-mindspore-extras.md §4.3), where realdata holds it: host_span's spans are the 20 X
    events of MindSpore's own timeline_0.json (Σ 4080 µs), and the host memory curve its host_memory_0.csv rows."""
    folder = realdata("mindbnb/profiler/host_info")
    run(folder / "host_info_0.csv", tmp_path / "out")
    expected = json.loads((folder / "timeline_0.json").read_text())
    rows = query(tmp_path / "out", """SELECT name, module, start_ns // 1000, dur_ns // 1000, tid::VARCHAR FROM host_span
                                      WHERE kind = 'span' ORDER BY end_line""")
    assert rows == [(e["name"], e["cat"], e["ts"], e["dur"], e["tid"]) for e in expected]
    assert sum(e["dur"] for e in expected) == 4080
    memory = (folder / "host_memory_0.csv").read_text().splitlines()[1:]
    assert query(tmp_path / "out", "SELECT samples FROM host_memory_stats") == [(len(memory),)]
