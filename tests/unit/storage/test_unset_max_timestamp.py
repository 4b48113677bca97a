"""A producer that leaves a batch's maxTimestamp unset (-1, as Sarama does): the leader sets it
from the records (as Kafka's LogValidator), with a valid CRC, so the time index, ListOffsets by
timestamp and time retention can judge the batch; other batches are left as sent."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.compression import Compression
from common.errors import CorruptRecordError
from common.log_config import LogConfig
from common.record_batch import (
    CRC_POS,
    LOG_OVERHEAD,
    MAX_TIMESTAMP_POS,
    compute_crc,
    parse_header,
    validate_batch,
    validate_produce_payload,
)
from common.record_timestamps import fill_unset_max_timestamps
from data_plane.storage.log import Log
from data_plane.storage.record_codec import Record, build_batch

CODECS = [Compression.NONE, Compression.GZIP, Compression.ZSTD]


def sarama_batch(timestamps: list[int], compression: int = Compression.NONE) -> bytearray:
    """A valid batch whose header maxTimestamp is -1 (CRC recomputed, as its producer would)."""
    batch = build_batch(
        [Record(b"k%d" % i, b"v" * (i % 7), ts) for i, ts in enumerate(timestamps)],
        compression=compression,
    )
    batch[MAX_TIMESTAMP_POS : MAX_TIMESTAMP_POS + 8] = (-1).to_bytes(8, "big", signed=True)
    header = parse_header(batch)
    crc = compute_crc(batch, 0, header.batch_length + LOG_OVERHEAD)
    batch[CRC_POS : CRC_POS + 4] = crc.to_bytes(4, "big")
    return batch


@pytest.fixture
def log(tmp_path):
    lg = Log(os.path.join(tmp_path, "t-0"), LogConfig(), topic="t", partition=0)
    yield lg
    lg.close()


@pytest.mark.parametrize("codec", CODECS)
def test_the_leader_sets_the_max_timestamp_from_the_records(log, codec) -> None:
    log.append(build_batch([Record(b"a", b"first", 500)]), 0)  # offset 0, header right
    payload = sarama_batch([1_000, 5_000, 3_000], codec)  # offsets 1-3
    info = log.append(payload, 0)
    assert info.max_timestamp == 5_000
    stored = log.read(1, 1 << 20).read_bytes()
    header = validate_batch(stored)  # CRC checked
    assert header.max_timestamp == 5_000 and header.base_offset == 1
    assert log.find_offset_by_timestamp(4_000) == (2, 5_000)
    assert log.find_offset_by_timestamp(600)[0] == 1


def test_batches_with_their_max_timestamp_are_left_as_sent() -> None:
    batch = build_batch([Record(None, b"x", 10), Record(None, b"y", 20)])
    before = bytes(batch)
    info = validate_produce_payload(batch, max_batch_bytes=1 << 20)
    assert fill_unset_max_timestamps(batch, info) is info
    assert bytes(batch) == before


@settings(max_examples=50, deadline=None)
@given(
    timestamps=st.lists(st.integers(0, 2**40), min_size=1, max_size=20),
    codec=st.sampled_from(CODECS),
)
def test_any_record_timestamps(timestamps: list[int], codec: int) -> None:
    payload = sarama_batch(timestamps, codec) + build_batch([Record(None, b"z", 7)])
    info = validate_produce_payload(payload, max_batch_bytes=1 << 20)
    filled = fill_unset_max_timestamps(payload, info)
    first = validate_batch(payload, 0)
    assert first.max_timestamp == max(timestamps)
    assert filled.max_timestamp == max(max(timestamps), 7)
    assert [h.max_timestamp for h in filled.batches] == [max(timestamps), 7]


def test_a_lying_record_length_is_corrupt() -> None:
    payload = sarama_batch([1, 2])
    header = parse_header(payload)
    # The first record's length varint (zig-zag) says 63 bytes: past the batch.
    payload[61] = 126
    crc = compute_crc(payload, 0, header.batch_length + LOG_OVERHEAD)
    payload[CRC_POS : CRC_POS + 4] = crc.to_bytes(4, "big")
    info = validate_produce_payload(payload, max_batch_bytes=1 << 20)
    with pytest.raises(CorruptRecordError):
        fill_unset_max_timestamps(payload, info)


@settings(max_examples=50, deadline=None)
@given(
    records=st.lists(
        st.tuples(st.integers(-(2**40), 2**40), st.integers(0, 20_000)), min_size=1, max_size=8
    )
)
def test_record_and_delta_varints_of_any_width(records: list[tuple[int, int]]) -> None:
    """Record lengths and timestamp deltas of one, two and more varint bytes."""
    base = 2**41
    batch = build_batch([Record(None, b"v" * size, base + delta) for delta, size in records])
    batch[MAX_TIMESTAMP_POS : MAX_TIMESTAMP_POS + 8] = (-1).to_bytes(8, "big", signed=True)
    header = parse_header(batch)
    batch[CRC_POS : CRC_POS + 4] = compute_crc(
        batch, 0, header.batch_length + LOG_OVERHEAD
    ).to_bytes(4, "big")
    info = validate_produce_payload(batch, max_batch_bytes=1 << 20)
    assert fill_unset_max_timestamps(batch, info).max_timestamp == base + max(d for d, _ in records)


@settings(max_examples=200, deadline=None)
@given(at=st.integers(61, 200), byte=st.integers(0, 255))
def test_damaged_records_are_corrupt_or_read_never_another_error(at: int, byte: int) -> None:
    """A records block that lies (bytes changed, CRC made to match) is CorruptRecordError or
    gives some timestamp; nothing else escapes."""
    payload = sarama_batch([5, 9, 3, 2**33], Compression.NONE)
    header = parse_header(payload)
    if at < len(payload):
        payload[at] = byte
    payload[CRC_POS : CRC_POS + 4] = compute_crc(
        payload, 0, header.batch_length + LOG_OVERHEAD
    ).to_bytes(4, "big")
    info = validate_produce_payload(payload, max_batch_bytes=1 << 20)
    try:
        fill_unset_max_timestamps(payload, info)
    except CorruptRecordError:
        pass
