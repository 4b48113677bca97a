"""The records of ``__consumer_offsets``, byte for byte as Kafka's GroupMetadataManager writes
them (a Kafka tool or client that reads the topic decodes them).

Every record has a key and a value, each starting with an int16 schema version; all integers
big-endian, strings int16 length + UTF-8 (-1 = null), bytes int32 length + data::

    OffsetCommitKey v1      version=1 i16 | group string | topic string | partition i32
    OffsetCommitValue v3    version=3 i16 | offset i64 | leader_epoch i32 | metadata string
                            | commit_timestamp i64
    GroupMetadataKey v2     version=2 i16 | group string
    GroupMetadataValue v3   version=3 i16 | protocol_type string | generation i32
                            | protocol string (nullable) | leader string (nullable)
                            | current_state_timestamp i64
                            | members: count i32, per member:
                                member_id string | group_instance_id string (nullable)
                                | client_id string | client_host string
                                | rebalance_timeout i32 | session_timeout i32
                                | subscription bytes | assignment bytes

A null value is a tombstone: the offset was deleted/expired, or the group was removed (the log
cleaner of a compacted topic then drops the key). Key versions 0 and 1 are both offset keys
(same layout), version 2 a group key; older value versions (offset v0-v2, group v0-v2) are
decoded too, as Kafka does when loading.

Encoding and decoding go through record_schemas.py (the wire protocol's schema compiler).
Pure functions; thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from common.protocol.fields import BYTES, INT32, INT64, STRING, F
from data_plane.coordinator.record_schemas import decode_versioned, encode_versioned, record_version

OFFSET_COMMIT_KEY_VERSION = 1
OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_KEY_VERSION = 2
GROUP_METADATA_VALUE_VERSION = 3

# fmt: off
_OFFSET_KEY = (
    F("group", STRING),
    F("topic", STRING),
    F("partition", INT32),
)
_GROUP_KEY = (
    F("group", STRING),
)
_OFFSET_VALUE = (
    F("offset", INT64),
    F("leader_epoch", INT32, 3, default=-1),
    F("metadata", STRING),
    F("commit_timestamp", INT64),
    F("expire_timestamp", INT64, 1, 1, default=-1),
)
_GROUP_VALUE = (
    F("protocol_type", STRING),
    F("generation", INT32),
    F("protocol", STRING, nullable=0),
    F("leader", STRING, nullable=0),
    F("current_state_timestamp", INT64, 2, default=-1),
    F("members", [
        F("member_id", STRING),
        F("group_instance_id", STRING, 3, nullable=3),
        F("client_id", STRING),
        F("client_host", STRING),
        F("rebalance_timeout", INT32, 1),
        F("session_timeout", INT32),
        F("subscription", BYTES),
        F("assignment", BYTES),
    ]),
)
# fmt: on


class InvalidOffsetsRecordError(ValueError):
    """A ``__consumer_offsets`` record this broker cannot decode (unknown version, truncated)."""


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group: str


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """A committed offset (OffsetCommitValue)."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp_ms: int = -1


@dataclass(frozen=True, slots=True)
class MemberRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp_ms: int
    members: tuple[MemberRecord, ...] = field(default=())


def _encode(version: int, fields: tuple[F, ...], name: str, body: dict[str, Any]) -> bytes:
    return encode_versioned(version, fields, name, body)


def _decode(data: bytes, fields: tuple[F, ...], name: str, version: int) -> dict[str, Any]:
    return decode_versioned(data, fields, name, version, InvalidOffsetsRecordError)


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return _encode(
        OFFSET_COMMIT_KEY_VERSION,
        _OFFSET_KEY,
        "OffsetCommitKey",
        {"group": group, "topic": topic, "partition": partition},
    )


def offset_commit_value(value: OffsetAndMetadata) -> bytes:
    return _encode(
        OFFSET_COMMIT_VALUE_VERSION,
        _OFFSET_VALUE,
        "OffsetCommitValue",
        {
            "offset": value.offset,
            "leader_epoch": value.leader_epoch,
            "metadata": value.metadata,
            "commit_timestamp": value.commit_timestamp_ms,
        },
    )


def group_metadata_key(group: str) -> bytes:
    return _encode(GROUP_METADATA_KEY_VERSION, _GROUP_KEY, "GroupMetadataKey", {"group": group})


def group_metadata_value(value: GroupMetadataValue) -> bytes:
    members = [
        {
            "member_id": m.member_id,
            "group_instance_id": m.group_instance_id,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "rebalance_timeout": m.rebalance_timeout_ms,
            "session_timeout": m.session_timeout_ms,
            "subscription": m.subscription,
            "assignment": m.assignment,
        }
        for m in value.members
    ]
    return _encode(
        GROUP_METADATA_VALUE_VERSION,
        _GROUP_VALUE,
        "GroupMetadataValue",
        {
            "protocol_type": value.protocol_type,
            "generation": value.generation,
            "protocol": value.protocol,
            "leader": value.leader,
            "current_state_timestamp": value.current_state_timestamp_ms,
            "members": members,
        },
    )


def _version(data: bytes, what: str) -> int:
    return record_version(data, what, InvalidOffsetsRecordError)


def decode_key(data: bytes) -> OffsetKey | GroupKey:
    """An offset key (versions 0-1) or a group key (version 2)."""
    version = _version(data, "key")
    if version in (0, 1):
        d = _decode(data, _OFFSET_KEY, "OffsetCommitKey", version)
        return OffsetKey(d["group"], d["topic"], d["partition"])
    if version == 2:
        return GroupKey(_decode(data, _GROUP_KEY, "GroupMetadataKey", version)["group"])
    raise InvalidOffsetsRecordError(f"unknown __consumer_offsets key version {version}")


def decode_offset_value(data: bytes) -> OffsetAndMetadata:
    version = _version(data, "offset value")
    if not 0 <= version <= 3:
        raise InvalidOffsetsRecordError(f"unknown offset commit value version {version}")
    d = _decode(data, _OFFSET_VALUE, "OffsetCommitValue", version)
    return OffsetAndMetadata(
        d["offset"], d.get("leader_epoch", -1), d["metadata"] or "", d["commit_timestamp"]
    )


def decode_group_value(data: bytes) -> GroupMetadataValue:
    version = _version(data, "group value")
    if not 0 <= version <= 3:
        raise InvalidOffsetsRecordError(f"unknown group metadata value version {version}")
    d = _decode(data, _GROUP_VALUE, "GroupMetadataValue", version)
    members = tuple(
        MemberRecord(
            m["member_id"],
            m.get("group_instance_id"),
            m["client_id"],
            m["client_host"],
            m.get("rebalance_timeout", m["session_timeout"]),
            m["session_timeout"],
            bytes(m["subscription"] or b""),
            bytes(m["assignment"] or b""),
        )
        for m in d["members"] or ()
    )
    return GroupMetadataValue(
        d["protocol_type"],
        d["generation"],
        d["protocol"],
        d["leader"],
        d.get("current_state_timestamp", -1),
        members,
    )
