"""Run safety around the whole pipeline: signals end a run cleanly, and a full disk is named as such.

Used by the runner (profpipe.run.analyse) around every stage and by the command's entry point.
SIGINT and SIGTERM become an `Interrupted` exception, so the output's temporary folder and every
scratch folder are removed on the way out; a write that fails for lack of space becomes an
`OutOfSpace` error naming the folder that is full, never a problem of the input.

An exception raised by a signal handler can land between any two bytecodes: between the creation of a file or
folder and the statement that would remove it, it leaves that file behind. Such steps run in `signals_held`:
a signal that arrives there is raised when the step is done. The first such step of every run is tempfile's own:
the first `tempfile.gettempdir()` of a process creates and removes a file with a random 8-character name in
$TMPDIR to check that it is writable (`settle_tempdir`).

Python runs a signal handler in the main thread, between two bytecodes: while the main thread waits in a DuckDB
query (the models stage's big statements, a reader's, an export's), `Interrupted` is raised only when the query
returns, minutes later for some. So during a run the signal also wakes a watcher thread (`signal.set_wakeup_fd`),
which interrupts the running query of every DuckDB connection profpipe opened (`interruptible`; `database.connect`
registers each one): DuckDB then raises its InterruptException in the main thread, which the run turns into the same
`Interrupted` (`stop_on_signals`), so the exit status, the message and the clean-up are those of a signal between
two queries.
"""
from __future__ import annotations

import errno
import os
import re
import signal
import sys
import tempfile
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

from .errors import EXIT_INTERRUPTED, EXIT_TERMINATED, Interrupted, OutOfSpace

_NO_SPACE = "No space left on device"
_QUOTED_PATH = re.compile(r'"(/[^"]+)"')


_SIGNALS = {int(signal.SIGINT): ("SIGINT", EXIT_INTERRUPTED), int(signal.SIGTERM): ("SIGTERM", EXIT_TERMINATED)}
#: The signal that ended the run, once one arrived: a library that catches the exception our handler raises
#: (DuckDB turns it into "Query interrupted") is then still known to have been interrupted.
_received: list[str] = []
#: How many `signals_held` sections the main thread is in, and the signal that arrived in them (raised at their end).
_held: dict = {"depth": 0, "pending": None}
#: Every open DuckDB connection (and cursor) profpipe made (`interruptible`): those a signal interrupts during a run.
_connections: weakref.WeakSet = weakref.WeakSet()
_connections_lock = threading.Lock()
#: The watcher thread's pipe (read end, write end), made once per process (`_watcher_fd`).
_watcher: dict[str, Any] = {"fds": None}
_watcher_lock = threading.Lock()
Connection = TypeVar("Connection")


def _interrupt(signum: int, frame: FrameType | None) -> None:
    name, code = _SIGNALS[signum]
    _received.append(name)
    if _held["depth"]:
        _held["pending"] = (name, code)
        return
    if _query_interrupted(sys.exc_info()[1]):
        return  # the watcher interrupted the query: its error goes on up and becomes Interrupted (stop_on_signals)
    raise Interrupted(name, code)


def _query_interrupted(exc: BaseException | None) -> bool:
    """Whether `exc` is DuckDB's error for a query that the watcher thread interrupted. The handler runs as that
    error unwinds (at the first `with` or `finally` on its way): raising there, before the `with`'s own exit has run,
    would skip that exit (a transaction's rollback, a folder's removal), so the error goes on alone, as DuckDB's
    "Query interrupted" did when the handler ran inside the query."""
    return exc is not None and type(exc).__name__ == "InterruptException" and \
        type(exc).__module__.startswith(("duckdb", "_duckdb"))


class signals_held:  # noqa: N801 - used like a function: `with signals_held():`
    """While the body runs, SIGINT and SIGTERM (when our handler has them) do not interrupt it: the first one to
    arrive is raised as `Interrupted` when the body ends. For a step that creates a file or folder and records it
    for removal (assign the name inside the body, remove it in a `finally` around the `with`). Python runs signal
    handlers in the main thread only, so this holds a signal whichever thread the system gave it to; in another
    thread, which a signal never interrupts, it does nothing."""

    def __enter__(self) -> None:
        self._main = threading.current_thread() is threading.main_thread()
        if not self._main:
            return
        if not _held["depth"]:
            _held["pending"] = None
        _held["depth"] += 1

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if not self._main:
            return
        _held["depth"] -= 1
        pending = _held["pending"]
        if _held["depth"] or pending is None:
            return
        _held["pending"] = None
        if not isinstance(exc, Interrupted):
            raise Interrupted(*pending) from None


def settle_tempdir() -> None:
    """Let tempfile find $TMPDIR now, with signals held: its first `gettempdir()` writes a test file there (a random
    8-character name) that a signal arriving just after it was created would leave behind. Called by
    `stop_on_signals`, before a run asks for $TMPDIR; a $TMPDIR that cannot be used is reported where it is used,
    as before."""
    if tempfile.tempdir is not None:
        return
    with signals_held():
        try:
            tempfile.gettempdir()
        except OSError:
            pass


def interruptible(con: Connection) -> Connection:
    """`con` (a DuckDB connection or cursor), registered until it is closed or dropped: a SIGINT or SIGTERM that
    arrives during a run interrupts the query it is running (the watcher thread of `stop_on_signals`)."""
    with _connections_lock:
        _connections.add(con)
    return con


