from __future__ import annotations

import uuid

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from metadata.records import (
    NO_LEADER_CHANGE,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    Listener,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RecordDecodeError,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnknownRecordError,
    UnregisterBrokerRecord,
    decode_record,
    encode_record,
)
from metadata.snapshot import decode_entry
from raft.api import LeaderChange, LogEntry

TID = uuid.UUID("12345678-1234-4234-8234-123456789abc")

EXAMPLES = [
    RegisterBrokerRecord(1, "inc", 7, (Listener("PLAINTEXT", "h", 9092),), "r1", True, False),
    RegisterBrokerRecord(2, "inc2", 8, (), None, False, True),
    UnregisterBrokerRecord(1, 7),
    TopicRecord("t", TID),
    PartitionRecord(0, TID, (1, 2, 3), (1, 2), 1, 4, 5),
    ConfigRecord(2, "t", "retention.ms", "100"),
    ConfigRecord(2, "t", "retention.ms", None),
    PartitionChangeRecord(3, TID, (1,), NO_LEADER_CHANGE, None),
    PartitionChangeRecord(3, TID, None, -1, (1, 2)),
    RemoveTopicRecord(TID),
    ProducerIdsRecord(1, 7, 2000),
    BrokerRegistrationChangeRecord(1, 7, True, None),
    NoOpRecord(),
]


@pytest.mark.parametrize("record", EXAMPLES, ids=lambda r: type(r).__name__)
def test_roundtrip(record: object) -> None:
    data = encode_record(record)  # type: ignore[arg-type]
    assert decode_record(data) == record
    assert encode_record(decode_record(data)) == data


def test_type_ids_follow_kafka() -> None:
    assert TopicRecord.TYPE_ID == 2
    assert PartitionRecord.TYPE_ID == 3
    assert PartitionChangeRecord.TYPE_ID == 5
    assert msgpack.unpackb(encode_record(TopicRecord("t", TID)))[:2] == [2, 0]


def test_unknown_type_or_version_is_reported_not_crashed() -> None:
    with pytest.raises(UnknownRecordError) as info:
        decode_record(msgpack.packb([99, 0, 1, 2]))
    assert info.value.type_id == 99
    with pytest.raises(UnknownRecordError):
        decode_record(msgpack.packb([2, 7, "t", TID.bytes, "new field"]))
    entry = LogEntry(5, 1, msgpack.packb([99, 0]))
    assert decode_entry(entry) is None


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\xc1",
        msgpack.packb({"a": 1}),
        msgpack.packb([2]),
        msgpack.packb([2, 0, "t"]),
        msgpack.packb([2, 0, 5, TID.bytes]),
        msgpack.packb([2, 0, "t", b"short"]),
        msgpack.packb([3, 0, 0, TID.bytes, [1, "x"], [1], 1, 0, 0]),
        msgpack.packb([3, 0, 0, TID.bytes, [1], [1], True, 0, 0]),
        msgpack.packb([0, 0, 1, "i", 1, [["a", "h"]], None, True, False]),
    ],
)
def test_malformed_records_raise_decode_error(data: bytes) -> None:
    with pytest.raises(RecordDecodeError):
        decode_record(data)


def test_control_entries_are_not_metadata_records() -> None:
    lc = LeaderChange(1, 3, b"127.0.0.1:1").encode()
    assert decode_entry(LogEntry(0, 3, lc, is_control=True)) is None


@given(st.binary(max_size=200))
def test_garbage_never_escapes_as_other_exceptions(data: bytes) -> None:
    try:
        decode_record(data)
    except RecordDecodeError:
        pass
