"""Exit codes that match the vendor: every real MindSpore / MindInsight dump in ../shared/realdata that
MindSpore's own parsers read without complaint is a complete run (exit 0) with no lossy ledger row; and on these
and on real PyTorch, HTA and Nsight Systems traces, every model's data tests and invariants hold (a share within
0-1, parts within their whole: profpipe/model_checks.py).

What MindSpore leaves out by design (Ascend tasks of no op, AI CPU Thread records without their Node
record, an AICPUMI file of no records) is `excluded` or `kept`, never `dropped`: a nightly job that
alerts on exit 3 must stay quiet on healthy runs of these kinds. A set that is partial here is a
profpipe bug, unless its files are truly damaged (none of these is).
"""
from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from conftest import realdata, run
from profpipe.model_checks import check_models
from profpipe.errors import EXIT_COMPLETE
from profpipe.health import LOSSY_ACTIONS

MI = "mindinsight/tests/utils/resource"
#: The MindSpore / MindInsight sets MindSpore's and MindInsight's tests read (PROVENANCE.md's matched sets).
CLEAN_SETS = [
    f"{MI}/JOB3",  # real era A: 57213 profiling tasks of no op, 323 Thread-only AI CPU records, empty AICPUMI
    f"{MI}/JOB1", f"{MI}/JOB2", f"{MI}/JOB4", f"{MI}/ERROR_JOB", f"{MI}/container", f"{MI}/JOB_AICPU",
    f"{MI}/run_1/normal_run/profiler", f"{MI}/run_2/normal_run/profiler", f"{MI}/cluster_propose", f"{MI}/profiler",
    "mindspore/tests/ut/data/profiler_data",
]


@pytest.mark.parametrize("relative", CLEAN_SETS, ids=[p.removeprefix(f"{MI}/") for p in CLEAN_SETS])
def test_vendor_clean_dump_is_complete(relative: str, tmp_path: Path) -> None:
    result = run(realdata(relative), tmp_path / "out", data_simplification=True)
    lossy = [(r["check_name"], r["action"], r["message"]) for r in result.health["rows"] if r["action"] in LOSSY_ACTIONS]
    assert lossy == [] and result.skipped == []
    assert result.exit_code == EXIT_COMPLETE
    _assert_models_hold(result.output)


#: Real GPU traces of several kinds: the HTA test traces whose numbers broke an invariant once (identical runtime
#: calls in one µs, activities overlapping on a stream), an MTIA trace, a PyTorch sample and an nsys export.
GPU_SETS = ["HolisticTraceAnalysis/tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
            "HolisticTraceAnalysis/tests/data/mtia_trace_single_rank/mtia_rank_0.json.gz",
            "HolisticTraceAnalysis/tests/data/rank_non_gpu/rank_non_gpu.json.gz",
            "HolisticTraceAnalysis/tests/data/negative_queue_length_values_check/rank0.json.gz",
            "kineto/tb_plugin/samples/resnet50_num_workers_0", "Fuser/report1.sqlite"]


@pytest.mark.parametrize("relative", GPU_SETS, ids=[Path(p).parent.name for p in GPU_SETS])
def test_models_hold_on_real_gpu_traces(relative: str, tmp_path: Path) -> None:
    """HTA and Nsight Systems read these cleanly: a complete run too."""
    result = run(realdata(relative), tmp_path / "out", data_simplification=True)
    assert result.exit_code == EXIT_COMPLETE, result.health["rows"]
    _assert_models_hold(result.output)


#: Real PyTorch traces whose captures hold what every capture may: Python frames whose parent began before the capture
#: or was still open when it ended (B200), frames of autograd's backward thread whose parent is on the main thread
#: and device activities launched before the profiler started (MI300X, activation checkpointing), kernels that
#: overlap on one stream under programmatic dependent launch (B200). Expected: kept, never loss.
TRACELENS = {"b200": ("TraceLens/tests/traces/b200/eager_trace.json.gz",
                      {("unlinked", "kept"): 4, ("clock", "kept"): 74}),
             "mi300": ("TraceLens/tests/traces/mi300/resnet_act_checkpoint.json.gz",
                       {("ambiguous", "kept"): 504, ("unlinked", "kept"): 968})}


@pytest.mark.parametrize("name", sorted(TRACELENS))
def test_tracelens_traces_are_complete(name: str, tmp_path: Path) -> None:
    """Every row of their ledger is an expected one (counts found by reading the raw events in plain Python: 4
    frames naming absent parents and 74 stream overlaps on the B200, 504 backward-thread frames naming a frame of
    the main thread and 968 activities whose correlation ids lie below every runtime call's on the MI300X); exit 0,
    and every model's data tests and invariants hold."""
    relative, expected = TRACELENS[name]
    result = run(realdata(relative), tmp_path / "out", data_simplification=True)
    assert {(r["check_name"], r["action"]): r["rows"] for r in result.health["rows"]} == expected
    assert result.exit_code == EXIT_COMPLETE and result.skipped == []
    _assert_models_hold(result.output)


def _assert_models_hold(out: Path) -> None:
    with duckdb.connect(str(out / "profile.duckdb"), read_only=True) as con:
        failures = check_models(con)
    assert not failures, "\n".join(map(str, failures))


def test_job3_ledger_names_what_mindspore_leaves_out(tmp_path: Path) -> None:
    result = run(realdata(f"{MI}/JOB3"), tmp_path / "out", data_simplification=True)
    rows = {(r["check_name"], r["action"]): r for r in result.health["rows"]}
    assert set(rows) == {("unlinked", "excluded"), ("ambiguous", "kept"), ("truncated", "excluded")}
    assert rows["truncated", "excluded"]["rows"] == 1  # step 323: begun when the capture stopped; MindSpore has 322
    assert "step 323" in rows["truncated", "excluded"]["message"]
    assert rows["unlinked", "excluded"]["rows"] == 57213 + 323  # profiling tasks + Thread-only AI CPU records
    assert rows["ambiguous", "kept"]["first_file"].endswith("DATA_PREPROCESS.dev.AICPUMI.1.slice_0")
