"""Runtime helpers of the flexible (KIP-482) encodings, called by the generated codecs.

Wire layouts (``uvarint``: unsigned LEB128, 7 bits a byte, low group first, at most 5 bytes
for the 32-bit quantities used here)::

    compact string   uvarint(len + 1) | UTF-8        (0 = null)
    compact bytes    uvarint(len + 1) | bytes        (0 = null; records the same)
    compact array    uvarint(count + 1) | elements   (0 = null)
    tagged fields    uvarint(n) | n x (uvarint(tag) | uvarint(size) | size bytes)

Decoders take a byte-format memoryview that ends where the frame ends and raise only
:class:`ProtocolError` (lengths are checked before anything is sliced or allocated). Encoders
append to a bytearray and raise :class:`EncodeError`. Pure functions, thread-safe.
"""

from __future__ import annotations

from typing import Any

from common.protocol.errors import EncodeError, ProtocolError

# A uvarint of a 32-bit quantity never needs more than 5 bytes (5 x 7 = 35 bits).
MAX_UVARINT_BYTES = 5
# Compact lengths are int32 quantities on the Java side (length + 1 <= 2**31 - 1).
MAX_COMPACT_LENGTH = 2**31 - 2

_SMALL = [bytes([i]) for i in range(128)]


def uvarint(value: int) -> bytes:
    """The unsigned varint encoding of ``0 <= value < 2**32``."""
    if 0 <= value < 128:
        return _SMALL[value]
    if value < 0 or value >= 1 << 32:
        raise EncodeError(f"unsigned varint out of range: {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_uvarint(buf: memoryview, pos: int) -> tuple[int, int]:
    """(value, position after it); ProtocolError if truncated or longer than 5 bytes."""
    result = 0
    shift = 0
    end = len(buf)
    for _ in range(MAX_UVARINT_BYTES):
        if pos >= end:
            raise ProtocolError(f"truncated unsigned varint at offset {pos}")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
    raise ProtocolError(f"unsigned varint longer than {MAX_UVARINT_BYTES} bytes at offset {pos}")


def _read_length(buf: memoryview, pos: int, nullable: bool, what: str) -> tuple[int, int]:
    """A compact length: -1 for a legal null; checked against the bytes left."""
    start = pos
    encoded, pos = read_uvarint(buf, pos)
    if encoded == 0:
        if nullable:
            return -1, pos
        raise ProtocolError(f"null {what} at offset {start} in a non-nullable field")
    length = encoded - 1
    if length > len(buf) - pos:
        raise ProtocolError(f"{what} of {length} bytes at offset {start} overruns the frame")
    return length, pos


def read_compact_string(buf: memoryview, pos: int, nullable: bool) -> tuple[str | None, int]:
    length, pos = _read_length(buf, pos, nullable, "string")
    if length < 0:
        return None, pos
    end = pos + length
    try:
        return str(buf[pos:end], "utf-8"), end
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"string at offset {pos} is not valid UTF-8") from exc


def read_compact_bytes_view(
    buf: memoryview, pos: int, nullable: bool
) -> tuple[memoryview | None, int]:
    """A view of the frame (zero copy); records fields are read this way."""
    length, pos = _read_length(buf, pos, nullable, "bytes")
    if length < 0:
        return None, pos
    return buf[pos : pos + length], pos + length


def read_compact_bytes(buf: memoryview, pos: int, nullable: bool) -> tuple[bytes | None, int]:
    view, pos = read_compact_bytes_view(buf, pos, nullable)
    return (None if view is None else bytes(view)), pos


def read_compact_count(buf: memoryview, pos: int, nullable: bool, min_size: int) -> tuple[int, int]:
    """A compact array count, -1 for null; it must fit the bytes left at ``min_size`` bytes per
    element, so a forged count never allocates."""
    start = pos
    encoded, pos = read_uvarint(buf, pos)
    if encoded == 0:
        if nullable:
            return -1, pos
        raise ProtocolError(f"null array at offset {start} in a non-nullable field")
    count = encoded - 1
    if count * min_size > len(buf) - pos:
        raise ProtocolError(f"array of {count} elements at offset {start} overruns the frame")
    return count, pos


def read_tag_header(buf: memoryview, pos: int) -> tuple[int, int, int]:
    """One tagged field's (tag, end offset of its data, offset of its data)."""
    tag, pos = read_uvarint(buf, pos)
    size, pos = read_uvarint(buf, pos)
    end = pos + size
    if end > len(buf):
        raise ProtocolError(f"tagged field {tag} ({size} bytes) at offset {pos} overruns the frame")
    return tag, end, pos


def read_tag_count(buf: memoryview, pos: int) -> tuple[int, int]:
    """The number of tagged fields of a struct; each takes at least 2 bytes (tag and size)."""
    start = pos
    count, pos = read_uvarint(buf, pos)
    if count * 2 > len(buf) - pos:
        raise ProtocolError(f"{count} tagged fields at offset {start} overrun the frame")
    return count, pos


def skip_tags(buf: memoryview, pos: int, count: int) -> int:
    """Skip ``count`` tagged fields this codec does not know (forward compatibility)."""
    for _ in range(count):
        _tag, pos, _data = read_tag_header(buf, pos)
    return pos


def write_compact_string(out: bytearray, value: str | None, nullable: bool) -> None:
    if value is None:
        if not nullable:
            raise EncodeError("null in a non-nullable string field")
        out += b"\x00"
        return
    data = value.encode("utf-8")
    if len(data) > 0x7FFF:
        raise EncodeError(f"string of {len(data)} bytes exceeds 32767")
    out += uvarint(len(data) + 1)
    out += data


def write_compact_bytes(out: bytearray, value: Any, nullable: bool) -> None:
    if value is None:
        if not nullable:
            raise EncodeError("null in a non-nullable bytes field")
        out += b"\x00"
        return
    size = value.nbytes if isinstance(value, memoryview) else len(value)
    out += uvarint(size + 1)
    out += value


def write_compact_count(out: bytearray, value: Any, nullable: bool) -> bool:
    """Writes a compact array count; False for a null array (nothing more to write)."""
    if value is None:
        if not nullable:
            raise EncodeError("null in a non-nullable array field")
        out += b"\x00"
        return False
    out += uvarint(len(value) + 1)
    return True


def write_tags(out: bytearray, tagged: list[tuple[int, bytearray]]) -> None:
    """The tagged-field section: ``tagged`` holds (tag, encoded value) in ascending tag order."""
    out += uvarint(len(tagged))
    for tag, data in tagged:
        out += uvarint(tag)
        out += uvarint(len(data))
        out += data
