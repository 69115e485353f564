"""Trust at the level of the process: what -o may replace, signals, full disks, read-only folders, scratch
folders of killed runs, inputs that are not regular files, and the exit codes that tell them apart.

Every case checks what is left on disk afterwards: the input untouched, the earlier output as it was,
no temporary folder beside the output and no scratch folder in $TMPDIR.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FIXTURES, run
from fuzzing import snapshot
from profpipe import safety
from profpipe.cli import app
from profpipe.errors import Interrupted, UsageError
from profpipe.ingest.scratch import scratch_folder
from profpipe.output import MARKER, staged_output
from profpipe.safety import stop_on_signals

CPU = FIXTURES / "mindspore_cpu" / "lenet_graph"
KINETO = FIXTURES / "kineto" / "current" / "rank-0.pt.trace.json"


def _cli(*args: str) -> tuple[int, str]:
    outcome = CliRunner().invoke(app, list(args))
    assert "Traceback" not in outcome.output
    return outcome.exit_code, outcome.output


def _copy_input(tmp_path: Path) -> Path:
    copy = tmp_path / "in"
    shutil.copytree(CPU, copy)
    return copy


# --- what -o may replace ---------------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["input", "inside", "holds"])
def test_output_on_the_input_is_refused_even_with_force(tmp_path, where):
    source = _copy_input(tmp_path)
    before = snapshot(tmp_path)
    out = {"input": source, "inside": source / "out", "holds": tmp_path}[where]
    code, output = _cli("analyse", str(source), "-o", str(out), "--force")
    assert code == 2 and "profpipe: error:" in output
    assert snapshot(tmp_path) == before


def test_a_user_folder_is_refused_and_untouched(tmp_path):
    user = tmp_path / "notes"
    user.mkdir()
    (user / "thesis.tex").write_text("precious")
    code, output = _cli("analyse", str(CPU), "-o", str(user))
    assert code == 2 and "not written by profpipe" in output and "--force" in output
    assert [p.name for p in user.iterdir()] == ["thesis.tex"]


def test_force_replaces_a_user_folder(tmp_path):
    user = tmp_path / "scratch"
    user.mkdir()
    (user / "old.txt").write_text("x")
    code, _ = _cli("analyse", str(CPU), "-o", str(user), "--force", "--quiet")
    assert code == 0
    assert (user / MARKER).is_file() and not (user / "old.txt").exists()


def test_an_existing_file_is_never_replaced(tmp_path):
    target = tmp_path / "result"
    target.write_text("a file")
    with pytest.raises(UsageError, match="not a folder"):
        run(CPU, target, force=True)
    assert target.read_text() == "a file"


def test_an_empty_folder_and_a_moved_output_are_replaced(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    run(CPU, empty)
    moved = tmp_path / "moved"
    empty.rename(moved)
    (moved / "stale").write_text("left by the first run")
    run(CPU, moved)  # recognised by its marker though it was renamed
    assert not (moved / "stale").exists()


# --- single files, non-regular files -----------------------------------------------------------------------

def test_a_single_trace_file_is_analysed(tmp_path):
    result = run(KINETO, tmp_path / "out")
    assert result.ranks == [0] and result.row_counts["device_exec"] > 0


def test_a_fifo_named_like_a_trace_is_refused_without_opening_it(tmp_path):
    source = _copy_input(tmp_path)
    fifo = source / "rank-7.pt.trace.json"
    os.mkfifo(fifo)
    started = time.monotonic()
    result = run(source, tmp_path / "out")
    assert time.monotonic() - started < 60  # a read of the FIFO would block for ever
    rows = [r for r in result.health["rows"] if r["check_name"] == "not_regular_file"]
    assert len(rows) == 1 and rows[0]["first_file"] == str(fifo) and "FIFO" in rows[0]["message"]
    assert result.exit_code == 3 and result.ranks == [0]


def test_a_link_to_a_device_is_refused(tmp_path):
    source = _copy_input(tmp_path)
    (source / "rank-3.pt.trace.json").symlink_to("/dev/zero")
    result = run(source, tmp_path / "out")
    assert [r["check_name"] for r in result.health["rows"]] == ["not_regular_file"]
    assert "character device" in result.health["rows"][0]["message"]


# --- the ledger reaches the user ----------------------------------------------------------------------------

def test_health_summary_is_printed_and_in_every_output(tmp_path):
    source = tmp_path / "in"
    shutil.copytree(FIXTURES / "mindspore_gpu" / "two_ranks", source)
    bad = source / "profiler" / "start_time_1.txt"
    bad.write_text("host_monotonic_raw_time(ns): x\n")
    out = tmp_path / "out"
    code, output = _cli("analyse", str(source), "-o", str(out))
    assert code == 3
    assert "trace health: 1 checks fired (partial" in output and str(bad) in output
    assert "trace_health" in output
    summary = json.loads((out / "reports" / "summary.json").read_text())
    assert summary["health"]["partial"] is True
    assert [(r["rank"], r["check_name"], r["action"]) for r in summary["health"]["rows"]] == \
        [(1, "source_failed", "source_skipped")]
    assert (out / "reports" / "trace_health.csv").read_text().count("\n") == 2
    code, output = _cli("query", str(out), "SELECT rank, check_name, action FROM trace_health", "-f", "csv")
    assert output.splitlines()[1] == "1,source_failed,source_skipped"
    code, quiet = _cli("analyse", str(source), "-o", str(out), "--quiet")
    assert code == 3 and quiet == ""


def test_a_clean_run_has_an_empty_ledger_and_exit_0(tmp_path):
    code, output = _cli("analyse", str(CPU), "-o", str(tmp_path / "out"))
    assert code == 0 and "trace health" not in output


def test_strict_makes_any_loss_fatal_and_keeps_the_earlier_output(tmp_path):
    source = tmp_path / "in"
    shutil.copytree(FIXTURES / "mindspore_gpu" / "two_ranks", source)
    out = tmp_path / "out"
    run(source, out)
    good = snapshot(out)
    (source / "profiler" / "start_time_1.txt").write_text("garbage\n")
    code, output = _cli("analyse", str(source), "-o", str(out), "--strict")
    assert code == 1 and "start_time_1.txt" in output
    assert snapshot(out) == good


# --- the process: signals, full disks, read-only folders, killed runs ------------------------------------------

def _big_trace(folder: Path, copies: int) -> Path:
    """A Kineto trace made of `copies` shifted copies of the fixture's events (one rank, a few MB per 100)."""
    trace = json.loads(KINETO.read_text())
    events = trace.pop("traceEvents")
    span = max(e["ts"] + e.get("dur", 0) for e in events if "ts" in e) - min(e["ts"] for e in events if "ts" in e)
    folder.mkdir(parents=True)
    target = folder / "rank-0.pt.trace.json"
    with open(target, "w") as handle:
        handle.write(json.dumps(trace)[:-1] + ', "traceEvents": [')
        for copy in range(copies):
            for index, event in enumerate(events):
                shifted = dict(event)
                if "ts" in shifted:
                    shifted["ts"] = round(shifted["ts"] + copy * (span + 1000), 3)
                handle.write(("" if copy == index == 0 else ",\n") + json.dumps(shifted))
        handle.write("]}")
    return target


