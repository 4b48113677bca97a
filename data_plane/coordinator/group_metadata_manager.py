"""GroupMetadataManager: the groups of a group coordinator shard and their membership, the
part of Kafka's GroupMetadataManager that is not offsets. Sans-IO.

It composes one manager per group kind over the shard's :class:`ShardContext`:
:attr:`classic` (:class:`ClassicGroupManager`: JoinGroup, SyncGroup, Heartbeat, LeaveGroup)
and :attr:`consumer` (:class:`ConsumerGroupManager`: KIP-848's ConsumerGroupHeartbeat and
ConsumerGroupDescribe). What concerns a group of any kind is here: its timers, DescribeGroups
and ListGroups, whether it may be deleted and its tombstones, and rebuilding it from the
``__consumer_offsets`` records loaded for it (:class:`GroupRecordsLoad`: the GroupMetadata
record of a classic group, the records of a KIP-848 group). Its offsets are not: they belong to
:class:`~data_plane.coordinator.offset_metadata_manager.OffsetMetadataManager`.

A further kind (KIP-932 share groups) joins as a third manager here, over the same context,
with its own key versions in :class:`GroupRecordsLoad` and its branch in the describe, list
and timer methods.

Thread-safety: none; the coordinator's owner (the broker event loop) serialises access.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from common.error_codes import ErrorCode
from data_plane.coordinator.classic_group_manager import ClassicGroupManager
from data_plane.coordinator.classic_group_records import restore_classic_group
from data_plane.coordinator.config import CLASSIC_PROTOCOL, CONSUMER_PROTOCOL
from data_plane.coordinator.consumer_group_manager import (
    ConsumerGroupManager,
    ConsumerGroupValues,
    consumer_tombstones,
)
from data_plane.coordinator.consumer_group_records import decode_key as decode_consumer_key
from data_plane.coordinator.consumer_protocol import PROTOCOL_TYPE
from data_plane.coordinator.group import GroupMetadata, GroupState
from data_plane.coordinator.group_metadata_records import (
    GroupKey,
    decode_group_value,
    group_metadata_key,
)
from data_plane.coordinator.messages import (
    CoordinatorOutputs,
    GroupDescription,
    MemberDescription,
)
from data_plane.coordinator.record_writes import Records
from data_plane.coordinator.shard_context import ShardContext
from data_plane.coordinator.skipped_records import SkippedRecords


@dataclass(slots=True)
class GroupRecordsLoad:
    """The group records of one partition seen so far while loading it (later records win).
    Values stay bytes until loading completes: in a log not yet compacted most are superseded,
    and decoding only the last one per key halves the load time."""

    # Classic groups: group id -> its last GroupMetadata value (None: tombstoned).
    groups: dict[str, bytes | None] = field(default_factory=dict)
    # KIP-848 groups' records (key versions 3-8): group id -> (kind, member id) -> value.
    consumer: dict[str, ConsumerGroupValues] = field(default_factory=dict)

    def replay_group(self, key: GroupKey, value: bytes | None) -> None:
        self.groups[key.group] = value

    def replay_consumer(self, kind: int, key: bytes, value: bytes | None) -> None:
        """A KIP-848 group's record; raises InvalidOffsetsRecordError when the key does not
        decode."""
        ck = decode_consumer_key(kind, key)
        values = self.consumer.setdefault(ck.group, {})
        if value is None:
            values.pop((kind, ck.member_id), None)
        else:
            values[(kind, ck.member_id)] = value

    def group_ids(self) -> set[str]:
        return self.groups.keys() | self.consumer.keys()


class GroupMetadataManager:
    def __init__(self, ctx: ShardContext) -> None:
        self._ctx = ctx
        self.classic = ClassicGroupManager(ctx)
        self.consumer = ConsumerGroupManager(ctx)

    def group(self, group_id: str) -> GroupMetadata | None:
        """The live group object (for tests and describe tools; do not mutate)."""
        return self._ctx.groups.get(group_id)

    # --- timers -------------------------------------------------------------------------------

    def check_timeouts(self, now: int, out: CoordinatorOutputs) -> None:
        """Every group whose scheduled deadline passed: session expiries, revocation timeouts,
        rebalance and initial-delay deadlines, pending member expiry; then its next deadline
        is scheduled."""
        store = self._ctx.groups
        for gid in store.pop_due(now):
            group = store.get(gid)
            if group is not None and not group.is_(GroupState.DEAD):
                self.consumer.check_timeouts(group, now, out)
                self.classic.check_timeouts(group, now, out)
                store.schedule_next(group)

    # --- loading and unloading ----------------------------------------------------------------

    def load_group(
        self,
        partition: int,
        load: GroupRecordsLoad,
        group_id: str,
        now: int,
        skipped: SkippedRecords,
    ) -> GroupMetadata | None:
        """The group ``load`` holds records of, rebuilt (not yet stored); None when it holds
        none that count (tombstoned, or undecodable)."""
        values = load.consumer.get(group_id)
        consumer = self.consumer.load_group(group_id, values, now, skipped) if values else None
        value = skipped.decode(decode_group_value, load.groups.get(group_id))
        if consumer is None and value is None:
            return None
        group = GroupMetadata(group_id, partition, state_timestamp_ms=now)
        if consumer is not None:
            group.consumer = consumer
            group.protocol_type = PROTOCOL_TYPE
        elif value is not None:
            restore_classic_group(group, value, now)
        return group

    def unload(self, partition: int, out: CoordinatorOutputs) -> None:
        """Leadership of ``partition`` moved away: drop its groups; parked requests get
        NOT_COORDINATOR."""
        for group in self._ctx.groups.in_partition(partition):
            self._ctx.groups.remove(group.group_id)
            self.classic.fail_parked(group, out)
            group.state = GroupState.DEAD

    # --- deletion -----------------------------------------------------------------------------

    def validate_delete_group(self, group_id: str) -> tuple[int, GroupMetadata | None]:
        """May DeleteGroups delete ``group_id``? INVALID_GROUP_ID, NOT_COORDINATOR (or load in
        progress), GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP (members); else NO_ERROR and the group."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, None
        error = self._ctx.ownership.error(group_id)
        if error != ErrorCode.NO_ERROR:
            return error, None
        group = self._ctx.groups.get(group_id)
        if group is None or group.is_(GroupState.DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND, None
        if not group.is_(GroupState.EMPTY) or group.has_members():
            return ErrorCode.NON_EMPTY_GROUP, group
        return ErrorCode.NO_ERROR, group

    def delete_group(self, group: GroupMetadata, now: int, records: Records) -> None:
        """Remove ``group`` (Dead) and add its group-level tombstones to ``records``."""
        records.append((group_metadata_key(group.group_id), None))
        records.extend(consumer_tombstones(group))
        group.transition_to(GroupState.DEAD, now)
        self._ctx.groups.remove(group.group_id)

    def maybe_delete_group(self, group: GroupMetadata, now: int, records: Records) -> bool:
        """Remove ``group`` when it is Empty and has no members (its offsets are gone), adding
        the tombstones of what it ever wrote to ``records``; True when removed."""
        if not group.is_(GroupState.EMPTY) or group.has_members():
            return False
        group.transition_to(GroupState.DEAD, now)
        self._ctx.groups.remove(group.group_id)
        if group.generation_id > 0 or group.protocol_type is not None:
            records.append((group_metadata_key(group.group_id), None))
        records.extend(consumer_tombstones(group))
        return True

    # --- describe and list --------------------------------------------------------------------

    def describe_group(self, group_id: str) -> GroupDescription:
        error = self._ctx.ownership.error(group_id)
        if error != ErrorCode.NO_ERROR:
            return GroupDescription(error, group_id, "")
        group = self._ctx.groups.get(group_id)
        if group is None:
            return GroupDescription(ErrorCode.NO_ERROR, group_id, GroupState.DEAD.value)
        if group.consumer is not None:
            # A KIP-848 group seen through the classic API: its state and members, no
            # protocol metadata (ConsumerGroupDescribe has the assignments).
            return GroupDescription(
                ErrorCode.NO_ERROR,
                group_id,
                group.consumer.state().value,
                PROTOCOL_TYPE,
                "",
                tuple(
                    MemberDescription(
                        m.member_id, m.instance_id, m.client_id, m.client_host, b"", b""
                    )
                    for m in group.consumer.members.values()
                ),
            )
        stable = group.is_(GroupState.STABLE) and group.protocol_name is not None
        members = tuple(
            MemberDescription(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.metadata_for(group.protocol_name) if stable and group.protocol_name else b"",
                m.assignment if stable else b"",
            )
            for m in group.members.values()
        )
        return GroupDescription(
            ErrorCode.NO_ERROR,
            group_id,
            group.state.value,
            group.protocol_type or "",
            (group.protocol_name or "") if stable else "",
            members,
        )

    def list_groups(self) -> tuple[int, list[tuple[str, str, str, str]]]:
        """(error, [(group id, protocol type, state, type)]) of the groups loaded here (type
        ``classic`` or ``consumer``, a KIP-848 group; its state is the consumer group's); the
        error is COORDINATOR_LOAD_IN_PROGRESS while a partition is still loading."""
        loading = self._ctx.ownership.any_loading()
        groups = [
            (g.group_id, g.protocol_type or "", g.state.value, CLASSIC_PROTOCOL)
            if g.consumer is None
            else (g.group_id, g.protocol_type or "", g.consumer.state().value, CONSUMER_PROTOCOL)
            for g in self._ctx.groups
            if not g.is_(GroupState.DEAD)
        ]
        error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if loading else ErrorCode.NO_ERROR
        return error, groups
