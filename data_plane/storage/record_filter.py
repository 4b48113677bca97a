"""Record-level views of one RecordBatch v2 for the log cleaner and the compacted-topic
produce check: scanning records into spans, and re-building a batch from a subset of them.

The batch layout is in :mod:`common.record_batch`, the record layout in
:mod:`data_plane.storage.record_codec`. A re-built batch keeps everything that names offsets
and producers: baseOffset, lastOffsetDelta (so a batch whose last records were removed still
ends where it ended, and a consumer's next fetch offset moves past it), partitionLeaderEpoch,
producerId, producerEpoch, baseSequence, codec and the timestamp type. What changes:
recordsCount, batchLength, maxTimestamp (the largest kept record's, for CreateTime), the
delete-horizon attribute (bit 6) with baseTimestamp, and the CRC, which is recomputed.

Delete horizon (Kafka's KIP-534): a batch holding a tombstone gets bit 6 set and its
baseTimestamp set to the time from which its tombstones may be removed; each record's
timestampDelta is re-based so every record keeps its timestamp (clients compute
baseTimestamp + timestampDelta). A batch without a kept tombstone has bit 6 clear.

Pure functions; thread-safe.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from common.compression import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    Compression,
    compress,
    decompress,
)
from common.errors import InvalidRecordError
from common.record_batch import (
    CRC_POS,
    DELETE_HORIZON_MASK,
    HEADER_SIZE,
    HEADER_STRUCT,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    Buffer,
    PayloadInfo,
    RecordBatchHeader,
    compute_crc,
)
from common.varint import decode_varint, encode_varint

_U32 = struct.Struct(">I")


class RecordSpan:
    """One record of a (decompressed) records block: where it is, its key, whether its value
    is null (a tombstone) and its timestamp. ``body_from`` is the position of its keyLength
    field: the bytes from there to ``end`` are copied unchanged when the record is kept."""

    __slots__ = ("body_from", "end", "is_tombstone", "key", "offset", "start", "timestamp")

    def __init__(
        self,
        offset: int,
        timestamp: int,
        key: bytes | None,
        is_tombstone: bool,
        start: int,
        body_from: int,
        end: int,
    ) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.is_tombstone = is_tombstone
        self.start = start
        self.body_from = body_from
        self.end = end


def records_block(
    batch: Buffer, header: RecordBatchHeader, pos: int = 0
) -> bytes | memoryview | bytearray:
    """The records of the batch at ``batch[pos]`` (described by ``header``), decompressed."""
    block = memoryview(batch)[pos + HEADER_SIZE : pos + header.size_in_bytes]
    if header.compression == Compression.NONE:
        return block
    try:
        return decompress(header.compression, block, DEFAULT_MAX_DECOMPRESSED_BYTES)
    finally:
        block.release()


def scan_records(header: RecordBatchHeader, block: Buffer) -> list[RecordSpan]:
    """Spans of the ``header.records_count`` records in ``block``; raises
    :class:`InvalidRecordError` on a malformed record. Decodes keys, not values or headers.

    The cleaner's hot loop: one-byte varints (most deltas) and two-byte ones (most lengths)
    are decoded inline, longer ones by :func:`decode_varint`."""
    out: list[RecordSpan] = []
    data = bytes(block)
    p = 0
    n = len(data)
    base_offset, base_ts = header.base_offset, header.base_timestamp
    log_append = header.timestamp_type == LOG_APPEND_TIME
    try:
        for index in range(header.records_count):
            start = p
            b = data[p]
            if b < 0x80:
                length, p = (b >> 1) ^ -(b & 1), p + 1
            elif data[p + 1] < 0x80:
                v = (b & 0x7F) | (data[p + 1] << 7)
                length, p = (v >> 1) ^ -(v & 1), p + 2
            else:
                length, p = decode_varint(data, p)
            end = p + length
            if length < 1 or end > n:
                raise InvalidRecordError(
                    f"record {index} of batch at offset {base_offset} has bad length {length}"
                )
            p += 1  # attributes
            b = data[p]
            if b < 0x80:
                ts_delta, p = (b >> 1) ^ -(b & 1), p + 1
            else:
                ts_delta, p = decode_varint(data, p)
            b = data[p]
            if b < 0x80:
                offset_delta, p = (b >> 1) ^ -(b & 1), p + 1
            else:
                offset_delta, p = decode_varint(data, p)
            body_from = p
            b = data[p]
            if b < 0x80:
                key_len, p = (b >> 1) ^ -(b & 1), p + 1
            else:
                key_len, p = decode_varint(data, p)
            if key_len < 0:
                key = None
            else:
                key = data[p : p + key_len]
                p += key_len
            if p >= end:
                raise InvalidRecordError(f"record {index}: key runs past the end of its record")
            b = data[p]
            if b < 0x80:
                value_len, p = (b >> 1) ^ -(b & 1), p + 1
            elif data[p + 1] < 0x80:
                v = (b & 0x7F) | (data[p + 1] << 7)
                value_len, p = (v >> 1) ^ -(v & 1), p + 2
            else:
                value_len, p = decode_varint(data, p)
            if value_len < -1 or p + max(value_len, 0) > end:
                raise InvalidRecordError(f"record {index}: value runs past the end of its record")
            ts = header.max_timestamp if log_append else base_ts + ts_delta
            out.append(
                RecordSpan(
                    base_offset + offset_delta, ts, key, value_len < 0, start, body_from, end
                )
            )
            p = end
    except IndexError:
        raise InvalidRecordError(
            f"batch at offset {base_offset}: a record runs past the end of the batch"
        ) from None
    if p != n:
        raise InvalidRecordError(
            f"batch at offset {base_offset} has {n - p} bytes after its last record"
        )
    return out


def check_keys_present(payload: Buffer, info: PayloadInfo) -> None:
    """Raise :class:`InvalidRecordError` (INVALID_RECORD) if any record of the validated
    producer ``payload`` has a null key: a compacted topic cannot keep a record without one
    (Kafka refuses it the same way). Decodes every record's key: compacted topics only."""
    with memoryview(payload) as view:
        for h in info.batches:
            block = records_block(view, h, h.position)
            try:
                for span in scan_records(h, block):
                    if span.key is None:
                        raise InvalidRecordError(
                            "compacted topic cannot accept a record without a key"
                        )
            finally:
                if isinstance(block, memoryview):
                    block.release()


