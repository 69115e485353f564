"""Line-oriented text input for the readers: chunked, numbered, and strict about bad bytes.

Every text reader starts here. A file is read in chunks of whole lines (a chunk grows past
its size only to finish a long line), each chunk becomes a polars frame of
(line_no, line), and parsing then happens column-wise on that frame. Memory stays bounded
by the chunk size whatever the file size, and every row still knows its line number, so
errors can name it.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import polars as pl

from ..errors import InputError

CHUNK_BYTES = 64 * 1024 * 1024


def iter_line_frames(path: Path, chunk_bytes: int = CHUNK_BYTES,
                     newline_terminated: bool = True) -> Iterator[pl.DataFrame]:
    """Yield frames with columns line_no (1-based) and line, blank lines dropped.

    With `newline_terminated` (every writer we read ends each line with a newline), a last
    line without one means the file was cut short and raises InputError.
    """
    first_line = 1
    offset = 0
    with open(path, "rb") as handle:
        carry = b""
        while True:
            block = handle.read(chunk_bytes)
            data = carry + block
            if not data:
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
                    raise InputError(path, "file ends in the middle of a line (truncated?)",
                                     line=first_line + data.count(b"\n"),
                                     offset=offset + len(data))
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
                yield frame
            if not block:
                return


def read_lines(path: Path, newline_terminated: bool = True) -> pl.DataFrame:
    """All non-blank lines of a small file as one frame (line_no, line)."""
    frames = list(iter_line_frames(path, newline_terminated=newline_terminated))
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
