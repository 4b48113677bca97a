from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.compression import Compression
from common.record_batch import LOG_APPEND_TIME
from data_plane.storage.record_codec import Record, build_batch, decode_records
from kraftlog_client.errors import KafkaError
from kraftlog_client.record_decoder import FetchedRecords, decode_fetched
from kraftlog_client.record_encoder import RecordBatchBuilder
from kraftlog_client.record_types import ConsumerRecord
from tests.unit.client.kafka_python import DefaultRecordBatch, DefaultRecordBatchBuilder

KAFKA_CODECS = {Compression.NONE: 0, Compression.GZIP: 1, Compression.ZSTD: 4}


def _kafka_python_batch(base_offset: int, n: int, codec: int) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=KAFKA_CODECS[codec],
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 30,
    )
    for i in range(n):
        key = None if i % 4 == 0 else f"key-{i}".encode()
        value = None if i % 9 == 0 else (b"value-%d-" % i) * (i % 50)
        headers = [("h1", b"a"), ("h2", None)] if i % 3 == 0 else []
        builder.append(i, timestamp=1_700_000_000_000 + i, key=key, value=value, headers=headers)
    buf = builder.build()
    buf[0:8] = base_offset.to_bytes(8, "big")  # as the broker stamps it (outside the CRC)
    return bytes(buf)


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP, Compression.ZSTD])
def test_decodes_kafka_python_batches_byte_identically(codec: int) -> None:
    batches = [_kafka_python_batch(100, 200, codec), _kafka_python_batch(300, 50, codec)]
    payload = b"".join(batches)
    decoded = decode_fetched("t", 3, payload, 100)
    assert decoded.next_offset == 350
    assert [r.offset for r in decoded.records] == list(range(100, 300)) + list(range(300, 350))
    oracle = [record for batch in batches for record in DefaultRecordBatch(batch)]
    for ours, theirs in zip(decoded.records, oracle, strict=True):
        assert ours.topic == "t" and ours.partition == 3
        assert ours.offset == theirs.offset
        assert ours.timestamp == theirs.timestamp
        assert ours.timestamp_type == 0
        assert ours.key == theirs.key
        assert ours.value == theirs.value
        assert list(ours.headers) == [(k, v) for k, v in theirs.headers]


def test_matches_storage_decoder_and_skips_records_below_min_offset() -> None:
    records = [Record(b"k%d" % i, b"v" * i, 1000 + i, (("x", b"y"),)) for i in range(20)]
    payload = bytes(build_batch(records, base_offset=40))
    decoded = decode_fetched("t", 0, payload, 45)
    _header, reference = decode_records(payload)
    assert [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in decoded.records] == [
        (r.offset, r.key, r.value, r.timestamp, r.headers) for r in reference[5:]
    ]
    assert decoded.next_offset == 60


def test_trailing_partial_batch_is_ignored() -> None:
    b = RecordBatchBuilder()
    for i in range(10):
        b.append(i, None, b"x" * 100)
    whole = bytes(b.build(base_offset=0))
    second = bytes(b.build(base_offset=10))
    decoded = decode_fetched("t", 0, whole + second[: len(second) - 7], 0)
    assert len(decoded.records) == 10 and decoded.next_offset == 10
    empty = decode_fetched("t", 0, second[:30], 10)
    assert empty.records == [] and empty.next_offset == 10


def test_log_append_time_batches_report_the_broker_time() -> None:
    payload = bytes(
        build_batch(
            [Record(None, b"a", 5), Record(None, b"b", 6)],
            timestamp_type=LOG_APPEND_TIME,
            log_append_time_ms=99,
        )
    )
    decoded = decode_fetched("t", 0, payload, 0)
    assert [(r.timestamp, r.timestamp_type) for r in decoded.records] == [(99, 1), (99, 1)]


