"""The ``__consumer_offsets`` records of KIP-848 consumer groups, in Kafka's layouts (key
versions 3-8), and which of them a group's change needs.

Keys are non-flexible (int16 version, then int16-length strings); values are flexible version
0 (compact strings and arrays, an empty tagged-field section after each struct)::

    3 ConsumerGroupMetadataKey               group        -> Epoch i32
    4 ConsumerGroupPartitionMetadataKey      group        -> Topics [TopicId uuid, TopicName,
                                                             NumPartitions i32,
                                                             PartitionMetadata []]
    5 ConsumerGroupMemberMetadataKey         group member -> InstanceId?, RackId?, ClientId,
                                                             ClientHost, SubscribedTopicNames [],
                                                             SubscribedTopicRegex?,
                                                             RebalanceTimeoutMs i32,
                                                             ServerAssignor?
    6 ConsumerGroupTargetAssignmentMetadataKey group      -> AssignmentEpoch i32
    7 ConsumerGroupTargetAssignmentMemberKey group member -> TopicPartitions [TopicId, [i32]]
    8 ConsumerGroupCurrentMemberAssignmentKey group member -> MemberEpoch i32,
                                                             PreviousMemberEpoch i32, State i8,
                                                             AssignedPartitions [..],
                                                             PartitionsPendingRevocation [..]

A null value is a tombstone (a member left, the group was removed). :func:`changed_records`
gives the records that bring what a group last persisted (``ConsumerGroup.persisted``) to its
current state, and records that state as persisted; :func:`restore` rebuilds a group from the
latest value of each key.

Pure functions over the group object; not thread-safe (the coordinator's loop owns groups).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from common.protocol.fields import ARRAY, INT8, INT32, STRING, UUID, F
from data_plane.coordinator.consumer_group import (
    STATIC_LEAVE_EPOCH,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    Partitions,
    PersistedGroup,
)
from data_plane.coordinator.group_metadata_records import InvalidOffsetsRecordError
from data_plane.coordinator.record_schemas import (
    decode_versioned,
    encode_versioned,
    record_version,
)

GROUP_EPOCH_KEY = 3
PARTITION_METADATA_KEY = 4
MEMBER_METADATA_KEY = 5
TARGET_EPOCH_KEY = 6
TARGET_MEMBER_KEY = 7
CURRENT_ASSIGNMENT_KEY = 8
FIRST_CONSUMER_GROUP_KEY, LAST_CONSUMER_GROUP_KEY = GROUP_EPOCH_KEY, CURRENT_ASSIGNMENT_KEY
GROUP_KEYS = (GROUP_EPOCH_KEY, PARTITION_METADATA_KEY, TARGET_EPOCH_KEY)
MEMBER_KEYS = (MEMBER_METADATA_KEY, TARGET_MEMBER_KEY, CURRENT_ASSIGNMENT_KEY)
VALUE_VERSION = 0
# Kafka's MemberState bytes.
STATE_BYTES = {
    MemberState.STABLE: 1,
    MemberState.UNREVOKED_PARTITIONS: 2,
    MemberState.UNRELEASED_PARTITIONS: 3,
}
STATES_BY_BYTE = {v: k for k, v in STATE_BYTES.items()}

Records = list[tuple[bytes, bytes | None]]

# fmt: off
_GROUP_KEY = (F("group", STRING),)
_MEMBER_KEY = (F("group", STRING), F("member_id", STRING))


def _topic_partitions() -> list[F]:
    # A fresh field list per use: the codec compiler keys its plans by field object.
    return [F("topic_id", UUID), F("partitions", ARRAY(INT32))]


_VALUES: dict[int, tuple[F, ...]] = {
    GROUP_EPOCH_KEY: (F("epoch", INT32),),
    PARTITION_METADATA_KEY: (
        F("topics", [
            F("topic_id", UUID),
            F("topic_name", STRING),
            F("num_partitions", INT32),
            F("partition_metadata", [F("partition", INT32), F("racks", ARRAY(STRING))]),
        ]),
    ),
    MEMBER_METADATA_KEY: (
        F("instance_id", STRING, nullable=0),
        F("rack_id", STRING, nullable=0),
        F("client_id", STRING),
        F("client_host", STRING),
        F("subscribed_topic_names", ARRAY(STRING)),
        F("subscribed_topic_regex", STRING, nullable=0),
        F("rebalance_timeout_ms", INT32, default=-1),
        F("server_assignor", STRING, nullable=0),
    ),
    TARGET_EPOCH_KEY: (F("assignment_epoch", INT32),),
    TARGET_MEMBER_KEY: (F("topic_partitions", _topic_partitions()),),
    CURRENT_ASSIGNMENT_KEY: (
        F("member_epoch", INT32),
        F("previous_member_epoch", INT32),
        F("state", INT8),
        F("assigned_partitions", _topic_partitions()),
        F("partitions_pending_revocation", _topic_partitions()),
    ),
}
# fmt: on
_NAMES = {
    GROUP_EPOCH_KEY: "ConsumerGroupMetadata",
    PARTITION_METADATA_KEY: "ConsumerGroupPartitionMetadata",
    MEMBER_METADATA_KEY: "ConsumerGroupMemberMetadata",
    TARGET_EPOCH_KEY: "ConsumerGroupTargetAssignmentMetadata",
    TARGET_MEMBER_KEY: "ConsumerGroupTargetAssignmentMember",
    CURRENT_ASSIGNMENT_KEY: "ConsumerGroupCurrentMemberAssignment",
}


@dataclass(frozen=True, slots=True)
class ConsumerGroupKey:
    """A decoded key of versions 3-8 (``member_id`` None for the group-level ones)."""

    kind: int
    group: str
    member_id: str | None = None


def record_kind(key: bytes) -> int:
    """A ``__consumer_offsets`` key's version, which names its record type."""
    return record_version(key, "key", InvalidOffsetsRecordError)


