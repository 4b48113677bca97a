"""RecordBatch v2 codec: round trips, kafka-python as the oracle, header-only validation."""

from __future__ import annotations

import struct
import warnings

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.compression import Compression, decompress
from common.errors import (
    CorruptRecordError,
    InvalidRecordError,
    RecordTooLargeError,
    UnsupportedCompressionTypeError,
)
from common.record_batch import (
    ATTRIBUTES_POS,
    CRC_POS,
    LOG_APPEND_TIME,
    assign_offsets,
    iter_batch_headers,
    parse_header,
    validate_batch,
    validate_produce_payload,
    validate_stored_payload,
)
from common.varint import decode_varint, encode_varint, size_of_varint
from data_plane.storage.record_codec import Record, build_batch, decode_records

# kafka-python (the oracle) imports importlib.resources.read_text, deprecated in 3.11.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CODECS = [Compression.NONE, Compression.GZIP, Compression.ZSTD]

byte_strings = st.one_of(st.none(), st.binary(max_size=300))
headers = st.lists(
    st.tuples(st.text(max_size=12), st.one_of(st.none(), st.binary(max_size=40))), max_size=4
)
records = st.lists(
    st.builds(
        Record,
        key=byte_strings,
        value=byte_strings,
        timestamp=st.integers(min_value=0, max_value=2**40),
        headers=headers.map(tuple),
    ),
    min_size=1,
    max_size=20,
)


@SETTINGS
@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_varint_round_trip(value: int) -> None:
    out = bytearray()
    encode_varint(value, out)
    assert len(out) == size_of_varint(value)
    assert decode_varint(out, 0) == (value, len(out))


@SETTINGS
@given(records, st.sampled_from(CODECS), st.integers(min_value=0, max_value=2**40))
def test_build_decode_round_trip(recs: list[Record], codec: int, base_offset: int) -> None:
    data = build_batch(recs, compression=codec, base_offset=base_offset)
    header, decoded = decode_records(data)
    assert header.records_count == len(recs)
    assert header.base_offset == base_offset
    assert header.max_timestamp == max(r.timestamp for r in recs)
    for i, (r, d) in enumerate(zip(recs, decoded, strict=True)):
        assert d.offset == base_offset + i
        assert (d.key, d.value, d.timestamp, d.headers) == (r.key, r.value, r.timestamp, r.headers)


@SETTINGS
@given(records, st.sampled_from(CODECS))
def test_our_batch_is_read_by_kafka_python(recs: list[Record], codec: int) -> None:
    data = build_batch(recs, compression=codec, producer_id=7, producer_epoch=1, base_sequence=3)
    kb = DefaultRecordBatch(bytes(data))
    assert kb.validate_crc()
    assert (kb.producer_id, kb.producer_epoch, kb.base_sequence) == (7, 1, 3)
    got = list(kb)
    assert [(r.offset, r.key, r.value, r.timestamp) for r in got] == [
        (i, r.key, r.value, r.timestamp) for i, r in enumerate(recs)
    ]
    assert [list(r.headers) for r in got] == [list(r.headers) for r in recs]


@SETTINGS
@given(records, st.sampled_from(CODECS))
def test_kafka_python_batch_parses_and_decodes(recs: list[Record], codec: int) -> None:
    builder = DefaultRecordBatchBuilder(2, codec, False, 42, 3, 10, 1 << 22)
    for i, r in enumerate(recs):
        builder.append(i, r.timestamp, r.key, r.value, list(r.headers))
    data = bytes(builder.build())
    info = validate_produce_payload(data, max_batch_bytes=1 << 22)
    assert info.record_count == len(recs)
    assert info.batches[0].producer_id == 42
    assert info.max_timestamp == max(r.timestamp for r in recs)
    _, decoded = decode_records(data)
    assert [(d.key, d.value, d.timestamp, d.headers) for d in decoded] == [
        (r.key, r.value, r.timestamp, r.headers) for r in recs
    ]


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.ZSTD])
def test_kafka_python_compressed_batch_is_really_compressed(codec: int) -> None:
    builder = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, 1 << 20)
    for i in range(100):
        builder.append(i, 1000 + i, None, b"same value " * 20, [])
    data = bytes(builder.build())
    header = validate_batch(data)
    assert header.compression == codec
    assert header.size_in_bytes < 100 * 200
    _, decoded = decode_records(data)
    assert len(decoded) == 100 and decoded[-1].offset == 99


def test_crc_flip_is_corrupt_message() -> None:
    data = build_batch([Record(b"k", b"v" * 50, 1)])
    data[-3] ^= 0x40
    with pytest.raises(CorruptRecordError, match="CRC"):
        validate_produce_payload(data, max_batch_bytes=1 << 20)
    assert CorruptRecordError.error_code == 2


def test_base_offset_and_epoch_are_outside_the_crc() -> None:
    data = build_batch([Record(b"k", b"v", 1), Record(None, b"w", 2)])
    info = validate_produce_payload(data, max_batch_bytes=1 << 20)
    crc_before = parse_header(data).crc
    assign_offsets(data, info, 1234, 9)
    h = validate_batch(data)
    assert (h.base_offset, h.partition_leader_epoch, h.crc) == (1234, 9, crc_before)
    assert DefaultRecordBatch(bytes(data)).validate_crc()
    assert [r.offset for r in DefaultRecordBatch(bytes(data))] == [1234, 1235]


