"""`profpipe batch`: a warehouse over several runs, checked against `analyse` of each run alone (the
oracle: the single-run pipeline, serial and in this process); incremental skips, dropped and missing
runs, a failed run keeping its last good tables, the lock, a SIGKILL part-way, and the Dask executor on
a real distributed.LocalCluster giving the same tables as the local process pool."""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, REPO
from profpipe import batch as batch_module
from profpipe.batch import BatchOptions, batch, find_runs
from profpipe.cli import app
from profpipe.errors import UsageError
from profpipe.options import Options
from profpipe.run import analyse
from profpipe.tables import catalog
from profpipe.warehouse import MANIFEST, connect, open_run, public_tables

RUNS = {"gpu": FIXTURES / "mindspore_gpu" / "graph_2x", "cpu": FIXTURES / "mindspore_cpu" / "mlp_graph",
        "kineto": FIXTURES / "kineto" / "current"}


def _root(tmp_path: Path, runs: dict[str, Path] = RUNS) -> Path:
    root = tmp_path / "root"
    for name, fixture in runs.items():
        shutil.copytree(fixture, root / name)
    return root


def _batch(root: Path, warehouse: Path, **options) -> batch_module.BatchResult:
    options.setdefault("workers", 2)
    return batch(BatchOptions(roots=(root,), warehouse=warehouse, **options))


def _rows(con: duckdb.DuckDBPyConnection, table: str, where: str = "") -> list[tuple]:
    """Every row of `table`, sorted, doubles rounded to 9 significant digits (parallel sums differ in the
    last bits from run to run)."""
    kinds = dict(con.execute(f"SELECT column_name, column_type FROM (DESCRIBE {table})").fetchall())
    columns = [c for c in kinds if c != "run"]
    selected = ", ".join(f"round({c}, 9 - ceil(log10(abs({c}) + 1e-300))::INTEGER)" if kinds[c] == "DOUBLE"
                         else f'"{c}"' for c in columns)
    return sorted(con.execute(f"SELECT {selected} FROM {table} {where}").fetchall(), key=repr)


def _manifest(warehouse: Path) -> dict:
    return json.loads((warehouse / MANIFEST).read_text())


def _generations(warehouse: Path) -> dict[str, str]:
    return {run: entry["row"]["generation"] for run, entry in _manifest(warehouse)["runs"].items()}


def _assert_same_warehouse(first: Path, second: Path) -> None:
    """Both warehouses hold the same runs and, table by table, the same rows."""
    one, two = connect(first), connect(second)
    assert _rows(one, "batch_runs") != [] and (
        one.execute("SELECT run, status, ranks FROM batch_runs ORDER BY run").fetchall()
        == two.execute("SELECT run, status, ranks FROM batch_runs ORDER BY run").fetchall())
    for table in public_tables():
        for run in one.execute("SELECT run FROM batch_runs").fetchall():
            where = f"WHERE run = '{run[0]}'"
            assert _rows(one, table, where) == _rows(two, table, where), (table, run)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, batch_module.BatchResult]:
    """One batch over three runs and a folder without profiler data."""
    tmp = tmp_path_factory.mktemp("batch")
    root = _root(tmp)
    (root / "notes").mkdir()
    (root / "notes" / "readme.txt").write_text("not a profile")
    result = _batch(root, tmp / "wh")
    return root, tmp / "wh", result


def test_every_public_table_of_every_run_equals_analyse_of_that_run(warehouse, tmp_path: Path) -> None:
    root, wh, result = warehouse
    assert sorted(result.analysed) == ["cpu", "gpu", "kineto"] and list(result.empty) == ["notes"]
    assert result.exit_code == 0 and not result.failed
    con = connect(wh)
    for run in RUNS:
        analyse(root / run, tmp_path / run, Options())
        alone = duckdb.connect(str(tmp_path / run / "profile.duckdb"), read_only=True)
        for table in public_tables():
            assert _rows(con, table, f"WHERE run = '{run}'") == _rows(alone, table), (run, table)
        assert con.execute("SELECT count(*) FROM device_exec WHERE run = ?", [run]).fetchone()[0] > 0 or run == "cpu"


