"""Shared paths and helpers for the tests."""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import pytest

from profpipe.options import Options
from profpipe.run import RunResult, analyse

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
REALDATA = REPO.parent / "shared" / "realdata"


def realdata(relative: str) -> Path:
    """A file under ../shared/realdata, or skip the test when that folder is not beside the checkout."""
    path = REALDATA / relative
    if not path.exists():
        pytest.skip(f"real data not available: {path} (../shared/realdata is not beside this checkout)")
    return path


def run(source: Path, out: Path, **options) -> RunResult:
    """Analyse `source` into `out` with Options(**options); the tests read tables/ too, so the Parquet
    copies are kept unless `data_simplification=True` is given; report.html only with `visual_report=True`; the
    timeline is the full one, uncompressed, unless `timeline` or `timeline_gzip` says otherwise (test_timeline.py
    tests the defaults).

    Many tests read the same analysis of a fixture or a realdata set: one analysed before in this test session (by
    any worker) with the same options, its files unchanged, gets a copy of that output and of its RunResult
    (`shared_analysis`), unless the test patches profpipe (monkeypatch) or put hidden entries beside `out` (a killed
    run's leftovers, for the run to sweep). Other tests of what a run does besides its output call `analyse`."""
    options.setdefault("data_simplification", False)
    options.setdefault("timeline", "full")
    options.setdefault("timeline_gzip", False)
    options.setdefault("visual_report", False)  # tests/test_report.py asks for it
    source, out = Path(source), Path(out)
    if os.path.lexists(out) or _beside_hidden(out) or not _SHARING["allowed"] or not _shared_input(source):
        return analyse(source, out, Options(**options))
    return shared_analysis(source, out, options)


#: Whether the running test may be given an earlier analysis (not when it patches profpipe with monkeypatch, which
#: may change what an analysis does), and the analyses it asked for (asked twice, it wants two).
_SHARING: dict = {"allowed": True, "asked": set()}


@pytest.fixture(autouse=True)
def _share_analyses_unless_patched(request: pytest.FixtureRequest) -> None:
    _SHARING.update(allowed="monkeypatch" not in request.fixturenames, asked=set())


def _beside_hidden(out: Path) -> bool:
    """Whether hidden entries lie beside `out` (a killed run's leftovers a test put there for the run to sweep)."""
    return out.parent.is_dir() and any(entry.name.startswith(".") for entry in out.parent.iterdir())


def _shared_input(source: Path) -> bool:
    """Whether `source` is an input many tests read (a fixture or a realdata set, not a test's own copy)."""
    resolved = source.resolve()
    return resolved.exists() and any(resolved.is_relative_to(root.resolve()) for root in (FIXTURES, REALDATA))


#: The folder of this session's shared analyses: made by the controlling process (pytest_configure) and handed
#: to xdist's workers, which start after it, in the environment.
_SHARED_ROOT = "PROFPIPE_TESTS_SHARED_ANALYSES"


def pytest_configure(config: pytest.Config) -> None:
    if _SHARED_ROOT not in os.environ:
        os.environ[_SHARED_ROOT] = tempfile.mkdtemp(prefix="tests-analyses-")
        config.stash[_owner] = os.environ[_SHARED_ROOT]
        config.stash[_realdata_before] = _realdata_state()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The tests read ../shared/realdata and never write to it (one copied with hard links, or a damage written in
    place, would change every later reader's input): a session that changed a file there fails, naming the files."""
    before = session.config.stash.get(_realdata_before, None)
    if before is None:
        return
    after = _realdata_state()
    changed = sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
    if changed:
        writer = session.config.get_terminal_writer()
        writer.line()
        writer.line(f"tests changed ../shared/realdata: {', '.join(changed[:10])}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _realdata_state() -> dict[str, tuple[int, int]]:
    """Every file under ../shared/realdata with its size and modification time (nothing when it is absent)."""
    if not REALDATA.is_dir():
        return {}
    return {str(path.relative_to(REALDATA)): (path.lstat().st_size, path.lstat().st_mtime_ns)
            for path in REALDATA.rglob("*") if not path.is_dir()}


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_owner, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
        del os.environ[_SHARED_ROOT]


_owner = pytest.StashKey[str]()
_realdata_before = pytest.StashKey[dict]()


def shared_analysis(source: Path, out: Path, options: dict) -> RunResult:
    """`run` for an input many tests read: the first test (of any worker) to ask analyses it and keeps a pristine
    copy of the output and the RunResult under the session's folder; the others wait for it and get copies. A test
    that asks twice gets two analyses. The key is the input's path, every file's name, size and modification time,
    and the options."""
    files = [source] if source.is_file() else sorted(p for p in source.rglob("*") if not p.is_dir())
    key = repr((str(source.resolve()), [(str(p), p.lstat().st_size, p.lstat().st_mtime_ns) for p in files],
                sorted(options.items())))
    entry = Path(os.environ[_SHARED_ROOT]) / hashlib.sha256(key.encode()).hexdigest()[:32]
    if entry in _SHARING["asked"]:  # this test asks a second time: it wants two analyses
        return analyse(source, out, Options(**options))
    _SHARING["asked"].add(entry)
    lock = entry.with_suffix(".lock")
    deadline = time.monotonic() + 600
    while not entry.is_dir():
        try:
            os.close(os.open(lock, os.O_CREAT | os.O_EXCL))
        except FileExistsError:  # another worker analyses it
            if time.monotonic() > deadline:
                return analyse(source, out, Options(**options))
            time.sleep(0.05)
            continue
        try:
            if entry.is_dir():  # kept between the look and the lock
                break
            result = analyse(source, out, Options(**options))
            partial = entry.with_suffix(f".partial-{os.getpid()}")
            shutil.copytree(out, partial / "out", symlinks=True)
            (partial / "result.pickle").write_bytes(pickle.dumps(result))
            partial.rename(entry)
            return result
        finally:
            lock.unlink()
    result = pickle.loads((entry / "result.pickle").read_bytes())
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(entry / "out", out, symlinks=True)
    result.output = out
    return result


def union_ns(intervals: list[tuple[int, int]]) -> int:
    """The length of the union of [start, end) intervals: overlapping time counted once (an oracle for busy times)."""
    total, reach = 0, None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            total, reach = total + end - start, end
        elif end > reach:
            total, reach = total + end - reach, end
    return total


def load_trace(out: Path) -> dict:
    return json.loads((out / "timeline" / "trace.json").read_text())


def query(out: Path, sql: str) -> list[tuple]:
    """Rows of `sql` run on the output folder's profile.duckdb (read-only)."""
    with duckdb.connect(str(out / "profile.duckdb"), read_only=True) as con:
        return con.execute(sql).fetchall()


def assert_generator_reproduces(generator: str, fixture: Path, tmp_path: Path, *options: str) -> None:
    """Running fixtures/generators/<generator> again (with `options`) writes exactly the committed fixture files."""
    subprocess.run([sys.executable, str(REPO / "fixtures" / "generators" / generator), str(tmp_path), *options],
                   check=True)
    for fresh in tmp_path.rglob("*"):
        if fresh.is_file():
            assert fresh.read_bytes() == (fixture / fresh.relative_to(tmp_path)).read_bytes(), fresh

