"""KIP-848 consumer groups (ConsumerGroupHeartbeat, ConsumerGroupDescribe), the part of
Kafka's GroupMetadataManager that serves consumer-protocol groups, sans-IO. The group state
machine itself is :class:`~data_plane.coordinator.consumer_group.ConsumerGroup` (held in
``GroupMetadata.consumer``); this part finds or creates the group, converts an empty classic
group, writes what a heartbeat changed (:mod:`data_plane.coordinator.consumer_group_records`)
and answers once it is written, fences members whose session or revocation timed out, and
rebuilds a group from its loaded records.

Thread-safety: none; the coordinator's owner (the broker event loop) serialises access.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Mapping

from common.error_codes import ErrorCode
from data_plane.coordinator.config import CONSUMER_PROTOCOL
from data_plane.coordinator.consumer_assignors import AssignorTopic
from data_plane.coordinator.consumer_group import (
    JOIN_EPOCH,
    ConsumerGroup,
    HeartbeatSettings,
    PersistedGroup,
)
from data_plane.coordinator.consumer_group_records import (
    GROUP_EPOCH_KEY,
    changed_records,
    group_tombstones,
    restore,
)
from data_plane.coordinator.consumer_protocol import PROTOCOL_TYPE
from data_plane.coordinator.group import GroupMetadata, GroupState
from data_plane.coordinator.group_metadata_records import (
    InvalidOffsetsRecordError,
    group_metadata_key,
)
from data_plane.coordinator.messages import (
    ConsumerGroupDescription,
    ConsumerHeartbeatRequest,
    ConsumerHeartbeatResult,
    ConsumerMemberDescription,
    CoordinatorOutputs,
)
from data_plane.coordinator.record_writes import Records, ignore_write
from data_plane.coordinator.shard_context import ShardContext
from data_plane.coordinator.skipped_records import SkippedRecords
from data_plane.coordinator.write_errors import METADATA_WRITE_ERRORS, map_write_error

logger = logging.getLogger(__name__)

# A KIP-848 group's loaded records: (record kind, member id or None) -> value bytes.
ConsumerGroupValues = dict[tuple[int, str | None], bytes]


class ConsumerGroupManager:
    def __init__(self, ctx: ShardContext) -> None:
        self._ctx = ctx

    def consumer_group_heartbeat(
        self, waiter: Hashable, req: ConsumerHeartbeatRequest, topics: Mapping[str, AssignorTopic]
    ) -> CoordinatorOutputs:
        """ConsumerGroupHeartbeat, answered once what it changed is written to the group's
        ``__consumer_offsets`` partition (:mod:`data_plane.coordinator.consumer_group_records`;
        a write error is the answer then, and the next change rewrites the whole group)."""
        out = CoordinatorOutputs()
        records: Records = []
        result = self._consumer_heartbeat(req, topics, records)
        if not records or result.error_code != ErrorCode.NO_ERROR:
            out.respond(waiter, result)
            return out
        group = self._ctx.groups.get(req.group_id)  # None: its last member left, it was dropped

        def done(error: int, o: CoordinatorOutputs) -> None:
            code = map_write_error(METADATA_WRITE_ERRORS, error)
            if code != ErrorCode.NO_ERROR:
                if group is not None and group.consumer is not None:
                    group.consumer.persisted = PersistedGroup()
                o.respond(
                    waiter, ConsumerHeartbeatResult(code, "the group's state was not written")
                )
            else:
                o.respond(waiter, result)

        self._ctx.writes.write(out, self._ctx.ownership.partition_of(req.group_id), records, done)
        return out

    def _consumer_heartbeat(
        self, req: ConsumerHeartbeatRequest, topics: Mapping[str, AssignorTopic], records: Records
    ) -> ConsumerHeartbeatResult:
        """ConsumerGroupHeartbeat (see :mod:`data_plane.coordinator.consumer_group`).
        ``topics``: every topic a member may subscribe to, by name, from the metadata image.
        A new group is created by a join; an empty classic group is converted by one; a
        classic group with members answers GROUP_ID_NOT_FOUND."""
        if CONSUMER_PROTOCOL not in self._ctx.config.rebalance_protocols:
            return ConsumerHeartbeatResult(
                ErrorCode.UNSUPPORTED_VERSION, "the consumer group protocol is not enabled"
            )
        if not req.group_id:
            return ConsumerHeartbeatResult(ErrorCode.INVALID_REQUEST, "the group id is empty")
        if req.member_epoch != JOIN_EPOCH and not req.member_id:
            return ConsumerHeartbeatResult(ErrorCode.INVALID_REQUEST, "the member id is empty")
        error = self._ctx.ownership.error(req.group_id)
        if error != ErrorCode.NO_ERROR:
            return ConsumerHeartbeatResult(error)
        now = self._ctx.clock_ms()
        group = self._ctx.groups.get(req.group_id)
        if group is not None and group.is_(GroupState.DEAD):
            return ConsumerHeartbeatResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if group is None or group.consumer is None:
            if group is not None and (
                group.members or group.pending_members or not group.is_(GroupState.EMPTY)
            ):
                return ConsumerHeartbeatResult(
                    ErrorCode.GROUP_ID_NOT_FOUND, f"group {req.group_id} is a classic group"
                )
            if req.member_epoch != JOIN_EPOCH:
                # Also what a member hears after a coordinator failover: it joins again.
                return ConsumerHeartbeatResult(
                    ErrorCode.UNKNOWN_MEMBER_ID, f"no member {req.member_id}"
                )
            if group is None:
                group = self._ctx.groups.create(
                    req.group_id, self._ctx.ownership.partition_of(req.group_id)
                )
            elif group.generation_id > 0 or group.protocol_type is not None:
                records.append((group_metadata_key(req.group_id), None))  # no longer classic
            group.consumer = ConsumerGroup(req.group_id)
            group.protocol_type = PROTOCOL_TYPE
            group.state_timestamp_ms = now
        consumer = group.consumer
        cfg = self._ctx.config
        settings = HeartbeatSettings(
            cfg.consumer_session_timeout_ms,
            cfg.consumer_heartbeat_interval_ms,
            cfg.consumer_assignors,
            cfg.consumer_max_size,
        )
        had_members = bool(consumer.members)
        result = consumer.heartbeat(
            req, topics, settings, self._ctx.new_member_id(req.client_id or "consumer"), now
        )
        if had_members and not consumer.members:
            group.state_timestamp_ms = now
        if result.error_code == ErrorCode.NO_ERROR:
            records.extend(changed_records(consumer))
        if self._ctx.groups.drop_if_unused(group):
            records.extend(consumer_tombstones(group))
        self._ctx.groups.schedule_next(group)
        return result

    def consumer_group_describe(self, group_id: str) -> ConsumerGroupDescription:
        error = ErrorCode.INVALID_GROUP_ID if not group_id else self._ctx.ownership.error(group_id)
        if error != ErrorCode.NO_ERROR:
            return ConsumerGroupDescription(error, group_id)
        group = self._ctx.groups.get(group_id)
        if group is None or group.is_(GroupState.DEAD):
            return ConsumerGroupDescription(
                ErrorCode.GROUP_ID_NOT_FOUND, group_id, error_message="no such group"
            )
        consumer = group.consumer
        if consumer is None:
            return ConsumerGroupDescription(
                ErrorCode.GROUP_ID_NOT_FOUND,
                group_id,
                error_message=f"group {group_id} is not a consumer group",
            )
        members = tuple(
            ConsumerMemberDescription(
                m.member_id,
                m.instance_id,
                m.rack_id,
                m.member_epoch,
                m.client_id,
                m.client_host,
                m.subscribed_topic_names,
                m.subscribed_topic_regex,
                dict(m.assigned),
                dict(consumer.target.get(m.member_id, {})),
            )
            for m in consumer.members.values()
        )
        return ConsumerGroupDescription(
            ErrorCode.NO_ERROR,
            group_id,
            consumer.state().value,
            consumer.group_epoch,
            consumer.assignment_epoch,
            consumer.assignor_name,
            members,
        )

    def check_timeouts(self, group: GroupMetadata, now: int, out: CoordinatorOutputs) -> None:
        """Fence the members of a KIP-848 group whose session or revocation deadline passed
        by ``now`` and write what that changed."""
        if group.consumer is None:
            return
        gone = group.consumer.expire(now)
        for mid in gone:
            logger.info(
                "group %s: member %s fenced (session or revocation timeout)",
                group.group_id,
                mid,
            )
        if gone:
            if not group.consumer.members:
                group.state_timestamp_ms = now  # empty since now: offsets retention counts
            self._ctx.writes.write(
                out, group.partition, changed_records(group.consumer), ignore_write
            )

    def load_group(
        self, group_id: str, values: ConsumerGroupValues, now: int, skipped: SkippedRecords
    ) -> ConsumerGroup | None:
        """The KIP-848 group whose records were loaded (None: none, or its group epoch record
        was tombstoned); undecodable records count as skipped and drop the group's state.
        Members get a full session from ``now`` to find the new coordinator."""
        if (GROUP_EPOCH_KEY, None) not in values:
            return None
        group = ConsumerGroup(group_id)
        try:
            restore(group, values, now + self._ctx.config.consumer_session_timeout_ms, now)
        except InvalidOffsetsRecordError as e:
            skipped.skip(e, f"group {group_id}")
            return None
        return group


def consumer_tombstones(group: GroupMetadata) -> Records:
    """Tombstones of a consumer-protocol group's group-level records, when it wrote any (it
    is removed, or turns classic)."""
    consumer = group.consumer
    if consumer is None or consumer.persisted.epoch is None:
        return []
    return group_tombstones(group.group_id)
