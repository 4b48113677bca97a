"""Snappy and LZ4 records blocks as Kafka's clients write them (package ``cramjam``).

Snappy comes two ways:

- the xerial framing the Java client writes (snappy-java's ``SnappyOutputStream``)::

      magic  82 'SNAPPY' 00 | version i32 | compatible i32 | (length i32 | raw snappy block)*

  (all big-endian); written here, with blocks of :data:`SNAPPY_BLOCK_BYTES`;
- a plain raw snappy block (librdkafka and others): read.

A raw snappy block starts with its uncompressed length (an unsigned varint), so the size is
checked against the bound before anything is decompressed.

LZ4 is the LZ4 frame format (Kafka's magic-v2 batches; KIP-57 fixed the older header
checksum). Before decompressing, the frame's blocks are walked (each header gives its size
and whether it is stored uncompressed; the frame descriptor gives the largest a block may
expand to), which bounds the output without decompressing: a small block cannot expand past
the frame's maximum block size.

Decoders raise :class:`CorruptRecordError`, including when the output would exceed
``max_bytes``. Pure functions; thread-safe.
"""

from __future__ import annotations

import struct

import cramjam

from common.errors import CorruptRecordError

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = struct.Struct(">8sii")
XERIAL_VERSION = 1
XERIAL_COMPATIBLE = 1
# snappy-java's default block size.
SNAPPY_BLOCK_BYTES = 32 * 1024
_I32 = struct.Struct(">i")

LZ4_MAGIC = 0x184D2204
LZ4_SKIPPABLE_MASK = 0xFFFFFFF0
LZ4_SKIPPABLE_MAGIC = 0x184D2A50
# Frame descriptor: the block maximum sizes by the BD byte's bits 4-6.
_LZ4_BLOCK_MAX = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}
_U32_LE = struct.Struct("<I")


# -- snappy ---------------------------------------------------------------------------------


def snappy_compress(data: bytes | bytearray | memoryview) -> bytes:
    """The xerial framing of ``data`` (what Java consumers and every client read)."""
    out = bytearray(XERIAL_HEADER.pack(XERIAL_MAGIC, XERIAL_VERSION, XERIAL_COMPATIBLE))
    view = memoryview(data)
    for start in range(0, len(view), SNAPPY_BLOCK_BYTES):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + SNAPPY_BLOCK_BYTES]))
        out += _I32.pack(len(block))
        out += block
    return bytes(out)


def _raw_snappy_length(block: bytes | memoryview) -> int:
    """The uncompressed length a raw snappy block declares (its leading varint)."""
    value = shift = 0
    for i in range(5):
        if i >= len(block):
            break
        byte = block[i]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value
        shift += 7
    raise CorruptRecordError("snappy block has no valid length")


def _raw_snappy(block: bytes | memoryview, budget: int) -> bytes:
    if _raw_snappy_length(block) > budget:
        raise CorruptRecordError("snappy records block expands beyond its bound")
    try:
        return bytes(cramjam.snappy.decompress_raw(bytes(block)))
    except Exception as e:  # cramjam raises its own DecompressionError
        raise CorruptRecordError(f"snappy records block does not decode: {e}") from None


def snappy_decompress(data: bytes | bytearray | memoryview, max_bytes: int) -> bytes:
    view = memoryview(data)
    if bytes(view[:8]) != XERIAL_MAGIC:
        return _raw_snappy(view, max_bytes)
    if len(view) < XERIAL_HEADER.size:
        raise CorruptRecordError("snappy (xerial) records block is truncated")
    out = bytearray()
    pos = XERIAL_HEADER.size
    while pos < len(view):
        if pos + 4 > len(view):
            raise CorruptRecordError("snappy (xerial) block length is truncated")
        (length,) = _I32.unpack_from(view, pos)
        pos += 4
        if length < 0 or pos + length > len(view):
            raise CorruptRecordError(f"snappy (xerial) block of {length} bytes overruns")
        out += _raw_snappy(view[pos : pos + length], max_bytes - len(out))
        pos += length
    return bytes(out)


# -- lz4 ------------------------------------------------------------------------------------


def lz4_compress(data: bytes | bytearray | memoryview) -> bytes:
    return bytes(cramjam.lz4.compress(bytes(data)))


def _lz4_bound(view: memoryview) -> int:
    """An upper bound of the decompressed size of the LZ4 frames in ``view``, from their
    block headers alone; CorruptRecordError if they do not parse."""
    pos, bound = 0, 0
    while pos < len(view):
        if pos + 4 > len(view):
            raise CorruptRecordError("lz4 frame magic is truncated")
        (magic,) = _U32_LE.unpack_from(view, pos)
        if magic & LZ4_SKIPPABLE_MASK == LZ4_SKIPPABLE_MAGIC:
            if pos + 8 > len(view):
                raise CorruptRecordError("lz4 skippable frame is truncated")
            (size,) = _U32_LE.unpack_from(view, pos + 4)
            pos += 8 + size
            continue
        if magic != LZ4_MAGIC:
            raise CorruptRecordError(f"not an lz4 frame (magic {magic:#x})")
        if pos + 7 > len(view):
            raise CorruptRecordError("lz4 frame descriptor is truncated")
        flg, bd = view[pos + 4], view[pos + 5]
        block_checksum = bool(flg & 0x10)
        content_size = bool(flg & 0x08)
        content_checksum = bool(flg & 0x04)
        block_max = _LZ4_BLOCK_MAX.get((bd >> 4) & 0x07)
        if flg >> 6 != 1 or block_max is None:
            raise CorruptRecordError("lz4 frame descriptor is invalid")
        pos += 4 + 2 + (8 if content_size else 0) + 1
        while True:
            if pos + 4 > len(view):
                raise CorruptRecordError("lz4 block header is truncated")
            (header,) = _U32_LE.unpack_from(view, pos)
            pos += 4
            if header == 0:  # end mark
                break
            size = header & 0x7FFFFFFF
            stored = bool(header & 0x80000000)
            if size > block_max:
                raise CorruptRecordError(f"lz4 block of {size} bytes exceeds {block_max}")
            bound += size if stored else block_max
            pos += size + (4 if block_checksum else 0)
        pos += 4 if content_checksum else 0
    if pos != len(view):
        raise CorruptRecordError("lz4 frame is truncated")
    return bound


def lz4_decompress(data: bytes | bytearray | memoryview, max_bytes: int) -> bytes:
    view = memoryview(data)
    bound = _lz4_bound(view)
    if bound > max_bytes:
        # The bound assumes every compressed block expands to the maximum; decompress only
        # when the real size could not exceed max_bytes.
        raise CorruptRecordError(f"lz4 records block may expand beyond {max_bytes} bytes")
    try:
        return bytes(cramjam.lz4.decompress(bytes(view)))
    except Exception as e:  # cramjam raises its own DecompressionError
        raise CorruptRecordError(f"lz4 records block does not decode: {e}") from None
