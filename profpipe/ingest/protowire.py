"""Stage 2, ingest helper: a decoder of the protobuf wire format that knows where every value lies in the file.

Readers of protobuf files (memory_usage_pb.py) walk a message's fields with `fields` and decode the values of the
fields their schema knows; anything the wire format does not allow raises `WireError` with the byte offset, so a
reader can drop exactly the message that holds the damage and name the place in trace_health. The `protobuf`
package is not used: its parser stops at the first bad byte without saying where, and loses the whole file.

Wire format (protobuf.dev, "Encoding"): a message is a sequence of fields, each a varint tag (field number << 3 |
wire type) and a value: 0 varint (at most 10 bytes, 64 bits), 1 fixed 8 bytes, 2 a varint length and that many
bytes (strings, nested messages, packed repeated scalars), 5 fixed 4 bytes. Wire types 3 and 4 (groups, proto2
only) and 6, 7 do not occur in the files read here and are errors. Nothing recurses into a value unless the
reader's schema names it as a message, so a file nested deeper than its schema costs nothing.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5
_TWO_63, _TWO_64 = 1 << 63, 1 << 64


class WireError(Exception):
    """Bytes that break the wire format: what was expected, at which byte of the file, and the ledger check
    (truncated when the data ends inside a value, malformed_record otherwise)."""

    def __init__(self, offset: int, message: str, check: str = "malformed_record") -> None:
        super().__init__(f"byte offset {offset}: {message}")
        self.offset, self.check = offset, check


@dataclass(slots=True)
class Field:
    """One field of a message: its number and wire type, the offset of its tag, and its value: the integer of
    a varint or fixed field, or for wire type LEN the payload's byte range [start, end)."""

    number: int
    wire_type: int
    offset: int
    value: int = 0
    start: int = 0
    end: int = 0


def varint(data: bytes, pos: int, end: int, at: int | None = None) -> tuple[int, int]:
    """The unsigned varint at `pos` (it must end before `end`) and the position after it; an error names the
    offset `at` (the field the varint belongs to), else `pos`."""
    result = shift = 0
    first = pos if at is None else at
    while True:
        if pos >= end:
            raise WireError(first, "the data ends inside a varint",
                            "truncated" if end == len(data) else "malformed_record")
        byte = data[pos]
        pos += 1
        if shift == 63 and byte > 1:
            raise WireError(first, "a varint longer than 64 bits")
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def signed(value: int) -> int:
    """A 64-bit varint as the int64 it encodes (two's complement: 2^64 - 1 is -1). MindSpore 1.2 declared the
    memory proto's fields int64, later releases uint64; either way a value of 2^63 or more is no size or id."""
    return value - _TWO_64 if value >= _TWO_63 else value


def fields(data: bytes, start: int, end: int) -> Iterator[Field]:
    """The fields of the message in data[start:end], in file order; an error names the offset of the field's tag."""
    pos = start
    while pos < end:
        offset = pos
        tag, pos = varint(data, pos, end)
        number, wire_type = tag >> 3, tag & 7
        if number == 0:
            raise WireError(offset, "a field number 0")
        if wire_type == VARINT:
            value, pos = varint(data, pos, end, offset)
            yield Field(number, wire_type, offset, value=value)
        elif wire_type == LEN:
            length, pos = varint(data, pos, end, offset)
            if length > end - pos:
                raise WireError(offset, f"field {number} says {length} bytes, {end - pos} are left",
                                "truncated" if end == len(data) else "malformed_record")
            yield Field(number, wire_type, offset, start=pos, end=pos + length)
            pos += length
        elif wire_type in (FIXED64, FIXED32):
            size = 8 if wire_type == FIXED64 else 4
            if size > end - pos:
                raise WireError(offset, f"field {number} needs {size} bytes, {end - pos} are left",
                                "truncated" if end == len(data) else "malformed_record")
            yield Field(number, wire_type, offset, value=int.from_bytes(data[pos:pos + size], "little"))
            pos += size
        else:
            raise WireError(offset, f"field {number} has wire type {wire_type}, which the format does not allow here")


def repeated_varints(data: bytes, field: Field) -> list[int]:
    """The values of one occurrence of a repeated integer field: a packed run (wire type LEN) or one value."""
    if field.wire_type == VARINT:
        return [field.value]
    if field.wire_type != LEN:
        raise WireError(field.offset, f"field {field.number} should hold integers, has wire type {field.wire_type}")
    values, pos = [], field.start
    while pos < field.end:
        value, pos = varint(data, pos, field.end)
        values.append(value)
    return values


def expect(field: Field, wire_type: int) -> Field:
    """`field`, checked to have the wire type its schema declares."""
    if field.wire_type != wire_type:
        raise WireError(field.offset, f"field {field.number} should have wire type {wire_type}, has {field.wire_type}")
    return field
