"""profpipe's communication marts from the HCCL events (comm_op_time, comm_op_bandwidth, comm_op_packet,
comm_link_matrix) against the Ascend tools' own numbers (issue 43: "communication equals communication*.json /
CommAnalyzer*").

Oracles: the real S1 level-1 ranks' communication.json and communication_matrix.json (text export) and analysis.db's
CommAnalyzerTime / CommAnalyzerBandwidth / CommAnalyzerMatrix (db export), parsed here on their own (json, sqlite3,
Decimal); for fixtures/ascend_pt_pair (no tool summaries) numbers derived by hand from its generator's task table.
The tools print times as ms with sub-ns digits (the trace's µs carry 8 decimals) while profpipe keeps integer ns per
task, so a sum of n tasks may differ by up to n/2 ns: times are compared within TASK_NS (every op here sums <= 14
tasks; a wrong plane or task class moves them by >= 20 µs).
"""
from __future__ import annotations

import json
import sqlite3
from decimal import Decimal
from pathlib import Path

import pytest

from conftest import FIXTURES, query, realdata, run
from model_harness import model_rows

S1 = "Ascend-msinsight/test/data/pytorch"
TASK_NS = 8
TRANSPORTS = ("RDMA", "HCCS", "PCIE", "SDMA", "SIO")


def _decimal(value: object) -> Decimal:
    """A number of the tool's files exactly: a float by its shortest text, a json key as written."""
    return Decimal(value if isinstance(value, str) else repr(value))


def ns(ms: object) -> Decimal:
    """A tool's ms value in ns, unrounded."""
    return _decimal(ms) * 1_000_000


def mb_bytes(mb: object) -> int:
    """A tool's MB (10^6 B) value in bytes: the files print sums of exact byte counts with float noise."""
    return int((_decimal(mb) * 1_000_000).to_integral_value())


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory):
    """Output folder of one real rank folder ("text", 0) or the pair fixture ("pair", "db"), analysed once."""
    done: dict[tuple[str, object], Path] = {}

    def get(kind: str, which: object) -> Path:
        if (kind, which) not in done:
            source = (FIXTURES / "ascend_pt_pair" / str(which) if kind == "pair"
                      else realdata(f"{S1}/{kind}/level1/rank{which}_ascend_pt"))
            out = tmp_path_factory.mktemp(f"comm_{kind}_{which}") / "out"
            assert run(source, out).exit_code == 0
            done[kind, which] = out
        return done[kind, which]
    return get


def _output(kind: str, rank: int) -> Path:
    return realdata(f"{S1}/{kind}/level1/rank{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT")


def _analysis_db(rank: int, sql: str) -> list[tuple]:
    path = _output("db", rank) / "analysis.db"
    with sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True) as con:
        return con.execute(sql).fetchall()


def _text_ops(rank: int) -> dict[str, dict]:
    """communication.json's collective and p2p ops by name (without @group), each with its step number."""
    data = json.loads((_output("text", rank) / "communication.json").read_text())
    return {key.split("@")[0]: {**info, "step": int(step.removeprefix("step"))}
            for step, kinds in data.items() for ops in kinds.values() for key, info in ops.items()
            if key != "Total Op Info"}


def _mart(out: Path, name: str, sql_tail: str = "") -> list[dict]:
    rows = query(out, f"SELECT * FROM {name} {sql_tail}")
    with __import__("duckdb").connect(str(out / "profile.duckdb"), read_only=True) as con:
        columns = [c[0] for c in con.execute(f"DESCRIBE {name}").fetchall()]
    return [dict(zip(columns, row)) for row in rows]


def _close(ours: int, tool: Decimal, tolerance: int = TASK_NS) -> bool:
    return abs(Decimal(ours) - tool) <= tolerance


