"""Line-oriented text input for the readers: chunked, numbered, and strict about bad bytes.

Every text reader starts here. A file is read in chunks of whole lines (a chunk grows past
its size only to finish a long line), each chunk becomes a polars frame of
(line_no, line), and parsing then happens column-wise on that frame. Memory stays bounded
by the chunk size whatever the file size, and every row still knows its line number, so
errors can name it.
"""
from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import polars as pl

from ..errors import InputError, first_line_of
from ..health import Warn
from .units import MAX_NS  # noqa: F401 - the readers' limit, also taken from here

CHUNK_BYTES = 64 * 1024 * 1024
#: Text a CSV reader parses at a time (whole lines; the header line is repeated for each chunk): its
#: peak memory is this plus the typed columns it keeps, whatever the file size.
CSV_CHUNK_BYTES = 16 * 1024 * 1024
#: The longest line a text reader accepts, in bytes. The longest lines real writers produce are MindSpore's
#: CPU/GPU op-timestamp files, which put every execution of one op on one line (about 30 bytes each): the
#: benchmark's 885 MiB file of a long LeNet run has lines of 20 to 40 MiB, so 1 GiB is 25x that (about 35 M
#: executions of one op) and refuses no real file, while bounding what one line can hold in memory (a
#: file with no newline, or a binary file, is refused after this many bytes, not read whole).
MAX_LINE_BYTES = 1 << 30
#: The largest side JSON file (profiler_info, start_info, msprof device info, MindData pipeline and CPU
#: utilization JSON) read whole with Python's parser. Real ones hold kilobytes; the MindData CPU utilization
#: JSON of a long run tens of MB. A larger one is refused, not parsed into Python objects (~10x its size).
MAX_JSON_BYTES = 256 * 1024 * 1024
#: The largest file of a format read whole (the NUL-separated AI CPU and era A GetNext text records): real
#: ones hold kilobytes to a few MB; a larger one is refused rather than held in memory with a Python
#: object per record.
MAX_WHOLE_FILE_BYTES = 256 * 1024 * 1024
#: Protobuf files decoded whole into Python objects (MindSpore 1.x memory_usage_<r>.pb: 8 MB for a graph of 50,000
#: nodes and 150,000 tensors), about 25 bytes of memory per byte of file (200 MB for that 8 MB).
MAX_PROTOBUF_BYTES = 64 * 1024 * 1024
#: Deepest JSON nesting the readers accept (Python's parser would recurse past its stack limit).
MAX_JSON_DEPTH = 200


def _line_blocks(path: Path, chunk_bytes: int, newline_terminated: bool,
                 warn: Warn | None) -> Iterator[tuple[bytes, int, int]]:
    """Yield (bytes of whole lines, number of their first line, byte offset of their start), in order.

    A block is about `chunk_bytes` long; it grows past that only to finish a line, and a line longer than
    MAX_LINE_BYTES is an InputError (line and offset) raised as soon as that many bytes of it were read.
    With `newline_terminated`, a last line without a newline is dropped and reported (check truncated)
    with `warn`, or is an InputError without; otherwise it is the last block's end.
    """
    limit = MAX_LINE_BYTES
    first_line, offset = 1, 0
    pending: list[bytes] = []  # the start of a line whose newline was not read yet
    pending_len = 0
    with open(path, "rb") as handle:
        while block := handle.read(chunk_bytes):
            cut = block.rfind(b"\n") + 1
            if cut == 0:
                pending.append(block)
                pending_len += len(block)
                if pending_len > limit:
                    _too_long(path, first_line, offset, limit)
                continue
            data = b"".join([*pending, memoryview(block)[:cut]])
            pending, pending_len = ([block[cut:]], len(block) - cut) if cut < len(block) else ([], 0)
            if len(data) > limit:
                _check_line_lengths(path, data, first_line, offset, limit)
            yield data, first_line, offset
            first_line += data.count(b"\n")
            offset += len(data)
            if pending_len > limit:
                _too_long(path, first_line, offset, limit)
    data = b"".join(pending)
    if data and newline_terminated:
        data = _drop_partial_line(path, data, first_line, offset, warn)
    if data:
        yield data, first_line, offset


def _too_long(path: Path, line: int, offset: int, limit: int) -> None:
    raise InputError(path, f"line {line} is longer than {limit} bytes (MAX_LINE_BYTES, the longest line profpipe "
                           "holds in memory; a text file of this format has no such line: binary data, or damage?)",
                     line=line, offset=offset)