def test_the_warehouse_layout_is_hive_partitioned_by_run_and_rank(warehouse) -> None:
    _, wh, _ = warehouse
    generation = _generations(wh)["kineto"]
    ranked = sorted(p.relative_to(wh).as_posix() for p in (wh / "tables" / "device_exec").rglob("*.parquet")
                    if "run=kineto" in p.as_posix())
    assert ranked == [f"tables/device_exec/run=kineto/{generation}/rank={r}/data_0.parquet" for r in (0, 1)]
    import pyarrow.parquet as pq

    stored = pq.read_schema(wh / ranked[0]).names
    assert "rank" not in stored and "run" not in stored  # both come from the path, as Hive partitions do
    kinds = dict(connect(wh).execute("SELECT column_name, column_type FROM (DESCRIBE device_exec)").fetchall())
    assert kinds["run"] == "VARCHAR" and kinds["rank"] == "INTEGER"


def test_batch_runs_ledger_and_catalog(warehouse) -> None:
    root, wh, _ = warehouse
    with duckdb.connect(str(wh / "catalog.duckdb"), read_only=True) as con:
        rows = con.execute("SELECT run, path, status, ranks, sources, sources_failed, error IS NULL, "
                           "input_files, schema_version = ? FROM batch_runs ORDER BY run",
                           [batch_module.schema_version()]).fetchall()
        files = {run: sum(1 for p in (root / run).rglob("*") if p.is_file()) for run in [*RUNS, "notes"]}
        assert rows == [
            ("cpu", str(root / "cpu"), "ok", 1, 1, 0, True, files["cpu"], True),
            ("gpu", str(root / "gpu"), "ok", 1, 1, 0, True, files["gpu"], True),
            ("kineto", str(root / "kineto"), "ok", 2, 2, 0, True, files["kineto"], True),
            ("notes", str(root / "notes"), "empty", None, 0, None, False, 1, True),
        ]
        assert con.execute("SELECT count(*) FROM host_op WHERE run = 'cpu'").fetchone()[0] == \
            connect(wh).execute("SELECT count(*) FROM host_op WHERE run = 'cpu'").fetchone()[0] > 0
        described = con.execute("SELECT comment FROM duckdb_columns() WHERE table_name = 'batch_runs' "
                                "AND column_name = 'status'").fetchone()[0]
        assert "partial" in described
        # the runs of one batch share its start, however long the batch took, so that they sort by run id after it
        assert con.execute("SELECT count(DISTINCT analysed_at) FROM batch_runs").fetchone() == (1,)


def test_unchanged_runs_are_skipped_and_a_changed_run_alone_is_analysed_again(tmp_path: Path) -> None:
    root, wh = _root(tmp_path), tmp_path / "wh"
    _batch(root, wh)
    before = _generations(wh)
    again = _batch(root, wh)
    assert again.analysed == [] and sorted(again.unchanged) == ["cpu", "gpu", "kineto"] and again.workers == 0
    assert _generations(wh) == before
    touched = next((root / "kineto").rglob("*.json"))
    os.utime(touched, ns=(time.time_ns(), time.time_ns() + 10**9))
    third = _batch(root, wh)
    assert third.analysed == ["kineto"] and sorted(third.unchanged) == ["cpu", "gpu"]
    after = _generations(wh)
    assert after["kineto"] != before["kineto"] and {r: after[r] for r in ("cpu", "gpu")} == \
        {r: before[r] for r in ("cpu", "gpu")}
    assert not list(wh.glob(f"tables/*/run=kineto/{before['kineto']}")), "the replaced generation is removed"
    assert not (wh / ".staging").exists()


