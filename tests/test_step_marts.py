"""Every step found reaches every per-step mart: a step without an FP point (an inference step whose host span holds
no framework op, as a CUDA-graph replay's ProfilerStep#N holds only its runtime calls) is a row of step_phases with
NULL phases, and of step_gpu_time, step_overlap and overlap_segment with the device work it launched. The expected
numbers are derived here from the trace this test writes."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, query, realdata, run
from test_report import payload

sys.path.insert(0, str(FIXTURES / "generators"))
from kineto import BASE_NS, Trace  # noqa: E402  (the fixture generator's event builder)

from profpipe.database import connect  # noqa: E402
from profpipe.model_checks import check_models  # noqa: E402

#: The marts with one row per (rank, capture, step) of a GPU rank's steps.
PER_STEP_MARTS = ("step_phases", "step_gpu_time", "step_overlap", "cluster_step_phases")
#: Two kernels per step, (start, duration) in ns from the step's start: the GPU runs them after their launch.
KERNELS = ((1_200_000, 3_000_000), (4_500_000, 2_000_000))


def _inference_trace(folder: Path, steps: int) -> Path:
    """A Kineto trace of `steps` inference steps of 10 ms: each ProfilerStep#N holds two cudaGraphLaunch calls (no
    cpu_op, no backward: no FP point, no BP point) whose kernels run on the GPU."""
    trace = Trace("current")
    for number in range(1, steps + 1):
        start = (number - 1) * 10_000_000
        trace.host("user_annotation", f"ProfilerStep#{number}", start, 10_000_000)
        for k, (offset, dur) in enumerate(KERNELS):
            trace.launch(1000 * number + k, "cudaGraphLaunch", start + 100_000 + 200_000 * k, "kernel", f"graph_kernel_{k}",
                         start + offset, dur, grid=[8, 1, 1], block=[128, 1, 1])
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "inference.pt.trace.json"
    path.write_text(json.dumps(trace.document(None)))
    return path


@pytest.fixture(scope="module")
def inference(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("inference")
    return run(_inference_trace(folder / "in", steps=1), folder / "out").output


def _missing(out: Path) -> dict[str, list[tuple]]:
    """Per per-step mart, the (rank, capture, step) of int_step (with a window) that it lacks."""
    return {mart: query(out, f"SELECT rank, capture, step FROM int_step WHERE start_ns IS NOT NULL AND end_ns IS NOT NULL "
                             f"EXCEPT SELECT rank, capture, step FROM {mart}") for mart in PER_STEP_MARTS}


def test_an_inference_step_without_an_fp_point_is_in_every_per_step_mart(inference: Path):
    assert query(inference, "SELECT step, fp_ns, bp_ns FROM int_step") == [(1, None, None)]
    assert _missing(inference) == {mart: [] for mart in PER_STEP_MARTS}


def test_the_step_without_points_keeps_its_total_and_null_phases(inference: Path):
    start = BASE_NS
    assert query(inference, "SELECT step, start_ns, end_ns, total_ns, fp_ns, iteration_interval_ns, fp_and_bp_ns, "
                            "tail_ns FROM step_phases") == [(1, start, start + 10_000_000, 10_000_000,
                                                             None, None, None, None)]


def test_the_inference_step_measures_the_gpu_work_it_launched(inference: Path):
    # the oracle: the step's GPU window is the span of the two kernels it launched; they do not overlap
    first, last = KERNELS[0], KERNELS[-1]
    window = (BASE_NS + first[0], BASE_NS + last[0] + last[1])
    busy = sum(dur for _, dur in KERNELS)
    assert query(inference, "SELECT step, gpu_window_start_ns, gpu_window_ns, compute_ns, busy_ns, idle_ns, kernels "
                            "FROM step_gpu_time") == [(1, window[0], window[1] - window[0], busy, busy,
                                                       window[1] - window[0] - busy, len(KERNELS))]
    assert query(inference, "SELECT step, computation_ns, free_ns, total_ns FROM step_overlap") == [
        (1, busy, window[1] - window[0] - busy, window[1] - window[0])]


def test_the_inference_steps_pass_the_models_data_tests(tmp_path: Path):
    out = run(_inference_trace(tmp_path / "in", steps=3), tmp_path / "out").output
    assert query(out, "SELECT count(*) FROM step_phases") == [(3,)]
    assert _missing(out) == {mart: [] for mart in PER_STEP_MARTS}
    con = connect(out / "profile.duckdb", read_only=True)
    try:
        assert [str(f) for f in check_models(con)] == []
    finally:
        con.close()


@pytest.mark.parametrize("fixture", ["kineto/current", "kineto_async", "mindspore_gpu/graph_2x", "pytorch_cuda", "paddle"])
def test_every_step_of_a_fixture_is_in_every_per_step_mart(fixture: str, tmp_path: Path):
    out = run(FIXTURES / fixture, tmp_path / "out").output
    assert query(out, "SELECT count(*) > 0 FROM int_step") == [(True,)]
    assert _missing(out) == {mart: [] for mart in PER_STEP_MARTS}


def test_the_report_draws_the_step_without_points_and_its_device_time(tmp_path: Path):
    out = run(_inference_trace(tmp_path / "in", steps=1), tmp_path / "out", visual_report=True).output
    pages = {p["id"]: p for p in payload(out / "report.html")["pages"]}
    chart = next(s for s in pages["steps"]["sections"] if s.get("id") == "steps")
    assert (chart["data"]["total_ms"], chart["data"]["unsplit_ms"], chart["data"]["fp_and_bp_ms"]) == \
        ([10.0], [10.0], [None])
    assert "unsplit_ms" in [p["key"] for p in chart["phases"]]
    assert "No device executions inside steps" not in json.dumps(pages["utilisation"])


@pytest.mark.parametrize("trace, steps", [("mi300/resnet_act_checkpoint.json.gz", 3), ("b200/eager_trace.json.gz", 0)])
def test_every_step_of_a_tracelens_trace_is_in_every_per_step_mart(trace: str, steps: int, tmp_path: Path):
    """The real TraceLens traces: the MI300X ResNet's three ProfilerStep#N; the B200 eager trace has none."""
    out = run(realdata(f"TraceLens/tests/traces/{trace}"), tmp_path / "out").output
    assert query(out, "SELECT count(*) FROM int_step") == [(steps,)]
    assert _missing(out) == {mart: [] for mart in PER_STEP_MARTS}
