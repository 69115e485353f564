"""HCCL communication (MindSpore 1.x hccl_info traces + step-trace CSV): comm_task, marts, hccl_raw."""
from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, assert_generator_reproduces, query, realdata, run
from profpipe.errors import InputError, ProfpipeError

HCCL = FIXTURES / "mindspore_hccl"
MS_PROFILER_DATA = "mindspore/tests/ut/data/profiler_data"



def test_hccl_raw_equals_mindspore(tmp_path: Path) -> None:
    source = realdata(MS_PROFILER_DATA)
    out = run(source, tmp_path / "out").output
    expected = source / "profiler"
    assert (out / "reports" / "hccl_raw_6.csv").read_bytes() == (expected / "hccl_raw_6.csv").read_bytes()
    # the step trace read back gives MindSpore's step rows again (its average row is the older 2..N mean)
    ours = (out / "reports" / "step_trace_raw_6_detail_time.csv").read_bytes().splitlines()
    assert ours[:3] == (expected / "step_trace_raw_6_detail_time.csv").read_bytes().splitlines()[:3]


def _expected_execution(events: list[dict]) -> tuple[float, float, dict]:
    """(communication cost ms, wait cost ms, {link: {transport: [time_ms, size_kb]}}), derived here from the
    task list by the rules of algorithms.md §6 (main plane = highest tid)."""
    main = max(e["tid"] for e in events)
    none = 4294967295

    def link(e: dict) -> str:
        src, dst = e["args"]["src rank"], e["args"]["dst rank"]
        src, dst = (dst if src == none else src), (src if dst == none else dst)
        return f"{dst}-{src}" if e["args"]["transport type"] == "LOCAL" else f"{src}-{dst}"

    links: dict = {}
    cost_us: dict = {}
    rdma_wait_main = 0.0
    for i, e in enumerate(events):
        transport = e["args"]["transport type"]
        if transport == "SDMA" and e["name"] in ("Reduce Inline", "Memcpy"):
            time_us, size = e["dur"], int(e["args"]["size"], 16)
        elif transport == "RDMA" and e["name"] == "RDMASend" and i + 2 < len(events) \
                and events[i + 1]["name"] == "RDMASend" and events[i + 2]["name"] == "Notify Wait":
            time_us = e["dur"] + events[i + 1]["dur"] + events[i + 2]["dur"]
            size = int(e["args"]["size"], 16) + int(events[i + 1]["args"]["size"], 16)
            rdma_wait_main += events[i + 2]["dur"] if e["tid"] == main else 0.0
        else:
            continue
        entry = links.setdefault(link(e), {}).setdefault(transport, [0.0, 0])
        entry[0] += time_us
        entry[1] += size
        if e["tid"] == main:
            cost_us[link(e), transport] = cost_us.get((link(e), transport), 0.0) + time_us
    waits = sum(e["dur"] for e in events if e["tid"] == main and e["name"] == "Notify Wait")
    cost = sum(v / 1000 for v in cost_us.values())
    return cost, (waits - rdma_wait_main) / 1000, {
        k: {t: [v[0] / 1000, v[1] / 1000] for t, v in transports.items()} for k, transports in links.items()}


