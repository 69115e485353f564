"""Sources of one run read by worker processes (run.ingest_sources, parallel.py) and the stage meter (meter.py).

Oracle: the same run read in this process, one source after the other (workers=1), table for table.
"""
from __future__ import annotations

import json
import os
import pickle
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, run
from profpipe.cli import app
from profpipe.errors import InputError
from profpipe.tables import catalog

sys.path.insert(0, str(FIXTURES / "generators"))
from kineto import rank_trace  # noqa: E402  (the fixture generator)


def _kineto_ranks(folder: Path, ranks: int) -> Path:
    """A run of `ranks` generated PyTorch traces, rank r starting r ms after rank 0."""
    folder.mkdir()
    for rank in range(ranks):
        document = rank_trace("current", rank, 86_400_000_000_000 + rank * 1_000_000)
        (folder / f"rank-{rank}.pt.trace.json").write_text(json.dumps(document) + "\n")
    return folder


def _table_rows(out: Path) -> dict[str, list[tuple]]:
    """Every normalized table and mart of an output, rows sorted (the order parts were merged in may differ)."""
    con = duckdb.connect(str(out / "profile.duckdb"), read_only=True)
    try:
        names = [row[0] for row in con.execute("SELECT table_name FROM duckdb_tables() WHERE NOT temporary").fetchall()]
        return {name: sorted(con.execute(f"SELECT * FROM {name}").fetchall(), key=repr) for name in names}
    finally:
        con.close()


@pytest.mark.parametrize("fixture", ["ascend_ms_cluster", "mindspore_gpu/two_ranks"])
def test_sources_read_by_workers_give_the_tables_of_reading_them_here(fixture: str, tmp_path: Path) -> None:
    serial = run(FIXTURES / fixture, tmp_path / "serial", workers=1)
    parallel = run(FIXTURES / fixture, tmp_path / "parallel", workers=2)
    assert "ingest" in parallel.meter.worker_peaks and "ingest" not in serial.meter.worker_peaks
    assert parallel.health == serial.health and parallel.skipped == serial.skipped
    rows = _table_rows(tmp_path / "parallel")
    assert set(catalog()) <= set(rows)
    assert rows == _table_rows(tmp_path / "serial")


def test_a_worker_that_dies_costs_no_source(tmp_path: Path) -> None:
    """The OOM killer takes the pool's workers while they start: every source is read here instead, the
    tables are those of a serial run, and a notice says what happened."""
    import psutil

    source = _kineto_ranks(tmp_path / "run", 6)
    outcome: list = []
    worker = threading.Thread(target=lambda: outcome.append(run(source, tmp_path / "killed", workers=2)))
    worker.start()
    victims: list = []
    deadline = time.monotonic() + 60
    while not victims and time.monotonic() < deadline:
        servers = [p for p in psutil.Process().children() if "forkserver" in " ".join(p.cmdline())]
        victims = [w for server in servers for w in server.children()]
        time.sleep(0.005)
    assert victims, "the pool's workers started"
    for victim in victims:
        victim.kill()
    worker.join(timeout=300)
    [result] = outcome
    assert any("worker process died" in notice and "read again here, one at a time" in notice
               for notice in result.notices)
    import tempfile

    left = [p.name for v in victims for p in Path(tempfile.gettempdir()).glob(f"profpipe-*-{v.pid}-*")]
    assert not left, f"scratch folders of killed workers: {left}"
    assert result.ranks == list(range(6)) and not result.skipped
    run(source, tmp_path / "serial", workers=1)
    assert _table_rows(tmp_path / "killed") == _table_rows(tmp_path / "serial")



def test_a_pool_that_breaks_while_sources_are_handed_out_costs_no_source(tmp_path: Path, monkeypatch) -> None:
    """A worker killed before every source was handed to the pool (submit itself raises BrokenProcessPool, a race
    the OOM test above can hit): the sources not handed out are read here too; the tables are a serial run's."""
    import concurrent.futures as cf

    import profpipe.run

    real_pool = profpipe.run.process_pool

    class BreaksAfterOne:
        def __init__(self, *args) -> None:
            self.pool, self.handed = real_pool(*args), 0

        def submit(self, *args):
            self.handed += 1
            if self.handed > 1:
                raise cf.process.BrokenProcessPool("a child process terminated abruptly")
            return self.pool.submit(*args)

        def __getattr__(self, name: str):
            return getattr(self.pool, name)

    monkeypatch.setattr(profpipe.run, "process_pool", BreaksAfterOne)
    source = _kineto_ranks(tmp_path / "run", 3)
    result = run(source, tmp_path / "broken", workers=2)
    assert result.ranks == [0, 1, 2] and not result.skipped
    assert any("worker process died" in notice for notice in result.notices)
    run(source, tmp_path / "serial", workers=1)
    assert _table_rows(tmp_path / "broken") == _table_rows(tmp_path / "serial")

