"""`profpipe diff`: two analyses of the MindSpore GPU fixture graph_2x, run B edited in known ways (one kernel
1 ms slower in every execution, one kernel removed, one kernel's durations shuffled with 3 µs added once),
compared with numbers worked out from the fixture files themselves; the Welch p-value against closed forms."""
from __future__ import annotations

import json
import math
import shutil
import statistics
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, run
from op_timestamps import LENET_OPS, durations_ms, edited_copy
from profpipe.cli import app
from profpipe.diff import SCHEMA, diff_runs, regressions, welch
from profpipe.errors import EXIT_REGRESSION

GPU = FIXTURES / "mindspore_gpu" / "graph_2x"
ACTIVITY = Path("profiler") / "activity_execute_timestamp_0.txt"
SLOWER = "BiasAddKernel<float>(float*, float const*, int)"
REMOVED = "ReluGradKernel<float>(unsigned long, float const*, float const*, float*)"
NOISY = "ReluKernel<float>(unsigned long, float const*, float*)"
UNCHANGED = "MemcpyD2D"


def _activities(folder: Path) -> list[list[str]]:
    """The lines of the activity file as [name, stream, start ns, duration µs]."""
    return [line.rsplit(";", 3) for line in (folder / ACTIVITY).read_text().splitlines() if line.strip()]


def _durations_ns(folder: Path, name: str) -> list[int]:
    return [int(Decimal(dur) * 1000) for n, _, _, dur in _activities(folder) if n == name]


def _edit_run_b(source: Path, target: Path) -> None:
    """B: SLOWER takes 1000 µs more in each execution, REMOVED is gone (also from the activity summary CSV),
    NOISY's durations run in reverse order with 3 µs added to the first."""
    shutil.copytree(source, target)
    lines, noisy = [], [dur for n, _, _, dur in _activities(source) if n == NOISY][::-1]
    noisy[0] = str(Decimal(noisy[0]) + 3)
    for name, stream, start, dur in _activities(source):
        if name == REMOVED:
            continue
        if name == SLOWER:
            dur = str(Decimal(dur) + 1000)
        elif name == NOISY:
            dur = noisy.pop(0)
        lines.append(";".join((name, stream, start, dur)))
    (target / ACTIVITY).write_text("\n".join(lines) + "\n")
    summary = target / "profiler" / "gpu_activity_data_0.csv"
    summary.write_text("".join(line for line in summary.read_text().splitlines(keepends=True)
                               if not line.startswith(f'"{REMOVED}"')))


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path, Path]:
    """(input of B, output of A, output of B)."""
    root = tmp_path_factory.mktemp("diff")
    _edit_run_b(GPU, root / "input_b")
    run(GPU, root / "a", data_simplification=True)
    run(root / "input_b", root / "b", data_simplification=True)
    return root / "input_b", root / "a", root / "b"


def _connect(out: Path) -> duckdb.DuckDBPyConnection:
    return duckdb.connect(str(out / "profile.duckdb"), read_only=True)


@pytest.fixture(scope="module")
def rows(runs) -> list[dict]:
    _, a, b = runs
    table = diff_runs(_connect(a), _connect(b))
    assert table.schema == SCHEMA
    return table.to_pylist()


def _row(rows: list[dict], kind: str, key: str) -> dict:
    return next(r for r in rows if r["kind"] == kind and r["key"] == key)


def _steps() -> int:
    """The fixture's steps: one execution of the data op GetNext per step."""
    line = next(line for line in (GPU / "profiler" / "gpu_op_execute_timestamp_0.txt").read_text().splitlines()
                if line.startswith("Default/GetNext-op0;"))
    return len(line.split(";")[2].split())