def rebuild_batch(
    batch: Buffer,
    header: RecordBatchHeader,
    block: Buffer,
    kept: Sequence[RecordSpan],
    *,
    delete_horizon_ms: int | None,
) -> bytearray:
    """A new batch holding only the ``kept`` records (spans of ``block``, in order) of the
    batch ``batch`` (its bytes from position 0) described by ``header``, with the delete
    horizon set to ``delete_horizon_ms`` (None: no horizon, bit 6 clear). ``kept`` may be
    empty: an empty batch that only preserves offsets and producer metadata."""
    had_horizon = bool(header.attributes & DELETE_HORIZON_MASK)
    if delete_horizon_ms is not None:
        base_ts = delete_horizon_ms
    elif had_horizon:
        base_ts = kept[0].timestamp if kept else header.max_timestamp
    else:
        base_ts = header.base_timestamp
    body = bytearray()
    if base_ts == header.base_timestamp:
        # Timestamp deltas stay valid: copy each kept record's bytes as they are.
        with memoryview(block) as view:
            for span in kept:
                body += view[span.start : span.end]
    else:
        with memoryview(block) as view:
            for span in kept:
                _rebase_record(view, span, header.base_offset, base_ts, body)
    if header.compression == Compression.NONE:
        records: Buffer = body
    else:
        records = compress(Compression(header.compression), body)
    log_append = header.timestamp_type == LOG_APPEND_TIME
    if log_append or not kept:
        max_ts = header.max_timestamp
    else:
        max_ts = max(span.timestamp for span in kept)
    attributes = header.attributes & ~DELETE_HORIZON_MASK
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_MASK
    out = bytearray(HEADER_SIZE)
    out += records
    HEADER_STRUCT.pack_into(
        out,
        0,
        header.base_offset,
        len(out) - LOG_OVERHEAD,
        header.partition_leader_epoch,
        header.magic,
        0,
        attributes,
        header.last_offset_delta,
        base_ts,
        max_ts,
        header.producer_id,
        header.producer_epoch,
        header.base_sequence,
        len(kept),
    )
    _U32.pack_into(out, CRC_POS, compute_crc(out, 0, len(out)))
    return out


def _rebase_record(
    view: memoryview, span: RecordSpan, base_offset: int, base_ts: int, out: bytearray
) -> None:
    """Re-encode one record with its timestampDelta relative to ``base_ts``."""
    fields = bytearray(b"\x00")  # attributes: unused, 0
    encode_varint(span.timestamp - base_ts, fields)
    encode_varint(span.offset - base_offset, fields)
    fields += view[span.body_from : span.end]
    encode_varint(len(fields), out)
    out += fields