def encode_key(kind: int, group: str, member_id: str | None = None) -> bytes:
    if kind in GROUP_KEYS:
        return encode_versioned(kind, _GROUP_KEY, _NAMES[kind] + "Key", {"group": group})
    body = {"group": group, "member_id": member_id or ""}
    return encode_versioned(kind, _MEMBER_KEY, _NAMES[kind] + "Key", body)


def decode_key(kind: int, data: bytes) -> ConsumerGroupKey:
    fields = _GROUP_KEY if kind in GROUP_KEYS else _MEMBER_KEY
    d = decode_versioned(data, fields, _NAMES[kind] + "Key", kind, InvalidOffsetsRecordError)
    return ConsumerGroupKey(kind, d["group"], d.get("member_id"))


def encode_value(kind: int, body: dict[str, Any]) -> bytes:
    return encode_versioned(VALUE_VERSION, _VALUES[kind], _NAMES[kind] + "Value", body, True)


def decode_value(kind: int, data: bytes) -> dict[str, Any]:
    if record_version(data, "value", InvalidOffsetsRecordError) != VALUE_VERSION:
        raise InvalidOffsetsRecordError(f"{_NAMES[kind]}Value: unknown version")
    return decode_versioned(
        data, _VALUES[kind], _NAMES[kind] + "Value", VALUE_VERSION, InvalidOffsetsRecordError, True
    )


def _parts_out(parts: Partitions) -> list[dict[str, Any]]:
    return [
        {"topic_id": tid.bytes, "partitions": sorted(ps)}
        for tid, ps in sorted(parts.items(), key=lambda kv: kv[0].bytes)
    ]


def _parts_in(entries: list[dict[str, Any]] | None) -> Partitions:
    out: Partitions = {}
    for e in entries or ():
        tid = uuid.UUID(bytes=bytes(e["topic_id"]))
        out[tid] = out.get(tid, frozenset()) | frozenset(e.get("partitions") or ())
    return out


def _member_metadata(m: ConsumerMember) -> dict[str, Any]:
    return {
        "instance_id": m.instance_id,
        "rack_id": m.rack_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "subscribed_topic_names": list(m.subscribed_topic_names),
        "subscribed_topic_regex": m.subscribed_topic_regex,
        "rebalance_timeout_ms": m.rebalance_timeout_ms,
        "server_assignor": m.server_assignor,
    }


def _current(m: ConsumerMember) -> dict[str, Any]:
    # A static member that left with epoch -2 is written at that epoch (as Kafka does), its
    # own epoch kept in the previous epoch's place: only a rejoin of its instance reads it.
    if m.static_leaving:
        epoch, previous = STATIC_LEAVE_EPOCH, m.member_epoch
    else:
        epoch, previous = m.member_epoch, m.previous_member_epoch
    return {
        "member_epoch": epoch,
        "previous_member_epoch": previous,
        "state": STATE_BYTES[m.state],
        "assigned_partitions": _parts_out(m.assigned),
        "partitions_pending_revocation": _parts_out(m.pending_revocation),
    }


def _metadata(group: ConsumerGroup) -> dict[str, Any]:
    return {
        "topics": [
            {
                "topic_id": tid.bytes,
                "topic_name": name,
                "num_partitions": n,
                "partition_metadata": [],
            }
            for tid, name, n in sorted(group.subscription_metadata, key=lambda t: t[0].bytes)
        ]
    }