def test_a_gone_run_is_dropped_or_kept_as_missing(tmp_path: Path) -> None:
    root, wh = _root(tmp_path), tmp_path / "wh"
    _batch(root, wh)
    shutil.rmtree(root / "gpu")
    kept = _batch(root, wh, keep_missing=True)
    assert kept.missing == ["gpu"] and kept.analysed == []
    con = connect(wh)
    assert con.execute("SELECT status FROM batch_runs WHERE run = 'gpu'").fetchone() == ("missing",)
    assert con.execute("SELECT count(*) FROM device_exec WHERE run = 'gpu'").fetchone()[0] > 0
    shutil.copytree(RUNS["gpu"], root / "gpu")
    assert _batch(root, wh, keep_missing=True).analysed == ["gpu"], "a missing run that is back is analysed"
    assert connect(wh).execute("SELECT status FROM batch_runs WHERE run = 'gpu'").fetchone() == ("ok",)
    shutil.rmtree(root / "gpu")
    dropped = _batch(root, wh)
    assert dropped.dropped == ["gpu"]
    con = connect(wh)
    assert con.execute("SELECT count(*) FROM batch_runs WHERE run = 'gpu'").fetchone()[0] == 0
    assert not list(wh.glob("tables/*/run=gpu")), "a dropped run's files are removed"


def test_a_new_data_contract_analyses_every_run_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, wh = _root(tmp_path, {"gpu": RUNS["gpu"]}), tmp_path / "wh"
    _batch(root, wh)
    monkeypatch.setattr(batch_module, "schema_version", lambda: "9.9.9+changed")
    again = _batch(root, wh)
    assert again.analysed == ["gpu"]
    assert connect(wh).execute("SELECT schema_version FROM batch_runs").fetchall() == [("9.9.9+changed",)]


def test_verify_finds_content_changed_under_the_same_size_and_mtime(tmp_path: Path) -> None:
    root, wh = _root(tmp_path, {"gpu": RUNS["gpu"]}), tmp_path / "wh"
    _batch(root, wh, verify=True)
    target = root / "gpu" / "profiler" / "activity_execute_timestamp_0.txt"
    stat = target.stat()
    data = bytearray(target.read_bytes())
    digit = data.index(b";", data.index(b";", data.index(b";") + 1) + 1) + 1  # first start time's first digit
    data[digit] = ord("9") if data[digit] != ord("9") else ord("8")
    target.write_bytes(bytes(data))
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert _batch(root, wh).analysed == [], "without --verify the stat fingerprint cannot see it"
    assert _batch(root, wh, verify=True).analysed == ["gpu"]


def test_a_failed_run_is_a_ledger_row_and_keeps_its_last_good_tables(tmp_path: Path) -> None:
    root, wh = _root(tmp_path, {"gpu": RUNS["gpu"], "kineto": RUNS["kineto"]}), tmp_path / "wh"
    _batch(root, wh)
    good = _rows(connect(wh), "device_exec", "WHERE run = 'kineto'")
    for trace in (root / "kineto").glob("*.json*"):  # rank 0's .json and rank 1's .json.gz
        trace.write_text("{ this is not json")
    result = _batch(root, wh)
    assert list(result.failed) == ["kineto"] and result.exit_code == 3 and result.unchanged == ["gpu"]
    assert "every source failed" in result.failed["kineto"]
    con = connect(wh)
    status, error = con.execute("SELECT status, error FROM batch_runs WHERE run = 'kineto'").fetchone()
    assert status == "failed" and str(root / "kineto") in error
    assert _rows(con, "device_exec", "WHERE run = 'kineto'") == good
    assert _batch(root, wh).failed == {}, "an unchanged failed run is not retried ..."
    assert list(_batch(root, wh, retry_failed=True).failed) == ["kineto"], "... unless asked"


