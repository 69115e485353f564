"""Run safety around the whole pipeline: signals end a run cleanly, and a full disk is named as such.

Used by the runner (profpipe.run.analyse) around every stage and by the command's entry point.
SIGINT and SIGTERM become an `Interrupted` exception, so the output's temporary folder and every
scratch folder are removed on the way out; a write that fails for lack of space becomes an
`OutOfSpace` error naming the folder that is full, never a problem of the input.
"""
from __future__ import annotations

import errno
import re
import signal
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from .errors import EXIT_INTERRUPTED, EXIT_TERMINATED, Interrupted, OutOfSpace

_NO_SPACE = "No space left on device"
_QUOTED_PATH = re.compile(r'"(/[^"]+)"')


_SIGNALS = {int(signal.SIGINT): ("SIGINT", EXIT_INTERRUPTED), int(signal.SIGTERM): ("SIGTERM", EXIT_TERMINATED)}
#: The signal that ended the run, once one arrived: a library that catches the exception our handler raises
#: (DuckDB turns it into "Query interrupted") is then still known to have been interrupted.
_received: list[str] = []


def _interrupt(signum: int, frame: FrameType | None) -> None:
    name, code = _SIGNALS[signum]
    _received.append(name)
    raise Interrupted(name, code)


def install_signal_handlers() -> None:
    """SIGINT and SIGTERM raise `Interrupted` from now on (the command's entry point calls this first)."""
    for signum in _SIGNALS:
        signal.signal(signum, _interrupt)


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """While the body runs, SIGINT and SIGTERM raise `Interrupted`, so every `with` and `finally` on the way
    out removes what the run wrote; an error raised while a signal is being handled (a library catching
    the interruption) is turned back into `Interrupted`. Signals somebody else handles are left alone; the
    earlier handlers are restored afterwards. Only the main thread can do this; elsewhere it does nothing."""
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
