"""Inputs and outputs of the group coordinator state machine (plain values, no wire format).

The I/O layer turns decoded Kafka requests into these, calls :class:`GroupCoordinator`, and
turns the results back into response bodies. Every call returns :class:`CoordinatorOutputs`:
results to hand to parked requests (keyed by the opaque ``waiter`` token the caller passed in)
and records to append to ``__consumer_offsets`` (the caller reports each write's outcome back
with ``GroupCoordinator.complete_write``).
"""

from __future__ import annotations

import uuid
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from data_plane.coordinator.group_metadata_records import OffsetAndMetadata


@dataclass(frozen=True, slots=True)
class JoinGroupRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    client_id: str = ""
    client_host: str = ""
    # JoinGroup v4+: a join without member id first gets MEMBER_ID_REQUIRED and an id (KIP-394).
    require_known_member_id: bool = False


@dataclass(frozen=True, slots=True)
class JoinMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinGroupResult:
    error_code: int
    generation_id: int = -1
    protocol_name: str | None = None
    leader_id: str = ""
    member_id: str = ""
    members: tuple[JoinMember, ...] = ()


@dataclass(frozen=True, slots=True)
class SyncGroupRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    assignments: tuple[tuple[str, bytes], ...]
    # v5+: what the member believes the group's protocol type and name are (None: not said);
    # a mismatch is INCONSISTENT_GROUP_PROTOCOL.
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass(frozen=True, slots=True)
class SyncGroupResult:
    error_code: int
    assignment: bytes = b""
    # The group's protocol type and name, on success (SyncGroup v5+ answers them).
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    # (topic, partition) -> (offset, leader epoch, metadata); the commit time is the broker's.
    offsets: tuple[tuple[tuple[str, int], int, int, str | None], ...]


@dataclass(frozen=True, slots=True)
class TxnOffsetCommitRequest:
    """TxnOffsetCommit: offsets committed as part of producer ``producer_id``'s transaction.
    ``generation_id`` -1 and an empty ``member_id`` skip the group membership checks (request
    versions before KIP-447's v3)."""

    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    offsets: tuple[tuple[tuple[str, int], int, int, str | None], ...]
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class OffsetCommitResult:
    errors: dict[tuple[str, int], int]


@dataclass(frozen=True, slots=True)
class OffsetFetchResult:
    error_code: int
    # (topic, partition) -> committed offset, or None when the group has none for it.
    offsets: dict[tuple[str, int], OffsetAndMetadata | None] = field(default_factory=dict)
    # Asked with require_stable: the partitions among them with a transactional offset
    # commit still pending (their committed offset may change when it completes).
    unstable: frozenset[tuple[str, int]] = frozenset()


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupDescription:
    error_code: int
    group_id: str
    state: str
    protocol_type: str = ""
    protocol_data: str = ""
    members: tuple[MemberDescription, ...] = ()


@dataclass(frozen=True, slots=True)
class DeleteGroupsResult:
    errors: dict[str, int]


@dataclass(frozen=True, slots=True)
class OffsetDeleteResult:
    """OffsetDelete's answer: a group-level error, else one error per requested partition."""

    error_code: int
    partition_errors: dict[tuple[str, int], int]


@dataclass(frozen=True, slots=True)
class RecordWrite:
    """Append ``records`` (key, value-or-None) to the coordinator's partition ``partition``
    with acks=all, then call ``complete_write(write_id, error_code)``."""

    write_id: int
    partition: int
    records: tuple[tuple[bytes, bytes | None], ...]
    # A transactional write (TxnOffsetCommit): the batch carries the producer's id and epoch
    # and stays pending until the transaction's marker. -1: an ordinary write.
    producer_id: int = -1
    producer_epoch: int = -1


@dataclass(slots=True)
class CoordinatorOutputs:
    responses: list[tuple[Hashable, Any]] = field(default_factory=list)
    writes: list[RecordWrite] = field(default_factory=list)

    def respond(self, waiter: Hashable, result: Any) -> None:
        self.responses.append((waiter, result))

    def extend(self, other: CoordinatorOutputs) -> None:
        self.responses.extend(other.responses)
        self.writes.extend(other.writes)


@dataclass(frozen=True, slots=True)
class ConsumerHeartbeatRequest:
    """ConsumerGroupHeartbeat (KIP-848). None in a field: not changed since the last heartbeat."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    # topic id -> partitions the member owns; None: not said.
    owned: dict[uuid.UUID, frozenset[int]] | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class ConsumerHeartbeatResult:
    error_code: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    # topic id -> partitions the member may own now; None: unchanged, not sent.
    assignment: dict[uuid.UUID, frozenset[int]] | None = None


@dataclass(frozen=True, slots=True)
class ConsumerMemberDescription:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: dict[uuid.UUID, frozenset[int]]
    target_assignment: dict[uuid.UUID, frozenset[int]]


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescription:
    error_code: int
    group_id: str
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[ConsumerMemberDescription, ...] = ()
    error_message: str | None = None