def test_control_batches_are_skipped_but_advance_the_offset() -> None:
    control = bytes(
        build_batch(
            [Record(b"\x00\x00\x00\x00", b"\x00" * 6, 1)],
            base_offset=0,
            is_control=True,
            is_transactional=True,
        )
    )
    data = bytes(build_batch([Record(None, b"v", 1)], base_offset=1))
    decoded = decode_fetched("t", 0, control + data, 0)
    assert [r.offset for r in decoded.records] == [1]
    assert decoded.next_offset == 2


def test_bad_crc_raises_corrupt_message() -> None:
    payload = bytearray(build_batch([Record(None, b"value", 1)]))
    payload[-2] ^= 0xFF  # inside the value
    with pytest.raises(KafkaError) as info:
        decode_fetched("t", 0, payload, 0)
    assert info.value.code.name == "CORRUPT_MESSAGE"
    # With check.crcs=false the flipped byte reaches the decoder, which still returns a value.
    assert decode_fetched("t", 0, payload, 0, check_crcs=False).records[0].value != b"value"


def test_garbage_inside_a_valid_crc_raises_corrupt_message() -> None:
    b = RecordBatchBuilder()
    b.records += b"\x00\x10\x00"  # a record claiming more bytes than the batch holds
    b.count = 1
    with pytest.raises(KafkaError):
        decode_fetched("t", 0, bytes(b.build()), 0)


run_st = st.tuples(
    st.integers(min_value=1, max_value=120),  # records in the run
    st.one_of(st.none(), st.integers(min_value=0, max_value=70)),  # key size (None = null)
    st.one_of(st.none(), st.integers(min_value=0, max_value=300)),  # value size (None = null)
    st.integers(min_value=0, max_value=150),  # timestamp step (ms)
    st.booleans(),  # headers
)


@settings(max_examples=200, deadline=None)
@given(
    runs=st.lists(run_st, min_size=1, max_size=6),
    base_offset=st.integers(min_value=0, max_value=1 << 40),
    skip=st.integers(min_value=0, max_value=400),
    chunk=st.integers(min_value=1, max_value=700),
    log_append=st.booleans(),
)
def test_fast_and_general_decoding_agree_with_the_storage_decoder(
    runs: list[tuple[int, int | None, int | None, int, bool]],
    base_offset: int,
    skip: int,
    chunk: int,
    log_append: bool,
) -> None:
    records = []
    ts = 1_700_000_000_000
    for count, key_size, value_size, step, with_headers in runs:
        for i in range(count):
            ts += step
            key = None if key_size is None else bytes([i % 251]) * key_size
            value = None if value_size is None else bytes([(i * 7) % 251]) * value_size
            headers = (("h", b"%d" % i),) if with_headers else ()
            records.append(Record(key, value, ts, headers))
    kwargs = {"timestamp_type": LOG_APPEND_TIME, "log_append_time_ms": 42} if log_append else {}
    payload = bytes(build_batch(records, base_offset=base_offset, **kwargs))
    _header, expected = decode_records(payload)
    min_offset = base_offset + min(skip, len(records))
    fetched = FetchedRecords("t", 1, payload, min_offset)
    got: list[ConsumerRecord] = []
    while not fetched.exhausted:
        fetched.take(chunk, got)
    assert fetched.position == base_offset + len(records)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in got] == [
        (r.offset, r.timestamp, r.key, r.value, r.headers)
        for r in expected
        if r.offset >= min_offset
    ]


def test_read_committed_drops_aborted_transactions_up_to_their_marker() -> None:
    from kraftlog_client.record_decoder import FetchedRecords
    from tests.unit.client.txn_payloads import (
        ABORTED,
        ALL_DATA_OFFSETS,
        COMMITTED_OFFSETS,
        mixed_payload,
    )

    payload = mixed_payload()
    fetched = FetchedRecords("t", 0, payload, 0, aborted_transactions=ABORTED)
    out: list = []
    fetched.take(100, out)
    assert [r.offset for r in out] == COMMITTED_OFFSETS
    assert fetched.next_offset == 7
    # read_uncommitted (no list): every data record; control batches never show.
    everything: list = []
    FetchedRecords("t", 0, payload, 0).take(100, everything)
    assert [r.offset for r in everything] == ALL_DATA_OFFSETS
