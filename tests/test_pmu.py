"""AI Core PMU metrics (msprof op_summary / kernel_details metric columns, l2_cache, hbm / ddr, pcie summaries)
in the three layouts of fixtures/ascend_pmu: the tables against the raw files read with Python's csv module
(the oracle), the marts against the generator's ground truth, and damage to the metric cells and the summary
files (hypothesis), whose values and ledger rows are counted."""
from __future__ import annotations

import csv
import importlib.util
import io
import math
import shutil
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES, REPO, assert_generator_reproduces, query, run
from fuzzing import FUZZ, read_damaged

FIXTURE = FIXTURES / "ascend_pmu"
ERA_F = next(FIXTURE.glob("*_ascend_ms"))
ERA_D = next(FIXTURE.glob("PROF_000001_*")) / "device_1" / "summary"
ERA_E = next(FIXTURE.glob("PROF_000002_*")) / "mindstudio_profiler_output"
#: rank -> (task CSV, its column names for stream, task, start, type)
TASK_FILES = {0: (ERA_F / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", ("Stream ID", "Task ID", "Start Time(us)", "Type")),
              1: (ERA_D / "op_summary_1_1_1.csv", ("Stream ID", "Task ID", "Task Start Time(us)", "OP Type")),
              2: (next(ERA_E.glob("op_summary_*.csv")), ("Stream ID", "Task ID", "Task Start Time(us)", "OP Type"))}
#: the fixture's metric columns: written unit -> (profpipe unit, factor); no unit: by the name (below)
UNITS = {"us": ("ns", 1000.0), "GB/s": ("bytes_per_second", 1e9), "%": ("share", 0.01)}
#: the task columns of msprof (not metrics)
TASK_COLUMNS = {"Step Id", "Model ID", "Task ID", "Stream ID", "Name", "Type", "OP State", "Accelerator Core",
                "Start Time(us)", "Duration(us)", "Wait Time(us)", "Block Dim", "Mix Block Dim", "HF32 Eligible",
                "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes", "Output Data Types",
                "Output Formats", "Context ID", "Op Name", "OP Type", "Task Type", "Task Start Time(us)",
                "Task Duration(us)", "Task Wait Time(us)"}


def _generator():
    spec = importlib.util.spec_from_file_location("ascend_pmu", REPO / "fixtures" / "generators" / "ascend_pmu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _oracle_metric(column: str) -> tuple[str | None, str, str, float]:
    """(core, metric, unit, factor) of a metric column, written out for the fixture's columns."""
    name, _, unit = column.partition("(")
    unit = unit.rstrip(")")
    core = name[:3] if name[:4] in ("aic_", "aiv_") else None
    metric = name[4:] if core else name
    if unit:
        return (core, metric, *UNITS[unit])
    if metric.endswith(("_ratio", "_rate")):
        return core, metric, "share", 1.0
    assert metric.endswith(("_cycles", "_fops")), column
    return core, metric, "count", 1.0


def oracle_metrics(path: Path, keys: tuple[str, str, str, str], skip: frozenset = frozenset()) -> list[tuple]:
    """(stream, task, start_ns, type, core, metric, unit, value) of every metric cell with a value, but the
    cells in `skip` ((row number from 1, column name))."""
    stream, task, start, op_type = keys
    found = []
    with open(path, newline="") as handle:
        for number, row in enumerate(csv.DictReader(handle), start=1):
            for column, text in row.items():
                if column in TASK_COLUMNS or text in ("N/A", "") or (number, column) in skip:
                    continue
                core, metric, unit, factor = _oracle_metric(column)
                found.append((int(row[stream]), int(row[task]), int(Decimal(row[start]) * 1000), row[op_type], core,
                              metric, unit, float(text) * factor))
    return found


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run(FIXTURE, tmp_path_factory.mktemp("pmu") / "out").output


def test_fixture_generator_is_deterministic(tmp_path: Path) -> None:
    assert_generator_reproduces("ascend_pmu.py", FIXTURE, tmp_path)


def test_three_layouts_are_three_ranks_and_nothing_is_dropped(out: Path) -> None:
    assert query(out, "SELECT rank, layout FROM run_info ORDER BY rank") == [
        (0, "ascend_era_f"), (1, "ascend_era_d"), (2, "ascend_era_e")]
    assert query(out, "SELECT count(*) FROM trace_health") == [(0,)]


def test_every_metric_cell_is_one_row_in_profpipes_unit(out: Path) -> None:
    for rank, (path, keys) in TASK_FILES.items():
        order = lambda r: tuple("" if v is None else v for v in r[:7])  # noqa: E731 - core may be None
        expected = sorted(oracle_metrics(path, keys), key=order)
        got = sorted(query(out, f"""SELECT m.stream_id, m.task_id, m.start_ns, d.op_type, m.core, m.metric, m.unit,
                                           m.value
                                    FROM device_exec_metric m JOIN task_desc d USING (rank, stream_id, task_id)
                                    WHERE m.rank = {rank}"""), key=order)
        assert len(got) == len(expected) > 0, rank
        for g, e in zip(got, expected):
            assert g[:7] == e[:7] and _close(g[7], e[7]), (g, e)
    # N/A is missing, not zero: the era F notify task and the cores a task did not run on have no rows
    assert query(out, "SELECT count(*) FROM device_exec_metric WHERE rank = 0 AND task_id = 20") == [(0,)]
    assert query(out, "SELECT DISTINCT core FROM device_exec_metric WHERE rank = 0 AND task_id = 10 "
                      "ORDER BY core NULLS FIRST") == [(None,), ("aic",)]  # the cube op: aicore_time, aic_*


def test_op_type_pmu_stats_are_the_means_of_the_raw_values(out: Path) -> None:
    for rank, (path, keys) in TASK_FILES.items():
        groups: dict[tuple, list[float]] = defaultdict(list)
        for _, _, _, op_type, core, metric, unit, value in oracle_metrics(path, keys):
            groups[op_type, core, metric, unit].append(value)
        got = {tuple(r[:4]): r[4:] for r in query(out, f"""SELECT op_type, core, metric, unit, executions, avg_value,
                                                                min_value, max_value
                                                         FROM op_type_pmu_stats WHERE rank = {rank}""")}
        assert set(got) == set(groups), rank
        for key, values in groups.items():
            executions, avg, low, high = got[key]
            assert executions == len(values) and _close(avg, sum(values) / len(values)), key
            assert (low, high) == (min(values), max(values)), key


def test_op_bound_follows_the_generators_ground_truth(out: Path) -> None:
    gen = _generator()
    rows = query(out, """SELECT op_name, executions, mac_share, vec_share, scalar_share, mte1_share, mte2_share,
                                mte3_share, busiest_pipe, bound, no_bound_executions FROM op_bound WHERE rank = 0""")
    assert {r[0].rsplit("/", 1)[1] for r in rows} == set(gen.PIPE_BOUND)
    assert query(out, "SELECT count(*) FROM op_bound WHERE rank <> 0") == [(0,)]  # other levels: no pipe ratios
    for name, executions, *shares, busiest, bound, no_bound in rows:
        task = next(t for t in gen.PIPE_TASKS if t[0] == name)
        means = {}  # each pipe's mean per core, the busier core's
        for pipes in task[7].values():
            for pipe, per_step in pipes.items():
                means[pipe] = max(means.get(pipe, 0.0), sum(per_step) / len(per_step))
        for pipe, got in zip(("mac", "vec", "scalar", "mte1", "mte2", "mte3"), shares):
            assert (got is None and pipe not in means) or _close(got, means[pipe]), (name, pipe)
        assert executions == 2 and (bound, busiest, no_bound) == gen.PIPE_BOUND[name.rsplit("/", 1)[1]], name


PIPES = {"mac": "compute", "vec": "compute", "scalar": "compute", "mte1": "memory", "mte2": "memory", "mte3": "memory"}


def test_op_bound_roof_columns_are_the_raw_files_busiest_pipes(out: Path) -> None:
    """The roof chart's Ascend side against kernel_details.csv read with the csv module: per op name, each pipe's
    mean over its executions on each core ({aic_,aiv_}<pipe>_ratio, N/A left out), the busier core's; the op sits
    at its busiest pipe (compute: mac, vec, scalar; memory: mte1-3; a tie goes to compute), 1 - that share from the
    roof."""
    cells: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in _raw(ERA_F / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"):
        for column, text in row.items():
            core, _, name = column.partition("_")
            if core in ("aic", "aiv") and name.endswith("_ratio") and name[:-6] in PIPES and text != "N/A":
                cells[(row["Name"], name[:-6])][core].append(float(text))
    expected: dict[str, dict[str, float]] = defaultdict(dict)
    for (op, pipe), per_core in cells.items():
        expected[op][pipe] = max(sum(v) / len(v) for v in per_core.values())
    got = {r[0]: r[1:] for r in query(out, "SELECT op_name, roof_bound, compute_share, memory_share, roof_distance "
                                           "FROM op_bound WHERE rank = 0")}
    assert set(got) == set(expected) and got
    kinds = set()
    for op, pipes in expected.items():
        compute = max((v for p, v in pipes.items() if PIPES[p] == "compute"), default=None)
        memory = max((v for p, v in pipes.items() if PIPES[p] == "memory"), default=None)
        top = max(v for v in (compute, memory) if v is not None)
        bound = "compute" if compute is not None and compute == top else "memory"
        roof_bound, compute_share, memory_share, distance = got[op]
        assert roof_bound == bound, op
        assert (compute_share is None) == (compute is None) and (compute is None or _close(compute_share, compute)), op
        assert (memory_share is None) == (memory is None) and (memory is None or _close(memory_share, memory)), op
        assert _close(distance, 1 - top), op
        kinds.add(bound)
    assert kinds == {"compute", "memory"}  # the fixture puts ops under both roofs


def _raw(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


def _value(text: str, factor: float = 1.0) -> float | None:
    return None if text == "N/A" else float(text) * factor


def test_l2_cache_stats_group_the_files_rows_by_op(out: Path) -> None:
    for rank, path in ((0, ERA_F / "ASCEND_PROFILER_OUTPUT" / "l2_cache.csv"), (1, ERA_D / "l2_cache_1_1_1.csv")):
        groups: dict[str | None, list[dict]] = defaultdict(list)
        for row in _raw(path):
            groups[None if row["Op Name"] == "N/A" else row["Op Name"]].append(row)
        got = {r[0]: r[1:] for r in query(out, "SELECT op_name, tasks, avg_hit_share, avg_victim_ratio FROM "
                                               f"l2_cache_stats WHERE rank = {rank}")}
        assert set(got) == set(groups)
        for op, rows in groups.items():
            hits = [float(r["Hit Rate"]) for r in rows]
            victims = [float(r["Victim Rate"]) for r in rows if r["Victim Rate"] != "N/A"]
            tasks, hit, victim = got[op]
            assert tasks == len(rows) and _close(hit, sum(hits) / len(hits))
            assert (victim is None and not victims) or _close(victim, sum(victims) / len(victims))


def test_hbm_and_ddr_stats_are_the_files_rows_in_bytes_per_second(out: Path) -> None:
    files = {(0, "hbm"): ERA_F / "ASCEND_PROFILER_OUTPUT" / "hbm.csv", (1, "hbm"): ERA_D / "hbm_1_1_1.csv",
             (2, "ddr"): next(ERA_E.glob("ddr_*.csv"))}
    expected = sorted((rank, memory, r["Metric"], _value(r["Read(MB/s)"], 1e6), _value(r["Write(MB/s)"], 1e6))
                      for (rank, memory), path in files.items() for r in _raw(path))
    assert query(out, "SELECT rank, memory, metric, read_bytes_per_second, write_bytes_per_second FROM hbm_stats "
                      "ORDER BY ALL") == expected


def test_pcie_stats_convert_bandwidth_and_latency(out: Path) -> None:
    files = {0: ERA_F / "ASCEND_PROFILER_OUTPUT" / "pcie.csv", 1: ERA_D / "pcie_1.csv", 2: next(ERA_E.glob("pcie_*.csv"))}
    expected = []
    for rank, path in files.items():
        for r in _raw(path):
            factor, unit = (1e3, "ns") if "latency" in r["Mode"] else (1e6, "bytes_per_second")
            expected.append((rank, r["Mode"], unit, *(float(r[k]) * factor for k in ("Min", "Max", "Avg"))))
    got = query(out, "SELECT rank, mode, unit, min_value, max_value, avg_value FROM pcie_stats ORDER BY ALL")
    assert len(got) == len(expected)
    for g, e in zip(got, sorted(expected)):
        assert g[:3] == e[:3] and all(_close(a, b) for a, b in zip(g[3:], e[3:])), (g, e)
    # the older label Tx_latency_avg(MB/s) is µs all the same: 3 µs = 3000 ns
    assert query(out, "SELECT avg_value FROM pcie_stats WHERE rank = 1 AND metric = 'tx_latency_avg'") == [(3000.0,)]


def test_kernel_details_without_pmu_columns_gives_no_metrics() -> None:
    outcome = read_damaged(FIXTURES / "ascend_ms_era_f")
    assert outcome.rows("device_exec") > 0 and outcome.rows("device_exec_metric") == 0


# ---------------------------------------------------------------------------------------------- damage

KERNEL_DETAILS = "ASCEND_PROFILER_OUTPUT/kernel_details.csv"
#: replacements of a metric cell: missing (no row, no ledger row) or malformed (no row, counted)
MISSING = ["N/A", ""]
MALFORMED = ["abc", "-1", "-0.5", "inf", "nan", "1e400", "0x10", "1.5.2"]


def _copy_era_f(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    shutil.copytree(ERA_F, folder / ERA_F.name)
    return folder / ERA_F.name


def _metric_cells(rows: list[list[str]]) -> list[tuple[int, int]]:
    header = rows[0]
    return [(i, j) for i, row in enumerate(rows[1:], start=1) for j, column in enumerate(header)
            if column not in TASK_COLUMNS and row[j] not in MISSING]



def _damage(data: st.DataObject, path: Path, rows: list[list[str]], cells: list[tuple[int, int]], most: int,
            texts: list[str]) -> tuple[list[tuple[int, int]], list[str]]:
    """Write `path` again with up to `most` of `cells` (row, column) replaced by drawn `texts`; the cells and texts."""
    picked = data.draw(st.lists(st.sampled_from(cells), min_size=1, max_size=most, unique=True))
    replacements = [data.draw(st.sampled_from(texts)) for _ in picked]
    for (i, j), text in zip(picked, replacements):
        rows[i][j] = text
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    path.write_text(buffer.getvalue())
    return picked, replacements

@FUZZ
@given(data=st.data())
def test_damaged_metric_cells_are_missing_or_counted(data: st.DataObject, tmp_path_factory) -> None:
    tmp_path = tmp_path_factory.mktemp("cells")
    folder = _copy_era_f(tmp_path)
    path = folder / KERNEL_DETAILS
    rows = list(csv.reader(io.StringIO(path.read_text())))
    cells = _metric_cells(rows)
    clean = ERA_F / KERNEL_DETAILS
    picked, replacements = _damage(data, path, rows, cells, 12, MISSING + MALFORMED)
    outcome = read_damaged(folder.parent)
    assert not outcome.errors
    bad = [(i, j) for (i, j), text in zip(picked, replacements) if text in MALFORMED]
    # every value left is the oracle's (the damaged cells are no rows), the malformed ones counted once
    skip = frozenset((i, rows[0][j]) for i, j in picked)
    expected = Counter((s, t, start, core, metric, unit, round(value, 9)) for s, t, start, _, core, metric, unit, value
                       in oracle_metrics(clean, TASK_FILES[0][1], skip))
    table = outcome.tables["device_exec_metric"].to_pylist()
    got = Counter((r["stream_id"], r["task_id"], r["start_ns"], r["core"], r["metric"], r["unit"], round(r["value"], 9))
                  for r in table)
    assert got == expected
    assert len(table) == len(cells) - len(picked)
    ledger = [e for e in outcome.health if e.tables == "device_exec_metric"]
    if bad:
        assert [(e.check, e.action, e.rows, e.line) for e in ledger] == [
            ("malformed_record", "dropped", len(bad), min(i for i, _ in bad) + 1)]
        assert Path(ledger[0].path) == path
    else:
        assert ledger == []
    assert outcome.rows("device_exec") == len(rows) - 1  # the tasks themselves are all kept


SUMMARIES = {"l2_cache.csv": ("l2_cache_task", ["Stream Id", "Task Id", "Hit Rate", "Victim Rate"]),
             "hbm.csv": ("memory_bandwidth", ["Read(MB/s)", "Write(MB/s)"]),
             "pcie.csv": ("pcie_bandwidth", ["Min", "Max", "Avg"])}


@FUZZ
@given(name=st.sampled_from(sorted(SUMMARIES)), data=st.data())
def test_damaged_summary_numbers_drop_their_rows_and_are_counted(name: str, data: st.DataObject,
                                                                 tmp_path_factory) -> None:
    tmp_path = tmp_path_factory.mktemp("summary")
    folder = _copy_era_f(tmp_path)
    path = folder / "ASCEND_PROFILER_OUTPUT" / name
    table, columns = SUMMARIES[name]
    rows = list(csv.reader(io.StringIO(path.read_text())))
    header = rows[0]
    cells = [(i, header.index(c)) for i in range(1, len(rows)) for c in columns]
    picked, replacements = _damage(data, path, rows, cells, 4, ["N/A"] + MALFORMED)
    outcome = read_damaged(folder.parent)
    assert not outcome.errors
    ids = {header.index(c) for c in ("Stream Id", "Task Id") if c in header}
    # a row goes when a number of it is malformed, or (l2_cache) when it has no stream or task id
    dropped = {i for (i, j), text in zip(picked, replacements) if text in MALFORMED or j in ids}
    assert outcome.rows(table) == len(rows) - 1 - len(dropped)
    ledger = [e for e in outcome.health if e.tables == table]
    assert sum(e.rows for e in ledger) == len(dropped)
    assert all(e.action == "dropped" and Path(e.path) == path for e in ledger)
    if dropped:
        assert min(e.line for e in ledger) == min(dropped) + 1
    kept = [r for i, r in enumerate(rows[1:], start=1) if i not in dropped]
    got = outcome.tables[table].to_pylist() if table in outcome.tables else []

    def scaled(row: list[str], column: str) -> float | None:
        latency = name == "pcie.csv" and "latency" in row[header.index("Mode")]
        factor = {"l2_cache.csv": 1.0, "hbm.csv": 1e6, "pcie.csv": 1e3 if latency else 1e6}[name]
        return _value(row[header.index(column)], factor)

    for column, field in zip(columns, {"l2_cache.csv": ["stream_id", "task_id", "hit_share", "victim_ratio"],
                                       "hbm.csv": ["read_bytes_per_second", "write_bytes_per_second"],
                                       "pcie.csv": ["min_value", "max_value", "avg_value"]}[name]):
        # every value kept is the file's (N/A a missing value, not a zero)
        assert [r[field] for r in got] == [scaled(r, column) for r in kept], column


def test_era_d_summaries_of_another_model_are_left_out_and_device_wide_ones_kept(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    shutil.copytree(FIXTURE / ERA_D.parent.parent.name, folder / ERA_D.parent.parent.name)
    summary = folder / ERA_D.relative_to(FIXTURE)
    shutil.copy(summary / "l2_cache_1_1_1.csv", summary / "l2_cache_1_2_1.csv")  # model 2: not the one analysed
    outcome = read_damaged(folder)
    assert not outcome.errors
    assert outcome.rows("l2_cache_task") == len(_raw(ERA_D / "l2_cache_1_1_1.csv"))
    assert outcome.rows("pcie_bandwidth") == len(_raw(ERA_D / "pcie_1.csv"))  # pcie_1.csv names no model
    for name in ("op_summary_1_1_1.csv", "l2_cache_1_1_1.csv", "l2_cache_1_2_1.csv"):
        (summary / name).unlink()
    alone = read_damaged(folder)  # the device-wide summaries alone still give their tables
    assert not alone.errors and alone.rows("memory_bandwidth") == 2 and alone.rows("device_exec") == 0
