"""Chrome-trace JSON objects (`{..., "traceEvents": [...], ...}`, plain or gzip) made readable by DuckDB.

Kineto and Paddle write one JSON object per trace whose `traceEvents` array holds every event.
DuckDB's JSON reader parses a top-level array column-wise, in parallel and with bounded buffers,
but an object only whole (several times the file in memory). So the bytes of the array alone are
copied (gzip inflated on the way) into a temporary file that DuckDB reads as an array: memory
stays at DuckDB's read buffers whatever the trace size, at the cost of temporary disk space the
size of the array (under $TMPDIR). A pipe would save the copy, but DuckDB holds a whole pipe in
memory. Start times with ns fractions that a double could not hold (epoch µs; PyTorch 2.x's µs since
baseTimeNanoseconds past 2^42, 51 days) are split on the way (`"ts": 1712195495534377.850` -> `"ts_hi": 1712,
"ts": 1195495534377.850`, `"ts": 4658289678232.364` -> `"ts_hi": 4, "ts": 1658289678232.364`: two numbers a double
holds, by plain byte replacement), else quoted; where nothing needs rewriting (a plain file in whole µs, or
in small µs), the middle of the array is copied by the kernel. The members before the array
(schemaVersion, deviceProperties, distributedInfo, ...) and after it (traceName,
baseTimeNanoseconds, ...) are parsed as the trace's metadata. A trace cut short (a crashed job) is
closed after its last complete event, and `truncated_at` says where the rest was lost.
"""
from __future__ import annotations

import io
import json
import os
import re
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import InputError

_CHUNK = 8 << 20
#: The members before the array must fit here (deviceProperties of many GPUs is a few KiB).
_HEAD_LIMIT = 64 << 20
#: Bytes held back until the end, where the array's closing bracket is looked for (the members after
#: the array, such as libkineto's log lines, must fit).
_TAIL = 8 << 20
_ARRAY_START = re.compile(rb'"traceEvents"\s*:\s*\[')
_EVENT_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
#: A ']' that may close the event array, by what follows it: members and the object's closing brace, or (in a
#: file cut inside the members) a comma. Matched by the bracket first: a literal lets the scan skip ahead.
_CLOSE_THEN_MEMBERS = re.compile(rb'\](?=\s*(?:,\s*"|\}))')
_CLOSE_THEN_COMMA = re.compile(rb"\](?=\s*,)")
_WHITESPACE = frozenset(b" \t\n\r\f\v")
_SPACE = re.compile(r"\s*")
_DECODER = json.JSONDecoder()
#: A start time with a ns fraction (durations stay far below EXACT_DOUBLE_US: only starts are ever quoted).
_FRACTIONAL_TS = re.compile(rb'("ts"\s*:\s*)(-?\d+\.\d+(?:[eE][-+]?\d+)?)')
#: Below this many µs (51 days), a time with a ns fraction read as a double (DuckDB's reader reads every
#: number so) still rounds back to its exact ns: the double's spacing there is under 0.5 ns.
EXACT_DOUBLE_US = 2 ** 42
#: A time in µs of 13 to 16 integer digits with its fraction: an epoch (16 digits until the year 2286), or µs since
#: baseTimeNanoseconds past 11.6 days (PyTorch 2.x writes them so, the real H100 trace of fixtures/pytorch_cuda: 54 days).
_LONG_US = re.compile(rb"[1-9]\d{12,15}\.\d+")


@dataclass
class TraceArray:
    """A trace's event array as a file DuckDB reads (format 'array'), and what was learnt copying it."""

    path: Path
    source: Path
    metadata: dict[str, Any] = field(default_factory=dict)
    truncated_at: int | None = None
    #: What was wrong with the array and was mended on the copy (a trailing comma, a missing ']').
    repairs: list[str] = field(default_factory=list)
    #: Byte sequences that are not UTF-8, written as U+FFFD on a sanitized copy.
    replaced: int = 0
    #: A gzip trace whose compressed stream stops before its end (Inflated.cut_short).
    gzip_cut_short: bool = False
    #: How start times with ns fractions were written: "as is" (none, or small enough for a double),
    #: "split" (µs of 13-16 integer digits: `ts_hi` holds the digits before the last 12, `ts` 1 and those 12) or
    #: "quoted" (as strings).
    times: str = "as is"
    #: Bytes of the (inflated) trace read, and the offset of the array's '[' among them.
    size: int = 0
    array_offset: int = 0
    #: baseTimeNanoseconds when usable (set by the reader), else None and why.
    base_ns: int | None = None
    base_problem: str | None = None
    #: The reader's: per kind of bad event, the file offset of the first one (where known).
    fault_offsets: dict[str, int] = field(default_factory=dict)
    #: Where the file ends inside the members after the array (every event is there), said in words.
    trailer_cut: str | None = None

    @property
    def exact_copy(self) -> bool:
        """Whether the copy holds the file's bytes from array_offset on unchanged (offsets carry over)."""
        return self.times == "as is" and not self.replaced


