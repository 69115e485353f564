"""Stage 2, ingest helper: the user's metadata, MindSpore's `Profiler.add_metadata` / `add_metadata_json`.

MindSpore (2.4+) writes what the user added as `profiler_metadata.json` beside the dump: a JSON object of
string keys (2.4: in the profiler folder, copied into `*_ascend_ms/`; 2.5+: in `*_ascend_ms/`, with
`parallel_group_info` added under HCCL). It belongs to every source at or below its folder: discover's walk
gives each source the nearest one (Source.user_metadata), and the run reads those files here. The object is
carried into run_info.metadata_json (member `profiler_metadata`), summary.json and the manifest.

Bad input costs the file, never the run: a file over MindSpore's own cap (100 MB), bad JSON or a value that
is not an object is left out with a trace_health row (file and line); bad UTF-8 is read with U+FFFD and a
row; a value whose JSON text passes VALUE_LIMIT characters is replaced by a note saying how long it was,
with a row, so that a report stays readable.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

#: MindSpore 2.5+ refuses metadata of 100 MB or more (2.4: 50 KB); a larger file is not MindSpore's.
FILE_LIMIT = 100 * 1024 * 1024
#: The longest value (as JSON text) kept in the reports; MindSpore 2.4 caps each string at 4096 characters.
VALUE_LIMIT = 4096


@dataclass
class UserMetadata:
    """One profiler_metadata.json: where it is (and relative to the input) and what it holds."""

    path: Path
    relative: str
    metadata: dict[str, Any]


Warn = Callable[..., None]


def read(path: Path, warn: Warn) -> dict[str, Any] | None:
    """The object of one profiler_metadata.json, its long values shortened; None (with a row) when it is unusable."""
    size = path.stat().st_size
    if size > FILE_LIMIT:
        warn(f"{path}: {size} bytes, over MindSpore's 100 MB cap on user metadata; left out",
             check="out_of_range", action="dropped", rows=1, path=path, offset=0)
        return None
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", errors="replace")
        warn(f"{path}: bytes that are not UTF-8 at offset {exc.start}, read as U+FFFD", check="bad_encoding",
             action="repaired", rows=1, path=path, offset=exc.start, line=data.count(b"\n", 0, exc.start) + 1)
    try:
        value = json.loads(text.lstrip("\ufeff"))
    except (json.JSONDecodeError, RecursionError) as exc:
        line = exc.lineno if isinstance(exc, json.JSONDecodeError) else None
        warn(f"{path}: not JSON ({exc}); the user metadata is left out", check="malformed_record", action="dropped",
             rows=1, path=path, line=line, example=text[:200])
        return None
    if not isinstance(value, dict):
        warn(f"{path}: a JSON {type(value).__name__}, where MindSpore writes an object of key/value pairs; "
             "left out", check="malformed_record", action="dropped", rows=1, path=path, line=1, example=text[:200])
        return None
    kept: dict[str, Any] = {}
    for key, item in value.items():
        try:
            encoded = json.dumps(item, allow_nan=False)
        except (ValueError, RecursionError):
            warn(f"{path}: metadata {key!r} holds NaN, infinity or too deep a nesting; left out",
                 check="non_finite", action="dropped", rows=1, path=path, example=key)
            continue
        if len(encoded) > VALUE_LIMIT or len(key) > VALUE_LIMIT:
            warn(f"{path}: metadata {key[:80]!r} is {len(encoded)} characters long; the reports keep a note of its "
                 f"length instead (limit {VALUE_LIMIT})", check="out_of_range", action="clamped", rows=1, path=path,
                 example=key[:200])
            kept[key[:VALUE_LIMIT]] = f"<{len(encoded)} characters, left out>"
            continue
        kept[key] = item
    return kept


def read_all(paths: list[Path], base: Path, warn_for: Callable[[Path], Warn]) -> list[UserMetadata]:
    """The usable ones of the metadata files `paths` (found by discover under the input `base`), in path order;
    `warn_for(file)` gives the Warn of its rows."""
    found = []
    for path in sorted(paths):
        warn = warn_for(path)
        try:
            metadata = read(path, warn)
        except OSError as exc:
            warn(f"{path}: cannot be read ({exc.strerror or exc}); the user metadata is left out",
                 check="source_failed", action="dropped", rows=1, path=path)
            continue
        if metadata is not None:
            found.append(UserMetadata(path, str(path.relative_to(base)), metadata))
    return found
