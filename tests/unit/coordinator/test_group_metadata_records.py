"""__consumer_offsets record formats: round trips, and records laid out by hand from Kafka's
schemas (GroupMetadataManager's key/value versions) decode to the same values."""

from __future__ import annotations

import struct

import pytest

from data_plane.coordinator.group_metadata_records import (
    GroupKey,
    GroupMetadataValue,
    InvalidOffsetsRecordError,
    MemberRecord,
    OffsetAndMetadata,
    OffsetKey,
    decode_group_value,
    decode_key,
    decode_offset_value,
    group_metadata_key,
    group_metadata_value,
    offset_commit_key,
    offset_commit_value,
)


def _s(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def _b(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def test_offset_key_layout_and_round_trip() -> None:
    key = offset_commit_key("grp", "topic-a", 7)
    assert key == struct.pack(">h", 1) + _s("grp") + _s("topic-a") + struct.pack(">i", 7)
    assert decode_key(key) == OffsetKey("grp", "topic-a", 7)
    # Version 0 keys (older Kafka) have the same layout.
    v0 = struct.pack(">h", 0) + _s("g") + _s("t") + struct.pack(">i", 0)
    assert decode_key(v0) == OffsetKey("g", "t", 0)


def test_offset_value_v3_layout_and_round_trip() -> None:
    value = OffsetAndMetadata(12345, 4, "meta", 1_700_000_000_000)
    raw = offset_commit_value(value)
    expected = struct.pack(">hqi", 3, 12345, 4) + _s("meta") + struct.pack(">q", 1_700_000_000_000)
    assert raw == expected
    assert decode_offset_value(raw) == value


def test_offset_value_v1_written_by_old_kafka_decodes() -> None:
    # v1: offset, metadata, commit_timestamp, expire_timestamp (no leader epoch).
    raw = struct.pack(">hq", 1, 99) + _s("") + struct.pack(">qq", 1000, 2000)
    assert decode_offset_value(raw) == OffsetAndMetadata(99, -1, "", 1000)


def test_group_value_v3_layout_and_round_trip() -> None:
    member = MemberRecord("m-1", "inst-1", "client", "/127.0.0.1", 30000, 10000, b"sub", b"asg")
    value = GroupMetadataValue("consumer", 5, "range", "m-1", 1_700_000_000_123, (member,))
    raw = group_metadata_value(value)
    expected = (
        struct.pack(">h", 3)
        + _s("consumer")
        + struct.pack(">i", 5)
        + _s("range")
        + _s("m-1")
        + struct.pack(">q", 1_700_000_000_123)
        + struct.pack(">i", 1)
        + _s("m-1")
        + _s("inst-1")
        + _s("client")
        + _s("/127.0.0.1")
        + struct.pack(">ii", 30000, 10000)
        + _b(b"sub")
        + _b(b"asg")
    )
    assert raw == expected
    assert decode_group_value(raw) == value
    key = group_metadata_key("my-group")
    assert key == struct.pack(">h", 2) + _s("my-group")
    assert decode_key(key) == GroupKey("my-group")


def test_empty_group_value_has_null_protocol_and_leader() -> None:
    value = GroupMetadataValue("consumer", 2, None, None, 10, ())
    assert decode_group_value(group_metadata_value(value)) == value


def test_group_value_v0_decodes() -> None:
    # v0: no rebalance timeout (defaults to the session timeout), no state timestamp.
    raw = (
        struct.pack(">h", 0)
        + _s("consumer")
        + struct.pack(">i", 1)
        + _s("range")
        + _s("m")
        + struct.pack(">i", 1)
        + _s("m")
        + _s("c")
        + _s("h")
        + struct.pack(">i", 6000)
        + _b(b"s")
        + _b(b"a")
    )
    v = decode_group_value(raw)
    assert v.members[0].rebalance_timeout_ms == 6000
    assert v.current_state_timestamp_ms == -1
    assert v.members[0].group_instance_id is None


@pytest.mark.parametrize(
    "raw", [b"", b"\x00", struct.pack(">h", 9) + _s("x"), struct.pack(">h", 1) + b"\x00\x05ab"]
)
def test_bad_keys_raise(raw: bytes) -> None:
    with pytest.raises(InvalidOffsetsRecordError):
        decode_key(raw)


def test_bad_values_raise() -> None:
    with pytest.raises(InvalidOffsetsRecordError):
        decode_offset_value(struct.pack(">h", 7))
    with pytest.raises(InvalidOffsetsRecordError):
        decode_group_value(struct.pack(">h", 3) + b"\x00")