class Inflated:
    """A gzip file's inflated bytes (one member or several), read to where its data stop: a file cut short
    (a job that crashed while writing it) gives what its complete blocks hold and sets `cut_short`, where
    gzip.open would raise at the end. A corrupt block or checksum raises zlib.error."""

    def __init__(self, path: Path) -> None:
        self._raw = open(path, "rb")
        self._inflater = zlib.decompressobj(wbits=31)  # gzip framing, checksum verified at the member's end
        self._input = b""
        self.cut_short = False

    def read(self, size: int) -> bytes:
        pieces: list[bytes] = []
        wanted = size
        while wanted > 0:
            if not self._input:
                if self._inflater.eof:  # the next member, if any
                    self._input = self._inflater.unused_data or self._raw.read(_CHUNK)
                    if not self._input:
                        break
                    self._inflater = zlib.decompressobj(wbits=31)
                else:
                    self._input = self._raw.read(_CHUNK)
                    if not self._input:
                        self.cut_short = True
                        break
            piece = self._inflater.decompress(self._input, wanted)
            self._input = self._inflater.unconsumed_tail
            pieces.append(piece)
            wanted -= len(piece)
        return b"".join(pieces)

    def close(self) -> None:
        self._raw.close()

    def __enter__(self) -> "Inflated":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def open_trace(path: Path) -> BinaryIO | Inflated:
    """The trace's bytes: gzip-inflated for `.gz` files."""
    return Inflated(path) if path.suffix == ".gz" else open(path, "rb")


def read_head(path: Path, size: int = 65536) -> bytes:
    """The first `size` bytes of the trace (inflated); b"" when they cannot be read."""
    try:
        with open_trace(path) as handle:
            return handle.read(size)
    except (OSError, EOFError, zlib.error):
        return b""


@contextmanager
def event_array(path: Path, folder: Path, sanitize: bool = False, quote: bool = False) -> Iterator[TraceArray]:
    """Yield a TraceArray whose `path` (in `folder`) holds the `traceEvents` array of `path`.

    `sanitize` writes byte sequences that are not UTF-8 as U+FFFD (and counts them). Start times with
    ns fractions are split when the first events' have 13 to 16 integer digits, quoted when they are other times past
    EXACT_DOUBLE_US, and always quoted with `quote` (for a reader that found times further on that the
    first events did not announce: `times` says what was done).
    Raises InputError, naming the trace, when it is not a Chrome trace object or cannot be read
    to the end (corrupt gzip). The copy is removed on leaving.
    """
    array = TraceArray(folder / "events.json", path)
    try:
        with open_trace(path) as handle, open(array.path, "wb") as out:
            _copy_array(array, handle, out, sanitize, quote)
            array.gzip_cut_short = isinstance(handle, Inflated) and handle.cut_short
    except (OSError, EOFError, zlib.error) as exc:
        array.path.unlink(missing_ok=True)
        raise InputError(path, f"cannot be read to the end ({exc})") from None
    except InputError:
        array.path.unlink(missing_ok=True)
        raise
    try:
        yield array
    finally:
        array.path.unlink(missing_ok=True)


