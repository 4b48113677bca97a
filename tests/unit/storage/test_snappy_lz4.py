"""Snappy (xerial framing and plain raw blocks) and LZ4 (frame format) records blocks: round
trips, what other implementations write, bounds on the decompressed size, corrupt input."""

from __future__ import annotations

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.compression import Compression, compress, decompress
from common.errors import CorruptRecordError
from common.record_batch import validate_produce_payload
from common.snappy_lz4 import XERIAL_MAGIC, lz4_decompress, snappy_decompress
from data_plane.storage.record_codec import Record, build_batch, decode_records


@settings(max_examples=60, deadline=None)
@given(
    data=st.binary(max_size=100_000), codec=st.sampled_from([Compression.SNAPPY, Compression.LZ4])
)
def test_round_trip(data: bytes, codec: Compression) -> None:
    assert decompress(codec, compress(codec, data)) == data


def test_snappy_writes_xerial_and_reads_plain_blocks() -> None:
    data = b"kraftlog " * 10_000  # more than one 32 KiB xerial block
    framed = compress(Compression.SNAPPY, data)
    assert framed.startswith(XERIAL_MAGIC)
    assert decompress(Compression.SNAPPY, framed) == data
    plain = bytes(cramjam.snappy.compress_raw(data))  # what librdkafka writes
    assert decompress(Compression.SNAPPY, plain) == data


@pytest.mark.parametrize("codec", [Compression.SNAPPY, Compression.LZ4])
def test_batches_round_trip_through_validation(codec: Compression) -> None:
    records = [Record(b"k%d" % i, b"value-%d" % i * 20, 1_000 + i) for i in range(50)]
    batch = build_batch(records, compression=codec)
    validate_produce_payload(batch, max_batch_bytes=1 << 20)
    assert [r.value for r in decode_records(batch)[1]] == [r.value for r in records]


def test_expansion_beyond_the_bound_is_refused_before_decompressing() -> None:
    big = b"\x00" * (4 << 20)
    with pytest.raises(CorruptRecordError, match="beyond"):
        snappy_decompress(bytes(cramjam.snappy.compress_raw(big)), 1 << 20)
    with pytest.raises(CorruptRecordError, match="beyond"):
        lz4_decompress(bytes(cramjam.lz4.compress(big)), 1 << 20)


@pytest.mark.parametrize(
    ("codec", "data"),
    [
        (Compression.SNAPPY, b"\xff\xff\xff\xff\xff\xff"),  # an over-long length varint
        (Compression.SNAPPY, XERIAL_MAGIC + b"\x00\x00\x00\x01\x00\x00\x00\x01\x7f\xff\xff\xff"),
        (Compression.SNAPPY, b"\x05\x00\x00"),  # declares 5 bytes, does not decode
        (Compression.LZ4, b"\x04\x22\x4d\x18\x64\x40"),  # truncated descriptor
        (Compression.LZ4, b"\x00\x00\x00\x00garbage"),  # not a frame
        (Compression.LZ4, bytes(cramjam.lz4.compress(b"abc" * 100))[:-6]),  # cut short
    ],
)
def test_corrupt_blocks_are_corrupt_records(codec: Compression, data: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        decompress(codec, data)