def test_the_slower_kernel_changes_by_what_the_edit_added_ranks_first_and_is_significant(rows):
    steps = _steps()
    assert steps == 5
    total_a = sum(_durations_ns(GPU, SLOWER))
    row = _row(rows, "kernel", SLOWER)
    assert rows[0] == row
    assert (row["status"], row["count_a"], row["count_b"], row["count_change"]) == ("both", 5, 5, 0)
    assert (row["steps_a"], row["steps_b"]) == (steps, steps)
    assert (row["total_a_ns"], row["total_b_ns"], row["total_change_ns"]) == (total_a, total_a + 5_000_000, 5_000_000)
    assert row["per_step_a_ns"] == total_a / steps
    assert row["per_step_change_ns"] == 1_000_000
    assert row["relative_change"] == pytest.approx(1_000_000 / (total_a / steps))
    assert row["t_statistic"] > 0 and row["p_value"] < 1e-6 and row["significant"]


def test_a_removed_kernel_is_only_in_a(rows):
    total_a = sum(_durations_ns(GPU, REMOVED))
    row = _row(rows, "kernel", REMOVED)
    assert (row["status"], row["count_a"], row["count_b"], row["total_a_ns"], row["total_b_ns"]) == \
        ("only_a", 5, 0, total_a, 0)
    assert row["per_step_change_ns"] == -total_a / 5 and row["relative_change"] == -1.0
    # a kernel the runs do not share is not a change of the rank order: the slower one still leads
    assert [r["key"] for r in rows[:2]] == [SLOWER, REMOVED]


def test_noise_and_an_unchanged_kernel_are_not_significant(rows):
    noisy = _row(rows, "kernel", NOISY)
    assert (noisy["count_change"], noisy["total_change_ns"], noisy["per_step_change_ns"]) == (0, 3000, 600)
    assert abs(noisy["relative_change"]) > 0.01 and noisy["p_value"] > 0.5 and not noisy["significant"]
    same = _row(rows, "kernel", UNCHANGED)
    assert (same["status"], same["count_change"], same["total_change_ns"], same["per_step_change_ns"]) == \
        ("both", 0, 0, 0)
    assert same["p_value"] == 1.0 and not same["significant"]
    # the edit touched device activities only: ops and step phases are as they were
    for row in rows:
        if row["kind"] != "kernel":
            assert (row["status"], row["total_change_ns"], row["significant"]) == ("both", 0, False), row
    assert {r["kind"] for r in rows} == {"kernel", "op_type", "step_phase"}
    assert {r["samples"] for r in rows} == {"steps"}  # every cycle of both runs has steps
    assert _row(rows, "step_phase", "total")["count_a"] == 5


def test_rows_are_ordered_by_impact(rows):
    impacts = [abs(r["per_step_change_ns"]) for r in rows]
    assert impacts == sorted(impacts, reverse=True)


def test_a_run_against_itself_changes_nothing(runs):
    _, a, _ = runs
    rows = diff_runs(_connect(a), _connect(a)).to_pylist()
    assert rows and all(r["status"] == "both" and r["count_change"] == 0 and r["total_change_ns"] == 0
                        and r["per_step_change_ns"] == 0 and not r["significant"] for r in rows)


def test_the_p_value_is_studentʼs_t():
    # Welch-Satterthwaite df of exactly 2 (equal variances, n = 2 each) and 1 (one side without variance)
    t, p = welch(0.0, 2.0, 2, 2.0, 2.0, 2)  # t = 2 / sqrt(2), df = 2: p = 1 - t / sqrt(2 + t^2)
    assert t == pytest.approx(math.sqrt(2)) and p == pytest.approx(1 - t / math.sqrt(2 + t * t), rel=1e-12)
    t, p = welch(0.0, 1.0, 2, 1.0, 0.0, 2)  # one side without variance: df = 1, p = 1 - 2 atan(|t|) / pi
    assert t == pytest.approx(math.sqrt(2)) and p == pytest.approx(1 - 2 * math.atan(t) / math.pi, rel=1e-12)
    assert welch(5.0, 0.0, 3, 5.0, 0.0, 4) == (0.0, 1.0)
    assert welch(5.0, 0.0, 3, 6.0, 0.0, 4) == (math.inf, 0.0)