def _check_line_lengths(path: Path, data: bytes, first_line: int, offset: int, limit: int) -> None:
    """InputError at the first line of `data` (whole lines) longer than `limit` bytes, its newline left out."""
    import numpy as np

    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 0x0A)
    starts = np.concatenate(([0], ends[:-1] + 1))
    long = np.flatnonzero(ends - starts > limit)
    if long.size:
        _too_long(path, first_line + int(long[0]), offset + int(starts[long[0]]), limit)


def iter_line_frames(path: Path, chunk_bytes: int = CHUNK_BYTES, newline_terminated: bool = True,
                     warn: Warn | None = None, allow_blank: bool = True) -> Iterator[pl.DataFrame]:
    """Yield frames with columns line_no (1-based) and line, blank lines dropped.

    With `newline_terminated` (every writer we read ends each line with a newline), a last
    line without one means the file was cut short: with `warn`, that partial line is dropped and
    reported (check truncated); without, it raises InputError. Unless `allow_blank`, a file
    whose lines are all blank (empty or whitespace only) raises InputError. A line longer than
    MAX_LINE_BYTES is an InputError.
    """
    yielded = False
    for data, first_line, offset in _line_blocks(path, chunk_bytes, newline_terminated, warn):
        text = _decode(path, data, offset)
        frame = (pl.DataFrame({"line": [text]})
                 .select(pl.col("line").str.split("\n").explode())
                 .with_row_index("line_no", offset=first_line)
                 .with_columns(pl.col("line_no").cast(pl.Int64),
                               pl.col("line").str.strip_chars_end("\r")))
        frame = frame.filter(pl.col("line").str.strip_chars() != "")
        if frame.height:
            yielded = True
            yield frame
    if not yielded and not allow_blank:
        raise InputError(path, "no records: the file is empty or holds only blank lines")


def iter_csv_frames(path: Path, warn: Warn | None, *, has_header: bool = True, null_values: list[str] | None = None,
                    what: str = "CSV", chunk_bytes: int | None = None) -> Iterator[pl.DataFrame]:
    """Yield the rows of a CSV file as frames of string columns, about CSV_CHUNK_BYTES of text at a time,
    each with an Int64 column `line` (the line of the row in the file: one record per line).

    The text checks are those of iter_line_frames: UTF-8 without NUL bytes (an error naming the offset),
    a cut last row dropped and reported (or an error without `warn`), lines no longer than MAX_LINE_BYTES,
    and at least one non-blank line. The first line is the header: every chunk is parsed with it, so all
    frames have the same columns. With `has_header` False it is not taken as column names: the first
    frame's first row is the header row (line 1) and the columns are column_1, column_2, ...
    A chunk polars cannot parse is an InputError naming `what` and the chunk's first line.
    """
    header = None
    seen_text = False
    for data, first_line, offset in _line_blocks(path, chunk_bytes or CSV_CHUNK_BYTES, True, warn):
        _decode(path, data, offset)
        seen_text = seen_text or bool(data.strip())
        body, body_line, skip = data, first_line, 0
        if header is None and not seen_text:
            continue  # blank lines only so far: no header yet
        if header is None:
            end = data.index(b"\n") + 1
            header = data[:end]
            if has_header:
                body, body_line = data[end:], first_line + 1
        elif not has_header:
            skip = 1  # the header row parsed with this chunk, not part of it
        if has_header or skip:
            body = header + body
        try:
            frame = pl.read_csv(io.BytesIO(body), has_header=has_header, infer_schema=False, null_values=null_values)
        except pl.exceptions.PolarsError as exc:
            raise InputError(path, f"not a readable {what} ({first_line_of(exc)})", line=first_line) from None
        frame = frame.slice(skip)
        yield frame.with_columns(pl.int_range(body_line, body_line + pl.len(), dtype=pl.Int64).alias("line"))
    if not seen_text:
        raise InputError(path, "no records: the file is empty or holds only blank lines")