def test_a_source_that_fails_in_a_worker_is_reported_as_it_is_here(tmp_path: Path) -> None:
    source = _kineto_ranks(tmp_path / "run", 3)
    (source / "rank-1.pt.trace.json").write_text('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, ')
    parallel = run(source, tmp_path / "parallel", workers=2)
    serial = run(source, tmp_path / "serial", workers=1)
    assert parallel.skipped == serial.skipped and len(parallel.skipped) == 1
    assert "rank-1.pt.trace.json" in parallel.skipped[0]["error"]
    assert parallel.ranks == serial.ranks == [0, 2]
    with pytest.raises(InputError) as raised:  # --strict: the worker's error itself, with its file
        run(source, tmp_path / "strict", workers=2, strict=True)
    assert raised.value.path.endswith("rank-1.pt.trace.json")
    assert not (tmp_path / "strict").exists()


def test_strict_raises_the_error_of_the_first_failing_source_in_order(tmp_path: Path) -> None:
    """Rank 1 fails late (a long trace with a broken event near its end), rank 2 at once: --strict reports
    rank 1, as a reading here would, whichever worker finishes first."""
    source = _kineto_ranks(tmp_path / "run", 3)
    events = ",".join(f'{{"ph": "X", "cat": "cpu_op", "name": "op{i}", "pid": 1, "tid": 1, "ts": {i}, "dur": 1}}'
                      for i in range(300_000))
    (source / "rank-1.pt.trace.json").write_text('{"traceEvents": [' + events + ', {"ph": "X", "ts": 1 2}, {}]}')
    (source / "rank-2.pt.trace.json").write_text('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, ')
    with pytest.raises(InputError) as raised:
        run(source, tmp_path / "strict", workers=2, strict=True)
    assert raised.value.path.endswith("rank-1.pt.trace.json")
    assert not (tmp_path / "strict").exists()


def test_input_errors_travel_between_processes_whole() -> None:
    error = pickle.loads(pickle.dumps(InputError("/data/rank-3.json", "cut short", line=7, offset=1234)))
    assert (type(error), error.path, error.problem, error.line, error.offset, str(error)) == \
        (InputError, "/data/rank-3.json", "cut short", 7, 1234, "/data/rank-3.json, line 7, byte offset 1234: cut short")