@pytest.mark.parametrize("rank", [0, 1])
def test_op_times_equal_communication_json(analysed, rank: int) -> None:
    ops = _text_ops(rank)
    rows = _mart(analysed("text", rank), "comm_op_time")
    assert sorted(r["op_name"] for r in rows) == sorted(ops)
    for r in rows:
        info = ops[r["op_name"]]["Communication Time Info"]
        assert r["step"] == ops[r["op_name"]]["step"]
        assert _close(r["start_ns"], _decimal(info["Start Timestamp(us)"]) * 1000, 250)  # µs float: 0.25 µs
        for column, key in (("elapse_ns", "Elapse Time(ms)"), ("transit_ns", "Transit Time(ms)"),
                            ("wait_ns", "Wait Time(ms)"), ("synchronization_ns", "Synchronization Time(ms)"),
                            ("idle_ns", "Idle Time(ms)")):
            assert _close(r[column], ns(info[key])), (r["op_name"], column, r[column], info[key])
        assert abs(r["wait_share"] - info["Wait Time Ratio"]) <= 1.5e-4  # ns vs the tool's sub-ns sums at a rounding edge
        assert abs(r["synchronization_share"] - info["Synchronization Time Ratio"]) <= 1.5e-4


@pytest.mark.parametrize("rank", [0, 1])
def test_step_totals_equal_total_op_info(analysed, rank: int) -> None:
    """communication.json's Total Op Info per step and kind: comm_step_time, and comm_op_bandwidth summed."""
    out = analysed("text", rank)
    data = json.loads((_output("text", rank) / "communication.json").read_text())
    ours = {(r["step"], r["comm_kind"]): r for r in _mart(out, "comm_step_time")}
    sums = {(step, transport): (size, time) for step, transport, size, time in query(
        out, "SELECT step, transport, sum(bytes)::BIGINT, sum(time_ns)::BIGINT FROM comm_op_bandwidth GROUP BY ALL")}
    totals = [(int(step.removeprefix("step")), kind, ops["Total Op Info"])
              for step, kinds in data.items() for kind, ops in kinds.items() if ops]
    assert sorted((step, kind) for step, kind, _ in totals) == sorted(ours)
    for step, kind, total in totals:
        row, info = ours[step, kind], total["Communication Time Info"]
        for column, key in (("elapse_ns", "Elapse Time(ms)"), ("transit_ns", "Transit Time(ms)"),
                            ("wait_ns", "Wait Time(ms)"), ("synchronization_ns", "Synchronization Time(ms)"),
                            ("idle_ns", "Idle Time(ms)")):
            assert _close(row[column], ns(info[key]), 4 * TASK_NS), (column, row[column], info[key])
        assert abs(row["wait_share"] - info["Wait Time Ratio"]) <= 1.5e-4
        assert abs(row["synchronization_share"] - info["Synchronization Time Ratio"]) <= 1.5e-4
        for transport, link in total["Communication Bandwidth Info"].items():
            size, time = sums.get((step, transport), (0, 0))
            assert size == mb_bytes(link["Transit Size(MB)"])
            assert _close(time, ns(link["Transit Time(ms)"]), 4 * TASK_NS)


@pytest.mark.parametrize("rank", [0, 1])
def test_op_times_equal_comm_analyzer_time(analysed, rank: int) -> None:
    tool = {row[0]: row for row in _analysis_db(rank, "SELECT hccl_op_name, elapse_time, transit_time, wait_time, "
                                                      "synchronization_time, idle_time, step FROM CommAnalyzerTime")}
    rows = _mart(analysed("db", rank), "comm_op_time")
    assert sorted(r["op_name"] for r in rows) == sorted(tool)
    for r in rows:
        _, elapse, transit, wait, sync, idle, step = tool[r["op_name"]]
        assert f"step{r['step']}" == step
        for column, value in (("elapse_ns", elapse), ("transit_ns", transit), ("wait_ns", wait),
                              ("synchronization_ns", sync), ("idle_ns", idle)):
            assert _close(r[column], ns(value)), (r["op_name"], column, r[column], value)


def _bandwidth_rows(out: Path) -> dict[tuple[str, str], dict]:
    return {(r["op_name"], r["transport"]): r for r in _mart(out, "comm_op_bandwidth")}


def _packets(out: Path) -> dict[tuple[str, str], dict[int, tuple[int, int]]]:
    result: dict[tuple[str, str], dict[int, tuple[int, int]]] = {}
    for r in _mart(out, "comm_op_packet"):
        result.setdefault((r["op_name"], r["transport"]), {})[r["packet_bytes"]] = (r["tasks"], r["time_ns"])
    return result