def changed_records(group: ConsumerGroup) -> Records:
    """The records from what ``group`` last persisted to its state now (tombstones for gone
    members); ``group.persisted`` is then that state. Members leaving with their static
    instance kept are persisted like the others."""
    was = group.persisted
    now = _snapshot(group)
    gid = group.group_id
    out: Records = []

    def put(kind: int, body: dict[str, Any], member_id: str | None = None) -> None:
        out.append((encode_key(kind, gid, member_id), encode_value(kind, body)))

    if was.epoch != now.epoch:
        put(GROUP_EPOCH_KEY, {"epoch": now.epoch})
    if was.metadata != now.metadata:
        put(PARTITION_METADATA_KEY, _metadata(group))
    for mid in was.members.keys() - now.members.keys():
        out.extend((encode_key(kind, gid, mid), None) for kind in MEMBER_KEYS)
    for mid in group.members:
        if was.members.get(mid) != now.members[mid]:
            put(MEMBER_METADATA_KEY, now.members[mid], mid)
        if was.targets.get(mid) != now.targets.get(mid):
            put(TARGET_MEMBER_KEY, {"topic_partitions": now.targets.get(mid, [])}, mid)
        if was.current.get(mid) != now.current[mid]:
            put(CURRENT_ASSIGNMENT_KEY, now.current[mid], mid)
    if was.assignment_epoch != now.assignment_epoch:
        put(TARGET_EPOCH_KEY, {"assignment_epoch": now.assignment_epoch})
    group.persisted = now
    return out


def group_tombstones(group_id: str) -> Records:
    """The group-level keys' tombstones (the group is removed or turns classic; its members
    are gone already)."""
    return [(encode_key(kind, group_id), None) for kind in GROUP_KEYS]


def _snapshot(group: ConsumerGroup) -> PersistedGroup:
    return PersistedGroup(
        group.group_epoch,
        group.subscription_metadata,
        group.assignment_epoch,
        {mid: _member_metadata(m) for mid, m in group.members.items()},
        {mid: _parts_out(ps) for mid, ps in group.target.items() if mid in group.members},
        {mid: _current(m) for mid, m in group.members.items()},
    )


def restore(
    group: ConsumerGroup,
    values: dict[tuple[int, str | None], bytes],
    session_deadline_ms: int,
    now_ms: int,
) -> None:
    """Rebuild ``group`` from the latest value of each of its keys ((kind, member id) ->
    value, tombstoned keys left out). Members get until ``session_deadline_ms`` to heartbeat
    to this coordinator; one mid-revocation its rebalance timeout from ``now_ms`` again."""
    if (GROUP_EPOCH_KEY, None) in values:
        group.group_epoch = decode_value(GROUP_EPOCH_KEY, values[(GROUP_EPOCH_KEY, None)])["epoch"]
    if (TARGET_EPOCH_KEY, None) in values:
        body = decode_value(TARGET_EPOCH_KEY, values[(TARGET_EPOCH_KEY, None)])
        group.assignment_epoch = body["assignment_epoch"]
    if (PARTITION_METADATA_KEY, None) in values:
        body = decode_value(PARTITION_METADATA_KEY, values[(PARTITION_METADATA_KEY, None)])
        group.subscription_metadata = frozenset(
            (uuid.UUID(bytes=bytes(t["topic_id"])), t["topic_name"], t["num_partitions"])
            for t in body["topics"] or ()
        )
    member_ids = {mid for kind, mid in values if kind == MEMBER_METADATA_KEY and mid}
    for mid in sorted(member_ids):
        meta = decode_value(MEMBER_METADATA_KEY, values[(MEMBER_METADATA_KEY, mid)])
        m = ConsumerMember(
            mid,
            meta["instance_id"],
            meta["rack_id"],
            meta["client_id"] or "",
            meta["client_host"] or "",
            meta["rebalance_timeout_ms"],
            tuple(meta["subscribed_topic_names"] or ()),
            meta["subscribed_topic_regex"],
            meta["server_assignor"],
        )
        raw = values.get((CURRENT_ASSIGNMENT_KEY, mid))
        if raw is not None:
            cur = decode_value(CURRENT_ASSIGNMENT_KEY, raw)
            m.member_epoch = cur["member_epoch"]
            m.previous_member_epoch = cur["previous_member_epoch"]
            if m.member_epoch == STATIC_LEAVE_EPOCH:
                m.static_leaving = True
                m.member_epoch = m.previous_member_epoch
            m.state = STATES_BY_BYTE.get(cur["state"], MemberState.STABLE)
            m.assigned = _parts_in(cur["assigned_partitions"])
            m.pending_revocation = _parts_in(cur["partitions_pending_revocation"])
        m.session_deadline_ms = session_deadline_ms
        if m.state is MemberState.UNREVOKED_PARTITIONS:
            m.revocation_deadline_ms = now_ms + m.rebalance_timeout_ms
        raw = values.get((TARGET_MEMBER_KEY, mid))
        if raw is not None:
            group.target[mid] = _parts_in(decode_value(TARGET_MEMBER_KEY, raw)["topic_partitions"])
        group.add(m)
        group.hold_all(m)
    group.persisted = _snapshot(group)