def test_fixture_links_costs_steps_and_names(tmp_path: Path) -> None:
    out = run(HCCL, tmp_path / "out").output
    rows = query(out, """SELECT op_name, iteration, step, op_label, communication_cost_ns / 1e6, wait_cost_ns / 1e6
                          FROM comm_op_stats ORDER BY op_name, iteration""")
    labels = {(op, iteration): (step, label) for op, iteration, step, label, *_ in rows}
    # AllReduce ops map to the step-trace columns by type and ordinal; the Broadcast keeps its name;
    # its first execution starts before step 1 and counts there
    assert labels == {("allReduce_1_1", 1): (1, "stream_5_0_AllReduce-op10"),
                      ("allReduce_1_1", 2): (2, "stream_5_0_AllReduce-op10"),
                      ("allReduce_2_1", 1): (1, "stream_5_1_AllReduce-op20"),
                      ("allReduce_2_1", 2): (2, "stream_5_1_AllReduce-op20"),
                      ("broadcast_1_1", 1): (1, "broadcast_1_1"), ("broadcast_1_1", 2): (2, "broadcast_1_1")}
    links = {(op, iteration, link, transport): (time_ms, size_kb) for op, iteration, link, transport, time_ms, size_kb
             in query(out, "SELECT op_name, iteration, link, transport, time_ns / 1e6, bytes / 1e3 FROM comm_link_stats")}
    for op, iteration, _step, _label, cost, wait in rows:
        trace = HCCL / "profiler" / "hccl_info" / f"{op}_dev3" / f"iter{iteration}.trace"
        expected_cost, expected_wait, expected_links = _expected_execution(json.loads(trace.read_text())["traceEvents"])
        assert cost == pytest.approx(expected_cost, rel=1e-12)
        assert wait == pytest.approx(expected_wait, rel=1e-9, abs=1e-15)
        got = {(k, t): v for (o, i, k, t), v in links.items() if (o, i) == (op, iteration)}
        assert got == {(k, t): pytest.approx(tuple(v), rel=1e-12) for k, ts in expected_links.items() for t, v in ts.items()}
    assert ("allReduce_1_1", 1, "3-3", "SDMA") in links  # 4294967295 takes the other side's rank
    assert not any(k[2] == "3-0" for k in links)  # LOCAL notifies are no link of their own


def test_fixture_hccl_raw_rows_sum_ops_per_step(tmp_path: Path) -> None:
    out = run(HCCL, tmp_path / "out").output
    with open(out / "reports" / "hccl_raw_3.csv", newline="") as handle:
        table = list(csv.reader(handle))
    assert table[0] == ["step_num", "communication_cost", "wait_cost", "link_info", "communication_operator_cost"]
    assert [r[0] for r in table[1:]] == ["1", "2", "-"]
    per_step = dict(query(out, "SELECT step, sum(communication_cost_ns) / 1e6 FROM comm_op_stats GROUP BY step"))
    for row in table[1:3]:
        assert float(row[1]) == pytest.approx(per_step[int(row[0])], rel=1e-12)
        operators = json.loads(row[4])
        assert set(operators) == {"broadcast_1_1", "stream_5_0_AllReduce-op10", "stream_5_1_AllReduce-op20"}
        assert sum(v[1] for v in operators.values()) == pytest.approx(float(row[1]), rel=1e-12)
        links = json.loads(row[3])
        assert links["3-1"]["RDMA"][3] == pytest.approx(7.125 / 1000)  # RDMA vectors carry their wait
    average = table[3]
    assert float(average[1]) == pytest.approx((float(table[1][1]) + float(table[2][1])) / 2, rel=1e-12)


def test_generator_is_deterministic(tmp_path: Path) -> None:
    assert_generator_reproduces("mindspore_hccl.py", HCCL, tmp_path)


def test_bad_hccl_trace_and_step_trace_name_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "in"
    shutil.copytree(HCCL, broken)
    trace = broken / "profiler" / "hccl_info" / "allReduce_2_1_dev3" / "iter2.trace"
    trace.write_text(trace.read_text()[:100])
    with pytest.raises(InputError, match=r"allReduce_2_1_dev3/iter2\.trace: not an HCCL trace JSON with traceEvents \(.*at byte 101"):
        run(broken, tmp_path / "out", strict=True)
    shutil.rmtree(broken)
    shutil.copytree(HCCL, broken)
    csv_path = broken / "profiler" / "step_trace_raw_3_detail_time.csv"
    lines = csv_path.read_text().splitlines()
    lines[2] = lines[2].replace("101000000", "abc", 1)
    csv_path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ProfpipeError, match=r"step_trace_raw_3_detail_time\.csv, line 3: expected integer ticks"):
        run(broken, tmp_path / "out2")