def _assert_bandwidth(ours: dict, bandwidth: object) -> None:
    """GB/s = bytes / ns: the tool's 4 decimals, within what TASK_NS of the time moves it."""
    assert ours["bandwidth_gb_per_second"] == ours["bytes"] / ours["time_ns"]
    assert abs(ours["bandwidth_gb_per_second"] - bandwidth) <= bandwidth * TASK_NS / ours["time_ns"] + 1e-4


def _assert_transport(ours: dict | None, size_mb: object, time_ms: object, bandwidth: object) -> None:
    if mb_bytes(size_mb) == 0:  # the tool writes zeros for a transport without tasks; profpipe has no row
        assert ours is None
        return
    assert ours["bytes"] == mb_bytes(size_mb)
    assert _close(ours["time_ns"], ns(time_ms))
    _assert_bandwidth(ours, bandwidth)


def _assert_distribution(ours: dict[int, tuple[int, int]], tool: dict[int, tuple[int, Decimal]]) -> None:
    assert sorted(ours) == sorted(tool)
    for size, (count, time_ns) in ours.items():
        assert count == tool[size][0]
        assert _close(time_ns, tool[size][1])


@pytest.mark.parametrize("rank", [0, 1])
def test_bandwidth_equals_communication_json(analysed, rank: int) -> None:
    out = analysed("text", rank)
    ours, packets = _bandwidth_rows(out), _packets(out)
    for name, op in _text_ops(rank).items():
        info = op["Communication Bandwidth Info"]
        for transport in TRANSPORTS:
            link = info[transport]
            _assert_transport(ours.get((name, transport)), link["Transit Size(MB)"], link["Transit Time(ms)"],
                              link["Bandwidth(GB/s)"])
            if transport != "SDMA":  # the SDMA sum has no distribution in the tool's files
                _assert_distribution(packets.get((name, transport), {}),
                                     {mb_bytes(k): (v[0], ns(v[1])) for k, v in link["Size Distribution"].items()})
        sdma = ours[name, "SDMA"]
        assert sdma["bytes"] == sum(ours[name, t]["bytes"] for t in ("HCCS", "PCIE", "SIO") if (name, t) in ours)


@pytest.mark.parametrize("rank", [0, 1])
def test_bandwidth_equals_comm_analyzer_bandwidth(analysed, rank: int) -> None:
    out = analysed("db", rank)
    ours, packets = _bandwidth_rows(out), _packets(out)
    tool: dict[tuple[str, str], dict] = {}
    for name, transport, size, time, bandwidth, package, count, total in _analysis_db(
            rank, "SELECT hccl_op_name, transport_type, transit_size, transit_time, bandwidth, package_size, count, "
                  "total_duration FROM CommAnalyzerBandwidth"):
        entry = tool.setdefault((name, transport), {"link": (size, time, bandwidth), "packets": {}})
        if count:
            entry["packets"][mb_bytes(package)] = (count, ns(total))
    assert tool and {key for key in tool if mb_bytes(tool[key]["link"][0])} == set(ours)
    for (name, transport), entry in tool.items():
        _assert_transport(ours.get((name, transport)), *entry["link"])
        if transport != "SDMA":
            _assert_distribution(packets.get((name, transport), {}), entry["packets"])


def _matrix(out: Path) -> dict[tuple, dict]:
    return {(r["step"], r["matrix_type"], r["stat"], r["src_rank"], r["dst_rank"]): r
            for r in _mart(out, "comm_link_matrix")}


def _assert_matrix_entry(ours: dict, transport: str, size_mb: object, time_ms: object, bandwidth: object,
                         op_name: str | None) -> None:
    assert ours["transport"] == transport
    assert ours["bytes"] == mb_bytes(size_mb)
    assert _close(ours["time_ns"], ns(time_ms))
    _assert_bandwidth(ours, bandwidth)
    assert ours["op_name"] == op_name


