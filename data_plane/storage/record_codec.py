"""Building and decoding the records inside a RecordBatch v2 (the cold path: clients, tools,
ListOffsets by timestamp, tests). The broker's produce and fetch paths never call this.

Record layout (after the 61-byte batch header, compressed as one block when the batch's codec
is not none; varints are zig-zag, see :mod:`common.varint`)::

    length varint            bytes of the record after this field
    attributes i8            unused, 0
    timestampDelta varlong   record timestamp - batch baseTimestamp
    offsetDelta varint       record offset - batch baseOffset
    keyLength varint         -1 = null key
    key bytes
    valueLength varint       -1 = null value
    value bytes
    headersCount varint
    per header: keyLength varint, key (UTF-8), valueLength varint (-1 = null), value

Pure functions; thread-safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from common.compression import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    Compression,
    decompress,
)
from common.control_records import (
    ControlRecordType,
    EndTxnMarker,
    decode_end_txn_marker,
    encode_control_key,
    encode_end_txn_marker_value,
)
from common.errors import CorruptRecordError, InvalidRecordError
from common.record_batch import (
    CONTROL_MASK,
    CREATE_TIME,
    HEADER_SIZE,
    LOG_APPEND_TIME,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    Buffer,
    RecordBatchHeader,
    parse_header,
    seal_batch,
    validate_batch,
)
from common.varint import decode_varint, encode_varint

Header = tuple[str, bytes | None]


@dataclass(frozen=True, slots=True)
class Record:
    """One record to put in a batch. ``timestamp`` is in ms since the epoch."""

    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: tuple[Header, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class DecodedRecord:
    """One record read back from a batch, with its absolute offset. For a LogAppendTime batch
    ``timestamp`` is the batch's maxTimestamp, as Kafka clients report it."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    sequence: int
    size_in_bytes: int


def _encode_record(out: bytearray, offset_delta: int, timestamp_delta: int, record: Record) -> None:
    body = bytearray(b"\x00")
    encode_varint(timestamp_delta, body)
    encode_varint(offset_delta, body)
    _encode_bytes(record.key, body)
    _encode_bytes(record.value, body)
    encode_varint(len(record.headers), body)
    for h_key, h_value in record.headers:
        _encode_bytes(h_key.encode("utf-8"), body)
        _encode_bytes(h_value, body)
    encode_varint(len(body), out)
    out += body


def _encode_bytes(data: bytes | None, out: bytearray) -> None:
    if data is None:
        out.append(1)  # zig-zag of -1
        return
    encode_varint(len(data), out)
    out += data


def build_batch(
    records: Sequence[Record],
    *,
    compression: int = Compression.NONE,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    timestamp_type: int = CREATE_TIME,
    log_append_time_ms: int | None = None,
) -> bytearray:
    """Encode ``records`` as one RecordBatch v2 with consecutive offsets from ``base_offset``.

    The result is a fresh, writable bytearray (so a broker can stamp offsets in place).
    ``compression`` is a codec id (none, gzip or zstd). With ``timestamp_type=LOG_APPEND_TIME``
    the batch's maxTimestamp is ``log_append_time_ms``.
    """
    if not records:
        raise ValueError("a record batch needs at least one record")
    base_ts = records[0].timestamp
    max_ts = max(r.timestamp for r in records)
    body = bytearray()
    for i, record in enumerate(records):
        _encode_record(body, i, record.timestamp - base_ts, record)
    attributes = 0
    if timestamp_type == LOG_APPEND_TIME:
        if log_append_time_ms is None:
            raise ValueError("LogAppendTime batches need log_append_time_ms")
        attributes |= TIMESTAMP_TYPE_MASK
        max_ts = log_append_time_ms
    if is_transactional:
        attributes |= TRANSACTIONAL_MASK
    if is_control:
        attributes |= CONTROL_MASK
    out = seal_batch(
        body,
        codec=compression,
        attributes=attributes,
        record_count=len(records),
        base_timestamp=base_ts,
        max_timestamp=max_ts,
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )
    return out


