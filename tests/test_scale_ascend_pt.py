"""benchmarks/scale_ascend_pt.py: a real torch_npu rank repeated 3 times reads as 3 steps equal to the real one.

Oracles: the real rank's step_trace_time.csv (the tool's own per-step phases, which every copy must reproduce, as
test_ascend_pt_text.py checks for the real step) and the real rank's own analysis (3 times its kernels, host ops and
HCCL tasks; every step's phases equal to the ns, since the copies are shifted by whole ns).
"""
from __future__ import annotations

import csv
import json
import sys
from decimal import Decimal
from pathlib import Path

import duckdb

from conftest import REPO, realdata, run

sys.path.insert(0, str(REPO / "benchmarks"))
import scale_ascend_pt  # noqa: E402  (a script of benchmarks/, not a package)

RANK0 = "Ascend-msinsight/test/data/pytorch/text/level1/rank0_ascend_pt"
COPIES = 3
PHASES = "computation_ns, pure_communication_ns, overlapped_communication_ns, communication_ns, free_ns"


def _query(output: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(output / "profile.duckdb"), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_scaled_rank_repeats_the_real_step(tmp_path: Path) -> None:
    source = realdata(RANK0)
    scaled = tmp_path / "in" / source.name
    scale_ascend_pt.scale_rank(source, scaled, COPIES)
    produced = scaled / "ASCEND_PROFILER_OUTPUT"
    events = json.loads((produced / "trace_view.json").read_bytes())
    original = json.loads((source / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_bytes())
    metadata = sum(e.get("ph") == "M" for e in original)
    assert len(events) == COPIES * (len(original) - metadata) + metadata
    assert sorted(e["name"] for e in events if str(e.get("name")).startswith("ProfilerStep#")) == [
        f"ProfilerStep#{50 + k}" for k in range(COPIES)]
    assert set(json.loads((produced / "communication.json").read_bytes())) == {f"step{50 + k}" for k in range(COPIES)}

    real = run(source, tmp_path / "real").output
    ours = run(tmp_path / "in", tmp_path / "out").output
    counts = ("SELECT (SELECT count(*) FROM device_exec), (SELECT count(*) FROM host_op), "
              "(SELECT count(*) FROM comm_task)")
    assert _query(ours, counts)[0] == tuple(COPIES * n for n in _query(real, counts)[0])
    [real_step] = _query(real, f"SELECT {PHASES} FROM step_overlap")
    steps = _query(ours, f"SELECT step, {PHASES} FROM step_overlap ORDER BY step")
    assert [row[0] for row in steps] == [50 + k for k in range(COPIES)]
    assert all(row[1:] == real_step for row in steps)
    with open(produced / "step_trace_time.csv", newline="") as handle:
        tool = {int(r["Step"]): r for r in csv.DictReader(handle)}
    assert tool.keys() == {50 + k for k in range(COPIES)}
    for step, computation, pure, overlapped, communication, free in steps:
        row = tool[step]
        for column, ns in (("Computing", computation), ("Communication(Not Overlapped)", pure),
                           ("Overlapped", overlapped), ("Communication", communication), ("Free", free)):
            assert abs(Decimal(ns) / 1000 - Decimal(row[column])) <= Decimal("0.03"), (step, column)
