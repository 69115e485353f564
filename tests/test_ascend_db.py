"""The Ascend db export reader (profpipe/ingest/ascend_db.py) and its discovery, against oracles.

Oracles: the db itself (COMPUTE_TASK_INFO ⋈ TASK grouped by opType, STEP_TIME, computed here with sqlite3), the tool's
analysis.db StepTraceTime (formats-ascend-today.md §4.5) on the two real S1 Level 1 ranks and on the generated pair,
and the same capture written as a text export (fixtures/ascend_pt_pair, fixtures/generators/ascend_today.py): the
normalized tables of the text and the db readers agree row for row, modulo the differences documented in
_TEXT_DIFFERENCES. A hypothesis damage test breaks rows of a copy of the fixture db and checks the numbers.
"""
from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, REPO, query, realdata, run
from fuzzing import FUZZ, read_damaged
from profpipe.discover import discover
from profpipe.errors import EXIT_COMPLETE, InputError
from profpipe.ingest import ascend_db
from profpipe.model_checks import check_models

sys.path.insert(0, str(FIXTURES / "generators"))
import ascend_today  # noqa: E402

PAIR = FIXTURES / "ascend_pt_pair"
DB_FIXTURE = PAIR / "db" / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db"
REAL_DB = "Ascend-msinsight/test/data/pytorch/db/level1"


def _real_db(rank: int) -> Path:
    return realdata(f"{REAL_DB}/rank{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_{rank}.db")


def _sqlite(path: Path, sql: str) -> list[tuple]:
    db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def _tables(folder: Path) -> dict[str, pl.DataFrame]:
    outcome = read_damaged(folder)
    assert not outcome.errors, outcome.errors
    return {name: pl.from_arrow(table) for name, table in outcome.tables.items()}


def _db_files() -> list[Path]:
    return [DB_FIXTURE, _real_db(0), _real_db(1)]


# --- generator and discovery ---------------------------------------------------------------------------------------

def test_generator_reproduces_the_fixture(tmp_path: Path) -> None:
    """The committed fixture is what the generator writes (the dbs compared by content: SQLite stamps its version)."""
    subprocess.run([sys.executable, str(REPO / "fixtures" / "generators" / "ascend_today.py"), str(tmp_path)], check=True)
    fresh = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert fresh == sorted(p.relative_to(PAIR) for p in PAIR.rglob("*") if p.is_file())
    for relative in fresh:
        new, old = tmp_path / relative, PAIR / relative
        if relative.suffix == ".db":
            dump = lambda p: list(sqlite3.connect(p).iterdump())  # noqa: E731
            assert dump(new) == dump(old), relative
        else:
            assert new.read_bytes() == old.read_bytes(), relative


def test_discovery_of_the_db_folders() -> None:
    """Each db is a source of family ascend_db with its analysis.db; the rank from the file name; a folder with both
    exports reads the db and marks the text sources superseded by it."""
    db, summary = sorted(discover(PAIR / "db"), key=lambda s: s.family)  # analysis.db: a summary source of its own
    assert (summary.family, summary.rank) == ("ascend_summary", 0)
    assert (db.family, db.layout, db.rank, db.rank_from, db.device_type) == ("ascend_db", "ascend_db", 0, "name", "ascend")
    assert db.files["db"] == DB_FIXTURE and db.files["analysis_db"].name == "analysis.db"
    (ms,) = [s for s in discover(PAIR / "mindspore_db") if s.family != "ascend_summary"]
    assert ms.family == "ascend_db" and "analysis_db" not in ms.files
    both = discover(PAIR / "both")
    read = [s for s in both if s.superseded_by is None and s.family != "ascend_summary"]
    assert [s.family for s in read] == ["ascend_db"]
    assert {s.family for s in both if s.superseded_by is not None} == {"msprof_export"}
    assert all(s.superseded_by == read[0].files["db"] for s in both if s.superseded_by is not None)


def test_an_empty_db_gives_way_to_the_text_export(tmp_path: Path) -> None:
    folder = tmp_path / "rank0_ascend_pt"
    shutil.copytree(PAIR / "both" / "rank0_ascend_pt", folder)
    db = folder / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db"
    with sqlite3.connect(db) as con:
        con.execute("DELETE FROM TASK")
    sources = discover(tmp_path)
    assert {s.family for s in sources if s.superseded_by is None} == {"msprof_export", "ascend_summary"}
    assert next(s for s in sources if s.family == "ascend_db").superseded_by == folder