def test_cluster_step_phases_side_by_side(tmp_path: Path) -> None:
    """MindInsight's 4-rank pipeline-parallel step traces: phases per rank, slowest rank, 5 % flag."""
    source = realdata("mindinsight/tests/utils/resource/cluster_propose")
    out = run(source, tmp_path / "out").output
    expected: dict[tuple[int, int], list[int]] = {}
    for rank in range(4):
        with open(source / f"step_trace_raw_{rank}_detail_time.csv", newline="") as handle:
            for row in csv.DictReader(handle):
                if row["step_num"] != "-":
                    expected[rank, int(row["step_num"])] = [int(row[c]) * 10 for c in (
                        "total", "iteration_interval", "fp_and_bp", "tail")]
    rows = query(out, """SELECT rank, step, total_ns, iteration_interval_ns, fp_and_bp_ns, tail_ns, slowest_rank,
                                 is_slow, pure_communication_ns FROM cluster_step_phases""")
    assert {(r[0], r[1]): list(r[2:6]) for r in rows} == expected
    for rank, step, total, *_, slowest, is_slow, pure in rows:
        totals = {r: expected[r, step][0] for r in range(4) if (r, step) in expected}
        assert slowest == max(totals, key=lambda r: (totals[r], -r))
        assert is_slow == (total > 1.05 * min(totals.values()))
        assert pure is None  # a step trace alone says nothing about computation


def test_cluster_flags_a_rank_more_than_5_percent_slower(tmp_path: Path) -> None:
    folder = tmp_path / "in" / "profiler"
    folder.mkdir(parents=True)
    header = "step_num,start_point,end_point,total,fp_point,bp_point,iteration_interval,fp_and_bp,tail\r\n"
    for rank, totals in ((0, (100, 200)), (1, (104, 230))):
        lines, start = [header], 1000
        for step, total in enumerate(totals, start=1):
            end = start + total
            lines.append(f"{step},{start},{end},{total},{start + 10},{end - 20},10,{total - 30},20\r\n")
            start = end
        (folder / f"step_trace_raw_{rank}_detail_time.csv").write_text("".join(lines))
    out = run(tmp_path / "in", tmp_path / "out").output
    assert query(out, """SELECT rank, step, total_ns, slowest_rank, round(spread, 4), round(slowdown, 4), is_slow
                          FROM cluster_step_phases ORDER BY step, rank""") == [
        (0, 1, 1000, 1, 0.04, 0.0, False), (1, 1, 1040, 1, 0.04, 0.04, False),
        (0, 2, 2000, 1, 0.15, 0.0, False), (1, 2, 2300, 1, 0.15, 0.15, True)]


def test_comm_matrix_sums_transfers_per_link(tmp_path: Path) -> None:
    out = run(HCCL, tmp_path / "out").output
    rows = {(r[0], r[1], r[2], r[3]): r[4:] for r in query(out, """
        SELECT op_label, src_rank, dst_rank, transport, executions, tasks, bytes, time_ns, bandwidth_bytes_per_second / 1e9
        FROM comm_matrix""")}
    # AllReduce op10, link 0 -> 3: one 1 MiB Reduce Inline per execution, 120.25 µs then 120.25 * 1.5 µs
    assert rows["stream_5_0_AllReduce-op10", 0, 3, "SDMA"] == (2, 2, 2 * 0x100000, 300_625, pytest.approx(2 * 0x100000 / 300_625))
    # Broadcast: two RDMASend tasks (0x2000 + 0x40 bytes, 10.5 + 2.25 µs) per execution; the Notify Wait moves no data
    assert rows["broadcast_1_1", 3, 1, "RDMA"] == (2, 4, 2 * (0x2000 + 0x40), 25_500, pytest.approx(16_512 / 25_500))


@pytest.mark.parametrize("text, message", [
    ("", "empty file, expected an HCCL trace JSON with traceEvents"),
    ('{"device id": "3", "iteration": 1}', "expected HCCL trace JSON with traceEvents"),
    ('{"traceEvents": [{"tid": 1, "ts": "soon", "dur": 1.0, "name": "Memcpy", "args": {}}]}', "event 0: expected an HCCL task"),
    ('{"traceEvents": [{"tid": 1, "dur": 1.0, "name": "Memcpy", "args": {}}]}', "event 0: expected an HCCL task"),
])
def test_empty_and_wrongly_typed_hccl_traces_name_the_file(tmp_path: Path, text: str, message: str) -> None:
    broken = tmp_path / "in"
    shutil.copytree(HCCL, broken)
    (broken / "profiler" / "hccl_info" / "broadcast_1_1_dev3" / "iter1.trace").write_text(text)
    with pytest.raises(InputError, match=r"broadcast_1_1_dev3/iter1\.trace: " + re.escape(message)):
        run(broken, tmp_path / "out", strict=True)