def _wait_for(predicate, timeout: float = 60.0) -> bool:
    ends = time.monotonic() + timeout
    while time.monotonic() < ends:
        if predicate():
            return True
        time.sleep(0.01)
    return False


@pytest.mark.parametrize("signum, code, name", [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")])
def test_a_signal_ends_the_run_cleanly(tmp_path, signum, code, name):
    source = tmp_path / "in"
    _big_trace(source, 3000)
    out = tmp_path / "out"
    run(CPU, out)
    good = snapshot(out)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    child = subprocess.Popen([sys.executable, "-m", "profpipe", "analyse", str(source), "-o", str(out)],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert _wait_for(lambda: any(scratch.iterdir()) or child.poll() is not None), "the run never started"
    if child.poll() is not None:
        pytest.skip("the run ended before the signal could be sent")
    sent = time.monotonic()
    child.send_signal(signum)
    stdout, stderr = child.communicate(timeout=60)
    assert time.monotonic() - sent < 2  # under a second on an idle machine (0.1-0.65 s measured)
    assert child.returncode == code, stderr
    assert "Traceback" not in stderr and name in stderr and len(stderr.strip().splitlines()) == 1
    assert snapshot(out) == good
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "out", "tmp"]
    assert _described(scratch) == []


#: The child of the test below: `python -m profpipe analyse ...` (the entry point's main, the argv after `--`) whose
#: models stage first runs one query that takes minutes (a nested-loop join DuckDB's Python client does not check
#: for signals inside: a Python handler runs only when it returns), after touching the file named by $MARKER.
_SLOW_MODELS = """
import os, sys
import profpipe.run as run
from pathlib import Path

def run_models(con, *args, **kwargs):
    Path(os.environ["MARKER"]).touch()
    con.execute("SELECT count(*) FROM range(200000) a, range(100000) b WHERE a.range + b.range = 7").fetchall()
    return models(con, *args, **kwargs)

models, run.run_models = run.run_models, run_models
sys.argv = ["profpipe", *sys.argv[sys.argv.index("--") + 1:]]
from profpipe.__main__ import main
main()
"""


def test_a_sigterm_during_a_long_query_ends_the_run_at_once(tmp_path):
    """Python runs a signal handler only between bytecodes: a SIGTERM that arrived while a models query ran was acted
    on when the query returned (minutes later). The signal now interrupts the running DuckDB queries."""
    out = tmp_path / "out"
    run(CPU, out)
    good = snapshot(out)
    scratch, marker = tmp_path / "tmp", tmp_path / "models-started"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch), "MARKER": str(marker)}
    child = subprocess.Popen([sys.executable, "-c", _SLOW_MODELS, "--", "analyse", str(CPU), "-o", str(out)],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert _wait_for(lambda: marker.exists() or child.poll() is not None), "the models stage never started"
        assert child.poll() is None, child.communicate()
        time.sleep(0.5)  # well inside the query
        sent = time.monotonic()
        child.send_signal(signal.SIGTERM)
        try:
            _, stderr = child.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail("the run still ran 30 s after SIGTERM")
        waited = time.monotonic() - sent
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert waited < 2, waited  # 0.28-0.43 s measured on a 2-core machine; before, still running 60 s after it
    assert child.returncode == 143, stderr
    assert stderr == "profpipe: interrupted by SIGTERM; nothing was written, the earlier output is kept\n"
    assert snapshot(out) == good
    marker.unlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "tmp"]
    assert _described(scratch) == []


