"""The columnar decoder against the storage decoder: same records, every layout."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.compression import Compression
from common.record_batch import LOG_APPEND_TIME, iter_batch_headers
from data_plane.storage import Record, build_batch, decode_records
from spark_integration.columnar import Columns, CorruptDataError, decode_columns

BASE_TS = 1_700_000_000_000


def _expected(payload: bytes, lo: int, hi: int) -> list[tuple]:
    out = []
    for h in iter_batch_headers(payload, allow_partial_tail=True):
        _hdr, records = decode_records(payload, h.position)
        ts_type = 1 if h.timestamp_type == LOG_APPEND_TIME else 0
        out.extend(
            (r.offset, r.timestamp, ts_type, r.key, r.value, r.headers)
            for r in records
            if lo <= r.offset < hi
        )
    return out


def _rows(c: Columns) -> list[tuple]:
    headers = c.headers if c.headers is not None else [()] * len(c)
    return list(
        zip(
            c.offsets.tolist(),
            c.timestamps_ms.tolist(),
            c.timestamp_types.tolist(),
            c.keys.to_list(),
            c.values.to_list(),
            headers,
            strict=True,
        )
    )


def _payload(batches: list[list[Record]], **kwargs: object) -> bytes:
    out = bytearray()
    offset = 0
    for records in batches:
        out += build_batch(records, base_offset=offset, **kwargs)  # type: ignore[arg-type]
        offset += len(records)
    return bytes(out)


def _fixed(n: int, key_len: int | None = 8, value_len: int = 100, ts_step: int = 0) -> list[Record]:
    return [
        Record(
            None if key_len is None else (b"k%07d" % i)[:key_len].ljust(key_len, b"k"),
            (b"v%d-" % i).ljust(value_len, b"x"),
            BASE_TS + i * ts_step,
        )
        for i in range(n)
    ]


@pytest.mark.parametrize(
    "records",
    [
        _fixed(500),  # offset deltas from 64 on take two varint bytes: several runs
        _fixed(300, key_len=None),  # null keys
        _fixed(200, ts_step=1),  # timestamp deltas of growing width
        _fixed(3),  # too short for the fast path
        [Record(b"k", b"v" * (i % 7), BASE_TS) for i in range(100)],  # varied sizes
        [Record(b"k", None, BASE_TS, (("h", b"x"), ("n", None))) for _ in range(50)],
    ],
    ids=["fixed", "null-keys", "ts-deltas", "short", "varied", "headers-and-null-values"],
)
@pytest.mark.parametrize("compression", list(Compression))
def test_same_records_as_the_storage_decoder(records: list[Record], compression: int) -> None:
    payload = _payload([records, records[: len(records) // 2 + 1]], compression=compression)
    got = decode_columns(payload, 0, 1 << 40, with_headers=True)
    assert _rows(got) == _expected(payload, 0, 1 << 40)
    assert got.next_offset == len(records) + len(records) // 2 + 1


def test_window_keeps_only_the_requested_offsets_and_ignores_a_partial_tail() -> None:
    payload = _payload([_fixed(200), _fixed(200), _fixed(200)])
    cut = payload[: len(payload) - 10]  # the third batch is partial
    got = decode_columns(cut, 150, 330)
    assert got.offsets.tolist() == list(range(150, 330))
    assert _rows(got) == _expected(payload, 150, 330)
    assert got.headers is None
    assert got.next_offset == 400  # after the last whole batch


def test_log_append_time_batches_report_the_batch_timestamp() -> None:
    payload = bytes(
        build_batch(
            _fixed(100, ts_step=3), timestamp_type=LOG_APPEND_TIME, log_append_time_ms=BASE_TS + 7
        )
    )
    got = decode_columns(payload, 0, 100)
    assert set(got.timestamps_ms.tolist()) == {BASE_TS + 7}
    assert set(got.timestamp_types.tolist()) == {1}


def test_control_batches_are_skipped() -> None:
    control = build_batch(
        [Record(b"\x00\x00\x00\x00", b"", BASE_TS)],
        is_control=True,
        producer_id=1,
        producer_epoch=0,
        base_offset=0,
    )
    data = build_batch(_fixed(10), base_offset=1)
    got = decode_columns(bytes(control + data), 0, 100)
    assert got.offsets.tolist() == list(range(1, 11))


def test_a_corrupt_batch_raises() -> None:
    payload = bytearray(_payload([_fixed(20)]))
    payload[100] ^= 0xFF
    with pytest.raises(CorruptDataError, match="CRC"):
        decode_columns(bytes(payload), 0, 100)


def test_batches_framed_by_prediction_and_by_walking_mix_in_one_payload() -> None:
    """Uniform batches are framed by the predicted-and-checked path, the others (varied sizes,
    timestamp deltas that change width mid-batch, 3-byte offset deltas and lengths) by the
    record-by-record walk; the two must agree with the storage decoder side by side."""
    batches = [
        _fixed(300),
        [Record(b"k", b"v" * (i % 9), BASE_TS) for i in range(120)],
        _fixed(9000, key_len=3),  # offset deltas from 8192 on take three varint bytes
        _fixed(150, ts_step=1),
        [Record(None, b"w" * 20_000, BASE_TS) for _ in range(20)],  # 3-byte record lengths
        _fixed(70, key_len=None),
    ]
    payload = _payload(batches)
    total = sum(len(b) for b in batches)
    got = decode_columns(payload, 0, total)
    assert _rows(got) == _expected(payload, 0, total)


@pytest.mark.parametrize("delta", [1, -1])
def test_a_record_count_that_does_not_match_the_records_raises(delta: int) -> None:
    payload = bytearray(_payload([_fixed(100)]))
    count_at = 57  # records count: the header's last field (the CRC is not checked here)
    count = int.from_bytes(payload[count_at : count_at + 4], "big")
    payload[count_at : count_at + 4] = (count + delta).to_bytes(4, "big")
    with pytest.raises(CorruptDataError):
        decode_columns(bytes(payload), 0, 1000, check_crcs=False)


_record = st.builds(
    Record,
    st.one_of(st.none(), st.binary(max_size=20)),
    st.one_of(st.none(), st.binary(max_size=200)),
    st.integers(BASE_TS, BASE_TS + 100_000),
    st.lists(
        st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=5))), max_size=2
    ).map(tuple),
)
_uniform_run = st.builds(
    lambda n, k, v: _fixed(n, k, v),
    st.integers(1, 300),
    st.sampled_from([None, 0, 4]),
    st.integers(0, 150),
)


@settings(max_examples=60, deadline=None)
@given(
    batches=st.lists(
        st.one_of(st.lists(_record, min_size=1, max_size=40), _uniform_run), min_size=1, max_size=4
    ),
    lo=st.integers(0, 400),
    span=st.integers(0, 800),
)
def test_property_matches_the_storage_decoder(
    batches: list[list[Record]], lo: int, span: int
) -> None:
    payload = _payload(batches)
    got = decode_columns(payload, lo, lo + span, with_headers=True)
    assert _rows(got) == _expected(payload, lo, lo + span)


def test_high_bit_bytes_at_a_predicted_record_start_are_not_corruption() -> None:
    """A header key whose UTF-8 is ten bytes with the high bit set, where the framing
    prediction (records of one size) guesses the next record starts: the guess fails and the
    block is walked, instead of the bytes being taken for an over-long varint."""
    records = [
        Record(None, b"\x00" * 6, BASE_TS + 65, ()),
        Record(None, None, BASE_TS, (("00", None), ("", b"\x00\x00\x00"))),
        Record(None, None, BASE_TS, (("\x80\x80\x80\U00010000", None),)),
        Record(None, None, BASE_TS, ()),
    ]
    payload = _payload([records])
    got = decode_columns(payload, 0, 1, with_headers=True)
    assert _rows(got) == _expected(payload, 0, 1)


def test_read_committed_drops_aborted_transactions_like_the_client_decoder() -> None:
    """The Arrow path and the row path (the native client's decoder) keep the same records of
    a payload with an aborted transaction, a committed one, markers and a plain batch."""
    from spark_integration.rows import to_tuples
    from tests.unit.client.txn_payloads import (
        ABORTED,
        ALL_DATA_OFFSETS,
        COMMITTED_OFFSETS,
        mixed_payload,
    )

    payload = mixed_payload()
    committed = decode_columns(payload, 0, 100, aborted_transactions=ABORTED)
    assert committed.offsets.tolist() == COMMITTED_OFFSETS
    assert committed.values.to_list() == [b"2-2", b"1-5", b"plain"]
    rows = list(to_tuples(payload, "t", 0, 0, 100, False, ABORTED))
    assert [r[4] for r in rows] == COMMITTED_OFFSETS
    # Without the list (read_uncommitted) every data record; control batches never show.
    assert decode_columns(payload, 0, 100).offsets.tolist() == ALL_DATA_OFFSETS
    # A range starting inside the aborted transaction still drops it.
    assert decode_columns(payload, 1, 100, aborted_transactions=ABORTED).offsets.tolist() == (
        COMMITTED_OFFSETS
    )
