from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.compression import Compression
from common.varint import encode_varint
from data_plane.storage.record_codec import Record, build_batch
from kraftlog_client.record_encoder import RecordBatchBuilder, encode_record, zigzag_varint

headers_st = st.lists(
    st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=16))), max_size=3
)
record_st = st.tuples(
    st.integers(min_value=0, max_value=1 << 41),
    st.one_of(st.none(), st.binary(max_size=40)),
    st.one_of(st.none(), st.binary(max_size=300)),
    headers_st,
)


def _both(records: list[tuple[int, bytes | None, bytes | None, list]], codec: int) -> None:
    builder = RecordBatchBuilder()
    for ts, key, value, headers in records:
        builder.append(ts, key, value, headers)
    expected = build_batch(
        [Record(key, value, ts, tuple(headers)) for ts, key, value, headers in records],
        compression=codec,
    )
    assert bytes(builder.build(codec)) == bytes(expected)


@settings(max_examples=150, deadline=None)
@given(st.lists(record_st, min_size=1, max_size=20))
def test_uncompressed_batches_are_byte_identical_to_storage_builder(records: list) -> None:
    _both(records, Compression.NONE)


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP, Compression.ZSTD])
def test_compressed_batches_are_byte_identical(codec: int) -> None:
    records = [
        (
            1_700_000_000_000 + i * 3,
            f"k{i}".encode() if i % 3 else None,
            b"v" * (i * 7),
            [("trace", b"x")] if i % 5 == 0 else [],
        )
        for i in range(300)
    ]
    _both(records, codec)


def test_large_fields_and_out_of_order_timestamps_use_the_varint_fallback() -> None:
    records = [
        (5_000, b"k" * 70_000, b"v" * 200_000, [("h", None)]),
        (1_000, None, None, []),  # negative timestamp delta
        (5_000 + (1 << 20), b"", b"", []),  # delta beyond the precomputed table
    ]
    _both(records, Compression.NONE)


def test_zigzag_varint_matches_storage_varint() -> None:
    for value in [0, 1, -1, 63, -64, 64, 300, -300, 1 << 40, -(1 << 63), (1 << 63) - 1]:
        out = bytearray()
        encode_varint(value, out)
        assert zigzag_varint(value) == bytes(out)
    with pytest.raises(ValueError):
        zigzag_varint(1 << 63)


def test_encode_record_is_length_prefixed() -> None:
    encoded = encode_record(0, 0, None, b"abc", None)
    assert encoded[0] // 2 == len(encoded) - 1


def test_empty_builder_cannot_build() -> None:
    with pytest.raises(ValueError):
        RecordBatchBuilder().build()
