from __future__ import annotations

import pytest

from data_plane.storage.record_codec import Record, build_batch
from kraftlog_client.record_decoder import decode_fetched
from kraftlog_client.record_types import ConsumerRecord


def test_fields_by_name_and_position() -> None:
    r = ConsumerRecord.create("t", 2, 10, 1234, 0, b"k", b"v", (("h", None),), 7)
    assert (r.topic, r.partition, r.offset, r.timestamp, r.timestamp_type) == ("t", 2, 10, 1234, 0)
    assert (r.key, r.value, r.headers, r.leader_epoch) == (b"k", b"v", (("h", None),), 7)
    assert tuple(r) == ("t", 2, 10, 1234, 0, b"k", b"v", (("h", None),), 7)
    assert r._asdict()["offset"] == 10 and list(r._asdict()) == list(ConsumerRecord._fields)
    assert repr(r).startswith("ConsumerRecord(topic='t', partition=2, offset=10,")
    assert ConsumerRecord.create("t", 0, 1, 5, 0, None, b"v").headers == ()
    assert ConsumerRecord.create("t", 0, 1, 5, 0, None, b"v").leader_epoch == -1


def test_records_are_immutable_and_compare_by_fields() -> None:
    a = ConsumerRecord.create("t", 0, 1, 5, 0, None, b"v")
    assert a == ConsumerRecord(("t", 0, 1, 5, 0, None, b"v", (), -1))
    assert a != ConsumerRecord.create("t", 0, 2, 5, 0, None, b"v")
    with pytest.raises(AttributeError):
        a.offset = 3  # type: ignore[misc]


@pytest.mark.parametrize("count", [3, 50])  # the general loop and a uniform run
def test_decoded_records_carry_the_batch_leader_epoch(count: int) -> None:
    batch = build_batch(
        [Record(None, b"x" * 20, 100 + i) for i in range(count)],
        base_offset=5,
        partition_leader_epoch=9,
    )
    records = decode_fetched("t", 0, bytes(batch), 0).records
    assert [r.offset for r in records] == list(range(5, 5 + count))
    assert {r.leader_epoch for r in records} == {9}
    assert all(type(r) is ConsumerRecord for r in records)
