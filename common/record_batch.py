"""RecordBatch v2 headers: a zero-copy view, validation, and in-place offset assignment.

This is the broker's hot path: it reads the fixed 61-byte header of each batch, checks
framing, magic and CRC-32C, and stamps offsets, without ever decoding a record.
Record encoding and decoding live in :mod:`data_plane.storage.record_codec`.

Byte layout of one batch (big-endian; Kafka's RecordBatch v2)::

    pos  size field                  notes
    0    8    baseOffset  i64        rewritten by the leader (not covered by the CRC)
    8    4    batchLength i32        bytes after this field; batch size = batchLength + 12
    12   4    partitionLeaderEpoch   rewritten by the leader (not covered by the CRC)
    16   1    magic i8               always 2
    17   4    crc u32                CRC-32C (Castagnoli) of bytes 21 .. end of batch
    21   2    attributes i16         bits 0-2 codec, 3 LogAppendTime, 4 transactional, 5 control
    23   4    lastOffsetDelta i32
    27   8    baseTimestamp i64
    35   8    maxTimestamp i64
    43   8    producerId i64         -1 when not idempotent
    51   2    producerEpoch i16
    53   4    baseSequence i32
    57   4    recordsCount i32
    61   ..   records (compressed as one block when the codec is not none)

A *payload* is a concatenation of whole batches: a Produce request's records for one partition,
a segment file, or a fetch response's records (which may end in a partial batch).

All functions are pure apart from the documented in-place rewrites of a caller's buffer;
thread-safe as long as callers do not share a buffer being rewritten.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

import crc32c

from common.compression import Compression, check_supported, compress
from common.errors import CorruptRecordError, InvalidRecordError, RecordTooLargeError

Buffer = bytes | bytearray | memoryview

HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER_STRUCT.size  # 61
# Offset + length: the prefix a reader needs to find the next batch (Kafka's LOG_OVERHEAD).
LOG_OVERHEAD = 12
BASE_OFFSET_POS = 0
LENGTH_POS = 8
PARTITION_LEADER_EPOCH_POS = 12
MAGIC_POS = 16
CRC_POS = 17
ATTRIBUTES_POS = 21
MAX_TIMESTAMP_POS = 35
# The smallest legal batchLength: a header with no records.
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
MAGIC_V2 = 2

CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1
CREATE_TIME = 0
LOG_APPEND_TIME = 1

_PREFIX = struct.Struct(">qi")
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")
_I32_MAX = (1 << 31) - 1


class RecordBatchHeader:
    """The parsed fixed header of one batch found at ``position`` in some buffer or file.

    Immutable snapshot of the header fields; it does not keep the buffer alive.
    """

    __slots__ = (
        "attributes",
        "base_offset",
        "base_sequence",
        "base_timestamp",
        "batch_length",
        "crc",
        "last_offset_delta",
        "magic",
        "max_timestamp",
        "partition_leader_epoch",
        "position",
        "producer_epoch",
        "producer_id",
        "records_count",
    )

    def __init__(self, fields: tuple[int, ...], position: int) -> None:
        (
            self.base_offset,
            self.batch_length,
            self.partition_leader_epoch,
            self.magic,
            self.crc,
            self.attributes,
            self.last_offset_delta,
            self.base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.records_count,
        ) = fields
        self.position = position

    @property
    def size_in_bytes(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def last_sequence(self) -> int:
        """The sequence of the last record (wrapping at i32 max, as Kafka does)."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        seq = self.base_sequence + self.last_offset_delta
        return seq - _I32_MAX - 1 if seq > _I32_MAX else seq

    def __repr__(self) -> str:
        return (
            f"RecordBatchHeader(base_offset={self.base_offset}, last_offset={self.last_offset}, "
            f"count={self.records_count}, size={self.size_in_bytes}, position={self.position})"
        )


def parse_header(buf: Buffer, pos: int = 0) -> RecordBatchHeader:
    """Parse the 61-byte header at ``buf[pos]`` and check magic and the length field.

    Does not check that the whole batch is present nor its CRC (see :func:`validate_batch`).
    Raises :class:`CorruptRecordError` on a short buffer, a magic other than 2 or an impossible
    batchLength.
    """
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptRecordError(
            f"batch header at position {pos} is truncated: {len(buf) - pos} of {HEADER_SIZE} bytes"
        )
    header = RecordBatchHeader(HEADER_STRUCT.unpack_from(buf, pos), pos)
    if header.magic != MAGIC_V2:
        raise CorruptRecordError(
            f"batch at position {pos} has magic {header.magic}; only magic 2 is supported"
        )
    if header.batch_length < MIN_BATCH_LENGTH:
        raise CorruptRecordError(
            f"batch at position {pos} has batchLength {header.batch_length} < {MIN_BATCH_LENGTH}"
        )
    return header


