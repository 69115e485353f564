"""Run safety around the whole pipeline: signals end a run cleanly, and a full disk is named as such.

Used by the runner (pipeline.run.analyse) around every stage. SIGTERM becomes an `Interrupted`
exception (Ctrl-C is Python's KeyboardInterrupt already), so the output's temporary folder and
every scratch folder are removed on the way out; a write that fails for lack of space becomes an
`OutOfSpace` error naming the folder that is full, never a problem of the input.
"""
from __future__ import annotations

import errno
import re
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from .errors import EXIT_TERMINATED, Interrupted, OutOfSpace

_NO_SPACE = "No space left on device"
_QUOTED_PATH = re.compile(r'"(/[^"]+)"')


@contextmanager
def stop_on_sigterm() -> Iterator[None]:
    """While the body runs, SIGTERM raises `Interrupted` (when this is the main thread and nobody else
    handles SIGTERM); the earlier handler is restored afterwards."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise Interrupted("SIGTERM", EXIT_TERMINATED)

    signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def is_out_of_space(exc: BaseException) -> bool:
    """True for a failed write on a full file system (an OSError, or DuckDB's IO error saying so)."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return _NO_SPACE in str(exc) and type(exc).__module__.startswith(("duckdb", "_duckdb", "pyarrow"))


@contextmanager
def out_of_space_named() -> Iterator[None]:
    """Turn a write on a full file system into an OutOfSpace error that names the full folder."""
    try:
        yield
    except Exception as exc:
        if not is_out_of_space(exc):
            raise
        filename = getattr(exc, "filename", None)
        if filename is None:
            quoted = _QUOTED_PATH.search(str(exc))
            filename = quoted.group(1) if quoted else None
        folder = f"the folder {Path(filename).parent}" if filename else "a folder profpipe writes to"
        raise OutOfSpace(f"no space left on the device of {folder} (the output's folder, or the scratch "
                         "folder $TMPDIR): free space or point -o / TMPDIR elsewhere; the earlier output "
                         "is kept") from None