def _described(folder: Path) -> list[str]:
    """The entries of `folder`, each with its type, size and age: a leftover says what it is (tempfile's 8-character
    test file of $TMPDIR is an empty file; a reader's scratch folder is named profpipe-<kind>-<pid>-...)."""
    now = time.time()
    return [f"{p.name} ({'folder' if p.is_dir() else 'file'}, {p.lstat().st_size} bytes, "
            f"{now - p.lstat().st_mtime:.1f} s old)" for p in sorted(folder.iterdir())]


def _signal_just_after(monkeypatch, call: str, made: Callable[[str], bool]) -> None:
    """os.`call` (open or mkdir) sends this process SIGTERM right after it made the path that `made` accepts, once:
    the signal lands where a run preempted just after that system call meets it under load."""
    real = getattr(os, call)
    sent = []

    def then_signal(path, *args, **kwargs):
        result = real(path, *args, **kwargs)
        if not sent and made(os.fsdecode(path)):
            sent.append(path)
            os.kill(os.getpid(), signal.SIGTERM)
        return result

    monkeypatch.setattr(os, call, then_signal)


@pytest.fixture
def own_sigterm(tmp_path, monkeypatch) -> Path:
    """$TMPDIR at a fresh tmp_path/tmp that tempfile has not checked yet, in a process whose SIGTERM
    stop_on_signals takes over (else a SIGTERM sent to it would end the test process)."""
    if signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.default_int_handler, safety._interrupt):
        pytest.skip("SIGTERM is handled by somebody else in this process")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", None)
    return scratch


def test_a_signal_while_tempfile_checks_tmpdir_leaves_no_file(own_sigterm, monkeypatch):
    """The first tempfile.gettempdir() of a process writes a test file with a random 8-character name into $TMPDIR
    and removes it; a SIGTERM just after the file was created left it there (found once in a full test run)."""
    _signal_just_after(monkeypatch, "open", lambda path: Path(path).parent == own_sigterm)
    with pytest.raises(Interrupted):
        with stop_on_signals():
            tempfile.gettempdir()
    assert _described(own_sigterm) == []


def test_a_signal_just_after_a_scratch_folder_is_made_leaves_nothing(own_sigterm, monkeypatch):
    tempfile.gettempdir()
    _signal_just_after(monkeypatch, "mkdir", lambda path: Path(path).name.startswith("profpipe-kineto-"))
    with pytest.raises(Interrupted):
        with stop_on_signals(), scratch_folder("kineto"):
            pytest.fail("the body ran after the signal")
    assert _described(own_sigterm) == []


def test_a_signal_just_after_the_output_folder_is_staged_leaves_nothing(own_sigterm, tmp_path, monkeypatch):
    _signal_just_after(monkeypatch, "mkdir", lambda path: Path(path).name.startswith(".out.tmp-"))
    with pytest.raises(Interrupted):
        with stop_on_signals(), staged_output(tmp_path / "out"):
            pytest.fail("the body ran after the signal")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp"]