def compute_crc(buf: Buffer, pos: int, size_in_bytes: int) -> int:
    """CRC-32C over attributes .. end of the batch at ``buf[pos]``, without copying."""
    with memoryview(buf) as view:
        return crc32c.crc32c(view[pos + ATTRIBUTES_POS : pos + size_in_bytes])


def seal_batch(
    records_block: Buffer,
    *,
    codec: int,
    attributes: int,
    record_count: int,
    base_timestamp: int,
    max_timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
) -> bytearray:
    """One complete batch: the 61-byte header, then ``records_block`` (the encoded records,
    compressed here with ``codec`` unless it is none), then the CRC-32C written into the
    header. ``attributes`` carries every bit but the codec's (timestamp type, transactional,
    control). The result is a fresh, writable bytearray (so a broker can stamp offsets in
    place). The one place a batch header is built, for producers and for the broker alike."""
    checked = check_supported(codec)
    block = records_block if checked is Compression.NONE else compress(checked, records_block)
    out = bytearray(HEADER_SIZE)
    out += block
    HEADER_STRUCT.pack_into(
        out,
        0,
        base_offset,
        len(out) - LOG_OVERHEAD,
        partition_leader_epoch,
        MAGIC_V2,
        0,
        (attributes & ~CODEC_MASK) | (int(checked) & CODEC_MASK),
        record_count - 1,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        record_count,
    )
    crc = compute_crc(out, 0, len(out))
    out[CRC_POS:ATTRIBUTES_POS] = crc.to_bytes(4, "big")
    return out


def validate_batch(buf: Buffer, pos: int = 0) -> RecordBatchHeader:
    """Parse the batch at ``buf[pos]``, check that all of it is present and that its CRC-32C
    matches; raises :class:`CorruptRecordError` otherwise."""
    header = parse_header(buf, pos)
    size = header.batch_length + LOG_OVERHEAD
    if len(buf) - pos < size:
        raise CorruptRecordError(
            f"batch at position {pos} is truncated: {len(buf) - pos} of {size} bytes present"
        )
    actual = compute_crc(buf, pos, size)
    if actual != header.crc:
        raise CorruptRecordError(
            f"batch at offset {header.base_offset} (position {pos}) fails its CRC-32C check: "
            f"stored {header.crc}, computed {actual}"
        )
    return header


def iter_batch_headers(
    buf: Buffer, *, allow_partial_tail: bool = False
) -> Iterator[RecordBatchHeader]:
    """Yield the header of each batch in ``buf`` by framing only (no CRC check).

    A trailing partial batch (as at the end of a fetch response) ends the iteration when
    ``allow_partial_tail``; otherwise it raises :class:`CorruptRecordError`.
    """
    pos = 0
    end = len(buf)
    while pos < end:
        if end - pos < HEADER_SIZE and allow_partial_tail:
            return
        header = parse_header(buf, pos)
        size = header.batch_length + LOG_OVERHEAD
        if end - pos < size:
            if allow_partial_tail:
                return
            raise CorruptRecordError(
                f"batch at position {pos} is truncated: {end - pos} of {size} bytes present"
            )
        yield header
        pos += size


@dataclass(frozen=True, slots=True)
class PayloadInfo:
    """What :func:`validate_produce_payload` learned from a payload's headers alone.

    ``offset_delta_of_max_timestamp`` counts offsets from the first record of the payload
    (0-based), pointing at the last offset of the batch holding ``max_timestamp`` (Kafka's
    "shallow" offset of the max timestamp).
    """

    batches: tuple[RecordBatchHeader, ...]
    record_count: int
    offset_count: int
    size_in_bytes: int
    max_timestamp: int
    offset_delta_of_max_timestamp: int

    @property
    def batch_count(self) -> int:
        return len(self.batches)


