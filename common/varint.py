"""Zig-zag variable-length integers, as used inside RecordBatch v2 records.

A value is zig-zag mapped (``(n << 1) ^ (n >> 63)``, so small negative numbers stay short) and
written 7 bits per byte, least significant group first, with the high bit set on every byte
but the last (protobuf's ``sint64``). A varint (i32 range) takes at most 5 bytes, a varlong
(i64 range) at most 10.

Pure functions; thread-safe.
"""

from __future__ import annotations

from common.errors import InvalidRecordError

MAX_VARLONG_BYTES = 10
_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1


def encode_varint(value: int, out: bytearray) -> None:
    """Append the zig-zag varint of ``value`` (an i64) to ``out``."""
    if value < _I64_MIN or value > _I64_MAX:
        raise ValueError(f"varint out of the i64 range: {value}")
    v = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def size_of_varint(value: int) -> int:
    """The number of bytes :func:`encode_varint` writes for ``value``."""
    v = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    size = 1
    while v >= 0x80:
        v >>= 7
        size += 1
    return size


def decode_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Decode the zig-zag varint at ``buf[pos]``; return ``(value, next_pos)``.

    Raises :class:`InvalidRecordError` on a varint that runs past the buffer or past 10 bytes.
    """
    result = 0
    shift = 0
    end = len(buf)
    for _ in range(MAX_VARLONG_BYTES):
        if pos >= end:
            raise InvalidRecordError("varint runs past the end of the record data")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
    raise InvalidRecordError("varint longer than 10 bytes")