def _copy_array(stream: TraceArray, handle: BinaryIO | Inflated, out: BinaryIO, sanitize: bool, quote: bool) -> None:
    head = b""
    while True:
        match = _ARRAY_START.search(head)
        if match:
            break
        block = handle.read(_CHUNK)
        if not block or len(head) > _HEAD_LIMIT:
            raise InputError(stream.source, "not a Chrome trace JSON object: no \"traceEvents\" array "
                                            f"in its first {len(head)} bytes")
        head += block
    stream.metadata = _members(stream.source, head[:match.start()], 0, before_array=True)
    offset = match.end() - 1  # of the '[' in the inflated stream
    stream.array_offset = offset
    pending = head[offset:]
    while len(pending) < _CHUNK:  # enough events to tell how the trace writes its times
        block = handle.read(_CHUNK)
        if not block:
            break
        pending += block
    # Kineto writes whole µs (before 2024) or ns fractions (since) throughout a trace, and its times are
    # epoch µs or relative to baseTimeNanoseconds (or a device clock): only fractions of large times need
    # rewriting, those of 13-16 integer digits split by byte replacement, others quoted (costly: a regex pass)
    large = [m for m in _FRACTIONAL_TS.finditer(pending, 0, _CHUNK) if abs(float(m[2])) >= EXACT_DOUBLE_US]
    splits = None if quote or not large else _epoch_splits(large)
    stream.times = "quoted" if quote or (large and splits is None) else "split" if splits else "as is"

    def rewrite(text: bytes | memoryview) -> bytes | memoryview:
        """A piece cut at a comma or brace (never inside a character or a number), rewritten where needed (else
        as it is: a view of the read bytes is written without a copy)."""
        if not (sanitize or splits or stream.times == "quoted"):
            return text
        text = bytes(text)
        if sanitize:
            decoded = text.decode("utf-8", errors="replace")
            stream.replaced += decoded.count("\ufffd") - text.count("\ufffd".encode())
            text = decoded.encode("utf-8")
        for key, replacement in splits or ():
            text = text.replace(key, replacement)
        return _exact_times(text) if stream.times == "quoted" else text

    if stream.times == "as is" and not sanitize and isinstance(handle, io.BufferedReader):
        middle_end = os.fstat(handle.fileno()).st_size - _TAIL
        if middle_end > handle.tell():
            offset += _copy_middle(handle, out, pending, middle_end)
            pending = b""
    while True:
        block = handle.read(_CHUNK)
        if not block:
            break
        pending += block
        if len(pending) > 2 * _TAIL:
            cut = pending.rfind(b",", 0, len(pending) - _TAIL) + 1  # never inside a number
            out.write(rewrite(memoryview(pending)[:cut]))
            offset += cut
            pending = pending[cut:]
    stream.size = offset + len(pending)
    try:
        end, trailer = _array_end(pending)
    except RecursionError:
        raise InputError(stream.source, "the members after traceEvents are nested too deeply to read",
                         offset=offset) from None
    if end is None:
        end, partial = _array_end_before_cut(pending)
        if end is not None:  # the file is cut in the members after the array: every event is there
            out.write(rewrite(_without_trailing_comma(pending[:end])) + b"]")
            stream.metadata.update(partial)
            stream.trailer_cut = (f"the file ends inside the members after traceEvents (byte {stream.size}): every "
                                  "event is read; " + (f"{', '.join(sorted(partial))} read from what is left, "
                                                       if partial else "") + "the members cut off are lost")
            return
    if end is None:
        closing = pending.rstrip()
        boundary = None
        for boundary in _EVENT_BOUNDARY.finditer(pending):
            pass
        first = pending.find(b"{")
        last = closing[boundary.end() - 1 if boundary else first:] if first >= 0 else b""
        if closing.endswith(b"}") and _is_object(last[:-1]):  # the object closes after the last event, the array not
            out.write(rewrite(_without_trailing_comma(closing[:-1])) + b"]")
            stream.repairs.append("its event array is not closed (no ']' before the final '}'); all its events are read")
            return
        complete = _without_trailing_comma(closing)
        last = complete[len(closing) - len(last):] if len(last) <= len(complete) else b""
        if complete.endswith(b"}") and _is_object(last):  # cut just after a complete event (and its comma)
            out.write(rewrite(complete) + b"]")
            stream.truncated_at = offset + len(complete)
            return
        if boundary is None:
            raise InputError(stream.source, "ends before its first complete event (truncated?)",
                             offset=offset + len(pending))
        out.write(rewrite(pending[:boundary.start() + 1]) + b"]")
        stream.truncated_at = offset + boundary.start() + 1
        return
    stop = _skip_space_back(pending, end - 1) + 1
    if stop and pending[stop - 1] == 0x2C:  # ','
        stop -= 1
        stream.repairs.append("a comma follows its last event (not JSON); it is ignored")
    out.write(rewrite(memoryview(pending)[:stop]))
    out.write(b"]")
    stream.metadata.update(_members(stream.source, trailer, offset + end + 1, before_array=False))


