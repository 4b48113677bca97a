"""A classic group as its ``__consumer_offsets`` GroupMetadata record (Kafka's
GroupMetadataValue, :mod:`data_plane.coordinator.group_metadata_records`), and back.

The record holds the generation, the chosen protocol, the leader, when the group entered its
state, and each member with its subscription (in the chosen protocol) and assignment; it is
written when a generation gets its assignment (or ends empty) and when a static member is
replaced, so loading it gives the last Stable (or Empty) generation.

Pure functions; thread-safe on distinct groups.
"""

from __future__ import annotations

from data_plane.coordinator.group import GroupMetadata, GroupState, MemberMetadata
from data_plane.coordinator.group_metadata_records import (
    GroupMetadataValue,
    MemberRecord,
    group_metadata_key,
    group_metadata_value,
)
from data_plane.coordinator.record_writes import Records


def restore_classic_group(group: GroupMetadata, value: GroupMetadataValue, now: int) -> None:
    """Rebuild a loaded classic group from its last GroupMetadata record."""
    group.generation_id = value.generation
    group.protocol_type = value.protocol_type or None
    group.protocol_name = value.protocol
    if value.current_state_timestamp_ms >= 0:
        group.state_timestamp_ms = value.current_state_timestamp_ms
    for m in value.members:
        protocols = [(value.protocol or "", m.subscription)]
        group.add(
            MemberMetadata(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                value.protocol_type,
                protocols,
                # Members get a full session to find the new coordinator.
                last_heartbeat_ms=now,
                assignment=m.assignment,
            )
        )
    group.leader_id = value.leader if value.leader in group.members else group.leader_id
    group.state = GroupState.STABLE if group.members else GroupState.EMPTY


def classic_group_record(group: GroupMetadata, assignments: dict[str, bytes]) -> Records:
    """The group's GroupMetadata record with ``assignments`` (member id -> assignment)."""
    protocol = group.protocol_name
    members = tuple(
        MemberRecord(
            m.member_id,
            m.group_instance_id,
            m.client_id,
            m.client_host,
            m.rebalance_timeout_ms,
            m.session_timeout_ms,
            m.metadata_for(protocol) if protocol is not None else b"",
            assignments.get(m.member_id, b""),
        )
        for m in group.members.values()
    )
    value = GroupMetadataValue(
        group.protocol_type or "",
        group.generation_id,
        protocol,
        group.leader_id,
        group.state_timestamp_ms,
        members,
    )
    return [(group_metadata_key(group.group_id), group_metadata_value(value))]