def test_rank_from_rank_device_map(tmp_path: Path) -> None:
    """Without a rank in the name or a profiler_info_<N>.json, RANK_DEVICE_MAP gives it (-1: unset)."""
    output = tmp_path / "job_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    output.mkdir(parents=True)
    (tmp_path / "job_ascend_pt" / "profiler_info.json").write_text("{}")
    shutil.copy(DB_FIXTURE, output / "ascend_pytorch_profiler.db")
    with sqlite3.connect(output / "ascend_pytorch_profiler.db") as con:
        con.execute("UPDATE RANK_DEVICE_MAP SET rankId = 5")
    (source,) = discover(tmp_path)
    assert (source.rank, source.rank_from) == (5, "file")
    with sqlite3.connect(output / "ascend_pytorch_profiler.db") as con:
        con.execute("UPDATE RANK_DEVICE_MAP SET rankId = -1")
    (source,) = discover(tmp_path)
    assert (source.rank, source.rank_from) == (0, "only-source")


# --- the db against itself -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("which", [0, 1, 2], ids=["fixture", "real-rank0", "real-rank1"])
def test_op_types_equal_compute_task_info(which: int) -> None:
    """Per op type: count and total time of the 'task' rows equal COMPUTE_TASK_INFO ⋈ TASK grouped by opType."""
    path = _db_files()[which]
    expected = {op_type: (n, total) for op_type, n, total in _sqlite(path, """
        SELECT s.value, count(*), sum(t.endNs - t.startNs) FROM COMPUTE_TASK_INFO c JOIN TASK t USING (globalTaskId)
        JOIN STRING_IDS s ON s.id = c.opType GROUP BY s.value""")}
    tables = _tables(path.parent.parent)
    tasks = tables["device_exec"].filter(pl.col("kind") == "task")
    typed = tasks.join(tables["task_desc"].select("op_name", "task_id", "stream_id", "op_type"),
                       on=["op_name", "task_id", "stream_id"], how="left")
    assert typed["op_type"].null_count() == 0
    got = {r["op_type"]: (r["n"], r["total"]) for r in
           typed.group_by("op_type").agg(n=pl.len(), total=pl.col("dur_ns").sum()).iter_rows(named=True)}
    assert got == expected
    if which:
        assert tasks.height == 187  # S1 L1: 191 kernel_details rows - 4 comm ops (§4.1)
        assert typed["op_index"].null_count() == 0  # every compute task linked to the torch op that launched it


@pytest.mark.parametrize("which", [0, 1, 2], ids=["fixture", "real-rank0", "real-rank1"])
def test_steps_equal_step_time(which: int) -> None:
    path = _db_files()[which]
    points = _tables(path.parent.parent)["step_point"]
    got = {(r["step"], r["kind"]): r["ts_ns"] for r in points.iter_rows(named=True) if r["kind"] != "fp_start"}
    expected = {}
    for step, start, end in _sqlite(path, "SELECT id, startNs, endNs FROM STEP_TIME"):
        expected[(step, "step_start")], expected[(step, "step_end")] = start, end
        # the window on the device: compute kernels and HCCL ops that start in the step (analysis.db's rule, §4.5)
        ((first, last),) = _sqlite(path, "SELECT min(s), max(e) FROM (SELECT t.startNs AS s, t.endNs AS e FROM TASK t "
                                         "JOIN COMPUTE_TASK_INFO USING (globalTaskId) UNION ALL "
                                         f"SELECT startNs, endNs FROM COMMUNICATION_OP) WHERE s >= {start} AND s < {end}")
        expected[(step, "device_step_start")], expected[(step, "device_step_end")] = first, last
    assert got == expected