def _copy_middle(handle: io.BufferedReader, out: BinaryIO, pending: bytes, end: int) -> int:
    """Write `pending` and the plain file's bytes after it up to offset `end`, copied by the kernel
    (os.sendfile: no pass through Python, where nothing needs rewriting); return how many bytes were
    written. The handle is left at the start of the part not copied."""
    out.write(pending)
    out.flush()
    start = handle.tell()
    copied = 0
    while start + copied < end:
        sent = os.sendfile(out.fileno(), handle.fileno(), start + copied, end - start - copied)
        if sent == 0:
            break
        copied += sent
    out.seek(0, io.SEEK_END)
    handle.seek(start + copied)
    return len(pending) + copied


def _is_object(text: bytes) -> bool:
    """Whether `text` is one whole JSON object."""
    try:
        return isinstance(json.loads(text), dict)
    except (ValueError, RecursionError):
        return False


def _without_trailing_comma(text: bytes) -> bytes:
    text = text.rstrip()
    return text[:-1] if text.endswith(b",") else text


def _epoch_splits(large: list[re.Match[bytes]]) -> list[tuple[bytes, bytes]] | None:
    """Byte replacements that split the long start times of the first events `large` in two numbers a
    double holds: `"ts": 1712195495534377.850` -> `"ts_hi": 1712, "ts": 1195495534377.850` (the reader adds
    them back: ts_hi * 10^12 + ts - 10^12 µs), `"ts": 4658289678232.364` -> `"ts_hi": 4, "ts": 1658289678232.364`.
    By plain replacement, one per prefix seen (the digits before the last 12): no pass per event through
    Python. The leading 1 keeps `ts` a JSON number (no leading zero) and lets the reader check that a time had
    the digits of its prefix (`ts` within [10^12, 2 * 10^12)); a time of another prefix (a trace that runs into
    the next 10^12 µs, 11.6 days), or a shorter or longer one that starts like a prefix, is not split right, and
    the reader reads the trace again quoted. None when a large time does not have 13 to 16 integer digits (the
    times are quoted instead)."""
    if not all(_LONG_US.fullmatch(match[2]) for match in large):
        return None
    # (`"ts": ` as written, the digits before the last 12 of the integer part)
    keys = {(match[1], match[2][:match[2].index(b".") - 12]) for match in large}
    return [(key + prefix, b'"ts_hi"' + key[4:] + prefix + b", " + key + b"1") for key, prefix in sorted(keys)]


def _exact_times(text: bytes) -> bytes:
    """`"ts": 1712195495534377.850` -> `"ts": "1712195495534377.850"`: DuckDB's JSON reader turns every
    number into a double first, and an epoch in µs with its ns fraction needs 19 digits (a double
    keeps 16: 0.25 µs steps); as a string it is read as an exact decimal. Only "ts" is matched: its
    literal prefix lets the scan skip ahead (a third faster than matching "dur" too)."""
    return _FRACTIONAL_TS.sub(_quoted, text)


def _quoted(time: re.Match[bytes]) -> bytes:
    """The replacement of one match (a function: a quarter faster than re's template expansion)."""
    return time[1] + b'"' + time[2] + b'"'



def _array_end(tail: bytes) -> tuple[int | None, bytes]:
    """Position of the bracket closing the event array in `tail`, and the members after it.

    The array ends in `}` (its last event) or `[` (no events) then `]`, and what follows is the rest
    of the top-level object. Members after the array may hold arrays of their own (libkineto's INFO
    log lines; objects in some producers), so the earliest candidate followed by nothing but members
    and the closing brace wins. The check walks the text in place (no copies), so a candidate inside
    an event fails as soon as the text stops looking like the object's last members.
    """
    text = tail.decode("latin-1")  # one character per byte: positions stay byte offsets
    for position in _closing_brackets(tail, _CLOSE_THEN_MEMBERS):
        if _only_members_follow(text, position + 1):
            rest = tail[position + 1:].strip()
            return position, (rest[1:-1] if rest.startswith(b",") else b"")
    return None, b""


def _only_members_follow(text: str, index: int) -> bool:
    """Whether text[index:] is `(, "key": value)*` then `}` and white space, in JSON."""
    while True:
        index = _SPACE.match(text, index).end()
        if text.startswith("}", index):
            return _SPACE.match(text, index + 1).end() == len(text)
        if not text.startswith(",", index):
            return False
        try:
            key, index = _DECODER.raw_decode(text, _SPACE.match(text, index + 1).end())
            index = _SPACE.match(text, index).end()
            if not isinstance(key, str) or not text.startswith(":", index):
                return False
            _, index = _DECODER.raw_decode(text, _SPACE.match(text, index + 1).end())
        except ValueError:
            return False