def test_log_append_time_rewrites_max_timestamp_and_crc() -> None:
    data = build_batch([Record(b"k", b"v", 1), Record(None, b"w", 2)], compression=1)
    info = validate_produce_payload(data, max_batch_bytes=1 << 20)
    assign_offsets(data, info, 5, 0, log_append_time_ms=99_000)
    h = validate_batch(data)
    assert h.timestamp_type == LOG_APPEND_TIME and h.max_timestamp == 99_000
    kb = DefaultRecordBatch(bytes(data))
    assert kb.validate_crc() and kb.timestamp_type == 1
    assert [r.timestamp for r in decode_records(data)[1]] == [99_000, 99_000]


def _with_attributes(data: bytearray, attributes: int) -> bytearray:
    struct.pack_into(">h", data, ATTRIBUTES_POS, attributes)
    struct.pack_into(">I", data, CRC_POS, crc32c.crc32c(memoryview(data)[ATTRIBUTES_POS:]))
    return data


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codecs_are_rejected(codec: int) -> None:
    data = _with_attributes(build_batch([Record(b"k", b"v", 1)]), codec)
    with pytest.raises(UnsupportedCompressionTypeError) as e:
        validate_produce_payload(data, max_batch_bytes=1 << 20)
    assert e.value.error_code == 76


def test_producer_rule_violations_are_invalid_record() -> None:
    control = _with_attributes(build_batch([Record(b"k", b"v", 1)]), 0x20)
    with pytest.raises(InvalidRecordError, match="control"):
        validate_produce_payload(control, max_batch_bytes=1 << 20)
    no_seq = build_batch([Record(b"k", b"v", 1)], producer_id=5, producer_epoch=0)
    with pytest.raises(InvalidRecordError, match="sequence"):
        validate_produce_payload(no_seq, max_batch_bytes=1 << 20)
    bad_count = build_batch([Record(b"k", b"v", 1), Record(b"k", b"v", 1)])
    struct.pack_into(">i", bad_count, 57, 3)
    _with_attributes(bad_count, 0)
    with pytest.raises(InvalidRecordError, match="recordsCount") as e:
        validate_produce_payload(bad_count, max_batch_bytes=1 << 20)
    assert e.value.error_code == 87
    with pytest.raises(InvalidRecordError):
        validate_produce_payload(b"", max_batch_bytes=1 << 20)


def test_batch_too_large_and_framing_errors() -> None:
    data = build_batch([Record(b"k", b"v" * 2000, 1)])
    with pytest.raises(RecordTooLargeError) as e:
        validate_produce_payload(data, max_batch_bytes=1000)
    assert e.value.error_code == 10
    with pytest.raises(CorruptRecordError, match="truncated"):
        validate_produce_payload(data[:-1], max_batch_bytes=1 << 20)
    with pytest.raises(CorruptRecordError, match="truncated"):
        validate_produce_payload(data[:30], max_batch_bytes=1 << 20)
    bad_magic = bytearray(data)
    bad_magic[16] = 1
    with pytest.raises(CorruptRecordError, match="magic"):
        validate_produce_payload(bad_magic, max_batch_bytes=1 << 20)


def test_payload_of_several_batches_reports_counts_without_decoding() -> None:
    a = build_batch([Record(b"a", b"1", 10), Record(b"a", b"2", 50)])
    b = build_batch([Record(b"b", b"3", 30)], compression=Compression.ZSTD)
    payload = bytearray(a + b)
    info = validate_produce_payload(payload, max_batch_bytes=1 << 20)
    assert (info.batch_count, info.record_count, info.offset_count) == (2, 3, 3)
    assert (info.max_timestamp, info.offset_delta_of_max_timestamp) == (50, 1)
    assert info.size_in_bytes == len(payload)
    with pytest.raises(InvalidRecordError, match="more than 1"):
        validate_produce_payload(payload, max_batch_bytes=1 << 20, max_batches=1)
    assign_offsets(payload, info, 100, 3)
    assert [h.base_offset for h in validate_stored_payload(payload)] == [100, 102]
    assert [h.base_offset for h in iter_batch_headers(payload[:-5], allow_partial_tail=True)] == [
        100
    ]


def test_decompression_is_bounded() -> None:
    data = build_batch([Record(None, b"\0" * 200_000, 1)], compression=Compression.ZSTD)
    assert len(data) < 2000
    with pytest.raises(CorruptRecordError, match="expands beyond"):
        decode_records(data, max_decompressed_bytes=100_000)
    gz = build_batch([Record(None, b"\0" * 200_000, 1)], compression=Compression.GZIP)
    with pytest.raises(CorruptRecordError, match="expands beyond"):
        decode_records(gz, max_decompressed_bytes=100_000)
    with pytest.raises(CorruptRecordError):
        decompress(Compression.GZIP, b"not gzip at all")
    with pytest.raises(CorruptRecordError):
        decompress(Compression.ZSTD, b"not zstd at all")


def test_record_level_garbage_is_invalid_record() -> None:
    data = build_batch([Record(b"k", b"value", 1)])
    data[61] = 0x7E  # record length varint now claims 63 bytes
    _with_attributes(data, 0)
    with pytest.raises(InvalidRecordError):
        decode_records(data)
