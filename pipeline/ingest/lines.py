"""Line-oriented text input for the readers: chunked, numbered, and strict about bad bytes.

Every text reader starts here. A file is read in chunks of whole lines (a chunk grows past
its size only to finish a long line), each chunk becomes a polars frame of
(line_no, line), and parsing then happens column-wise on that frame. Memory stays bounded
by the chunk size whatever the file size, and every row still knows its line number, so
errors can name it.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from ..errors import InputError
from ..health import Warn

CHUNK_BYTES = 64 * 1024 * 1024
#: The largest time or duration in ns a reader keeps (about 146 years): a larger one is damage, and the
#: sum of two such values still fits in int64 (polars and DuckDB integer arithmetic must not wrap).
MAX_NS = 2**62
#: Deepest JSON nesting the readers accept (Python's parser would recurse past its stack limit).
MAX_JSON_DEPTH = 200


def iter_line_frames(path: Path, chunk_bytes: int = CHUNK_BYTES, newline_terminated: bool = True,
                     warn: Warn | None = None, allow_blank: bool = True) -> Iterator[pl.DataFrame]:
    """Yield frames with columns line_no (1-based) and line, blank lines dropped.

    With `newline_terminated` (every writer we read ends each line with a newline), a last
    line without one means the file was cut short: with `warn`, that partial line is dropped and
    reported (check truncated); without, it raises InputError. Unless `allow_blank`, a file
    whose lines are all blank (empty or whitespace only) raises InputError.
    """
    first_line = 1
    offset = 0
    yielded = False
    with open(path, "rb") as handle:
        carry = b""
        while True:
            block = handle.read(chunk_bytes)
            data = carry + block
            if not data:
                if not yielded and not allow_blank:
                    raise InputError(path, "no records: the file is empty or holds only blank lines")
                return
            if block:
                cut = data.rfind(b"\n") + 1
                if cut == 0:  # one line longer than a chunk: keep reading
                    carry = data
                    continue
                data, carry = data[:cut], data[cut:]
            else:
                carry = b""
                if newline_terminated and not data.endswith(b"\n"):
                    data = _drop_partial_line(path, data, first_line, offset, warn)
            text = _decode(path, data, offset)
            frame = (pl.DataFrame({"line": [text]})
                     .select(pl.col("line").str.split("\n").explode())
                     .with_row_index("line_no", offset=first_line)
                     .with_columns(pl.col("line_no").cast(pl.Int64),
                                   pl.col("line").str.strip_chars_end("\r")))
            first_line += data.count(b"\n")
            offset += len(data)
            frame = frame.filter(pl.col("line").str.strip_chars() != "")
            if frame.height:
                yielded = True
                yield frame
            if not block:
                if not yielded and not allow_blank:
                    raise InputError(path, "no records: the file is empty or holds only blank lines")
                return


def read_lines(path: Path, newline_terminated: bool = True, warn: Warn | None = None,
               allow_blank: bool = True) -> pl.DataFrame:
    """All non-blank lines of a small file as one frame (line_no, line); see iter_line_frames."""
    frames = list(iter_line_frames(path, newline_terminated=newline_terminated, warn=warn, allow_blank=allow_blank))
    if not frames:
        return pl.DataFrame({"line_no": [], "line": []}, schema={"line_no": pl.Int64, "line": pl.String})
    return pl.concat(frames)


def first_bad_line(frame: pl.DataFrame, ok: pl.Expr) -> int | None:
    """Line number of the first row where `ok` is false or null, else None."""
    bad = frame.filter(~ok.fill_null(False))
    return int(bad["line_no"].min()) if bad.height else None


def require(path: Path, frame: pl.DataFrame, ok: pl.Expr, expected: str,
            lines: pl.DataFrame | None = None) -> None:
    """Raise InputError at the first line of `frame` where `ok` does not hold.

    The message quotes the line's text, taken from `lines` (default: `frame` itself).
    """
    line = first_bad_line(frame, ok)
    if line is not None:
        source = frame if lines is None else lines
        text = source.filter(pl.col("line_no") == line)["line"][0]
        shown = text if len(text) <= 120 else text[:117] + "..."
        raise InputError(path, f"expected {expected}, got {shown!r}", line=line)


def _decode(path: Path, data: bytes, offset: int) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, "not UTF-8 text (binary or corrupted data)",
                         offset=offset + exc.start) from None
    nul = text.find("\x00")
    if nul >= 0:
        raise InputError(path, "NUL byte in a text file (binary or corrupted data)",
                         offset=offset + len(text[:nul].encode("utf-8")))
    return text


def _drop_partial_line(path: Path, data: bytes, first_line: int, offset: int, warn: Warn | None) -> bytes:
    """`data` (the file's last chunk) without its last line, which has no newline: the file was cut there."""
    start = data.rfind(b"\n") + 1
    line = first_line + data.count(b"\n")
    if warn is None:
        raise InputError(path, "file ends in the middle of a line (truncated?)", line=line, offset=offset + len(data))
    partial = data[start:]
    if partial.strip():
        warn(f"{path}, line {line} (byte {offset + start}): the file ends in the middle of this line (cut short?); "
             "the partial line is dropped", check="truncated", action="dropped", rows=1, path=path,
             line=line, offset=offset + start, example=partial[:200].decode("utf-8", "replace"))
    return data[:start]


def complete_text(path: Path, warn: Warn | None, allow_blank: bool = False) -> bytes:
    """The bytes of a small text file (a CSV) up to its last complete line, checked as iter_line_frames
    checks them: UTF-8 without NUL bytes, a cut last line dropped and reported (or an error without
    `warn`), and unless `allow_blank` at least one non-blank line."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        data = _drop_partial_line(path, data, 1, 0, warn)
    _decode(path, data, 0)
    if not allow_blank and not data.strip():
        raise InputError(path, "no records: the file is empty or holds only blank lines")
    return data


def drop_rows(frame: pl.DataFrame, bad: pl.Expr, warn: Warn, path: Path | str, check: str, what: str,
              line_column: str = "line_no", tables: str | None = None, example: pl.Expr | None = None,
              action: str = "dropped") -> pl.DataFrame:
    """`frame` without the rows where `bad` holds, reported as one ledger row (check, rows, first line)."""
    mask = bad.fill_null(False)
    hit = frame.filter(mask)
    if not hit.height:
        return frame
    first = hit.sort(line_column).row(0, named=True) if line_column in hit.columns else hit.row(0, named=True)
    line = first.get(line_column)
    shown = (str(hit.sort(line_column).select(example).row(0)[0]) if example is not None
             else str(first.get("line", "")) or None)
    where = f"{path}, line {line}" if line is not None else str(path)
    warn(f"{where}: {hit.height} {what}; {'left out' if action == 'dropped' else action}", check=check, action=action,
         rows=hit.height, path=path, line=None if line is None else int(line), example=shown, tables=tables)
    return frame.filter(~mask)


def drop_duplicate_lines(frame: pl.DataFrame, warn: Warn, path: Path | str, what: str,
                         tables: str | None = None, column: str = "line") -> pl.DataFrame:
    """`frame` with each repeated `column` value kept once (the first); the repeats are one ledger row."""
    return drop_rows(frame, ~pl.col(column).is_first_distinct(), warn, path, "duplicate_record",
                     f"repeated {what} (the same text as an earlier line)", tables=tables)


def load_json(path: Path, what: str, allow_non_finite: bool = False) -> Any:
    """A small JSON file parsed with Python's parser: errors name the file and place; bad UTF-8 and
    nesting deeper than MAX_JSON_DEPTH are errors (never a RecursionError), and so are NaN/Infinity
    unless `allow_non_finite` (then they are floats the caller checks)."""
    data = path.read_bytes()
    if not data.strip():
        raise InputError(path, f"empty file, expected {what}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, f"not UTF-8 text, expected {what}", offset=exc.start) from None
    depth = _nesting_depth(data)
    if depth > MAX_JSON_DEPTH:
        raise InputError(path, f"JSON nested {depth} levels deep (more than {MAX_JSON_DEPTH}), expected {what}")

    def no_constant(name: str) -> None:
        raise ValueError(f"{name} is not a JSON number")

    try:
        return json.loads(text, parse_constant=None if allow_non_finite else no_constant)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"invalid JSON ({exc.msg}), expected {what}", line=exc.lineno, offset=exc.pos) from None
    except (ValueError, RecursionError) as exc:
        raise InputError(path, f"invalid JSON ({exc}), expected {what}") from None


def _nesting_depth(data: bytes) -> int:
    """Upper bound of the nesting depth of a JSON text (brackets inside strings counted too: an
    over-estimate at most, so a text that passes cannot nest deeper)."""
    import numpy as np

    codes = np.frombuffer(data, dtype=np.uint8)
    steps = (np.isin(codes, (0x5B, 0x7B)).astype(np.int64) - np.isin(codes, (0x5D, 0x7D)).astype(np.int64))
    return int(np.cumsum(steps).max()) if steps.size else 0


def required_columns(table: str) -> list[str]:
    """The columns of normalized table `table` that may not be null (rank left out: readers add it last)."""
    from ..tables import catalog

    return [f.name for f in catalog()[table].schema if not f.nullable and f.name != "rank"]


def drop_incomplete(frame: pl.DataFrame, table: str, warn: Warn, path: Path | str,
                    line_column: str = "line_no") -> pl.DataFrame:
    """`frame` without the rows that lack a value `table` requires (a damaged record whose field was
    empty, N/A or unreadable), reported as one malformed_record row."""
    needed = [c for c in required_columns(table) if c in frame.columns]
    if not needed:
        return frame
    return drop_rows(frame, pl.any_horizontal(pl.col(needed).is_null()), warn, path, "malformed_record",
                     f"records without a value for {', '.join(needed)} (empty, N/A or unreadable)",
                     line_column=line_column, tables=table, example=pl.concat_str(
                         [pl.col(c).cast(pl.String).fill_null("null") for c in needed], separator=", "))