def test_a_signal_interrupts_the_query_and_every_with_on_the_way_out_runs(own_sigterm):
    """The watcher thread interrupts the query at once; the handler, running as DuckDB's error unwinds, must not
    raise before the `with`s on its way out have run (the transaction's rollback)."""
    from profpipe.database import connect, transaction

    con = connect()
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(Interrupted) as raised, stop_on_signals(), transaction(con):
            con.execute("CREATE TABLE written AS SELECT 1 AS x")
            con.execute("SELECT count(*) FROM range(200000) a, range(100000) b WHERE a.range + b.range = 7").fetchall()
    finally:
        timer.cancel()
    assert time.monotonic() - started < 2
    assert raised.value.exit_code == 143
    assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'written'").fetchall() == [(0,)]
    con.close()


def test_scratch_folders_of_killed_runs_are_swept_on_the_next_start(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    dead_pid = 2**22 + 4321  # above the default pid_max: no such process
    killed = tmp_path / f"profpipe-kineto-{dead_pid}-abc123"
    (killed / "spill").mkdir(parents=True)
    alive = tmp_path / f"profpipe-kineto-{os.getppid()}-def456"  # a run that still goes on
    alive.mkdir()
    stale = tmp_path / "profpipe-kineto-oldstyle"
    stale.mkdir()
    os.utime(stale, (time.time() - 3 * 24 * 3600,) * 2)
    unrelated = tmp_path / "profpipe-notes"
    unrelated.write_text("not ours to remove")
    run(CPU, tmp_path / "out")
    assert not killed.exists() and not stale.exists()
    assert alive.exists() and unrelated.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_output_parent_is_a_usage_error(tmp_path):
    parent = tmp_path / "locked"
    parent.mkdir()
    parent.chmod(0o500)
    try:
        code, output = _cli("analyse", str(CPU), "-o", str(parent / "out"))
    finally:
        parent.chmod(0o700)
    assert code == 2 and "cannot write the output" in output


def test_read_only_output_parent_as_root(tmp_path):
    """As root a chmod does not stop writes; a read-only bind of the folder is not available either, so the
    case is covered by making the output's parent a file (the same OSError path)."""
    parent = tmp_path / "afile"
    parent.write_text("x")
    code, output = _cli("analyse", str(CPU), "-o", str(parent / "out"))
    assert code == 2 and "cannot write the output" in output and parent.read_text() == "x"


def _small_tmpfs(tmp_path: Path) -> Path:
    """A 2 MiB tmpfs at tmp_path/full, or skip: mounting needs root and a kernel that allows it here."""
    mount = tmp_path / "full"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a size-limited file system needs root (mount -t tmpfs)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    return mount


def test_a_full_disk_names_the_folder_and_keeps_nothing(tmp_path):
    mount = _small_tmpfs(tmp_path)
    try:
        source = tmp_path / "in"
        _big_trace(source, 200)
        code, output = _cli("analyse", str(source), "-o", str(mount / "out"))
        assert code == 1, output
        assert "no space left" in output and str(mount) in output
        assert list(mount.iterdir()) == []
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_full_scratch_folder_is_not_blamed_on_the_input(tmp_path):
    mount = _small_tmpfs(tmp_path)
    try:
        source = tmp_path / "in"
        _big_trace(source, 200)  # its event array is copied to $TMPDIR: more than the 2 MiB there
        child = subprocess.run([sys.executable, "-m", "profpipe", "analyse", str(source), "-o", str(tmp_path / "out")],
                               env={**os.environ, "TMPDIR": str(mount)}, capture_output=True, text=True, timeout=120)
        assert child.returncode == 1, child.stderr
        assert "no space left" in child.stderr and str(mount) in child.stderr and "Traceback" not in child.stderr
        assert list(mount.iterdir()) == [] and not (tmp_path / "out").exists()
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_signal_while_the_command_parses_its_options_ends_it_with_one_line(monkeypatch, capsys):
    """typer's main turns any KeyboardInterrupt (Interrupted is one) that reaches it, as a signal arriving while the
    command still parses its options does, into a silent exit 130: a SIGTERM then exited 130 with no word. The entry
    point finds the interruption behind that exit: 143 and the one line."""
    import typer

    import profpipe.__main__ as entry
    from profpipe import cli

    parsing = typer.Typer()

    @parsing.command()
    def signalled() -> None:
        raise Interrupted("SIGTERM", 143)

    monkeypatch.setattr(cli, "app", parsing)
    monkeypatch.setattr(entry, "install_signal_handlers", lambda: None)
    monkeypatch.setattr(sys, "argv", ["profpipe"])
    with pytest.raises(SystemExit) as stopped:
        entry.main()
    assert stopped.value.code == 143
    assert capsys.readouterr().err == "profpipe: interrupted by SIGTERM; nothing was written, the earlier output is kept\n"