def csv_row(path: Path, line: int, *, has_header: bool = True, null_values: list[str] | None = None) -> dict[str, Any]:
    """The row at `line` of a CSV file that iter_csv_frames read, as a dict (for an example in a ledger row:
    the file is read again up to that line, in bounded blocks)."""
    header = None
    for data, first_line, _ in _line_blocks(path, CSV_CHUNK_BYTES, False, None):
        header = header or data[:data.index(b"\n") + 1]
        lines = data.count(b"\n")
        if first_line + lines > line:
            text = data.split(b"\n")[line - first_line] + b"\n"
            frame = pl.read_csv(io.BytesIO(header + text if has_header else text), has_header=has_header,
                                infer_schema=False, null_values=null_values)
            return frame.row(0, named=True) if frame.height else {}
    return {}


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
    `warn`), and unless `allow_blank` at least one non-blank line. Prefer iter_csv_frames: this holds the
    whole text, so a file larger than MAX_WHOLE_FILE_BYTES is an error."""
    data = read_capped(path, MAX_WHOLE_FILE_BYTES, "a text file read whole")
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
    return drop_checked(frame, [RowCheck(bad, check, what, example, action)], warn, path, line_column, tables)


def count_rows(frame: pl.DataFrame, bad: pl.Expr, warn: Warn, path: Path | str, check: str, what: str,
               line_column: str = "line_no", tables: str | None = None, example: pl.Expr | None = None) -> None:
    """Report the rows of `frame` where `bad` holds as one ledger row (check, kept: legitimate or harmless, they
    stay as recorded), as drop_rows reports those it leaves out."""
    hits = frame.filter(bad.fill_null(False))
    if hits.height:
        if line_column in hits.columns:
            hits = hits.sort(line_column)
        _report(hits, RowCheck(bad, check, what, example, "kept"), warn, path, line_column, tables)


class RowCheck(NamedTuple):
    """One damage rule of drop_checked: the rows where `bad` holds are reported as `check` and left out."""
    bad: pl.Expr
    check: str
    what: str
    example: pl.Expr | None = None
    action: str = "dropped"


def drop_checked(frame: pl.DataFrame, checks: list[RowCheck], warn: Warn, path: Path | str,
                 line_column: str = "line_no", tables: str | None = None) -> pl.DataFrame:
    """`frame` without the rows any of `checks` flags, in one pass over it: the rows, ledger rows (count,
    first line, example) and their order are those of drop_rows applied once per check in turn, because each
    flagged row is counted by the first check that flags it. The checks must look at their own row only;
    only the first may look at others (a duplicate rule), as it sees the whole frame either way."""
    first = pl.coalesce([pl.when(c.bad.fill_null(False)).then(pl.lit(i, pl.Int32)) for i, c in enumerate(checks)])
    marked = frame.with_columns(first.alias("_check"))
    hits = marked.filter(pl.col("_check").is_not_null())
    if not hits.height:
        return frame
    if line_column in hits.columns:
        hits = hits.sort(line_column)
    for i, c in enumerate(checks):
        hit = hits.filter(pl.col("_check") == i)
        if hit.height:
            _report(hit.drop("_check"), c, warn, path, line_column, tables)
    return marked.filter(pl.col("_check").is_null()).drop("_check")


def _report(hit: pl.DataFrame, c: RowCheck, warn: Warn, path: Path | str, line_column: str,
            tables: str | None) -> None:
    """One ledger row for the rows `hit` (sorted by line) that check `c` flagged."""
    first = hit.row(0, named=True)
    line = first.get(line_column)
    shown = str(hit.select(c.example).row(0)[0]) if c.example is not None else str(first.get("line", "")) or None
    where = f"{path}, line {line}" if line is not None else str(path)
    warn(f"{where}: {hit.height} {c.what}; {'left out' if c.action == 'dropped' else c.action}", check=c.check,
         action=c.action, rows=hit.height, path=path, line=None if line is None else int(line), example=shown,
         tables=tables)


def drop_duplicate_lines(frame: pl.DataFrame, warn: Warn, path: Path | str, what: str,
                         tables: str | None = None, column: str = "line") -> pl.DataFrame:
    """`frame` with each repeated `column` value kept once (the first); the repeats are one ledger row."""
    return drop_rows(frame, ~pl.col(column).is_first_distinct(), warn, path, "duplicate_record",
                     f"repeated {what} (the same text as an earlier line)", tables=tables)


def load_json(path: Path, what: str, allow_non_finite: bool = False) -> Any:
    """A small JSON file parsed with Python's parser: errors name the file and place; bad UTF-8 and
    nesting deeper than MAX_JSON_DEPTH are errors (never a RecursionError), and so are NaN/Infinity
    unless `allow_non_finite` (then they are floats the caller checks). A file larger than MAX_JSON_BYTES
    is an error (it is never read whole)."""
    data = read_capped(path, MAX_JSON_BYTES, what)
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


def read_capped(path: Path, limit: int, what: str) -> bytes:
    """The bytes of a file a reader needs whole; a file larger than `limit` is an InputError naming its size
    (read no further than `limit` + 1 bytes, whatever the file claims its size is)."""
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
        if len(data) > limit:
            size = max(path.stat().st_size, len(data))
            raise InputError(path, f"{size} bytes, more than the {limit} bytes profpipe reads whole for {what} "
                                   "(a real file of this kind is far smaller: damage, or a file of another format?)")
    return data


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
