"""The Ascend tools' own derived files (family ascend_summary) and clusters of rank folders (issue 43).

Oracles: the real S1 text and db ranks' step_trace_time.csv, communication*.json and analysis.db, parsed here on their
own (csv, json with Decimal, sqlite3 with the REALs' shortest text) and scaled with Python's Decimal; the 4-rank
fixture's generator (fixtures/generators/ascend_cluster_today.py: its planted slow rank, slow link and groups).
"""
from __future__ import annotations

import csv
import json
import shutil
import sqlite3
import sys
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES, REPO, assert_generator_reproduces, query, realdata, run
from fuzzing import FUZZ, byte_flips, line_edits, read_damaged, truncations
from model_harness import model_rows
from profpipe import ingest
from profpipe.batch import BatchOptions, batch, find_runs
from profpipe.discover import ascend_result_rank, discover
from profpipe.health import HealthLedger
from profpipe.ingest.ascend_summary import COMM_TIMES, STEP_PHASES, double_hash
from profpipe.tables import conform
from profpipe.warehouse import open_run

sys.path.insert(0, str(REPO / "fixtures" / "generators"))
import ascend_cluster_today as generator  # noqa: E402  (the fixture's ground truth)

CLUSTER = FIXTURES / "ascend_pt_cluster"
S1 = "Ascend-msinsight/test/data/pytorch"


def exact(text: object, scale: int) -> int:
    """Decimal text (or a float, by its shortest text) times scale by profpipe/ingest/units.py's rule: digits below
    10^-9 of the unit rounded off as the text is read (the files write ms with up to 17 digits: 73.19762250000001 ms is
    73197622 ns, not 73197623), then rounded half to even."""
    value = Decimal(repr(text)) if isinstance(text, float) else Decimal(str(text).strip())
    value = value.quantize(Decimal("1e-9"), rounding=ROUND_HALF_EVEN)
    return int((value * scale).to_integral_value(rounding=ROUND_HALF_EVEN))


def summaries(folder: Path, drop_roles: tuple[str, ...] = ()) -> tuple[dict[str, pa.Table], HealthLedger]:
    """The ascend_summary tables of `folder` as the runner conforms them (roles in `drop_roles` left out)."""
    ledger, tables = HealthLedger(), {}
    for source in discover(folder):
        if source.family != "ascend_summary":
            continue
        for role in drop_roles:
            source.files.pop(role, None)
        for name, table in ingest.read(source, ledger.for_source(str(source.directory), source.rank)):
            table = conform(name, table)
            tables[name] = pa.concat_tables([tables[name], table]) if name in tables else table
    return tables, ledger


def _rows(table: pa.Table, *keys: str) -> dict[tuple, dict]:
    return {tuple(row[k] for k in keys): row for row in table.to_pylist()}


# --- real data: the tables equal the files ---------------------------------------------------------------------