def _merged(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    return ascend_today._merge(intervals)


@pytest.mark.parametrize("which", [0, 1, 2], ids=["fixture", "real-rank0", "real-rank1"])
def test_the_reader_reproduces_analysis_db(which: int) -> None:
    """§4.5 on the reader's tables (compute = 'task' rows, communication = the whole HCCL ops, starting in the step)
    gives analysis.db's StepTraceTime exactly: computing, communication, not overlapped, overlapped, free, stage,
    preparing."""
    path = _db_files()[which]
    tables = _tables(path.parent.parent)
    execs, points = tables["device_exec"], tables["step_point"]
    comm_names = set(tables["comm_task"]["op_name"].to_list())
    oracle = {r[0]: r[1:] for r in _sqlite(path.parent / "analysis.db",
                                            "SELECT step, computing, communication_not_overlapped, overlapped, "
                                            "communication, free, stage, preparing FROM StepTraceTime")}
    for step in points["step"].unique().to_list():
        start = points.filter((pl.col("step") == step) & (pl.col("kind") == "step_start"))["ts_ns"][0]
        end = points.filter((pl.col("step") == step) & (pl.col("kind") == "step_end"))["ts_ns"][0]
        inside = execs.filter((pl.col("start_ns") >= start) & (pl.col("start_ns") < end))
        pairs = lambda frame: [(s, s + d) for s, d in frame.select("start_ns", "dur_ns").iter_rows()]  # noqa: E731
        compute = _merged(pairs(inside.filter(pl.col("kind") == "task")))
        comm = _merged(pairs(inside.filter(pl.col("name").is_in(list(comm_names)))))
        alone = ascend_today._subtract(comm, compute)
        both = _merged(compute + comm)
        span = (both[0][0], both[-1][1])
        got = (ascend_today._length(compute), ascend_today._length(alone),
               ascend_today._length(comm) - ascend_today._length(alone), ascend_today._length(comm),
               ascend_today._length(ascend_today._subtract([span], both)), span[1] - span[0], span[0] - start)
        assert got == tuple(round(v * 1000) for v in oracle[str(step)]), step


@pytest.fixture(scope="module")
def real_db_run(tmp_path_factory: pytest.TempPathFactory):
    return run(realdata(REAL_DB), tmp_path_factory.mktemp("ascend_db") / "out")


def test_analyse_the_real_db_folder(real_db_run) -> None:
    """`profpipe analyse` of the real db folder: ranks 0 and 1, 187 compute tasks each, nothing lost."""
    assert real_db_run.ranks == [0, 1]
    out = real_db_run.output
    assert query(out, "SELECT rank, count(*) FROM device_exec WHERE kind = 'task' GROUP BY rank ORDER BY rank") == \
        [(0, 187), (1, 187)]
    assert query(out, "SELECT rank, device_id, framework, layout FROM run_info WHERE layout = 'ascend_db' ORDER BY rank") \
        == [(0, 0, "pytorch", "ascend_db"), (1, 1, "pytorch", "ascend_db")]
    lossy = query(out, "SELECT check_name, action, message FROM trace_health WHERE action IN "
                       "('dropped', 'clamped', 'repaired', 'source_skipped')")
    assert lossy == [] and real_db_run.skipped == [] and real_db_run.exit_code == EXIT_COMPLETE
    with duckdb.connect(str(out / "profile.duckdb"), read_only=True) as con:
        failures = check_models(con)  # every model's data tests and invariants (shares in 0-1, parts in wholes)
    assert not failures, "\n".join(map(str, failures))


@pytest.mark.parametrize("rank", [0, 1])
def test_step_overlap_against_analysis_db(real_db_run, rank: int) -> None:
    """step_overlap equals analysis.db StepTraceTime, column for column, to the ns: its window on the device is the
    first start to the last end of the compute kernels and HCCL ops starting in STEP_TIME's range, as msprof-analyze's."""
    columns = ("computing", "communication", "communication_not_overlapped", "overlapped", "free", "stage", "bubble",
               "preparing")
    (oracle,) = _sqlite(realdata(f"{REAL_DB}/rank{rank}_ascend_pt/ASCEND_PROFILER_OUTPUT/analysis.db"),
                        f"SELECT {', '.join(columns)} FROM StepTraceTime")
    (got,) = query(real_db_run.output, "SELECT computation_ns, communication_ns, pure_communication_ns, "
                                       "overlapped_communication_ns, free_ns, stage_ns, bubble_ns, preparing_ns "
                                       f"FROM step_overlap WHERE rank = {rank}")
    assert dict(zip(columns, got)) == dict(zip(columns, (round(v * 1000) for v in oracle)))


def test_analyse_the_pair(tmp_path: Path) -> None:
    """The fixture's db folder and its both-exports folder analyse alike (exit 0: nothing lost); step_overlap equals
    the generator's §4.5 numbers."""
    truth = ascend_today.step_overlap(ascend_today.capture())
    for name in ("db", "both"):
        result = run(PAIR / name, tmp_path / name)
        assert result.ranks == [0]
        rows = query(result.output, "SELECT step, computation_ns, communication_ns, pure_communication_ns, "
                                    "overlapped_communication_ns, free_ns, total_ns FROM step_overlap ORDER BY step")
        # the step's window on the device is the span of its tasks, as analysis.db's (no receive ops: stage = span)
        assert rows == [(s, t["computing"], t["communication"], t["not_overlapped"], t["overlapped"],
                         t["free"], t["stage"])
                        for s, t in truth.items()]
        assert query(result.output, "SELECT count(*) FROM trace_health WHERE action IN ('dropped', 'repaired')") == [(0,)]


def test_mindspore_db() -> None:
    """A MindSpore (msprof schema) db: device tables only; blockNum read as the block dim; enums joined by name
    though their ids drift."""
    db = PAIR / "mindspore_db" / "rank0_ascend_ms" / "ASCEND_PROFILER_OUTPUT" / "ascend_mindspore_profiler_0.db"
    present = {name for (name,) in _sqlite(db, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert not present & set(ascend_today.TORCH_TABLES) and "TASK" in present
    tables = _tables(PAIR / "mindspore_db")
    assert "host_op" not in tables and "step_point" not in tables
    assert tables["run_info"]["framework"].to_list() == ["mindspore"]
    assert tables["device_exec"].filter(pl.col("kind") == "task").height == 10
    blocks = dict(tables["task_desc"].select("op_type", "block_dim").unique().iter_rows())
    assert blocks == {k[0]: k[5] for k in ascend_today.KERNELS.values()}
    assert set(tables["comm_task"]["transport"].to_list()) == {"SDMA"}
    assert set(tables["memory_module"]["component"].to_list()) == {"HCCL", "RUNTIME"}
    assert sorted(tables["host_api"]["category"].unique().to_list()) == ["cann_acl", "cann_node"]


def test_memory_and_identity() -> None:
    tables = _tables(PAIR / "db")
    info = tables["run_info"].filter(pl.col("layout") == "ascend_db").row(0, named=True)
    assert (info["rank"], info["device_id"], info["clock"]) == (ascend_today.RANK, ascend_today.DEVICE, "unix_epoch")
    records = tables["memory_record"]
    assert records.filter(pl.col("component") == "APP")["reserved_bytes"].to_list() == \
        [hbm for _, hbm in ascend_today.NPU_APP_SAMPLES]
    assert sorted(records.filter(pl.col("component") != "APP")["allocated_bytes"].to_list()) == \
        sorted(r[2] for r in ascend_today.MEMORY_RECORDS)
    blocks = tables["memory_block"].sort("alloc_ns")
    assert blocks["bytes"].to_list() == [b[1] for b in ascend_today.OP_MEMORY]
    assert blocks["release_ns"].to_list() == [None if b[3] is None else ascend_today.T0 + b[3]
                                              for b in ascend_today.OP_MEMORY]
    modules = tables["memory_module"]
    assert modules["reserved_bytes"].to_list() == [None if r < 0 else r for *_, r in ascend_today.MODULE_MEMORY]
    ops = tables["host_op"]
    conv = ops.filter(pl.col("op_name") == "aten::conv2d").row(0, named=True)
    assert conv["input_dims"] == "[[32,3,224,224],[64,3,11,11]]" and conv["input_types"] == '["FLOAT","FLOAT"]'
    assert conv["call_stack"] == "train.py(10): train;main.py(3): <module>"
    step = ops.filter(pl.col("op_name") == "ProfilerStep#1")["op_index"][0]
    assert conv["parent_index"] == step
    kernel = tables["task_desc"].filter(pl.col("op_name") == "Conv2D1").row(0, named=True)
    assert (kernel["op_type"], kernel["input_shapes"], kernel["input_types"], kernel["input_formats"],
            kernel["output_shapes"], kernel["output_types"], kernel["output_formats"]) == (
        "Conv2D", "32,3,224,224;64,3,11,11", "FLOAT;FLOAT", "ND;ND", "32,3,224,224", "FLOAT", "ND")
    assert tables["task_desc"].height == len(ascend_today.capture()["kernels"])


# --- text == db ----------------------------------------------------------------------------------------------------

#: What the two exports of one capture write differently (the readers keep what their files hold):
#: * device_exec: the db has the runtime's tasks of no op (MEMCPY_ASYNC, EVENT_RECORD: kernel_details has no row for
#:   them) and correlation / op_index / device_id; kernel_details' DSA_SQE rows are 'sync' for the text reader today,
#:   'task' for the db reader (op_statistic counts them as compute, §4.1): compared on name, ids and times;
#: * device_exec_metric: kernel_details' cube_utilization(%) has no db counterpart (the fixture does not write it).
_TEXT_DIFFERENCES = {
    "device_exec": (["name", "stream_id", "task_id", "start_ns", "dur_ns"], None),
    "comm_task": (["op_name", "op_type", "iteration", "seq", "stream_id", "task_id", "task_type", "src_rank",
                   "dst_rank", "transport", "link_type", "bytes", "start_ns", "dur_ns", "plane"], None),
    "host_op": (["side", "tid", "op_name", "start_ns", "dur_ns"], None),
    "step_point": (["step", "kind", "op_name", "ts_ns"], None),
    "device_exec_metric": (["stream_id", "task_id", "start_ns", "core", "metric", "unit", "value"], None),
    "task_desc": (["op_name", "task_id", "stream_id", "block_dim", "op_type", "task_type", "input_shapes",
                   "input_types", "input_formats", "output_shapes", "output_types", "output_formats"], None),
}


@pytest.fixture(scope="module")
def pair_tables() -> tuple[dict[str, pl.DataFrame], dict[str, pl.DataFrame]]:
    return _tables(PAIR / "text"), _tables(PAIR / "db")


@pytest.mark.parametrize("table", sorted(_TEXT_DIFFERENCES))
def test_text_equals_db(pair_tables, table: str) -> None:
    text, db = pair_tables
    if table not in text or not text[table].height:
        pytest.xfail(f"the text export reader yields no {table} rows for a torch_npu folder yet")
    columns, where = _TEXT_DIFFERENCES[table]
    frames = []
    for side in (text, db):
        frame = side[table]
        if table == "device_exec" and side is db:  # kernel_details' rows: compute kernels and whole HCCL ops
            frame = frame.filter((pl.col("kind") == "task") | pl.col("name").str.starts_with("hcom_"))
        if where is not None:
            frame = frame.filter(where)
        if "value" in columns:
            frame = frame.with_columns(pl.col("value").round(6))
        frames.append(frame.select(columns).sort(columns, nulls_last=True))
    assert frames[0].to_dicts() == frames[1].to_dicts()


# --- damage --------------------------------------------------------------------------------------------------------

def test_not_a_db(tmp_path: Path) -> None:
    output = tmp_path / "r_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    output.mkdir(parents=True)
    bad = output / "ascend_pytorch_profiler_0.db"
    bad.write_bytes(b"this is not SQLite, just text " * 40)
    (source,) = discover(tmp_path)
    with pytest.raises(InputError) as error:
        list(ascend_db.read(source, lambda *a, **k: None))
    assert Path(error.value.path) == bad
    with sqlite3.connect(bad.with_name("x.db")) as con:
        con.execute("CREATE TABLE STRING_IDS (id INTEGER, value TEXT)")
    bad.unlink()
    bad.with_name("x.db").rename(bad)
    with pytest.raises(InputError, match="no TASK table") as error:
        list(ascend_db.read(source, lambda *a, **k: None))
    assert Path(error.value.path) == bad


_COMPUTE = sorted(k["global"] for k in ascend_today.capture()["kernels"])


@settings(FUZZ, max_examples=min(FUZZ.max_examples, 25))  # each example copies and reads a db
@given(backwards=st.sets(st.sampled_from(_COMPUTE), max_size=4), texts=st.sets(st.sampled_from(_COMPUTE), max_size=3),
       unnamed=st.sets(st.sampled_from(_COMPUTE), max_size=3), bad_pmu=st.integers(0, 6),
       torch_text=st.booleans())
def test_damaged_db(tmp_path_factory: pytest.TempPathFactory, backwards: set[int], texts: set[int],
                    unnamed: set[int], bad_pmu: int, torch_text: bool) -> None:
    """Rows ending before they start, a non-integer start, names STRING_IDS lacks, bad PMU values, a PYTORCH_API time
    that is no number: counted in trace_health, the rest read with exact numbers, never a crash."""
    folder = tmp_path_factory.mktemp("damaged")
    shutil.copytree(PAIR / "db", folder, dirs_exist_ok=True)
    path = folder / DB_FIXTURE.relative_to(PAIR / "db")
    events = ascend_today.capture()
    kernels = {k["global"]: k for k in events["kernels"]}
    with sqlite3.connect(path) as con:
        for g in backwards:
            con.execute("UPDATE TASK SET endNs = startNs - 5 WHERE globalTaskId = ?", (g,))
        for g in texts:
            con.execute("UPDATE TASK SET startNs = 'soon' WHERE globalTaskId = ?", (g,))
        for g in unnamed:  # a name of its own, then removed from STRING_IDS
            con.execute("UPDATE COMPUTE_TASK_INFO SET name = ? WHERE globalTaskId = ?", (900_000 + g, g))
        pmu_rows = con.execute("SELECT rowid FROM TASK_PMU_INFO ORDER BY rowid LIMIT ?", (bad_pmu,)).fetchall()
        for i, (rowid,) in enumerate(pmu_rows):
            con.execute("UPDATE TASK_PMU_INFO SET value = ? WHERE rowid = ?", (-1.5 if i % 2 else "x", rowid))
        if torch_text:
            con.execute("UPDATE PYTORCH_API SET startNs = '12:00' WHERE rowid = 2")
    outcome = read_damaged(folder)
    assert not outcome.errors
    rows = lambda check, action: sum(e.rows or 0 for e in outcome.health  # noqa: E731
                                     if (e.check, e.action) == (check, action))
    lost = backwards | texts
    execs = pl.from_arrow(outcome.tables["device_exec"]).filter(pl.col("kind") == "task")
    assert sorted(execs["start_ns"].to_list()) == sorted(k["start"] for g, k in kernels.items() if g not in lost)
    assert execs["dur_ns"].sum() == sum(k["end"] - k["start"] for g, k in kernels.items() if g not in lost)
    if backwards - texts:
        assert rows("negative_duration", "dropped") == len(backwards - texts)
    if texts or torch_text or bad_pmu:
        assert rows("malformed_record", "repaired") == len(texts) + torch_text + (bad_pmu + 1) // 2
    named = execs.filter(pl.col("name").str.starts_with("string id "))
    assert named.height == len(unnamed - lost)
    if unnamed:
        assert rows("unlinked", "repaired") == len(unnamed)
    metrics = pl.from_arrow(outcome.tables["device_exec_metric"])
    expected_metrics = sum(len(k["pmu"]) for g, k in kernels.items() if g not in lost)
    assert metrics.height == expected_metrics - _bad_pmu_of_kept(path, lost)
    # left out: the negative PMU values (the text ones read as none: no row, like N/A), and the rows whose time the
    # copy read as none (counted there too, as repaired)
    assert rows("malformed_record", "dropped") == bad_pmu // 2 + len(texts) + torch_text
    ops = pl.from_arrow(outcome.tables["host_op"])
    assert ops.height == len(events["ops"]) - (1 if torch_text else 0)


def _bad_pmu_of_kept(path: Path, lost: set[int]) -> int:
    """PMU rows of tasks still read whose value is no non-negative number (counted from the damaged file)."""
    rows = _sqlite(path, "SELECT globalTaskId FROM TASK_PMU_INFO WHERE typeof(value) NOT IN ('integer', 'real') "
                         "OR value < 0")
    return sum(1 for (g,) in rows if g not in lost)


def test_msprof_db_and_the_job_beside_a_torch_db(tmp_path: Path) -> None:
    """msprof's PROF_*/msprof_<ts>.db is an ascend_db source of its own (rank from RANK_DEVICE_MAP); inside a result
    folder whose ASCEND_PROFILER_OUTPUT holds the torch_npu db it was made from, it is superseded by that db."""
    job = tmp_path / "PROF_000001_20250101000000000_ABC"
    job.mkdir()
    shutil.copy(PAIR / "mindspore_db" / "rank0_ascend_ms" / "ASCEND_PROFILER_OUTPUT" / "ascend_mindspore_profiler_0.db",
                job / "msprof_20250101000000.db")
    (source,) = discover(tmp_path)
    assert (source.family, source.rank, source.directory, source.superseded_by) == ("ascend_db", 0, job, None)
    assert _tables(tmp_path)["run_info"]["framework"].to_list() == ["msprof"]
    folder = tmp_path / "both"
    shutil.copytree(PAIR / "db" / "rank0_ascend_pt", folder)
    shutil.move(job, folder / job.name)
    sources = discover(tmp_path)
    assert [s.files["db"].name for s in sources if s.superseded_by is None and s.family == "ascend_db"] == \
        ["ascend_pytorch_profiler_0.db"]


def test_null_ids_and_names(tmp_path: Path) -> None:
    """NULL where the tables need a value (a task's stream id, a sub-task's op, a step id, a PMU name): the rows are
    left out and counted, the others read."""
    shutil.copytree(PAIR / "db", tmp_path, dirs_exist_ok=True)
    path = tmp_path / DB_FIXTURE.relative_to(PAIR / "db")
    kernel = ascend_today.capture()["kernels"][0]
    with sqlite3.connect(path) as con:
        con.execute("UPDATE TASK SET streamId = NULL WHERE globalTaskId = ?", (kernel["global"],))
        con.execute("UPDATE COMMUNICATION_TASK_INFO SET opId = 99 WHERE rowid = 1")
        con.execute("UPDATE STEP_TIME SET id = NULL WHERE id = 2")
        con.execute("UPDATE COMPUTE_TASK_INFO SET name = NULL WHERE globalTaskId = ?", (kernel["global"],))
        con.execute("INSERT INTO TASK_PMU_INFO VALUES (99999, 1, 5.0)")  # a task TASK lacks
    outcome = read_damaged(tmp_path)
    assert not outcome.errors
    dropped = {e.tables: e.rows for e in outcome.health if e.action == "dropped"}
    assert dropped == {"task_desc": 1, "comm_task": 1, "step_point": 5, "device_exec": 1, "device_exec_metric": 1}
    assert outcome.tables["comm_task"].num_rows == len(ascend_today.capture()["comm_tasks"]) - 1
    assert sorted(set(outcome.tables["step_point"]["step"].to_pylist())) == [1]


@settings(FUZZ, max_examples=min(FUZZ.max_examples, 15))
@given(cut=st.integers(0, DB_FIXTURE.stat().st_size - 1))
def test_truncated_db(tmp_path_factory: pytest.TempPathFactory, cut: int) -> None:
    """A db cut short: an error naming the file, or (a cut SQLite never reaches) the rows it still holds, never a
    reader bug."""
    folder = tmp_path_factory.mktemp("cut")
    shutil.copytree(PAIR / "db", folder, dirs_exist_ok=True)
    path = folder / DB_FIXTURE.relative_to(PAIR / "db")
    path.write_bytes(DB_FIXTURE.read_bytes()[:cut])
    outcome = read_damaged(folder)
    if outcome.errors:
        assert all(str(path) in str(error) for error in outcome.errors), outcome.errors
    else:
        tasks = outcome.tables.get("device_exec")
        assert tasks is None or tasks.num_rows <= 16


@settings(FUZZ, max_examples=min(FUZZ.max_examples, 20))
@given(flips=st.lists(st.tuples(st.integers(100, DB_FIXTURE.stat().st_size - 1), st.integers(0, 255)), min_size=1,
                      max_size=20))
def test_byte_flips_in_the_db(tmp_path_factory: pytest.TempPathFactory, flips: list[tuple[int, int]]) -> None:
    """Bytes of the db overwritten (a damaged page, schema or string): an error naming the file, or rows, never a
    reader bug (sqlite3 quotes the damaged bytes in its messages and decodes them strictly)."""
    folder = tmp_path_factory.mktemp("flips")
    shutil.copytree(PAIR / "db", folder, dirs_exist_ok=True)
    path = folder / DB_FIXTURE.relative_to(PAIR / "db")
    data = bytearray(DB_FIXTURE.read_bytes())
    for offset, value in flips:
        data[offset] = value
    path.write_bytes(bytes(data))
    outcome = read_damaged(folder)
    assert all(str(path) in str(error) for error in outcome.errors), outcome.errors