@pytest.mark.parametrize("rank", [0, 1])
def test_matrix_equals_communication_matrix_json(analysed, rank: int) -> None:
    ours = _matrix(analysed("text", rank))
    data = json.loads((_output("text", rank) / "communication_matrix.json").read_text())
    seen = set()
    for step, kinds in data.items():
        for entries in kinds.values():
            for key, links in entries.items():
                if key.startswith("Total Op Info"):
                    continue
                matrix_type, stat = key.split("@")[0].rsplit("-", 1)
                for link, entry in links.items():
                    src, dst = (int(x) for x in link.split("-"))
                    row_key = (int(step.removeprefix("step")), matrix_type, stat, src, dst)
                    _assert_matrix_entry(ours[row_key], entry["Transport Type"], entry["Transit Size(MB)"],
                                         entry["Transit Time(ms)"], entry["Bandwidth(GB/s)"], entry.get("Op Name"))
                    seen.add(row_key)
    assert seen == set(ours) and len(seen) == 48  # 8 links x (top1, middle, bottom1-3, total)


@pytest.mark.parametrize("rank", [0, 1])
def test_matrix_equals_comm_analyzer_matrix(analysed, rank: int) -> None:
    ours = _matrix(analysed("db", rank))
    rows = _analysis_db(rank, "SELECT hccl_op_name, src_rank, dst_rank, transport_type, transit_size, transit_time, "
                              "bandwidth, step, op_name FROM CommAnalyzerMatrix")
    assert len(rows) == len(ours) == 48
    for key, src, dst, transport, size, time, bandwidth, step, op_name in rows:
        matrix_type, stat = key.rsplit("-", 1)
        row_key = (int(step.removeprefix("step")), matrix_type, stat, int(float(src)), int(float(dst)))
        _assert_matrix_entry(ours[row_key], transport, size, time, bandwidth, op_name or None)


@pytest.mark.parametrize("export", ["text", "db"])
def test_pair_fixture_by_hand(analysed, export: str) -> None:
    """fixtures/generators/ascend_today.py COMM_TASKS: plane 0 (the master: the lowest plane with a Notify Wait) waits
    50 µs, copies 1 MiB over HCCS in 100 µs and records; plane 1 reduces 4 KiB on the chip (150 µs) and waits 10 µs.
    The op spans 220 µs: transit 100 µs, wait = synchronization 50 µs (before the copy), idle 70 µs; HCCS = SDMA =
    1 MiB in 100 µs (the ON_CHIP reduce is no link transfer); matrix 0-1 HCCS, 0-0 LOCAL (the reduce: dst none)."""
    out = analysed("pair", export)
    times = _mart(out, "comm_op_time", "ORDER BY step")
    assert [(r["step"], r["master_plane"], r["elapse_ns"], r["transit_ns"], r["wait_ns"], r["synchronization_ns"],
             r["idle_ns"], r["wait_share"]) for r in times] == [
        (step, 0, 220_000, 100_000, 50_000, 50_000, 70_000, round(50 / 150, 4)) for step in (1, 2)]
    bandwidth = _mart(out, "comm_op_bandwidth", "ORDER BY step, transport")
    assert [(r["step"], r["transport"], r["tasks"], r["bytes"], r["time_ns"]) for r in bandwidth] == [
        (step, transport, 1, 1_048_576, 100_000) for step in (1, 2) for transport in ("HCCS", "SDMA")]
    assert {(r["transport"], r["packet_bytes"], r["tasks"], r["time_ns"])
            for r in _mart(out, "comm_op_packet")} == {("HCCS", 1_048_576, 1, 100_000)}
    matrix = _mart(out, "comm_link_matrix", "WHERE stat IN ('top1', 'total') ORDER BY step, src_rank, dst_rank, stat")
    assert [(r["step"], r["matrix_type"], r["src_rank"], r["dst_rank"], r["stat"], r["transport"], r["bytes"],
             r["time_ns"]) for r in matrix] == [
        row for step in (1, 2) for row in (
            (step, "allreduce", 0, 0, "top1", "LOCAL", 4_096, 150_000),
            (step, "allreduce", 0, 0, "total", "LOCAL", 4_096, 150_000),
            (step, "allreduce", 0, 1, "top1", "HCCS", 1_048_576, 100_000),
            (step, "allreduce", 0, 1, "total", "HCCS", 1_048_576, 100_000))]