@pytest.mark.parametrize("rank", [0, 1])
def test_text_rank_summaries_equal_step_trace_time_csv_and_communication_json(rank: int) -> None:
    folder = realdata(f"{S1}/text/level1/rank{rank}_ascend_pt")
    output = folder / "ASCEND_PROFILER_OUTPUT"
    tables, ledger = summaries(folder)
    assert not ledger.events
    with open(output / "step_trace_time.csv", newline="") as handle:
        expected = list(csv.DictReader(handle))
    steps = _rows(tables["ascend_step_summary"], "step")
    assert set(steps) == {(int(row["Step"]),) for row in expected} == {(50,)}
    for row in expected:
        got = steps[(int(row["Step"]),)]
        assert got["rank"] == rank and got["origin"] == "step_trace_time.csv"
        assert {c: got[name] for c, (_, name) in STEP_PHASES.items()} == {c: exact(row[c], 1000) for c in STEP_PHASES}
    document = json.loads((output / "communication.json").read_text(), parse_float=Decimal)
    ops = _rows(tables["ascend_comm_op_summary"], "step", "op_name")
    expected_ops = {(int(step.removeprefix("step")), key.split("@")[0]): (key.split("@")[1], op)
                    for step, kinds in document.items() for kind in kinds.values()
                    for key, op in kind.items() if key != "Total Op Info"}
    assert set(ops) == set(expected_ops) and len(ops) == 4
    for key, (group, op) in expected_ops.items():
        got, times = ops[key], op["Communication Time Info"]
        assert got["group_id"] == group == "17522688603477080586"  # > 2^63: kept as text
        assert got["start_ns"] == exact(times["Start Timestamp(us)"], 1000)
        assert {name: got[name] for _, name in COMM_TIMES.values()} == {
            name: exact(times[field], 10**6) for field, (_, name) in COMM_TIMES.items()}
        for transport, info in op["Communication Bandwidth Info"].items():
            assert got[f"{transport.lower()}_bytes"] == exact(info["Transit Size(MB)"], 10**6)
            assert got[f"{transport.lower()}_time_ns"] == exact(info["Transit Time(ms)"], 10**6)
        # communication.json's identity Elapse = Transit + Wait + Idle, within the three values' rounding
        assert abs(got["elapse_ns"] - got["transit_ns"] - got["wait_ns"] - got["idle_ns"]) <= 2
        assert got["sdma_bytes"] == got["hccs_bytes"] + got["pcie_bytes"] + got["sio_bytes"]
    matrix = json.loads((output / "communication_matrix.json").read_text(), parse_float=Decimal)
    expected_links = {(key.split("@")[0], link): entry for kinds in matrix.values() for kind in kinds.values()
                      for key, links in kind.items() for link, entry in links.items()}
    links = _rows(tables["ascend_comm_link_summary"], "matrix_key", "src_rank", "dst_rank")
    assert len(links) == len(expected_links) == 48
    for (key, link), entry in expected_links.items():
        src, dst = map(int, link.split("-"))
        got = links[(key, src, dst)]
        assert (got["bytes"], got["time_ns"], got["transport"], got["op_name"]) == (
            exact(entry["Transit Size(MB)"], 10**6), exact(entry["Transit Time(ms)"], 10**6), entry["Transport Type"],
            entry.get("Op Name"))
        assert got["src_rank"] == rank  # each rank writes its own links (its own rank as the sender)


@pytest.mark.parametrize("rank", [0, 1])
def test_db_rank_summaries_equal_analysis_db(rank: int) -> None:
    folder = realdata(f"{S1}/db/level1/rank{rank}_ascend_pt")
    tables, ledger = summaries(folder)
    assert not ledger.events
    db = sqlite3.connect(f"file:{folder / 'ASCEND_PROFILER_OUTPUT' / 'analysis.db'}?mode=ro&immutable=1", uri=True)
    db.row_factory = sqlite3.Row
    steps = _rows(tables["ascend_step_summary"], "step")
    for row in db.execute("SELECT * FROM StepTraceTime"):
        got = steps[(int(row["step"]),)]
        assert got["origin"] == "analysis.db"
        assert {name: got[name] for column, name in STEP_PHASES.values()} == {
            name: exact(row[column], 1000) for column, name in STEP_PHASES.values()}
    ops = _rows(tables["ascend_comm_op_summary"], "op_name")
    rows = db.execute("SELECT * FROM CommAnalyzerTime").fetchall()
    assert len(ops) == len(rows) == 4
    for row in rows:
        got = ops[(row["hccl_op_name"],)]
        assert (got["step"], got["comm_kind"], got["group_id"]) == (50, row["type"], row["group_name"])
        assert got["start_ns"] == exact(row["start_timestamp"], 1000)
        assert {name: got[name] for column, name in COMM_TIMES.values()} == {
            name: exact(row[column], 10**6) for column, name in COMM_TIMES.values()}
        for transport in ("HCCS", "SDMA", "RDMA"):
            sizes = {(r[0], r[1]) for r in db.execute(
                "SELECT transit_size, transit_time FROM CommAnalyzerBandwidth WHERE hccl_op_name = ? AND "
                "transport_type = ?", [row["hccl_op_name"], transport])}
            assert len(sizes) <= 1  # a row per packet bucket, the sums repeated
            size, time = next(iter(sizes), (0, 0))
            assert (got[f"{transport.lower()}_bytes"], got[f"{transport.lower()}_time_ns"]) == (
                exact(size, 10**6), exact(time, 10**6))
    links = _rows(tables["ascend_comm_link_summary"], "matrix_key", "src_rank", "dst_rank")
    rows = db.execute("SELECT * FROM CommAnalyzerMatrix").fetchall()
    assert len(links) == len(rows) == 48
    for row in rows:
        got = links[(row["hccl_op_name"], int(float(row["src_rank"])), int(float(row["dst_rank"])))]
        assert (got["bytes"], got["time_ns"], got["transport"], got["op_name"], got["group_id"]) == (
            exact(row["transit_size"], 10**6), exact(row["transit_time"], 10**6), row["transport_type"],
            row["op_name"], row["group_name"])


