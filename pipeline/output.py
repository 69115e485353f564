"""The output folder: built in a temporary sibling, swapped into place atomically, described by manifest.json.

Used by the runner around every stage. A crash or a bad input leaves no half-written OUT,
and an earlier good OUT stays until the new one is complete.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import ProfpipeError

_FINGERPRINT_EDGE = 1024 * 1024


@contextmanager
def staged_output(out: Path) -> Iterator[Path]:
    """Yield a fresh temporary folder; on success it replaces `out`, on error it is removed."""
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    _sweep_leftovers(out)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    if out.exists():
        out.rename(old)
    tmp.rename(out)
    shutil.rmtree(old, ignore_errors=True)


def _sweep_leftovers(out: Path) -> None:
    """Remove temporary folders of earlier runs on `out` whose process is gone (killed, crashed)."""
    for leftover in out.parent.glob(f".{out.name}.*-*"):
        kind, _, pid = leftover.name.rpartition("-")
        if not kind.endswith((".tmp", ".old")) or not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(leftover, ignore_errors=True)
        except PermissionError:
            pass  # alive, another user's


def check_not_inside(out: Path, inputs: Path) -> None:
    """Refuse an output folder inside the input folder: inputs are read-only to us."""
    out, inputs = out.resolve(), inputs.resolve()
    if out == inputs or inputs in out.parents:
        raise ProfpipeError(f"output folder {out} is inside the input folder {inputs}; "
                            "profpipe never writes into its inputs, choose another -o")


def fingerprint(path: Path) -> str:
    """blake2b of size + first and last MiB: cheap on many-GB inputs, changes when a file is rewritten."""
    size = path.stat().st_size
    digest = hashlib.blake2b(str(size).encode(), digest_size=16)
    with open(path, "rb") as handle:
        if size <= 2 * _FINGERPRINT_EDGE:
            digest.update(handle.read())
        else:
            digest.update(handle.read(_FINGERPRINT_EDGE))
            handle.seek(size - _FINGERPRINT_EDGE)
            digest.update(handle.read())
    return f"blake2b-edges:{digest.hexdigest()}"
