"""A producer's batches whose header leaves maxTimestamp unset (-1: Sarama never sets it) get
it from their records, as Kafka's LogValidator computes it on the leader: the largest
``baseTimestamp + timestampDelta`` over the batch's records. Without it the time index, the
time-based retention of the segment and ListOffsets by timestamp could not judge the batch.

Only such batches pay for reading records (decompressed if needed; each record is skipped by
its length, only its timestampDelta is decoded); every other batch stays on the faceless path.
The header is rewritten in place and its CRC-32C recomputed (maxTimestamp is covered by it).

Record layout inside the records block (Kafka's v2 record)::

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint | ...

Pure functions; thread-safe.
"""

from __future__ import annotations

import dataclasses

from common.compression import decompress
from common.errors import CorruptRecordError, InvalidRecordError
from common.record_batch import (
    CRC_POS,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAX_TIMESTAMP_POS,
    NO_TIMESTAMP,
    Buffer,
    PayloadInfo,
    RecordBatchHeader,
    compute_crc,
    parse_header,
)
from common.varint import decode_varint


def max_record_timestamp(view: memoryview, header: RecordBatchHeader) -> int:
    """The largest record timestamp of the batch at ``header.position`` of ``view``."""
    start = header.position + HEADER_SIZE
    end = header.position + header.batch_length + LOG_OVERHEAD
    block: Buffer = view[start:end]
    if header.compression:
        block = decompress(header.compression, block)
    # One copy of the records block: indexing bytes is the cheapest per-byte read Python
    # has, and the loop reads two varints per record. Varints of one or two bytes (record
    # lengths below 8 KiB, timestamp deltas below 8 s) are decoded inline; longer ones by
    # decode_varint.
    data = bytes(block)
    limit = len(data)
    pos = 0
    best = NO_TIMESTAMP
    base = header.base_timestamp
    try:
        for _ in range(header.records_count):
            b = data[pos]
            if b < 0x80:
                length, pos = (b >> 1) ^ -(b & 1), pos + 1
            elif data[pos + 1] < 0x80:
                v = (b & 0x7F) | (data[pos + 1] << 7)
                length, pos = (v >> 1) ^ -(v & 1), pos + 2
            else:
                length, pos = decode_varint(data, pos)
            record_end = pos + length
            if length < 2 or record_end > limit:
                raise CorruptRecordError(f"record of {length} bytes overruns its batch")
            b = data[pos + 1]  # after the attributes byte
            if b < 0x80:
                delta, after = (b >> 1) ^ -(b & 1), pos + 2
            elif data[pos + 2] < 0x80:
                v = (b & 0x7F) | (data[pos + 2] << 7)
                delta, after = (v >> 1) ^ -(v & 1), pos + 3
            else:
                delta, after = decode_varint(data, pos + 1)
            if after > record_end:
                raise CorruptRecordError(f"timestampDelta overruns its record at {pos}")
            if base + delta > best:
                best = base + delta
            pos = record_end
    except IndexError:  # a varint running off the block
        raise CorruptRecordError("a record runs past the end of its batch") from None
    except InvalidRecordError as e:
        raise CorruptRecordError(str(e)) from None
    return best


def fill_unset_max_timestamps(buf: bytearray | memoryview, info: PayloadInfo) -> PayloadInfo:
    """Give every data batch of ``buf`` whose maxTimestamp is unset the largest timestamp of
    its records (in place, CRC recomputed); returns ``info`` with the headers and the
    payload's max timestamp as they now are. ``info`` must describe ``buf``."""
    unset = [h for h in info.batches if h.max_timestamp == NO_TIMESTAMP and not h.is_control]
    if not unset:
        return info
    with memoryview(buf) as view:
        if view.readonly:
            raise TypeError("fill_unset_max_timestamps needs a writable buffer")
        for h in unset:
            ts = max_record_timestamp(view, h)
            view[h.position + MAX_TIMESTAMP_POS : h.position + MAX_TIMESTAMP_POS + 8] = ts.to_bytes(
                8, "big", signed=True
            )
            crc = compute_crc(view, h.position, h.batch_length + LOG_OVERHEAD)
            view[h.position + CRC_POS : h.position + CRC_POS + 4] = crc.to_bytes(4, "big")
        headers = tuple(parse_header(view, h.position) for h in info.batches)
    max_ts, delta_of_max, offset_count = NO_TIMESTAMP, -1, 0
    for h in headers:
        if h.max_timestamp > max_ts:
            max_ts = h.max_timestamp
            delta_of_max = offset_count + h.last_offset_delta
        offset_count += h.last_offset_delta + 1
    return dataclasses.replace(
        info,
        batches=headers,
        max_timestamp=max_ts,
        offset_delta_of_max_timestamp=max(delta_of_max, 0),
    )