@pytest.mark.parametrize("kind,rank", [("text", 0), ("text", 1), ("db", 0), ("db", 1), ("pair", "text")])
def test_invariants(analysed, kind: str, rank: object) -> None:
    out = analysed(kind, rank)
    assert query(out, "SELECT count(*) FROM comm_op_time WHERE elapse_ns <> transit_ns + wait_ns + idle_ns "
                      "OR synchronization_ns > wait_ns OR idle_ns < 0") == [(0,)]
    assert query(out, "SELECT count(*) FROM comm_op_time")[0][0] > 0
    # SDMA = HCCS + PCIE + SIO per op; the matrix's total over links = the ops' transit tasks of every plane
    assert query(out, """
        SELECT count(*) FROM (SELECT op_name, iteration, sum(bytes) FILTER (WHERE transport = 'SDMA') AS sdma,
                                     sum(bytes) FILTER (WHERE transport IN ('HCCS', 'PCIE', 'SIO')) AS links
                              FROM comm_op_bandwidth GROUP BY ALL) WHERE sdma IS DISTINCT FROM links""") == [(0,)]
    assert query(out, "SELECT sum(bytes) FROM comm_link_matrix WHERE stat = 'total'") == query(
        out, "SELECT sum(bytes) FROM comm_task WHERE task_type IN ('Memcpy', 'Reduce Inline', 'RDMASend')")


def _task(plane: int, seq: int, task_type: str, start: int, dur: int, dst: int, transport: str,
          link_type: str | None = None, bytes_: int | None = None) -> dict:
    return {"op_name": "hcom_allReduce__1_0_1", "op_type": "AllReduce", "op_ordinal": None, "iteration": 1, "step": 1,
            "seq": seq, "plane": plane, "stream_id": 5, "task_id": seq, "task_type": task_type, "src_rank": 0,
            "dst_rank": dst, "transport": transport, "link_type": link_type, "bytes": bytes_, "start_ns": start,
            "dur_ns": dur}


#: One allreduce of rank 0, no whole-op row (elapse = first task start to last task end, 0-5000): plane 0 holds only
#: an ON_CHIP copy, so plane 1 is the master: a 400 ns wait before any transit (synchronization), an RDMA payload
#: (RDMASend, RDMASend, then a Notify Wait that is transit), an HCCS copy, a 50 ns wait; plane 2 (not the master)
#: waits 5000 ns and copies over PCIE.
RDMA_OP = [_task(0, 0, "Memcpy", 0, 50, 0, "SDMA", "ON_CHIP", 100),
           _task(1, 1, "Notify Wait", 0, 400, 2, "RDMA"),
           _task(1, 3, "RDMASend", 500, 100, 2, "RDMA", None, 1_000),
           _task(1, 4, "RDMASend", 600, 100, 2, "RDMA", None, 24),
           _task(1, 5, "Notify Wait", 700, 300, 2, "RDMA"),
           _task(1, 6, "Memcpy", 1_000, 200, 1, "SDMA", "HCCS", 2_000),
           _task(1, 7, "Notify Wait", 1_200, 50, 1, "SDMA"),
           _task(2, 2, "Notify Wait", 0, 5_000, 3, "SDMA"),
           _task(2, 8, "Memcpy", 100, 100, 3, "SDMA", "PCIE", 500)]


def test_rdma_payload_waits_are_transit_and_only_the_master_plane_counts() -> None:
    [time] = model_rows({"comm_task": RDMA_OP}, "comm_op_time")
    assert (time["master_plane"], time["elapse_ns"], time["transit_ns"], time["wait_ns"], time["synchronization_ns"],
            time["idle_ns"]) == (1, 5_000, 100 + 100 + 300 + 200, 400 + 50, 400, 5_000 - 700 - 450)
    bandwidth = {r["transport"]: (r["tasks"], r["bytes"], r["time_ns"])
                 for r in model_rows({"comm_task": RDMA_OP}, "comm_op_bandwidth")}
    assert bandwidth == {"RDMA": (1, 1_024, 500), "HCCS": (1, 2_000, 200), "PCIE": (1, 500, 100),
                         "SDMA": (2, 2_500, 300)}
    matrix = {(r["src_rank"], r["dst_rank"]): (r["transport"], r["bytes"], r["time_ns"])
              for r in model_rows({"comm_task": RDMA_OP}, "comm_link_matrix") if r["stat"] == "total"}
    assert matrix == {(0, 0): ("LOCAL", 100, 50), (0, 1): ("HCCS", 2_000, 200), (0, 2): ("RDMA", 1_024, 200),
                      (0, 3): ("PCIE", 500, 100)}