def interrupt_queries() -> None:
    """Interrupt the running query of every registered connection (DuckDB's `interrupt()`, safe from any thread;
    a connection that runs nothing or is closed is left as it is)."""
    with _connections_lock:
        connections = list(_connections)
    for con in connections:
        try:
            con.interrupt()
        except Exception:  # noqa: BLE001, S110 - closed meanwhile: nothing to interrupt
            pass


def _watch(read_fd: int) -> None:
    """The watcher thread: Python's C-level signal handler writes each signal's number to the wakeup fd at once,
    even while the main thread waits in DuckDB. A signal that our handler turns into `Interrupted` is recorded and
    interrupts the running queries; the main thread's handler still runs as the query returns."""
    while True:
        try:
            data = os.read(read_fd, 512)
        except OSError:
            return
        if not data:
            return
        for signum in data:
            if signum in _SIGNALS and signal.getsignal(signum) is _interrupt:
                _received.append(_SIGNALS[signum][0])
                interrupt_queries()


def _watcher_fd() -> int | None:
    """The write end of the watcher thread's pipe, starting the thread on first use; None where it cannot run."""
    with _watcher_lock:
        if _watcher["fds"] is None:
            try:
                read_fd, write_fd = os.pipe()
                os.set_blocking(write_fd, False)
                threading.Thread(target=_watch, args=(read_fd,), name="profpipe-signal-watcher", daemon=True).start()
            except (OSError, RuntimeError, AttributeError):
                return None
            _watcher["fds"] = (read_fd, write_fd)
        return _watcher["fds"][1]


@contextmanager
def _queries_interrupted_on_signals() -> Iterator[None]:
    """While the body runs, a signal our handler has interrupts the registered connections' queries at once (the
    watcher thread wakes on the wakeup fd). An earlier wakeup fd (an event loop's) is put back afterwards; until
    then it misses the signals that arrive (its own handlers are not ours: they still run)."""
    write_fd = _watcher_fd()
    previous = None
    if write_fd is not None:
        try:
            previous = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        except (ValueError, OSError):
            write_fd = None
    try:
        yield
    finally:
        if write_fd is not None:
            signal.set_wakeup_fd(previous if previous is not None else -1)


def install_signal_handlers() -> None:
    """SIGINT and SIGTERM raise `Interrupted` from now on (the command's entry point calls this first)."""
    for signum in _SIGNALS:
        signal.signal(signum, _interrupt)


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """While the body runs, SIGINT and SIGTERM raise `Interrupted`, so every `with` and `finally` on the way
    out removes what the run wrote; an error raised while a signal is being handled (a library catching
    the interruption) is turned back into `Interrupted`. A signal that arrives while a DuckDB query runs interrupts
    the queries of every connection profpipe opened (`interruptible`), and DuckDB's InterruptException becomes
    `Interrupted` the same way. tempfile's check of $TMPDIR is done first, with signals held (`settle_tempdir`).
    Signals somebody else handles are left alone; the earlier handlers are restored afterwards. Only the main
    thread can do this; elsewhere it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in _SIGNALS}
    ours = [signum for signum, handler in previous.items()
            if handler in (signal.SIG_DFL, signal.default_int_handler, _interrupt)]
    for signum in ours:
        signal.signal(signum, _interrupt)
    _received.clear()
    try:
        with _queries_interrupted_on_signals():
            settle_tempdir()
            yield
    except Exception:
        raise_if_interrupted()
        raise
    finally:
        for signum in ours:
            signal.signal(signum, previous[signum])


def raise_if_interrupted() -> None:
    """Raise `Interrupted` when a signal arrived during the run (call where exceptions are caught broadly)."""
    if _received:
        name = _received[-1]
        raise Interrupted(name, _SIGNALS[int(getattr(signal, name))][1]) from None


def full_disk_error(exc: BaseException | None) -> BaseException | None:
    """The exception in `exc`'s chain that says a write failed on a full file system (an OSError, or DuckDB's or
    Arrow's IO error saying so), also when a reader wrapped it in an error of its own (its __context__); else
    None."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return exc
        if _NO_SPACE in str(exc) and type(exc).__module__.startswith(("duckdb", "_duckdb", "pyarrow")):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


@contextmanager
def out_of_space_named(output_folder: Path) -> Iterator[None]:
    """Turn a write on a full file system into an OutOfSpace error that names the full folder: the file's
    folder where the error says it, else the output's folder and the scratch folder (once, when they
    share a file system)."""
    try:
        yield
    except Exception as exc:
        full = full_disk_error(exc)
        if full is None:
            raise
        filename = getattr(full, "filename", None)
        if filename is None:
            quoted = _QUOTED_PATH.search(str(full))
            filename = quoted.group(1) if quoted else None
        if filename:
            where = f"the folder {Path(filename).parent}"
        else:
            folders = [output_folder, Path(tempfile.gettempdir())]
            if _same_device(*folders):
                folders = folders[:1]
            where = " or ".join(f"the folder {folder}" for folder in folders)
        raise OutOfSpace(f"no space left on the device of {where} (written: the output beside {output_folder}, "
                         "scratch files in $TMPDIR): free space or point -o / TMPDIR elsewhere; the earlier "
                         "output is kept") from None


def _same_device(first: Path, second: Path) -> bool:
    try:
        return first.stat().st_dev == second.stat().st_dev
    except OSError:
        return False