def test_the_tools_op_times_agree_with_the_events_of_the_same_capture() -> None:
    """communication.json's Elapse is the op's kernel_details.csv Duration (which that file rounds to 1 ns) and its
    start the row's start (the JSON's float epoch µs: 0.25 µs resolution); analysis.db's elapse_time is COMMUNICATION_OP's
    endNs - startNs of the db export (formats-ascend-today.md §4.6) within 1 ns (exact on rank 0; the tool's ms of rank
    1 are a fraction of a ns off the events for two of the four ops)."""
    for rank in (0, 1):
        folder = realdata(f"{S1}/text/level1/rank{rank}_ascend_pt")
        ops = _rows(summaries(folder)[0]["ascend_comm_op_summary"], "op_name")
        with open(folder / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", newline="") as handle:
            hccl = [row for row in csv.DictReader(handle) if row["Accelerator Core"] in ("HCCL", "COMMUNICATION")]
        assert len(hccl) == len(ops) == 4
        for row in hccl:
            got = ops[(row["Name"],)]
            assert abs(got["elapse_ns"] - exact(row["Duration(us)"], 1000)) <= 1
            assert abs(got["start_ns"] - exact(row["Start Time(us)"], 1000)) <= 250
        folder = realdata(f"{S1}/db/level1/rank{rank}_ascend_pt")
        ops = _rows(summaries(folder)[0]["ascend_comm_op_summary"], "op_name")
        events = sqlite3.connect(f"file:{folder / 'ASCEND_PROFILER_OUTPUT' / f'ascend_pytorch_profiler_{rank}.db'}"
                                 "?mode=ro&immutable=1", uri=True)
        durations = dict(events.execute("SELECT s.value, o.endNs - o.startNs FROM COMMUNICATION_OP o "
                                        "JOIN STRING_IDS s ON s.id = o.opName"))
        assert ops.keys() == {(name,) for name in durations}
        assert all(abs(ops[(name,)]["elapse_ns"] - duration) <= 1 for name, duration in durations.items())
        assert rank == 1 or all(ops[(name,)]["elapse_ns"] == duration for name, duration in durations.items())


def test_group_ids_are_msprof_analyzes_double_hash() -> None:
    """S2's communication.json names group_name_0 by 5862276093215481612 (formats-ascend-today.md §4.7)."""
    assert double_hash("group_name_0") == 5862276093215481612


# --- the 4-rank fixture: one run, its slow rank, its matrix in global ranks --------------------------------------

def test_generator_reproduces_the_cluster_fixture(tmp_path: Path) -> None:
    assert_generator_reproduces("ascend_cluster_today.py", CLUSTER, tmp_path)


def test_the_cluster_is_one_run_of_four_ranks_with_the_planted_slow_rank_and_link(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run(CLUSTER, out)
    assert result.exit_code == 0
    assert query(out, "SELECT DISTINCT rank FROM run_info ORDER BY rank") == [(0,), (1,), (2,), (3,)]
    # rank != device: the step trace's Device_id is the summary source's device (ranks 2 and 3 on devices 4 and 5)
    assert query(out, "SELECT rank, device_id FROM run_info WHERE layout = 'ascend_summary' ORDER BY rank") == [
        (rank, generator.DEVICE[rank]) for rank in generator.RANKS]
    steps = query(out, "SELECT rank, device_id, origin, computing_ns, total_ns, slowdown FROM cluster_step_trace "
                       "ORDER BY rank")
    # every rank carries analysis.db (as S2's text export does): it wins over step_trace_time.csv
    assert [(r, d, o) for r, d, o, *_ in steps] == [(r, generator.DEVICE[r], "analysis.db") for r in generator.RANKS]
    for rank, *_, computing, total, slowdown in steps:
        phases = generator.step_phases(rank)
        assert computing == phases["Computing"] * 1000
        assert total == (phases["Computing"] + phases["Communication(Not Overlapped)"] + phases["Free"]) * 1000
        assert slowdown == 0  # the others wait for the slow rank: every step total is the same
    slow = dict(query(out, "SELECT phase, slow_rank FROM cluster_slow_rank WHERE is_slow"))
    assert slow == {"computing": generator.SLOW_RANK, "communication_not_overlapped": generator.SLOW_RANK}
    findings = {f["rule_id"]: f for f in json.loads((out / "findings.json").read_text())["findings"]}
    assert findings["slow_rank_phase"]["ranks"] == [generator.SLOW_RANK]
    assert [e["link"] for e in findings["slow_link"]["evidence"]] == ["1-2"]


def test_the_cluster_matrix_is_in_global_ranks(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run(CLUSTER, out)
    rows = query(out, "SELECT group_id, collective_type, src_local_rank, dst_local_rank, src_rank, dst_rank, bytes, "
                      "time_ns FROM cluster_comm_matrix")
    expected = set()
    for rank in generator.RANKS:
        for link in generator.links(rank):
            members = generator.GROUPS[link["group"]][1]
            expected.add((str(double_hash(link["group"])), link["type"], link["src"], link["dst"], members[link["src"]],
                          members[link["dst"]], exact(link["mb"], 10**6), exact(link["ms"], 10**6)))
    assert set(rows) == expected
    # the pipeline groups' local 0 -> 1 are the global sends 0 -> 2 and 1 -> 3
    assert {(s, d) for _, t, _, _, s, d, _, _ in rows if t == "send"} == {(0, 2), (1, 3)}


def test_a_ranks_analysis_db_and_its_text_files_give_the_same_tables() -> None:
    for rank in generator.RANKS:
        folder = CLUSTER / f"rank_{rank}_ascend_pt"
        from_db, db_ledger = summaries(folder)
        from_text, text_ledger = summaries(folder, drop_roles=("analysis_db",))
        assert not db_ledger.events and not text_ledger.events
        for name in ("ascend_step_summary", "ascend_comm_op_summary", "ascend_comm_link_summary"):
            db_rows, text_rows = (sorted((_without_origin(r) for r in t[name].to_pylist()), key=repr)
                                  for t in (from_db, from_text))
            assert db_rows == text_rows and db_rows, name


def test_matrix_ranks_written_as_floats_and_a_db_without_step_or_type(tmp_path: Path) -> None:
    """msprof-analyze's cluster db writes src/dst ranks "0.0"-style; MindSpore's comm tables have no step and no type
    (a capture without steps: step NULL)."""
    folder = _result_folder(tmp_path / "r_ascend_pt", {"profiler_info_2.json": {}})
    db = sqlite3.connect(folder / "ASCEND_PROFILER_OUTPUT" / "analysis.db")
    db.execute("CREATE TABLE CommAnalyzerMatrix (hccl_op_name TEXT, group_name TEXT, src_rank TEXT, dst_rank TEXT, "
               "transport_type TEXT, transit_size NUMERIC, transit_time NUMERIC, bandwidth NUMERIC, op_name TEXT)")
    db.execute("INSERT INTO CommAnalyzerMatrix VALUES ('allgather-total', '9', '2.0', '3.0', 'HCCS', 1.5, 0.25, 6, NULL)")
    db.commit()
    db.close()
    tables, ledger = summaries(folder)
    assert not ledger.events
    (row,) = tables["ascend_comm_link_summary"].to_pylist()
    assert (row["src_rank"], row["dst_rank"], row["bytes"], row["time_ns"], row["step"], row["comm_kind"],
            row["collective_type"], row["stat"]) == (2, 3, 1_500_000, 250_000, None, None, "allgather", "total")


def _without_origin(row: dict) -> dict:
    return {k: v for k, v in row.items() if k != "origin"}


# --- the cluster marts on rows written by hand ------------------------------------------------------------------

def _step(rank: int, computing: int, not_overlapped: int, free: int, step: int | None = 5, capture: int = 0) -> dict:
    return {"rank": rank, "capture": capture, "step": step, "origin": "analysis.db", "computing_ns": computing,
            "communication_not_overlapped_ns": not_overlapped, "free_ns": free}


#: Step 5 of three ranks (totals 100, 110, 100: rank 1 computes 30 longer, the others wait 20 longer), a capture 1
#: of rank 0 alone, and rank 2's capture without steps.
_STEPS = [_step(0, 50, 40, 10), _step(1, 80, 20, 10), _step(2, 50, 40, 10), _step(0, 70, 0, 30, capture=1),
          _step(2, 1, 2, 3, step=None)]


def test_cluster_step_trace_compares_each_rank_with_the_steps_fastest():
    found = model_rows({"ascend_step_summary": _STEPS}, "cluster_step_trace")
    by_key = {(r["rank"], r["capture"], r["step"]): r for r in found}
    assert len(found) == 5
    assert {k: (r["total_ns"], r["ranks"], r["fastest_total_ns"], r["slowest_total_ns"], r["slowest_rank"])
            for k, r in by_key.items()} == {
        (0, 0, 5): (100, 3, 100, 110, 1), (1, 0, 5): (110, 3, 100, 110, 1), (2, 0, 5): (100, 3, 100, 110, 1),
        (0, 1, 5): (100, 1, 100, 100, 0), (2, 0, None): (6, 1, 6, 6, 2)}
    assert by_key[(1, 0, 5)]["slowdown"] == pytest.approx(110 / 100 - 1) and by_key[(0, 0, 5)]["slowdown"] == 0


def test_cluster_slow_rank_is_msprof_analyzes_gap_rule():
    found = {(r["capture"], r["phase"]): r
             for r in model_rows({"ascend_step_summary": _STEPS[:3]}, "cluster_slow_rank")}
    mean_total = (100 + 110 + 100) / 3
    computing, communication, free = (found[(0, p)] for p in ("computing", "communication_not_overlapped", "free"))
    assert (computing["max_rank"], computing["min_rank"], computing["slow_rank"], computing["is_slow"]) == (1, 0, 1, True)
    assert computing["gap_ratio"] == pytest.approx((80 - 50) / mean_total)
    # communication: the rank that waits least (1) is the one the others wait for
    assert (communication["max_rank"], communication["min_rank"], communication["slow_rank"]) == (0, 1, 1)
    assert communication["gap_ratio"] == pytest.approx((40 - 20) / mean_total) and communication["is_slow"]
    assert (free["gap_ratio"], free["is_slow"], free["rows"], free["ranks"]) == (0, False, 3, 3)


def _link(rank: int, group: str, src: int, dst: int, transport: str, size: int, time: int, stat: str = "total",
          kind: str = "allreduce") -> dict:
    return {"rank": rank, "capture": 0, "step": 5, "origin": "analysis.db", "comm_kind": "collective",
            "matrix_key": f"{kind}-{stat}", "collective_type": kind, "stat": stat, "group_id": group,
            "src_rank": src, "dst_rank": dst, "transport": transport, "bytes": size, "time_ns": time}


def test_cluster_comm_matrix_maps_group_ranks_to_global_ones():
    """Group "1": parallel_group_info maps local 0, 1 to global 5, 7 (both report the link 0-1: the sender's is taken);
    group "2" has no map: rank 3's own link 1-1 makes its local 1 global 3, local 0 stays unmapped."""
    groups = [{"rank": 5, "group_id": "1", "group_key": "group_name_1", "local_rank": local, "global_rank": glob}
              for local, glob in ((0, 5), (1, 7))]
    links = [_link(5, "1", 0, 1, "HCCS", 1000, 100), _link(7, "1", 0, 1, "HCCS", 999, 90),
             _link(5, "1", 0, 1, "HCCS", 1, 1, stat="top1"), _link(3, "2", 1, 1, "LOCAL", 50, 5),
             _link(3, "2", 1, 0, "HCCS", 300, 0)]
    found = model_rows({"ascend_comm_group": groups, "ascend_comm_link_summary": links}, "cluster_comm_matrix")
    assert [(r["group_id"], r["src_local_rank"], r["dst_local_rank"], r["src_rank"], r["dst_rank"], r["transport"],
             r["bytes"], r["time_ns"], r["bandwidth_bytes_per_second"], r["reported_by"]) for r in found] == [
        ("1", 0, 1, 5, 7, "HCCS", 1000, 100, 1000 / (100 / 1e9), [5, 7]),
        ("2", 1, 0, 3, None, "HCCS", 300, 0, None, [3]),
        ("2", 1, 1, 3, 3, "LOCAL", 50, 5, 50 / (5 / 1e9), [3])]


def test_cluster_link_bandwidth_compares_rank_pairs_with_their_transports_median():
    groups = [{"rank": 0, "group_id": "1", "group_key": "k", "local_rank": r, "global_rank": r} for r in range(3)]
    links = [_link(0, "1", 0, 1, "HCCS", 1000, 100), _link(1, "1", 1, 2, "HCCS", 1000, 200),
             _link(2, "1", 2, 0, "HCCS", 1000, 100), _link(0, "1", 0, 0, "LOCAL", 1000, 1),
             _link(0, "1", 0, 1, "HCCS", 500, 50, kind="send")]
    found = model_rows({"ascend_comm_group": groups, "ascend_comm_link_summary": links}, "cluster_link_bandwidth")
    # 0 -> 1 sums the allreduce and the send: 1500 bytes in 150 ns; the median of 1e10, 5e9, 1e10 is 1e10
    assert [(r["src_rank"], r["dst_rank"], r["bytes"], r["time_ns"], r["entries"], r["links"]) for r in found] == [
        (0, 1, 1500, 150, 2, 3), (1, 2, 1000, 200, 1, 3), (2, 0, 1000, 100, 1, 3)]
    assert [r["median_ratio"] for r in found] == pytest.approx([1.0, 0.5, 1.0])


# --- rank identity -----------------------------------------------------------------------------------------------

def _result_folder(folder: Path, files: dict[str, object]) -> Path:
    (folder / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    (folder / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv").write_text("Step,Computing\n1,5\n")
    for name, content in files.items():
        (folder / name).write_text(json.dumps(content))
    return folder


def test_the_rank_of_a_result_folder(tmp_path: Path) -> None:
    """The profiler_info_<N>.json name first (msprof-analyze), then rank_id (int or text), then distributed_args."""
    cases = {"named": ({"profiler_info_3.json": {"rank_id": 7}}, (3, "name")),
             "text_id": ({"profiler_info.json": {"rank_id": "2"}}, (2, "file")),
             "int_id": ({"profiler_info.json": {"rank_id": 4}, "profiler_metadata.json": {}}, (4, "file")),
             "unset": ({"profiler_info.json": {"rank_id": -1},
                        "profiler_metadata.json": {"distributed_args": {"rank": 5}}}, (5, "file")),
             "none": ({"profiler_info.json": {"rank_id": -1}}, (-1, ""))}
    for name, (files, expected) in cases.items():
        assert ascend_result_rank(_result_folder(tmp_path / name, files))[:2] == expected, name


def test_a_single_card_folder_is_rank_0_and_two_unranked_ones_ask_for_a_rank_map(tmp_path: Path) -> None:
    single = _result_folder(tmp_path / "single" / "job_ascend_pt", {"profiler_info.json": {"rank_id": -1}})
    (source,) = [s for s in discover(single.parent) if s.family == "ascend_summary"]
    assert (source.rank, source.rank_from, source.problem) == (0, "only-source", None)
    _result_folder(tmp_path / "single" / "other_ascend_pt", {"profiler_info.json": {}})
    sources = [s for s in discover(tmp_path / "single") if s.family == "ascend_summary"]
    assert all("--rank-map" in s.problem for s in sources)
    rank_map = tmp_path / "ranks.txt"
    rank_map.write_text("job_ascend_pt 0\nother_ascend_pt 1\n")
    sources = [s for s in discover(tmp_path / "single", rank_map=rank_map) if s.family == "ascend_summary"]
    assert sorted((s.directory.name, s.rank, s.rank_from, s.problem) for s in sources) == [
        ("job_ascend_pt", 0, "rank-map", None), ("other_ascend_pt", 1, "rank-map", None)]


# --- batch: a cluster folder is one run --------------------------------------------------------------------------

def test_batch_takes_a_cluster_folder_as_one_run(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    shutil.copytree(CLUSTER, root / "2026-01-01" / "job")
    assert [r.run for r in find_runs((root / "2026-01-01" / "job",), 1)] == ["job"]
    assert [r.run for r in find_runs((root,), 2)] == ["2026-01-01.job"]
    assert [r.run for r in find_runs((root,), 3)] == ["2026-01-01.job"]
    # single-card jobs (each rank 0) side by side are runs of their own
    for job in ("a_ascend_pt", "b_ascend_pt"):
        _result_folder(tmp_path / "single" / job, {"profiler_info_0.json": {}})
    assert [r.run for r in find_runs((tmp_path / "single",), 1)] == ["a_ascend_pt", "b_ascend_pt"]
    result = batch(BatchOptions(roots=(root / "2026-01-01",), warehouse=tmp_path / "wh", workers=1))
    assert result.analysed == ["job"] and not result.failed
    assert open_run(tmp_path / "wh", "job").execute("SELECT count(DISTINCT rank) FROM run_info").fetchone() == (4,)


# --- damage: the numbers that are read are the file's, what is dropped is reported -------------------------------

_MICROS = st.integers(min_value=0, max_value=10**12).map(lambda n: Decimal(n) / 1000)
_JUNK = st.sampled_from(["N/A", "abc", "1e999", "--1", "0x10"])


@FUZZ
@given(rows=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(["{}", "step{}", "Step {}", "stp{}"]),
                               st.lists(_MICROS, min_size=9, max_size=9),
                               st.one_of(st.none(), st.tuples(st.integers(0, 8), _JUNK))), min_size=1, max_size=6),
       device=st.booleans())
def test_damaged_step_trace_csv_keeps_exact_numbers_and_reports_what_it_drops(tmp_path_factory, rows, device) -> None:
    folder = _result_folder(tmp_path_factory.mktemp("csv") / "r_ascend_pt", {"profiler_info_0.json": {}})
    header = (["Device_id"] if device else []) + ["Step", *STEP_PHASES]
    lines, expected = [",".join(header)], {}
    for number, (step, spelling, values, junk) in enumerate(rows):
        cells = [format(v, "f") for v in values]
        if junk is not None:
            cells[junk[0]] = junk[1]
        lines.append(",".join(([str(number)] if device else []) + [spelling.format(step), *cells]))
        if junk is None and not spelling.startswith("stp"):
            expected.setdefault(step, []).append([exact(v, 1000) for v in values])
    (folder / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv").write_text("\r\n".join(lines) + "\r\n")
    tables, ledger = summaries(folder)
    got: dict[int, list] = {}
    for row in tables["ascend_step_summary"].to_pylist():
        got.setdefault(row["step"], []).append([row[name] for _, name in STEP_PHASES.values()])
    assert {k: sorted(v) for k, v in got.items()} == {k: sorted(v) for k, v in expected.items()}
    dropped = sum(e.rows for e in ledger.events if e.action == "dropped")
    assert dropped == sum(junk is not None or spelling.startswith("stp") for _, spelling, _, junk in rows)


_FLOATS = st.integers(min_value=0, max_value=10**15).map(lambda n: n / 2**20)


@FUZZ
@given(ops=st.lists(st.tuples(st.lists(_FLOATS, min_size=6, max_size=6),
                              st.one_of(st.none(), st.tuples(st.integers(0, 5), st.sampled_from(
                                  ["abc", [1], {"a": 1}, None, True])), st.just("entry"))),
                    min_size=1, max_size=5))
def test_damaged_communication_json_keeps_exact_numbers_and_reports_what_it_drops(tmp_path_factory, ops) -> None:
    folder = _result_folder(tmp_path_factory.mktemp("json") / "r_ascend_pt", {"profiler_info_0.json": {}})
    fields = ["Start Timestamp(us)", *COMM_TIMES]
    collective, expected, lost = {}, {}, 0
    for number, (values, damage) in enumerate(ops):
        name = f"hcom_allReduce__{number}@123"
        entry: object = {"Communication Time Info": dict(zip(fields, values))}
        if damage == "entry":
            entry, lost = 7, lost + 1
        elif damage is not None:
            position, junk = damage
            entry["Communication Time Info"][fields[position]] = junk
            if junk is not None or position == 1:  # a value that is no number; elapse absent
                lost += 1
                damage = "lost"
        collective[name] = entry
        if damage not in ("entry", "lost"):
            kept = [None if damage is not None and i == damage[0] else v for i, v in enumerate(values)]
            expected[f"hcom_allReduce__{number}"] = [None if v is None else exact(v, 1000 if i == 0 else 10**6)
                                                     for i, v in enumerate(kept)]
    (folder / "ASCEND_PROFILER_OUTPUT" / "communication.json").write_text(
        json.dumps({"step3": {"p2p": {}, "collective": collective}}))
    tables, ledger = summaries(folder)
    table = tables.get("ascend_comm_op_summary")
    got = {row["op_name"]: [row["start_ns"], *(row[name] for _, name in COMM_TIMES.values())]
           for row in (table.to_pylist() if table is not None else [])}
    assert got == expected
    assert sum(e.rows or 0 for e in ledger.events if e.action == "dropped") == lost


@FUZZ
@given(rows=st.lists(st.tuples(st.integers(0, 10**6), st.lists(_FLOATS, min_size=9, max_size=9),
                               st.one_of(st.none(), st.tuples(st.integers(0, 8), st.sampled_from(["x", "", None])))),
                     min_size=1, max_size=5))
def test_damaged_analysis_db_keeps_exact_numbers_and_reports_what_it_drops(tmp_path_factory, rows) -> None:
    folder = _result_folder(tmp_path_factory.mktemp("db") / "r_ascend_pt", {"profiler_info_0.json": {}})
    (folder / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv").unlink()
    columns = [column for column, _ in STEP_PHASES.values()]
    db = sqlite3.connect(folder / "ASCEND_PROFILER_OUTPUT" / "analysis.db")
    db.execute(f"CREATE TABLE StepTraceTime (step TEXT, {', '.join(c + ' NUMERIC' for c in columns)})")
    expected, lost = [], 0
    for step, values, damage in rows:
        cells: list[object] = list(values)
        if damage is not None:
            cells[damage[0]] = damage[1]
        db.execute(f"INSERT INTO StepTraceTime VALUES ({', '.join('?' * 10)})", [str(step), *cells])
        if damage is not None and damage[1] is not None:
            lost += 1
        else:
            expected.append((step, [None if c is None else exact(c, 1000) for c in cells]))
    db.commit()
    db.close()
    tables, ledger = summaries(folder)
    got = [(row["step"], [row[name] for _, name in STEP_PHASES.values()])
           for row in tables["ascend_step_summary"].to_pylist()]
    assert sorted(got, key=repr) == sorted(expected, key=repr)
    assert sum(e.rows or 0 for e in ledger.events if e.action == "dropped") == lost


_TRIMMED_FILES = ("step_trace_time.csv", "communication.json", "communication_matrix.json", "analysis.db")


@FUZZ
@given(data=st.data())
def test_byte_damage_to_a_trimmed_ranks_files_is_read_or_named(tmp_path_factory, data) -> None:
    """Truncated, flipped or edited bytes in any of a trimmed rank's files (fuzzing.py's strategies): no failure at all
    (the reader reports what it cannot read in trace_health and goes on), the input untouched, no scratch left."""
    folder = tmp_path_factory.mktemp("bytes") / "rank_3_ascend_pt"
    shutil.copytree(CLUSTER / "rank_3_ascend_pt", folder)
    name = data.draw(st.sampled_from(_TRIMMED_FILES))
    path = folder / "ASCEND_PROFILER_OUTPUT" / name
    if name != "analysis.db":  # analysis.db wins over the text files: without it, the damaged text file is read
        (folder / "ASCEND_PROFILER_OUTPUT" / "analysis.db").unlink()
    original = path.read_bytes()
    damaged = data.draw(st.one_of(truncations(original), byte_flips(original), line_edits(original)))
    path.write_bytes(damaged)
    outcome = read_damaged(folder)
    assert not outcome.errors, outcome.errors  # the reader names damage itself (trace_health), never fails
    if damaged == original:
        assert not outcome.lossy