def invoke(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_the_cli_prints_the_top_list_and_json_with_the_tableʼs_rows(runs, rows, tmp_path):
    _, a, b = runs
    result = invoke("diff", a, b, "--top", "3")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "3 by |change per step|" in lines[0] and len(lines) == 3 + 3
    assert lines[3].startswith("kernel") and "BiasAddKernel" in lines[3]
    result = invoke("diff", a, b, "--json", "-o", tmp_path / "diff.parquet")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert (document["a"], document["b"]) == (str(a), str(b))
    assert document["rows"] == rows
    assert pq.read_table(tmp_path / "diff.parquet").to_pylist() == rows


def test_a_folder_without_profile_duckdb_is_a_usage_error(runs, tmp_path):
    _, a, _ = runs
    result = invoke("diff", a, tmp_path)
    assert result.exit_code == 2
    assert str(tmp_path) in result.stderr and "profile.duckdb" in result.stderr and "Traceback" not in result.output
    assert invoke("diff", a, a, "-o", tmp_path / "diff.txt").exit_code == 2


# --fail-above, the CI gate: run C is A with one op type 100 µs slower in every step (significant, about +110 %)
# and another 60 µs slower in one step only (about +15 %, but not significant).
OPS = Path("profiler") / "gpu_op_execute_timestamp_0.txt"
SLOWER_OP = "Conv2DBackpropFilter"
NOISY_OP = "ReluGrad"


def _edit_ops(source: Path, target: Path) -> None:
    shutil.copytree(source, target)
    lines = []
    for line in (source / OPS).read_text().splitlines():
        name, kind, samples = line.split(";", 2)
        pairs = [pair.split(",") for pair in samples.split()]
        op = name.rsplit("/", 1)[-1].rsplit("-op", 1)[0]
        if op == SLOWER_OP:
            pairs = [(start, str(Decimal(dur) + 100)) for start, dur in pairs]
        elif op == NOISY_OP:
            pairs[2] = (pairs[2][0], str(Decimal(pairs[2][1]) + 60))
        lines.append(";".join((name, kind, " ".join(",".join(pair) for pair in pairs) + " ")))
    (target / OPS).write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def slower_ops(runs, tmp_path_factory) -> Path:
    """The output of run C."""
    root = tmp_path_factory.mktemp("gate")
    _edit_ops(GPU, root / "input_c")
    run(root / "input_c", root / "c", data_simplification=True)
    return root / "c"


def test_the_gate_fails_on_a_significant_op_type_regression_and_names_it(runs, slower_ops):
    _, a, _ = runs
    rows = diff_runs(_connect(a), _connect(slower_ops)).to_pylist()
    slower, noisy = _row(rows, "op_type", SLOWER_OP), _row(rows, "op_type", NOISY_OP)
    assert slower["significant"] and 1.0 < slower["relative_change"] < 2.0
    assert not noisy["significant"] and noisy["relative_change"] > 0.05
    result = invoke("diff", a, slower_ops, "--fail-above", "5")
    assert result.exit_code == EXIT_REGRESSION == 4, result.output
    gate = result.stdout[result.stdout.index("--fail-above 5: 1 significant regression"):]
    assert f"op_type  {SLOWER_OP}" in gate and NOISY_OP not in gate
    result = invoke("diff", a, slower_ops, "--fail-above", "5", "--json")
    assert result.exit_code == 4, result.output
    document = json.loads(result.stdout)
    assert document["fail_above"] == 5
    assert [(r["kind"], r["key"]) for r in document["regressions"]] == [("op_type", SLOWER_OP)]
    assert document["regressions"][0]["relative_change"] == pytest.approx(slower["relative_change"])


def test_the_gate_fails_on_a_slower_kernel(runs):
    _, a, b = runs
    result = invoke("diff", a, b, "--fail-above", "5", "--top", "1")
    assert result.exit_code == 4, result.output
    assert f"kernel  {SLOWER[:57]}" in result.stdout[result.stdout.index("above 5 % from"):]


def test_the_gate_passes_below_the_threshold_on_noise_on_improvements_and_unchanged_runs(runs, slower_ops):
    _, a, _ = runs
    result = invoke("diff", a, slower_ops, "--fail-above", "200")  # the op type is about 110 % slower
    assert result.exit_code == 0, result.output
    assert "no significant regression above 200 %" in result.stdout
    assert invoke("diff", slower_ops, a, "--fail-above", "5").exit_code == 0  # only improvements
    assert invoke("diff", a, a, "--fail-above", "0").exit_code == 0
    document = json.loads(invoke("diff", a, a, "--fail-above", "0", "--json").stdout)
    assert document["regressions"] == []
    assert invoke("diff", a, a, "--fail-above", "-1").exit_code == 2


def test_the_gate_takes_the_step_time_and_the_top_keys_only():
    import pyarrow as pa

    def row(kind, key, a_ns, b_ns, significant=True):
        return {"kind": kind, "key": key, "status": "both", "per_step_a_ns": a_ns, "per_step_b_ns": b_ns,
                "per_step_change_ns": b_ns - a_ns, "relative_change": (b_ns - a_ns) / a_ns if a_ns else None,
                "samples": "steps", "p_value": 0.001 if significant else 0.5, "significant": significant}

    table = pa.Table.from_pylist([
        row("step_phase", "total", 1000.0, 1100.0), row("step_phase", "tail", 100.0, 200.0),
        row("op_type", "Tiny", 1.0, 9.0),  # < 1 % of the step in A and in B
        row("op_type", "Small", 5.0, 20.0),  # 2 % of the step in B: top
        row("kernel", "New", 0.0, 50.0),  # new in B: a regression of any size
        row("kernel", "Faster", 500.0, 100.0), row("kernel", "Noise", 500.0, 900.0, significant=False),
    ])
    assert [(r["kind"], r["key"]) for r in regressions(table, 5)] == \
        [("step_phase", "total"), ("op_type", "Small"), ("kernel", "New")]
    assert [r["key"] for r in regressions(table, 10)] == ["Small", "New"]  # the step: exactly 10 %


def test_batch_gates_the_newest_run_against_the_one_before(tmp_path):
    root, wh = tmp_path / "runs", tmp_path / "wh"
    root.mkdir()
    shutil.copytree(GPU, root / "1-base")
    first = invoke("batch", root, "-w", wh, "--workers", "1", "--no-report", "--fail-above", "5")
    assert first.exit_code == 0, first.output
    assert "fewer than two measured runs" in first.stdout
    _edit_ops(GPU, root / "2-slower")
    slower = invoke("batch", root, "-w", wh, "--workers", "1", "--no-report", "--fail-above", "5")
    assert slower.exit_code == 4, slower.output
    gate = slower.stdout[slower.stdout.index("profpipe batch --fail-above 5: 1 significant regression"):]
    assert "from 1-base to 2-slower" in gate and f"op_type  {SLOWER_OP}" in gate
    document = json.loads(invoke("batch", root, "-w", wh, "--workers", "1", "--no-report", "--fail-above", "5",
                                 "--json").stdout)
    assert (document["gate"]["a"], document["gate"]["b"]) == ("1-base", "2-slower")
    assert [r["key"] for r in document["gate"]["regressions"]] == [SLOWER_OP]
    shutil.copytree(GPU, root / "3-fixed")  # faster again: improvements pass
    fixed = invoke("batch", root, "-w", wh, "--workers", "1", "--no-report", "--fail-above", "5", "--json")
    assert fixed.exit_code == 0, fixed.output
    assert json.loads(fixed.stdout)["gate"] == \
        {"a": "2-slower", "b": "3-fixed", "fail_above": 5, "regressions": []}


# Runs without step markers: LeNet trained by MindSpore 2.10 on the CPU (18 steps; the dump has no step trace, so
# each run is one sample unit). Run B has Conv2D 1.5 times as long in every execution, run N every op within
# +-0.2 % of its time; the samples are the executions themselves.
LENET = FIXTURES / "mindspore_cpu" / "lenet_graph"


@pytest.fixture(scope="module")
def lenet(tmp_path_factory) -> dict[str, Path]:
    """Outputs of two unchanged copies (a, a2), the slower copy (slower) and the noisy copy (noisy), and the inputs
    (input_*)."""
    root = tmp_path_factory.mktemp("lenet")
    edits = {"a": {}, "a2": {}, "slower": {"slower": "Conv2D", "factor": "1.5"}, "noisy": {"noise_seed": 7}}
    found = {}
    for name, edit in edits.items():
        edited_copy(LENET, root / f"input_{name}", LENET_OPS, **edit)
        assert run(root / f"input_{name}", root / name, data_simplification=True).exit_code == 0
        found[name], found[f"input_{name}"] = root / name, root / f"input_{name}"
    return found


def test_the_lenet_fixture_has_no_step_markers(lenet):
    con = _connect(lenet["a"])
    try:
        assert con.execute("SELECT count(*) FROM step_phases").fetchone() == (0,)
    finally:
        con.close()


def test_without_step_markers_the_executions_are_the_samples(lenet):
    rows = diff_runs(_connect(lenet["a"]), _connect(lenet["slower"])).to_pylist()
    assert {r["samples"] for r in rows} == {"executions"}
    row = _row(rows, "op_type", "Conv2D")
    a_ns = [int(d * 1_000_000) for d in durations_ms(lenet["input_a"] / LENET_OPS, "Conv2D")]
    b_ns = [int(d * 1_000_000) for d in durations_ms(lenet["input_slower"] / LENET_OPS, "Conv2D")]
    assert len(a_ns) == len(b_ns) == 36  # two Conv2D instances, 18 steps
    assert (row["count_a"], row["count_b"], row["steps_a"], row["steps_b"]) == (36, 36, 1, 1)
    assert (row["total_a_ns"], row["total_b_ns"]) == (sum(a_ns), sum(b_ns))
    assert row["per_step_a_ns"] == sum(a_ns) and row["relative_change"] == pytest.approx(0.5, abs=1e-6)
    # Welch's t of the executions' times, by hand
    mean_a, mean_b = statistics.mean(a_ns), statistics.mean(b_ns)
    t = (mean_b - mean_a) / math.sqrt(statistics.variance(a_ns) / 36 + statistics.variance(b_ns) / 36)
    assert row["t_statistic"] == pytest.approx(t, rel=1e-9) and row["p_value"] < 0.05 and row["significant"]
    # ops that did not change: equal executions, no test result
    same = _row(rows, "op_type", "MatMul")
    assert (same["total_change_ns"], same["p_value"], same["significant"]) == (0, 1.0, False)


def test_the_gate_fails_on_a_slower_op_type_in_runs_without_step_markers(lenet):
    result = invoke("diff", lenet["a"], lenet["slower"], "--fail-above", "5")
    assert result.exit_code == EXIT_REGRESSION, result.output
    assert "(1 cycles), samples: executions" in result.stdout.splitlines()[0]
    gate = result.stdout[result.stdout.index("--fail-above 5: 1 significant regression"):]
    assert "samples: executions" in gate and "op_type  Conv2D " in gate
    result = invoke("diff", lenet["a"], lenet["slower"], "--fail-above", "5", "--json")
    assert result.exit_code == EXIT_REGRESSION, result.output
    document = json.loads(result.stdout)
    assert document["samples"] == "executions"
    assert [(r["kind"], r["key"], r["samples"]) for r in document["regressions"]] == [("op_type", "Conv2D", "executions")]


@pytest.mark.parametrize("other", ["a2", "noisy"])
def test_the_gate_passes_two_unchanged_or_noisy_copies_without_step_markers(lenet, other):
    result = invoke("diff", lenet["a"], lenet[other], "--fail-above", "5", "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["samples"] == "executions" and document["regressions"] == []
    ops = [r for r in document["rows"] if r["kind"] == "op_type"]
    if other == "noisy":  # the noise changed every op's time a little, none by 1 %
        assert all(r["total_change_ns"] != 0 and abs(r["relative_change"]) < 0.01 for r in ops)
    else:
        assert ops and all(r["total_change_ns"] == 0 for r in ops)