def build_end_txn_marker(
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    committed: bool,
    timestamp_ms: int,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytearray:
    """The control batch a partition leader appends when a coordinator ends a transaction:
    transactional and control, the transaction's producer id and epoch, base sequence -1, one
    record whose key and value are an end marker (common/control_records.py)."""
    control_type = ControlRecordType.COMMIT if committed else ControlRecordType.ABORT
    record = Record(
        key=encode_control_key(control_type),
        value=encode_end_txn_marker_value(coordinator_epoch),
        timestamp=timestamp_ms,
    )
    return build_batch(
        [record],
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
        is_transactional=True,
        is_control=True,
    )


def read_end_txn_marker(batch: Buffer, pos: int = 0) -> EndTxnMarker | None:
    """The end marker held by the control batch at ``batch[pos]`` (None for another kind of
    control record). Raises :class:`CorruptRecordError` or :class:`InvalidRecordError` for a
    control batch that is not one well-formed record."""
    header, records = decode_records(batch, pos, verify_crc=False)
    if not header.is_control or len(records) != 1:
        raise InvalidRecordError(
            f"control batch at offset {header.base_offset} holds {len(records)} records"
        )
    return decode_end_txn_marker(records[0].key, records[0].value)


def decode_records(
    batch: Buffer,
    pos: int = 0,
    *,
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    verify_crc: bool = True,
) -> tuple[RecordBatchHeader, list[DecodedRecord]]:
    """Decode every record of the batch at ``batch[pos]``.

    Raises :class:`CorruptRecordError` (framing, CRC, codec data) or
    :class:`InvalidRecordError` (record encoding, count mismatch).
    """
    header = validate_batch(batch, pos) if verify_crc else parse_header(batch, pos)
    if len(batch) - pos < header.size_in_bytes:
        raise CorruptRecordError(f"batch at position {pos} is truncated")
    end = pos + header.size_in_bytes
    with memoryview(batch) as view:
        block = view[pos + HEADER_SIZE : end]
        if header.compression == Compression.NONE:
            data: Buffer = block
        else:
            data = decompress(header.compression, block, max_decompressed_bytes)
        try:
            return header, _decode_block(header, data)
        finally:
            block.release()


def _decode_block(header: RecordBatchHeader, data: Buffer) -> list[DecodedRecord]:
    out: list[DecodedRecord] = []
    p = 0
    n = len(data)
    log_append = header.timestamp_type == LOG_APPEND_TIME
    for index in range(header.records_count):
        if p >= n:
            raise InvalidRecordError(
                f"batch at offset {header.base_offset} declares {header.records_count} records "
                f"but holds {index}"
            )
        record_start = p
        length, p = decode_varint(data, p)
        start = p
        if length < 1 or start + length > n:
            raise InvalidRecordError(
                f"record {index} of batch at offset {header.base_offset} has bad length {length}"
            )
        end = start + length
        p += 1  # attributes
        ts_delta, p = decode_varint(data, p)
        offset_delta, p = decode_varint(data, p)
        key, p = _decode_bytes(data, p, end)
        value, p = _decode_bytes(data, p, end)
        header_count, p = decode_varint(data, p)
        if header_count < 0 or header_count > length:
            raise InvalidRecordError(f"record {index} has bad header count {header_count}")
        headers: list[Header] = []
        for _ in range(header_count):
            h_key, p = _decode_bytes(data, p, end)
            if h_key is None:
                raise InvalidRecordError(f"record {index} has a null header key")
            h_value, p = _decode_bytes(data, p, end)
            try:
                headers.append((h_key.decode("utf-8"), h_value))
            except UnicodeDecodeError:
                raise InvalidRecordError(f"record {index} has a non-UTF-8 header key") from None
        if p != end:
            raise InvalidRecordError(
                f"record {index} of batch at offset {header.base_offset}: length {length} "
                f"does not match its fields"
            )
        seq = header.base_sequence + offset_delta if header.base_sequence >= 0 else NO_SEQUENCE
        out.append(
            DecodedRecord(
                offset=header.base_offset + offset_delta,
                timestamp=header.max_timestamp if log_append else header.base_timestamp + ts_delta,
                key=key,
                value=value,
                headers=tuple(headers),
                sequence=seq,
                size_in_bytes=end - record_start,
            )
        )
    if p != n:
        raise InvalidRecordError(
            f"batch at offset {header.base_offset} has {n - p} bytes after its last record"
        )
    return out


def _decode_bytes(data: Buffer, p: int, end: int) -> tuple[bytes | None, int]:
    size, p = decode_varint(data, p)
    if size < 0:
        if size != -1:
            raise InvalidRecordError(f"bad byte-string length {size}")
        return None, p
    if p + size > end:
        raise InvalidRecordError("byte string runs past the end of its record")
    return bytes(data[p : p + size]), p + size