def test_two_batches_never_write_one_warehouse(tmp_path: Path) -> None:
    root, wh = _root(tmp_path, {"gpu": RUNS["gpu"]}), tmp_path / "wh"
    _batch(root, wh)
    with open(wh / ".lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(UsageError, match="being written by another batch"):
            _batch(root, wh)


def test_the_warehouse_never_overlaps_the_input_nor_replaces_a_foreign_folder(tmp_path: Path) -> None:
    root = _root(tmp_path, {"gpu": RUNS["gpu"]})
    with pytest.raises(UsageError, match="overlap"):
        _batch(root, root / "wh")
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("keep me")
    with pytest.raises(UsageError, match="not a profpipe warehouse"):
        _batch(root, foreign)
    assert (foreign / "thesis.tex").read_text() == "keep me"


def test_run_folders_by_depth_glob_and_their_ids(tmp_path: Path) -> None:
    for relative in ("2026-11-23/job a", "2026-11-24/job-b", "2026-11-24/.hidden"):
        (tmp_path / relative).mkdir(parents=True)
    assert [(r.run, r.path.name) for r in find_runs((tmp_path,), 2)] == [
        ("2026-11-23.job_a", "job a"), ("2026-11-24.job-b", "job-b")]
    assert [r.run for r in find_runs((tmp_path,), 1)] == ["2026-11-23", "2026-11-24"]
    assert [r.run for r in find_runs((tmp_path / "2026-11-24",), 0)] == ["2026-11-24"]
    assert [r.run for r in find_runs((tmp_path,), runs_glob="*/job-*")] == ["2026-11-24.job-b"]
    (tmp_path / "other" / "2026-11-24").mkdir(parents=True)
    with pytest.raises(UsageError, match="would both be run"):
        find_runs((tmp_path, tmp_path / "other"), 1)


def _wait_for(predicate, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.02)


def test_a_batch_killed_part_way_leaves_whole_runs_and_the_next_batch_finishes(tmp_path: Path) -> None:
    runs = {f"{name}{i}": fixture for i in range(2) for name, fixture in RUNS.items()}
    root, wh = _root(tmp_path, runs), tmp_path / "wh"
    command = [sys.executable, "-m", "profpipe", "batch", str(root), "-w", str(wh), "--workers", "1", "-q"]
    process = subprocess.Popen(command, cwd=REPO, start_new_session=True)
    try:
        _wait_for(lambda: (wh / MANIFEST).is_file() and len(_manifest(wh)["runs"]) >= 2)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    committed = _manifest(wh)["runs"]
    assert 2 <= len(committed) < len(runs), "killed part-way"
    con = connect(wh)
    for run, entry in committed.items():
        for table, files in entry["files"].items():
            folder = wh / "tables" / table / f"run={run}" / entry["row"]["generation"]
            assert all((folder / f).is_file() for f in files), (run, table)
        assert con.execute("SELECT count(*) FROM run_info WHERE run = ?", [run]).fetchone()[0] > 0
    finished = _batch(root, wh)
    assert sorted(finished.analysed + finished.unchanged) == sorted(runs) and not finished.failed
    assert sorted(finished.unchanged) == sorted(committed)
    assert not (wh / ".staging").exists()
    live = {(run, g) for run, g in _generations(wh).items()}
    on_disk = {(p.parent.name.removeprefix("run="), p.name) for p in wh.glob("tables/*/run=*/*")}
    assert on_disk <= live, "no files of a killed batch's generations are left"
    clean = tmp_path / "clean"
    _batch(root, clean)
    _assert_same_warehouse(wh, clean)


def test_a_worker_killed_in_a_run_s_models_reads_its_sources_again(tmp_path: Path) -> None:
    """A worker dies while it builds a run's models, after the merge moved the run's parts into its output: the run
    is read again from its sources (run from the moved-away parts once more, it read no event: before, a run of no
    rows, committed as analysed)."""
    import threading

    import psutil

    root, wh = _root(tmp_path, {"cpu0": RUNS["cpu"]}), tmp_path / "wh"
    outcome: list = []
    worker = threading.Thread(target=lambda: outcome.append(_batch(root, wh, workers=1)))
    worker.start()
    _wait_for(lambda: any(wh.glob(".staging/*/out/profile.duckdb")), timeout=300)  # the models are being built
    forkserver = [p for p in psutil.Process().children() if "forkserver" in " ".join(p.cmdline())]
    for victim in [w for server in forkserver for w in server.children()]:
        victim.kill()
    worker.join(timeout=300)
    [result] = outcome
    assert not result.failed and result.analysed == ["cpu0"]
    clean = _batch(root, tmp_path / "clean")
    assert clean.analysed == ["cpu0"]
    _assert_same_warehouse(wh, tmp_path / "clean")


def test_a_worker_killed_mid_batch_costs_no_run(tmp_path: Path) -> None:
    """The kernel's OOM killer takes a worker: the units it and its pool held go to a fresh pool once more."""
    import threading

    import psutil

    runs = {f"{name}{i}": fixture for i in range(2) for name, fixture in RUNS.items()}
    root, wh = _root(tmp_path, runs), tmp_path / "wh"
    outcome: list = []
    worker = threading.Thread(target=lambda: outcome.append(_batch(root, wh, workers=1)))
    worker.start()
    _wait_for(lambda: (wh / MANIFEST).is_file() and len(_manifest(wh)["runs"]) >= 1)
    forkserver = [p for p in psutil.Process().children() if "forkserver" in " ".join(p.cmdline())]
    victims = [w for server in forkserver for w in server.children()]
    assert victims, "a worker of the pool is running"
    for victim in victims:
        victim.kill()
    worker.join(timeout=300)
    [result] = outcome
    assert not result.failed and sorted(result.analysed) == sorted(runs)
    assert sorted(_manifest(wh)["runs"]) == sorted(runs)



def test_a_pool_that_breaks_while_units_are_handed_out_costs_no_run(tmp_path: Path, monkeypatch) -> None:
    """A worker that died before a unit was handed to the pool (submit itself raises BrokenProcessPool): the unit
    goes to a fresh pool with the ones in flight, as after a death seen in a result; every run is committed."""
    import concurrent.futures as cf

    real_pool, handed = batch_module.process_pool, [0]

    class BreaksOnce:
        def __init__(self, *args) -> None:
            self.pool = real_pool(*args)

        def submit(self, *args):
            handed[0] += 1
            if handed[0] == 2:
                raise cf.process.BrokenProcessPool("a child process terminated abruptly")
            return self.pool.submit(*args)

        def __getattr__(self, name: str):
            return getattr(self.pool, name)

    monkeypatch.setattr(batch_module, "process_pool", BreaksOnce)
    root = _root(tmp_path, RUNS)
    result = _batch(root, tmp_path / "wh", workers=1)
    assert handed[0] > 2 and not result.failed and sorted(result.analysed) == sorted(RUNS)
    assert sorted(_manifest(tmp_path / "wh")["runs"]) == sorted(RUNS)

def test_the_dask_executor_on_a_local_cluster_gives_the_same_tables(warehouse, tmp_path: Path) -> None:
    root, wh, _ = warehouse
    result = _batch(root, tmp_path / "dask", executor="dask")
    assert sorted(result.analysed) == ["cpu", "gpu", "kineto"] and result.workers == 2
    _assert_same_warehouse(wh, tmp_path / "dask")


def test_dask_units_share_their_hosts_cores_among_duckdb_threads() -> None:
    """Each unit on a Dask worker opens DuckDB with the host's cores divided by the task threads of every Dask
    worker on that host (a local pool's initializer does the same); outside a Dask worker nothing changes."""
    from distributed import Client, LocalCluster

    from profpipe.database import _setting
    from profpipe.parallel import cores

    hosts = {"workers": {"tcp://10.0.0.5:4001": {"nthreads": 2}, "tcp://10.0.0.5:4002": {"nthreads": 2},
                         "tcp://10.0.0.6:4001": {"nthreads": 1}}}
    assert batch_module._threads_by_host(hosts) == {"10.0.0.5": 4, "10.0.0.6": 1}
    assert batch_module._dask_duckdb_threads({"127.0.0.1": 2}) is None  # not on a Dask worker
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        host_threads = batch_module._threads_by_host(client.scheduler_info())
        assert sum(host_threads.values()) == 2
        seen, _ = client.submit(batch_module._timed, None, host_threads, _setting, "threads", pure=False).result()
    assert seen == max(1, cores() // 2)


def test_cli_batch_query_and_diff_on_warehouse_runs(warehouse, tmp_path: Path) -> None:
    root, wh, _ = warehouse
    runner = CliRunner()
    again = runner.invoke(app, ["batch", str(root), "-w", str(wh), "--json"])
    assert again.exit_code == 0, again.output
    assert sorted(json.loads(again.stdout)["unchanged"]) == ["cpu", "gpu", "kineto", "notes"]
    counted = runner.invoke(app, ["query", str(wh), "SELECT run, count(*) AS n FROM device_exec GROUP BY run "
                                                    "ORDER BY run", "-f", "json"])
    assert counted.exit_code == 0, counted.output
    expected = connect(wh).execute("SELECT run, count(*) FROM device_exec GROUP BY run ORDER BY run").fetchall()
    assert [(r["run"], r["n"]) for r in json.loads(counted.stdout)] == expected
    setting = runner.invoke(app, ["query", str(wh), "SELECT current_setting('enable_progress_bar') AS bar", "-f", "json"])
    assert json.loads(setting.stdout) == [{"bar": False}], "DuckDB's progress bar would be drawn on stdout"
    same = runner.invoke(app, ["diff", "gpu", "gpu", "--warehouse", str(wh), "--json"])
    assert same.exit_code == 0, same.output
    rows = json.loads(same.stdout)["rows"]
    assert rows and all(r["total_change_ns"] == 0 and not r["significant"] for r in rows)
    missing = runner.invoke(app, ["diff", "gpu", "nope", "--warehouse", str(wh)])
    assert missing.exit_code == 2 and "no run 'nope'" in missing.output
    assert {t for t in catalog()} <= set(public_tables())
    assert open_run(wh, "kineto").execute("SELECT count(DISTINCT rank) FROM device_exec").fetchone() == (2,)


def test_a_damaged_manifest_is_a_clear_error_and_nothing_is_touched(tmp_path: Path) -> None:
    root, wh = _root(tmp_path, {"gpu": RUNS["gpu"]}), tmp_path / "wh"
    _batch(root, wh)
    files_before = sorted(p for p in wh.rglob("*") if p.is_file())
    (wh / MANIFEST).write_text('{"written_by": "profpipe", "format": 1, "serial": 3, "runs": {"gpu": ')
    for attempt in (lambda: _batch(root, wh), lambda: connect(wh)):
        with pytest.raises(UsageError, match=f"{wh / MANIFEST}: the warehouse manifest cannot be read"):
            attempt()
    assert sorted(p for p in wh.rglob("*") if p.is_file()) == files_before


def test_a_memory_limit_holds_in_every_unit_and_changes_no_table(warehouse, tmp_path: Path) -> None:
    """--memory-limit: each unit of work (ingest, models) runs with its DuckDB databases bounded, in the worker
    that runs it; the warehouse is the one an unbounded batch builds."""
    from profpipe import database

    def setting() -> str:
        return database.connect().execute("SELECT current_setting('memory_limit')").fetchone()[0]

    bounded, _ = batch_module._timed(300, None, setting)
    assert bounded == duckdb.connect(config={"memory_limit": "300MB"}).execute(
        "SELECT current_setting('memory_limit')").fetchone()[0]
    assert batch_module._timed(None, None, setting)[0] == setting() != bounded  # no limit: DuckDB's default
    root, wh, _ = warehouse
    result = _batch(root, tmp_path / "bounded", analysis=Options(memory_limit_mb=256))
    assert sorted(result.analysed) == ["cpu", "gpu", "kineto"] and not result.failed
    _assert_same_warehouse(wh, tmp_path / "bounded")


def _unranked_trace(source: Path, target: Path) -> None:
    """A copy of a Kineto trace without distributedInfo (and, by its name, without a rank)."""
    trace = json.loads(source.read_text())
    trace.pop("distributedInfo", None)
    target.write_text(json.dumps(trace))


def test_a_root_that_holds_trace_files_directly_batches_each_as_a_run(tmp_path: Path) -> None:
    """Traces without a rank cannot be read as one run (analyse of their folder gives each a problem): each file is
    a run of its own, named by the file without its trace suffix, with the tables analyse of that file gives."""
    root = tmp_path / "traces"
    root.mkdir()
    _unranked_trace(FIXTURES / "kineto" / "current" / "rank-0.pt.trace.json", root / "resnet bs32.pt.trace.json")
    _unranked_trace(FIXTURES / "kineto" / "mtia" / "rank-0.pt.trace.json", root / "resnet_bs64.pt.trace.json")
    (root / "notes.txt").write_text("not a trace")
    scans = batch_module.scan_roots((root,))
    assert [(r.run, r.path.name) for r in scans[0].runs] == [
        ("resnet_bs32", "resnet bs32.pt.trace.json"), ("resnet_bs64", "resnet_bs64.pt.trace.json")]
    assert "each is a run of its own" in scans[0].notes[0] and "rank" in scans[0].notes[0]
    result = _batch(root, tmp_path / "wh")
    assert sorted(result.analysed) == ["resnet_bs32", "resnet_bs64"] and result.exit_code == 0
    con = connect(tmp_path / "wh")
    for run, name in (("resnet_bs32", "resnet bs32.pt.trace.json"), ("resnet_bs64", "resnet_bs64.pt.trace.json")):
        analyse(root / name, tmp_path / run, Options())
        alone = duckdb.connect(str(tmp_path / run / "profile.duckdb"), read_only=True)
        for table in public_tables():
            assert _rows(con, table, f"WHERE run = '{run}'") == _rows(alone, table), (run, table)
    assert con.execute("SELECT path, input_files FROM batch_runs WHERE run = 'resnet_bs64'").fetchone() == (
        str(root / "resnet_bs64.pt.trace.json"), 1)
    again = _batch(root, tmp_path / "wh")  # a file run is fingerprinted like a folder run: unchanged, skipped
    assert sorted(again.unchanged) == ["resnet_bs32", "resnet_bs64"] and not again.analysed


def test_a_root_that_holds_one_jobs_rank_traces_or_a_dump_directly_is_one_run(tmp_path: Path) -> None:
    """Traces that all have a rank are the ranks of one job (analyse reads their folder as one run), and a folder
    that holds the files of a MindSpore dump directly is that dump: each root is one run, named by the root;
    --runs with a glob naming files batches each trace file as a run all the same."""
    job = tmp_path / "nccl_job"
    shutil.copytree(FIXTURES / "kineto_nccl", job)
    dump = tmp_path / "profiler"
    shutil.copytree(RUNS["gpu"] / "profiler", dump)
    scans = batch_module.scan_roots((job, dump))
    assert [[(r.run, r.path) for r in scan.runs] for scan in scans] == [[("nccl_job", job)], [("profiler", dump)]]
    assert "ranks 0, 1: one run" in scans[0].notes[0] and "--runs" in scans[0].notes[0]
    assert "holds profiler files directly" in scans[1].notes[0]
    assert [r.run for r in find_runs((job,), runs_glob="*.pt.trace.json")] == ["rank-0", "rank-1"]
    assert [r.run for r in find_runs((job,), run_depth=0)] == ["nccl_job"]
    result = _batch(job, tmp_path / "wh")
    assert result.analysed == ["nccl_job"]
    assert open_run(tmp_path / "wh", "nccl_job").execute("SELECT count(DISTINCT rank) FROM device_exec").fetchone() == (2,)


def test_a_root_without_runs_says_so_on_the_console_and_in_json(tmp_path: Path) -> None:
    empty, hidden_only = tmp_path / "empty", tmp_path / "hidden_only"
    empty.mkdir()
    (hidden_only / ".cache").mkdir(parents=True)
    (hidden_only / "readme.txt").write_text("no profile here")
    found = CliRunner().invoke(app, ["batch", str(empty), str(hidden_only), "-w", str(tmp_path / "wh"), "--json",
                                     "--no-report"])
    assert found.exit_code == 0, found.output
    roots = json.loads(found.stdout)["roots"]
    assert [(r["root"], r["runs_found"]) for r in roots] == [(str(empty), 0), (str(hidden_only), 0)]
    assert all("no folders" in r["reason"] and "--run-depth 1" in r["looked_for"] for r in roots)
    for root in (empty, hidden_only):
        assert f"profpipe: {root}: no runs found (it holds no folders" in found.stderr
    globbed = CliRunner().invoke(app, ["batch", str(empty), "-w", str(tmp_path / "wh"), "--runs", "job-*", "--no-report"])
    assert globbed.exit_code == 0 and "no folder and no trace file below it matches --runs 'job-*'" in globbed.stderr


def test_runs_published_before_a_column_or_a_table_existed_still_open(warehouse, tmp_path: Path) -> None:
    """A nightly warehouse outlives profpipe versions: a run published before device_exec had wait_stream_id (its
    files lack it, a newer run's have it: the manifest names it), before wait_correlation existed at all (no file
    and not the manifest has it) or before the mart critical_path_summary existed opens as a run, every contract
    column there (NULL where the files lack it), every table there (empty where the run has none); its report is
    written; the other runs keep their values."""
    _, original, _ = warehouse
    wh = tmp_path / "wh"
    shutil.copytree(original, wh)
    manifest = _manifest(wh)
    con = duckdb.connect()
    for run, entry in manifest["runs"].items():
        if not entry["row"]["generation"]:  # the folder without profiler data
            continue
        generation = wh / "tables" / "device_exec" / f"run={run}" / entry["row"]["generation"]
        dropped = "wait_correlation" + (", wait_stream_id" if run == "kineto" else "")
        for file in generation.rglob("*.parquet"):
            con.execute(f"COPY (SELECT * EXCLUDE ({dropped}) FROM read_parquet('{file}', hive_partitioning = false)) "
                        f"TO '{file}.new' (FORMAT parquet)")
            file.with_name(file.name + ".new").replace(file)
        for table in ("critical_path_summary",):
            entry["files"].pop(table, None)
            shutil.rmtree(wh / "tables" / table / f"run={run}", ignore_errors=True)
    manifest["columns"]["device_exec"] = [c for c in manifest["columns"]["device_exec"] if c[0] != "wait_correlation"]
    manifest["columns"].pop("critical_path_summary")
    (wh / MANIFEST).write_text(json.dumps(manifest))
    old = open_run(wh, "kineto")
    assert old.execute("SELECT count(*), count(wait_stream_id), count(wait_correlation) FROM stg_device_exec"
                       ).fetchone()[1:] == (0, 0)
    assert old.execute("SELECT count(*) FROM critical_path_summary").fetchone() == (0,)
    everything = connect(wh)
    assert everything.execute("SELECT count(*) FROM device_exec WHERE wait_correlation IS NOT NULL").fetchone() == (0,)
    assert (everything.execute("SELECT count(*) FROM device_exec WHERE run = 'kineto'").fetchone()
            == connect(original).execute("SELECT count(*) FROM device_exec WHERE run = 'kineto'").fetchone())
    report = CliRunner().invoke(app, ["report", str(wh), "--run", "kineto", "-o", str(tmp_path / "kineto.html")])
    assert report.exit_code == 0, report.output
