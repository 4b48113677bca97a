"""Record-batch compression codecs: attribute bits 0-2 of a RecordBatch v2.

==== ======== =========================================================
id   name     here
==== ======== =========================================================
0    none     supported
1    gzip     supported (RFC 1952; several concatenated members accepted)
2    snappy   supported (xerial framing written, as the Java client; plain raw blocks read
              too; common/snappy_lz4.py)
3    lz4      supported (LZ4 frame format; common/snappy_lz4.py)
4    zstd     supported (package ``zstandard``; frames with or without a content size,
              several frames accepted, as Kafka's streaming zstd-jni writes them)
==== ======== =========================================================

Decompression is bounded by ``max_bytes`` so that a small "zip bomb" batch cannot make the
broker or a tool allocate without limit. Pure functions; thread-safe.
"""

from __future__ import annotations

import enum
import zlib

import zstandard

from common.errors import CorruptRecordError, UnsupportedCompressionTypeError
from common.snappy_lz4 import lz4_compress, lz4_decompress, snappy_compress, snappy_decompress

# Bound on one batch's decompressed records: larger than any batch a sane producer builds
# (message.max.bytes is about 1 MiB compressed), small enough to never exhaust memory.
DEFAULT_MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024

_GZIP_WBITS = 16 + zlib.MAX_WBITS
_READ_CHUNK_BYTES = 1 << 20


class Compression(enum.IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def label(self) -> str:
        return self.name.lower()


SUPPORTED_CODECS = frozenset(Compression)


def codec_name(codec_id: int) -> str:
    """The Kafka name of a codec id ('none', 'gzip', ...), or 'unknown(N)'."""
    try:
        return Compression(codec_id).label
    except ValueError:
        return f"unknown({codec_id})"


def check_supported(codec_id: int) -> Compression:
    """Return the codec for ``codec_id`` or raise :class:`UnsupportedCompressionTypeError`."""
    try:
        codec = Compression(codec_id)
    except ValueError:
        raise UnsupportedCompressionTypeError(f"unknown compression codec id {codec_id}") from None
    if codec not in SUPPORTED_CODECS:
        raise UnsupportedCompressionTypeError(
            f"compression codec {codec.label} is not supported by this broker "
            "(supported: none, gzip, snappy, lz4, zstd)"
        )
    return codec


def compress(codec_id: int, data: bytes | bytearray | memoryview) -> bytes:
    codec = check_supported(codec_id)
    if codec is Compression.NONE:
        return bytes(data)
    if codec is Compression.GZIP:
        c = zlib.compressobj(6, zlib.DEFLATED, _GZIP_WBITS)
        return c.compress(data) + c.flush()
    if codec is Compression.SNAPPY:
        return snappy_compress(data)
    if codec is Compression.LZ4:
        return lz4_compress(data)
    return zstandard.ZstdCompressor(level=3).compress(data)


def decompress(
    codec_id: int,
    data: bytes | bytearray | memoryview,
    max_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
) -> bytes:
    """Decompress one batch's records block; :class:`CorruptRecordError` if it does not
    decode or expands beyond ``max_bytes``."""
    codec = check_supported(codec_id)
    if codec is Compression.NONE:
        return bytes(data)
    if codec is Compression.GZIP:
        return _gunzip(data, max_bytes)
    if codec is Compression.SNAPPY:
        return snappy_decompress(data, max_bytes)
    if codec is Compression.LZ4:
        return lz4_decompress(data, max_bytes)
    return _unzstd(data, max_bytes)


def _gunzip(data: bytes | bytearray | memoryview, max_bytes: int) -> bytes:
    out = bytearray()
    rest: bytes | bytearray | memoryview = data
    # A gzip stream may be several members back to back (java.util.zip reads them all).
    while len(rest) > 0:
        d = zlib.decompressobj(_GZIP_WBITS)
        try:
            out += d.decompress(rest, max_bytes + 1 - len(out))
        except zlib.error as e:
            raise CorruptRecordError(f"gzip records block does not decode: {e}") from None
        if len(out) > max_bytes:
            raise CorruptRecordError(f"gzip records block expands beyond {max_bytes} bytes")
        if not d.eof:
            raise CorruptRecordError("gzip records block is truncated")
        rest = d.unused_data
    return bytes(out)


def _unzstd(data: bytes | bytearray | memoryview, max_bytes: int) -> bytes:
    dctx = zstandard.ZstdDecompressor()
    out = bytearray()
    try:
        with dctx.stream_reader(bytes(data), read_across_frames=True) as reader:
            while True:
                chunk = reader.read(min(_READ_CHUNK_BYTES, max_bytes + 1 - len(out)))
                if not chunk:
                    break
                out += chunk
                if len(out) > max_bytes:
                    raise CorruptRecordError(f"zstd records block expands beyond {max_bytes} bytes")
    except zstandard.ZstdError as e:
        raise CorruptRecordError(f"zstd records block does not decode: {e}") from None
    return bytes(out)