def test_each_stage_has_its_time_and_peak_memory(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["analyse", str(FIXTURES / "kineto" / "current"), "-o", str(out), "-q",
                                      "--profile-stages", "--workers", "2"])
    assert result.exit_code == 0, result.output
    stages = ["discover", "ingest", "merge", "models", "checks", "export"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert list(manifest["timings_s"]) == list(manifest["peak_rss_bytes"]) == stages
    assert all(manifest["timings_s"][s] > 0 for s in stages)
    # a stage's peak is at least what any Python process holds (20 MiB) and below what this machine has
    assert all(20 * 2**20 < manifest["peak_rss_bytes"][s] < 64 * 2**30 for s in stages)
    assert list(manifest["worker_peak_rss_bytes"]) == ["ingest"]
    table = result.output.splitlines()
    assert table[0].split() == ["stage", "seconds", "peak", "MiB", "worker", "peak", "MiB"]
    assert [line.split()[0] for line in table[2:8]] == stages


def test_the_stage_peak_is_the_stage_own() -> None:
    """A stage that holds 200 MiB more than the others shows it, the one after it does not, and the process's
    high-water mark (what wait4 reports) is left as it is. In a fresh process, whose earlier peak is its own."""
    import subprocess

    code = """
import json
from profpipe.meter import StageMeter, peak_rss_bytes
meter = StageMeter()
with meter.stage("small_before"):
    pass
with meter.stage("big"):
    block = bytearray(200 * 2**20)
    block[::4096] = b"x" * len(block[::4096])  # touch every page
    del block
with meter.stage("small_after"):
    pass
print(json.dumps({**meter.peaks, "process": peak_rss_bytes()}))
"""
    peaks = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert peaks["big"] - peaks["small_before"] > 190 * 2**20
    assert peaks["big"] - peaks["small_after"] > 150 * 2**20
    assert peaks["process"] == peaks["big"]


@pytest.mark.parametrize("workers", [0, -1, True, 1.5])
def test_workers_must_be_a_whole_number_of_at_least_one(workers, tmp_path: Path) -> None:
    from profpipe.errors import UsageError
    from profpipe.options import Options

    with pytest.raises(UsageError, match="workers"):
        Options(workers=workers)


def test_a_memory_limit_bounds_every_database_of_the_run_and_changes_no_number(tmp_path: Path) -> None:
    """--memory-limit: the output database and the readers' scratch databases take at most that many MiB (each
    reader's at most its own 640), the tables are those of an unbounded run, and the setting ends with the run."""
    from profpipe import database
    from profpipe.ingest import scratch

    seen: list[str] = []
    original = database.duckdb.connect

    def recording(path: str, read_only: bool = False, config: dict | None = None):
        seen.append((config or {}).get("memory_limit"))
        return original(path, read_only=read_only, config=config or {})

    database.duckdb.connect = recording
    try:
        bounded = run(FIXTURES / "kineto" / "current", tmp_path / "bounded", memory_limit_mb=200, workers=1)
    finally:
        database.duckdb.connect = original
    assert seen and set(seen) == {"200MB"}
    def limit(con) -> str:
        return con.execute("SELECT current_setting('memory_limit')").fetchone()[0]

    for configured_mb, expected_mb in ((1024, 640), (300, 300)):  # a reader's: its own 640 MiB or the lower limit
        with database.configured(memory_mb=configured_mb):
            reader = scratch.scratch_database(tmp_path)
        assert limit(reader) == limit(original(":memory:", config={"memory_limit": f"{expected_mb}MB"}))
    assert database.memory_limit_mb(10**9) == 10**9  # the run's limit ended with it
    run(FIXTURES / "kineto" / "current", tmp_path / "free", workers=1)
    assert _table_rows(tmp_path / "bounded") == _table_rows(tmp_path / "free")
    assert not bounded.skipped


@pytest.mark.parametrize("memory_limit_mb", [0, 63, True, 512.5])
def test_a_memory_limit_is_a_whole_number_of_at_least_64_mib(memory_limit_mb) -> None:
    from profpipe.errors import UsageError
    from profpipe.options import Options

    with pytest.raises(UsageError, match="memory limit"):
        Options(memory_limit_mb=memory_limit_mb)


def test_workers_stopped_leave_no_scratch_folder(tmp_path: Path) -> None:
    """An interrupted run kills its workers; the scratch folders they held in $TMPDIR (a trace's event-array copy,
    as large as the trace) are swept at once, those of live processes are not."""
    import os
    import tempfile

    from profpipe.ingest.scratch import sweep_scratch_folders
    from profpipe.parallel import process_pool, stop_workers

    pool = process_pool(2)
    pids = {future.result() for future in [pool.submit(os.getpid) for _ in range(4)]}
    held = [Path(tempfile.mkdtemp(prefix=f"profpipe-kineto-{pid}-")) for pid in pids]
    mine = Path(tempfile.mkdtemp(prefix=f"profpipe-kineto-{os.getpid()}-"))
    try:
        stop_workers(pool)
        sweep_scratch_folders()
        assert not [folder for folder in held if folder.exists()]
        assert mine.exists()
    finally:
        mine.rmdir()


def test_a_full_disk_in_a_worker_is_said_as_a_full_disk() -> None:
    """A reader wraps the disk-full error in an error of its own; the pickled wrapper would lose it on the way
    back from a worker, so the disk-full error itself is raised (and named as such: safety.out_of_space_named)."""
    import errno

    from profpipe.run import source_error

    full = OSError(errno.ENOSPC, "No space left on device", "/tmp/scratch/events.json")
    try:
        try:
            raise full
        except OSError:
            raise InputError("/data/rank-0.json", "not a trace (IO Error)") from None
    except InputError as wrapped:
        with pytest.raises(OSError) as raised:
            source_error(wrapped, Path("/data"))
    assert pickle.loads(pickle.dumps(raised.value)).errno == errno.ENOSPC


def test_a_gzip_source_is_sized_by_what_it_holds_decompressed(tmp_path: Path) -> None:
    """Worker pools are sized and ordered by the bytes a reader works through: a .gz trace counts its gzip
    trailer's uncompressed size (ISIZE, modulo 4 GiB, so raised in 4 GiB steps to at least the file's size)."""
    import gzip

    from profpipe.discover import _decompressed_size, discover
    from profpipe.health import HealthLedger

    document = json.dumps(rank_trace("current", 0, 86_400_000_000_000)).encode()
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "rank-0.pt.trace.json.gz").write_bytes(gzip.compress(document))
    [source] = discover(folder, None, None, None, HealthLedger().for_source(str(folder), -1), None)
    assert source.size_bytes() == len(document) > (folder / "rank-0.pt.trace.json.gz").stat().st_size
    wrapped = tmp_path / "wrapped.gz"  # 100 bytes whose trailer records 10: at least 4 GiB + 10 decompressed
    wrapped.write_bytes(bytes(96) + (10).to_bytes(4, "little"))
    assert _decompressed_size(wrapped) == 2**32 + 10
    plain = folder / "notes.json"
    plain.write_bytes(b"{}")
    assert _decompressed_size(plain) == 2 and _decompressed_size(tmp_path / "absent.gz") == 0
    os.mkfifo(tmp_path / "pipe.json.gz")  # not a regular file: its size, never an open that waits for a writer
    assert _decompressed_size(tmp_path / "pipe.json.gz") == 0
