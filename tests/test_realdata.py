"""Step phases against MindInsight's published step-trace numbers (../shared/realdata).

MindInsight's `profiler/step_trace_raw_0_detail_time.csv` lists, per step, the points and the
phases MindSpore computed (10 ns ticks). From its points we write the GPU graph-layout
`step_trace_profiling_0.txt` MindSpore's GPU profiler would have written (FP, BP and
iteration-end op lines of `start,end` pairs; a step starts where the previous iteration-end
op starts), run profpipe on it, and compare every phase of every step with the CSV.
"""
from __future__ import annotations

import csv

import duckdb

from conftest import realdata, run

CSV = "mindinsight/tests/utils/resource/profiler/step_trace_raw_0_detail_time.csv"


def test_step_phases_equal_mindinsight(tmp_path):
    with open(realdata(CSV), newline="") as handle:
        steps = [r for r in csv.DictReader(handle) if r["step_num"] != "-"]
    ticks = [{k: int(r[k]) for k in ("start_point", "end_point", "fp_point", "bp_point")} for r in steps]
    fp = " ".join(f"{t['fp_point']},{t['fp_point'] + 1}" for t in ticks)
    bp = " ".join(f"{t['bp_point'] - 1},{t['bp_point']}" for t in ticks)
    next_starts = [t["start_point"] for t in ticks[1:]] + [ticks[-1]["end_point"] - 1]
    end = " ".join(f"{s},{t['end_point']}" for s, t in zip(next_starts, ticks))
    source = tmp_path / "profiler"
    source.mkdir()
    (source / "step_trace_profiling_0.txt").write_text(f"Default/FP-op1 {fp}\nDefault/BP-op2 {bp}\n"
                                                       f"Default/END-op3 {end}\n")
    (source / "gpu_op_execute_timestamp_0.txt").write_text(f"Default/FP-op1;GpuOps;{ticks[0]['fp_point'] * 10},1 \n")
    run(source, tmp_path / "out")
    with duckdb.connect(str(tmp_path / "out" / "profile.duckdb"), read_only=True) as con:
        ours = con.execute("SELECT step, start_ns, end_ns, total_ns, iteration_interval_ns, fp_and_bp_ns, tail_ns "
                           "FROM step_phases ORDER BY step").fetchall()
    assert len(ours) == len(steps) == 20
    for row, expected in zip(ours, steps):
        step, start, end_ns, total, interval, fp_and_bp, tail = row
        assert step == int(expected["step_num"])
        assert (start // 10, end_ns // 10) == (int(expected["start_point"]), int(expected["end_point"]))
        assert [total // 10, interval // 10, fp_and_bp // 10, tail // 10] == [
            int(expected[k]) for k in ("total", "iteration_interval", "fp_and_bp", "tail")]