def validate_produce_payload(
    payload: Buffer,
    *,
    max_batch_bytes: int,
    max_batches: int | None = None,
    allow_control: bool = False,
) -> PayloadInfo:
    """Validate a producer's payload (whole batches, as sent in a Produce request) by header
    and CRC-32C only, never decoding a record.

    Checks, with the error each raises:

    - framing, magic 2, CRC-32C: :class:`CorruptRecordError` (CORRUPT_MESSAGE)
    - a batch larger than ``max_batch_bytes`` (``max.message.bytes``): :class:`RecordTooLargeError`
    - a codec id other than none/gzip/snappy/lz4/zstd: :class:`UnsupportedCompressionTypeError`
    - ``lastOffsetDelta + 1 != recordsCount``, an empty batch, a control batch (unless
      ``allow_control``: a leader writing a coordinator's end markers), a producer id without
      a sequence (control batches have none), more than ``max_batches`` batches:
      :class:`InvalidRecordError`
    """
    if len(payload) == 0:
        raise InvalidRecordError("produce payload holds no record batch")
    batches: list[RecordBatchHeader] = []
    pos = 0
    end = len(payload)
    records = 0
    max_ts = NO_TIMESTAMP
    offset_count = 0
    delta_of_max = -1
    with memoryview(payload) as view:
        while pos < end:
            if max_batches is not None and len(batches) >= max_batches:
                raise InvalidRecordError(
                    f"produce payload holds more than {max_batches} record batch(es)"
                )
            header = parse_header(view, pos)
            size = header.batch_length + LOG_OVERHEAD
            if size > max_batch_bytes:
                raise RecordTooLargeError(
                    f"record batch of {size} bytes exceeds max.message.bytes={max_batch_bytes}"
                )
            if end - pos < size:
                raise CorruptRecordError(
                    f"batch at position {pos} is truncated: {end - pos} of {size} bytes present"
                )
            actual = crc32c.crc32c(view[pos + ATTRIBUTES_POS : pos + size])
            if actual != header.crc:
                raise CorruptRecordError(
                    f"batch at position {pos} fails its CRC-32C check: stored {header.crc}, "
                    f"computed {actual}"
                )
            check_supported(header.compression)
            if header.records_count <= 0:
                raise InvalidRecordError(f"batch at position {pos} holds no records")
            if header.last_offset_delta + 1 != header.records_count:
                raise InvalidRecordError(
                    f"batch at position {pos}: lastOffsetDelta {header.last_offset_delta} does "
                    f"not match recordsCount {header.records_count}"
                )
            if header.is_control:
                if not allow_control:
                    raise InvalidRecordError("clients may not send control batches")
            elif header.producer_id >= 0 and header.base_sequence < 0:
                raise InvalidRecordError(
                    f"batch from producer id {header.producer_id} has no base sequence"
                )
            if header.max_timestamp > max_ts:
                max_ts = header.max_timestamp
                delta_of_max = offset_count + header.last_offset_delta
            offset_count += header.last_offset_delta + 1
            records += header.records_count
            batches.append(header)
            pos += size
    return PayloadInfo(
        batches=tuple(batches),
        record_count=records,
        offset_count=offset_count,
        size_in_bytes=end,
        max_timestamp=max_ts,
        offset_delta_of_max_timestamp=max(delta_of_max, 0),
    )


def validate_stored_payload(payload: Buffer) -> tuple[RecordBatchHeader, ...]:
    """Validate already-offset-assigned batches (a follower's fetched records, or bytes read
    back from a segment): framing, magic, CRC and strictly increasing offsets. Batches from a
    compacted leader may have fewer records than offsets, so counts are not compared."""
    batches: list[RecordBatchHeader] = []
    with memoryview(payload) as view:
        pos = 0
        next_offset: int | None = None
        while pos < len(view):
            header = validate_batch(view, pos)
            check_supported(header.compression)
            if header.last_offset_delta < 0:
                raise CorruptRecordError(
                    f"batch at offset {header.base_offset} has negative lastOffsetDelta"
                )
            if next_offset is not None and header.base_offset < next_offset:
                raise CorruptRecordError(
                    f"batch offsets go backwards: {header.base_offset} after {next_offset - 1}"
                )
            next_offset = header.next_offset
            batches.append(header)
            pos += header.size_in_bytes
    return tuple(batches)


def assign_offsets(
    buf: bytearray | memoryview,
    info: PayloadInfo,
    first_offset: int,
    partition_leader_epoch: int,
    log_append_time_ms: int | None = None,
) -> None:
    """Rewrite, in place, baseOffset and partitionLeaderEpoch of each batch in ``buf`` (fields
    outside the CRC), giving the batches consecutive offsets from ``first_offset``.

    With ``log_append_time_ms`` (topic ``message.timestamp.type=LogAppendTime``) also set
    maxTimestamp and attribute bit 3 and recompute the CRC, as Kafka's broker does.
    ``info`` must come from :func:`validate_produce_payload` on the same bytes.
    """
    next_offset = first_offset
    with memoryview(buf) as view:
        if view.readonly:
            raise TypeError("assign_offsets needs a writable buffer")
        for header in info.batches:
            pos = header.position
            _I64.pack_into(view, pos + BASE_OFFSET_POS, next_offset)
            _I32.pack_into(view, pos + PARTITION_LEADER_EPOCH_POS, partition_leader_epoch)
            if log_append_time_ms is not None:
                attrs = header.attributes | TIMESTAMP_TYPE_MASK
                _I16.pack_into(view, pos + ATTRIBUTES_POS, attrs)
                _I64.pack_into(view, pos + MAX_TIMESTAMP_POS, log_append_time_ms)
                crc = compute_crc(view, pos, header.batch_length + LOG_OVERHEAD)
                _U32.pack_into(view, pos + CRC_POS, crc)
            next_offset += header.last_offset_delta + 1
