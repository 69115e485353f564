"""The output folder: built in a temporary sibling, swapped into place atomically, described by manifest.json.

Used by the runner around every stage. A crash or a bad input leaves no half-written OUT,
and an earlier good OUT stays until the new one is complete.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import UsageError
from .safety import signals_held

if TYPE_CHECKING:
    from .models import Selection

#: The bytes at each end of a file that `fingerprint` hashes (all of a file up to twice as large).
FINGERPRINT_EDGE = 1024 * 1024


#: The mark profpipe leaves in every output folder it writes: a copied or moved output stays recognisable,
#: and only a folder that holds it (or is empty) is ever replaced without --force.
MARKER = ".profpipe-output"
_MARKER_TEXT = '{"written_by": "profpipe", "what": "an output folder of profpipe analyse; profpipe may replace it"}\n'


def is_profpipe_output(folder: Path) -> bool:
    """True for a folder profpipe wrote: it holds the marker (or, written before the marker existed,
    a manifest.json that names profpipe beside a profile.duckdb)."""
    if (folder / MARKER).is_file():
        return True
    manifest = folder / "manifest.json"
    if not (manifest.is_file() and (folder / "profile.duckdb").is_file()):
        return False
    try:
        return '"profpipe"' in manifest.read_text(encoding="utf-8", errors="replace")[:4096]
    except OSError:
        return False


def built_by(folder: Path) -> frozenset[str] | None:
    """The models and tables an output folder's run built, as its manifest.json records its --select
    (models.Selection.built); None when it built every one (or says nothing of a selection)."""
    from .models import Selection

    try:
        record = json.loads((folder / "manifest.json").read_text(encoding="utf-8")).get("selection")
    except (OSError, ValueError, AttributeError):
        return None
    return None if not record else Selection.from_json(record).built


def check_output(out: Path, inputs: Path, force: bool = False) -> None:
    """Refuse an output folder profpipe must not replace: the input itself, a folder inside the input or
    one that holds it (always); an existing file; a non-empty folder that profpipe did not write (unless
    `force`). Nothing is touched here."""
    out_abs, inputs_abs = out.resolve(), inputs.resolve()
    if out_abs == inputs_abs or inputs_abs in out_abs.parents:
        raise UsageError(f"output folder {out} is the input or inside it ({inputs}); "
                         "profpipe never writes into its inputs: choose another -o")
    if out_abs in inputs_abs.parents:
        raise UsageError(f"output folder {out} holds the input {inputs}; replacing it would delete the input: "
                         "choose another -o (--force never allows this)")
    if not out.exists() and not out.is_symlink():
        return
    if not out_abs.is_dir():
        raise UsageError(f"output {out} exists and is not a folder; profpipe replaces only folders it wrote")
    if force or is_profpipe_output(out_abs) or not any(out_abs.iterdir()):
        return
    raise UsageError(f"output folder {out} is not empty and was not written by profpipe; it would be "
                     "replaced whole: choose another -o, or pass --force to replace it")


@contextmanager
def staged_output(out: Path) -> Iterator[Path]:
    """Yield a fresh temporary folder beside `out`; when the body succeeds it is marked as profpipe's and
    replaces `out`, on any error or interruption it is removed and `out` is left as it was."""
    out = out.resolve()
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        _sweep_leftovers(out)
        tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
    except OSError as exc:
        raise UsageError(f"cannot write the output beside {out}: {exc.strerror or exc}") from None
    try:
        try:
            with signals_held():  # a signal just after the mkdir is raised here, where the folder is removed
                tmp.mkdir()
        except OSError as exc:
            raise UsageError(f"cannot write the output beside {out}: {exc.strerror or exc}") from None
        (tmp / MARKER).write_text(_MARKER_TEXT, encoding="utf-8")
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    with signals_held():  # a signal between the two renames would leave no `out`: it is raised after them
        if out.exists():
            out.rename(old)
        tmp.rename(out)
    shutil.rmtree(old, ignore_errors=True)


def _sweep_leftovers(out: Path) -> None:
    """Remove temporary folders of earlier runs on `out` whose process is gone (killed, crashed); an earlier
    output moved aside by a run killed between its two renames (no `out` beside it) is put back instead."""
    for leftover in sorted(out.parent.glob(f".{out.name}.*-*")):
        kind, _, pid = leftover.name.rpartition("-")
        if not kind.endswith((".tmp", ".old")) or not pid.isdigit() or int(pid) == os.getpid():
            continue
        if process_gone(int(pid)):
            if kind.endswith(".old") and not out.exists() and (leftover / MARKER).is_file():
                leftover.rename(out)
            else:
                shutil.rmtree(leftover, ignore_errors=True)


def process_gone(pid: int) -> bool:
    """True when no process `pid` runs (a killed run's leftovers may go); False when it runs or is another user's."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def fingerprint(path: Path) -> str:
    """blake2b of size + first and last MiB: cheap on many-GB inputs, changes when a file is rewritten."""
    size = path.stat().st_size
    digest = hashlib.blake2b(str(size).encode(), digest_size=16)
    with open(path, "rb") as handle:
        if size <= 2 * FINGERPRINT_EDGE:
            digest.update(handle.read())
        else:
            digest.update(handle.read(FINGERPRINT_EDGE))
            handle.seek(size - FINGERPRINT_EDGE)
            digest.update(handle.read())
    return f"blake2b-edges:{digest.hexdigest()}"