#: Members writers put after the event array (Kineto, libkineto's logs, Paddle): a cut trailer starts with one.
_MEMBERS_AFTER = (b"traceName", b"displayTimeUnit", b"baseTimeNanoseconds", b"deviceProperties", b"distributedInfo",
                  b"schemaVersion", b"INFO", b"WARNING", b"ERROR", b"ExtraInfo", b"span_indx", b"cupti_version",
                  b"cuda_runtime_version", b"cuda_driver_version", b"record_shapes", b"profile_memory", b"with_flops",
                  b"with_stack", b"trace_id")
#: A member after the array, complete: its key and a scalar value followed by a delimiter.
_SCALAR_MEMBER = re.compile(rb'"(\w+)"\s*:\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|"[^"\\]*")\s*[,}\s]')


def _array_end_before_cut(tail: bytes) -> tuple[int | None, dict[str, Any]]:
    """Where the event array ends in a file cut inside the members after it, and the complete scalar members
    (baseTimeNanoseconds, traceName, ...) that are left; (None, {}) when the cut is not after the array.
    The array ends at the first `}]` or `[]` after which no event follows (no `"ph"` key) and a member starts."""
    for position in _closing_brackets(tail, _CLOSE_THEN_COMMA):
        rest = tail[position + 1:]
        first = re.match(rb'\s*,\s*(?:"(\w*)"?|$)', rest)
        if b'"ph"' in rest or not first or (first[1] is not None and not any(
                key.startswith(first[1]) for key in _MEMBERS_AFTER)):
            continue
        members = {}
        for match in _SCALAR_MEMBER.finditer(rest):
            try:
                members[match[1].decode()] = json.loads(match[2])
            except ValueError:
                continue
        return position, members
    return None, {}


def _closing_brackets(tail: bytes, follow: re.Pattern[bytes]) -> Iterator[int]:
    """Positions of the `]` in `tail` that `follow` accepts and that close an array after its last object or
    an empty one (`}]`, `[]`; a trailing comma between is tolerated and reported), in order."""
    for match in follow.finditer(tail):
        index = _skip_space_back(tail, match.start() - 1)
        if index >= 0 and tail[index] == 0x2C:  # ','
            index = _skip_space_back(tail, index - 1)
        if index >= 0 and tail[index] in (0x7D, 0x5B):  # '}' or '['
            yield match.start()


def _skip_space_back(text: bytes, index: int) -> int:
    while index >= 0 and text[index] in _WHITESPACE:
        index -= 1
    return index


def event_offset(path: Path, number: int, limit: int = 256 << 20) -> int | None:
    """The offset in the array file `path` of its `number`th element (1-based), walking the elements before it
    with Python's JSON decoder; None when the file is larger than `limit` or they cannot be walked."""
    try:
        if path.stat().st_size > limit:
            return None
        text = path.read_bytes().decode("latin-1")  # one character per byte: positions are byte offsets
    except OSError:
        return None
    index = _SPACE.match(text, 1).end()
    for _ in range(number - 1):  # an element that cannot be walked is where the problem is
        try:
            _, end = _DECODER.raw_decode(text, index)
        except (ValueError, RecursionError):
            return index
        end = _SPACE.match(text, end).end()
        if not text.startswith(",", end):
            return end
        index = _SPACE.match(text, end + 1).end()
    return index


def _members(path: Path, text: bytes, offset: int, before_array: bool) -> dict[str, Any]:
    """The object members in `text` (the part of the top-level object before or after the array)."""
    body = text.strip()
    if before_array:
        if not body.startswith(b"{"):
            raise InputError(path, "not a Chrome trace JSON object (expected '{' at its start)", offset=offset)
        body = body[1:].strip().rstrip(b",")
    try:
        members = json.loads(b"{" + body + b"}")
    except RecursionError:
        raise InputError(path, f"the members {'before' if before_array else 'after'} traceEvents are nested too "
                               "deeply to read", offset=offset) from None
    except ValueError as exc:
        raise InputError(path, f"the members {'before' if before_array else 'after'} traceEvents are not JSON ({exc})",
                         offset=offset) from None
    return members
