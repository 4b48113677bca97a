"""GroupCoordinator: the group coordinator shard (Kafka 4's GroupCoordinatorShard), sans-IO:
Kafka's consumer groups (the classic protocol and KIP-848's consumer protocol) and their
committed offsets, for the ``__consumer_offsets`` partitions this broker leads.

It composes two parts over one :class:`ShardContext` (configuration, the injected clock
``clock_ms``, the owned partitions, the groups and their timers, the pending writes):

- :class:`GroupMetadataManager` (:mod:`.group_metadata_manager`): group membership, classic
  (JoinGroup, SyncGroup, Heartbeat, LeaveGroup: :mod:`.classic_group_manager`) and KIP-848
  (ConsumerGroupHeartbeat, ConsumerGroupDescribe: :mod:`.consumer_group_manager`),
  DescribeGroups, ListGroups, session and rebalance timers;
- :class:`OffsetMetadataManager` (:mod:`.offset_metadata_manager`): OffsetCommit,
  TxnOffsetCommit (pending until the transaction's marker), OffsetFetch, OffsetDelete,
  offset retention.

What needs both is here, as in Kafka's shard: loading a partition (each record goes to the
part that owns its key version), DeleteGroups (offsets, then the group), and offset retention
(expired offsets, then the groups left with none). A share-group manager (KIP-932) joins as a
third part of :class:`GroupMetadataManager` over the same context; its records are dispatched
by their key versions in :meth:`load_record`.

Inputs are method calls; outputs are :class:`CoordinatorOutputs`: results for parked requests
(JoinGroup waits for the rebalance, SyncGroup for the leader's assignment, OffsetCommit for its
write) and ``__consumer_offsets`` writes that the I/O layer appends with acks=all and reports
back with :meth:`complete_write`. Timers are deadlines checked by :meth:`tick`.

Ownership: the coordinator serves the groups of the ``__consumer_offsets`` partitions this
broker leads (``partition_for(group_id, num_partitions)``). :meth:`begin_loading` /
:meth:`load_record` / :meth:`complete_loading` rebuild them from the partition's records
(COORDINATOR_LOAD_IN_PROGRESS meanwhile); :meth:`unload` drops them when leadership moves
(NOT_COORDINATOR to everything parked). Requests for other groups get NOT_COORDINATOR.

Thread-safety: none; the broker's event loop owns the coordinator.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field

from common.error_codes import ErrorCode
from data_plane.coordinator.config import GroupCoordinatorConfig
from data_plane.coordinator.consumer_assignors import AssignorTopic
from data_plane.coordinator.consumer_group_records import (
    FIRST_CONSUMER_GROUP_KEY,
    LAST_CONSUMER_GROUP_KEY,
    record_kind,
)
from data_plane.coordinator.group import GroupMetadata
from data_plane.coordinator.group_metadata_manager import GroupMetadataManager, GroupRecordsLoad
from data_plane.coordinator.group_metadata_records import (
    GroupKey,
    InvalidOffsetsRecordError,
    OffsetKey,
    decode_key,
)
from data_plane.coordinator.messages import (
    ConsumerGroupDescription,
    ConsumerHeartbeatRequest,
    CoordinatorOutputs,
    DeleteGroupsResult,
    GroupDescription,
    JoinGroupRequest,
    OffsetCommitRequest,
    OffsetFetchResult,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
)
from data_plane.coordinator.offset_metadata_manager import (
    OffsetMetadataManager,
    OffsetRecordsLoad,
)
from data_plane.coordinator.partition_ownership import PartitionOwnership
from data_plane.coordinator.record_writes import Records, ignore_write
from data_plane.coordinator.shard_context import Clock, ShardContext, random_member_id
from data_plane.coordinator.skipped_records import SkippedRecords
from data_plane.coordinator.write_errors import METADATA_WRITE_ERRORS, map_write_error

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class _LoadState:
    """What loading one partition has seen so far, by the part that owns it."""

    skipped: SkippedRecords
    groups: GroupRecordsLoad = field(default_factory=GroupRecordsLoad)
    offsets: OffsetRecordsLoad = field(default_factory=OffsetRecordsLoad)


class GroupCoordinator:
    def __init__(
        self,
        config: GroupCoordinatorConfig,
        clock_ms: Clock,
        num_partitions: int = 0,
        *,
        new_member_id: Callable[[str], str] | None = None,
    ) -> None:
        self._ctx = ShardContext(
            config,
            clock_ms,
            PartitionOwnership(num_partitions),
            new_member_id=new_member_id or random_member_id,
        )
        self._groups = self._ctx.groups
        self.group_metadata = GroupMetadataManager(self._ctx)
        self.offset_metadata = OffsetMetadataManager(self._ctx)
        # __consumer_offsets partitions being loaded here -> what was read of them so far.
        self._loads: dict[int, _LoadState] = {}
        self._last_retention_check_ms = clock_ms()

    @property
    def config(self) -> GroupCoordinatorConfig:
        return self._ctx.config

    @property
    def num_partitions(self) -> int:
        return self._ctx.ownership.num_partitions

    # --- ownership and loading ----------------------------------------------------------------

    def set_num_partitions(self, num_partitions: int) -> None:
        """The partition count of ``__consumer_offsets`` (from the metadata image)."""
        self._ctx.ownership.set_num_partitions(num_partitions)

    def partition_of(self, group_id: str) -> int:
        return self._ctx.ownership.partition_of(group_id)

    def owned_partitions(self) -> dict[int, bool]:
        """Partition -> True when loaded, False while loading."""
        return self._ctx.ownership.owned()

    def begin_loading(self, partition: int) -> CoordinatorOutputs:
        """This broker became leader of ``partition``: forget what it held of it before and
        start collecting its records."""
        out = self.unload(partition)
        self._ctx.ownership.begin(partition)
        self._loads[partition] = _LoadState(SkippedRecords(partition))
        return out

    def _loading(self, partition: int) -> _LoadState:
        state = self._loads.get(partition)
        if state is None:
            raise ValueError(f"partition {partition} is not loading")
        return state

    def load_record(self, partition: int, key: bytes | None, value: bytes | None) -> None:
        """One record of ``partition`` in log order, handed to the part that owns its key
        version. Undecodable records are counted and skipped (a newer broker's record types;
        Kafka skips unknown ones the same way)."""
        state = self._loading(partition)
        if key is None:
            state.skipped.skip()
            return
        try:
            kind = record_kind(key)
            if FIRST_CONSUMER_GROUP_KEY <= kind <= LAST_CONSUMER_GROUP_KEY:
                state.groups.replay_consumer(kind, key, value)
                return
            k = decode_key(key)
            if isinstance(k, OffsetKey):
                state.offsets.replay_offset(k, value)
            elif isinstance(k, GroupKey):
                state.groups.replay_group(k, value)
        except InvalidOffsetsRecordError as e:
            state.skipped.skip(e)

    def load_txn_record(
        self, partition: int, producer_id: int, key: bytes | None, value: bytes | None
    ) -> None:
        """One record of a transactional batch (a TxnOffsetCommit): held until the
        producer's marker says whether it counts."""
        state = self._loading(partition)
        try:
            k = decode_key(key) if key is not None else None
        except InvalidOffsetsRecordError as e:
            state.skipped.skip(e)
            return
        if not isinstance(k, OffsetKey) or value is None:
            state.skipped.skip()
            return
        state.offsets.replay_txn_offset(producer_id, k, value)

    def load_txn_marker(self, partition: int, producer_id: int, committed: bool) -> None:
        """The marker of ``producer_id``'s transaction: its offsets count (COMMIT) or not."""
        self._loading(partition).offsets.replay_marker(producer_id, committed)

    def complete_loading(self, partition: int) -> CoordinatorOutputs:
        """Every record up to the log end was given: build the groups and serve them."""
        state = self._loading(partition)
        now = self._ctx.clock_ms()
        store = self._groups
        for gid in state.groups.group_ids() | state.offsets.group_ids():
            loaded = self.group_metadata.load_group(
                partition, state.groups, gid, now, state.skipped
            )
            group = loaded or GroupMetadata(gid, partition, state_timestamp_ms=now)
            has_offsets = self.offset_metadata.load_offsets(state.offsets, group, state.skipped)
            if loaded is None and not has_offsets:
                continue  # tombstoned group and no offsets left
            store.add(group)
            store.schedule_next(group)
        del self._loads[partition]
        self._ctx.ownership.mark_loaded(partition)
        logger.info(
            "loaded __consumer_offsets-%d: %d groups (%d records skipped)",
            partition,
            len(store.in_partition(partition)),
            state.skipped.count,
        )
        return CoordinatorOutputs()

    def unload(self, partition: int) -> CoordinatorOutputs:
        """Leadership of ``partition`` moved away: drop its groups; parked requests get
        NOT_COORDINATOR (their clients find the new coordinator)."""
        out = CoordinatorOutputs()
        self._loads.pop(partition, None)
        if self._ctx.ownership.drop(partition):
            self.group_metadata.unload(partition, out)
        return out

    # --- writes and timers --------------------------------------------------------------------

    def complete_write(self, write_id: int, error_code: int) -> CoordinatorOutputs:
        """The outcome of a :class:`RecordWrite`: NO_ERROR once committed (above the high
        watermark), else the append's error code."""
        return self._ctx.writes.complete(write_id, error_code, self._ctx.ownership.is_loaded)

    def next_deadline_ms(self) -> int | None:
        """When :meth:`tick` next has work (clock ms), for an I/O layer that sleeps."""
        return self._groups.next_deadline_ms()

    def tick(self) -> CoordinatorOutputs:
        """Session expiries, rebalance and initial-delay deadlines, pending member expiry, and
        every ``offsets.retention.check.interval.ms`` the offset retention."""
        out = CoordinatorOutputs()
        now = self._ctx.clock_ms()
        self.group_metadata.check_timeouts(now, out)
        if now - self._last_retention_check_ms >= self.config.offsets_retention_check_interval_ms:
            self._last_retention_check_ms = now
            self.expire_offsets(out)
        return out

    # --- what needs both parts ----------------------------------------------------------------

    def expire_offsets(self, out: CoordinatorOutputs | None = None) -> CoordinatorOutputs:
        """Offset retention (Kafka's cleanupGroupMetadata): every loaded group's expired
        offsets get tombstones (:meth:`OffsetMetadataManager.cleanup_expired_offsets`); an
        Empty group left with no offsets is removed (a group tombstone when it was ever
        written)."""
        out = out if out is not None else CoordinatorOutputs()
        now = self._ctx.clock_ms()
        for group in self._groups.snapshot():
            if not self._ctx.ownership.is_loaded(group.partition):
                continue  # loading or not ours
            records: Records = []
            all_expired = self.offset_metadata.cleanup_expired_offsets(group, now, records)
            expired = len(records)
            if all_expired:
                self.group_metadata.maybe_delete_group(group, now, records)
            if records:
                logger.info("group %s: %d offsets expired", group.group_id, expired)
                self._ctx.writes.write(out, group.partition, records, ignore_write)
        return out

    def delete_groups(self, waiter: Hashable, group_ids: list[str]) -> CoordinatorOutputs:
        """Kafka's DeleteGroups: an Empty group's offsets and metadata are tombstoned; a
        group with members gets NON_EMPTY_GROUP, an unknown one GROUP_ID_NOT_FOUND."""
        out = CoordinatorOutputs()
        errors: dict[str, int] = {}
        doomed: list[GroupMetadata] = []
        for gid in group_ids:
            error, group = self.group_metadata.validate_delete_group(gid)
            if group is not None and self.offset_metadata.has_commits_in_flight(group):
                error = ErrorCode.NON_EMPTY_GROUP
            if error != ErrorCode.NO_ERROR or group is None:
                errors[gid] = error
            else:
                doomed.append(group)
        if not doomed:
            out.respond(waiter, DeleteGroupsResult(errors))
            return out
        remaining = [len(doomed)]
        now = self._ctx.clock_ms()
        for group in doomed:
            records: Records = []
            self.offset_metadata.delete_all_offsets(group, records)
            self.group_metadata.delete_group(group, now, records)

            def done(error: int, o: CoordinatorOutputs, gid: str = group.group_id) -> None:
                errors[gid] = map_write_error(METADATA_WRITE_ERRORS, error)
                remaining[0] -= 1
                if remaining[0] == 0:
                    o.respond(waiter, DeleteGroupsResult(dict(errors)))

            self._ctx.writes.write(out, group.partition, records, done)
        return out

    # --- group membership (GroupMetadataManager) ----------------------------------------------

    def join_group(self, waiter: Hashable, req: JoinGroupRequest) -> CoordinatorOutputs:
        return self.group_metadata.classic.join_group(waiter, req)

    def sync_group(self, waiter: Hashable, req: SyncGroupRequest) -> CoordinatorOutputs:
        return self.group_metadata.classic.sync_group(waiter, req)

    def heartbeat(
        self, group_id: str, generation_id: int, member_id: str, instance_id: str | None = None
    ) -> int:
        return self.group_metadata.classic.heartbeat(
            group_id, generation_id, member_id, instance_id
        )

    def leave_group(self, group_id: str, member_id: str) -> tuple[int, CoordinatorOutputs]:
        return self.group_metadata.classic.leave_group(group_id, member_id)

    def leave_group_members(
        self, group_id: str, members: list[tuple[str, str | None]]
    ) -> tuple[int, list[int], CoordinatorOutputs]:
        return self.group_metadata.classic.leave_group_members(group_id, members)

    def consumer_group_heartbeat(
        self, waiter: Hashable, req: ConsumerHeartbeatRequest, topics: Mapping[str, AssignorTopic]
    ) -> CoordinatorOutputs:
        return self.group_metadata.consumer.consumer_group_heartbeat(waiter, req, topics)

    def consumer_group_describe(self, group_id: str) -> ConsumerGroupDescription:
        return self.group_metadata.consumer.consumer_group_describe(group_id)

    def describe_group(self, group_id: str) -> GroupDescription:
        return self.group_metadata.describe_group(group_id)

    def list_groups(self) -> tuple[int, list[tuple[str, str, str, str]]]:
        return self.group_metadata.list_groups()

    def group(self, group_id: str) -> GroupMetadata | None:
        """The live group object (for tests and describe tools; do not mutate)."""
        return self.group_metadata.group(group_id)

    # --- offsets (OffsetMetadataManager) ------------------------------------------------------

    def commit_offsets(self, waiter: Hashable, req: OffsetCommitRequest) -> CoordinatorOutputs:
        return self.offset_metadata.commit_offsets(waiter, req)

    def txn_commit_offsets(
        self, waiter: Hashable, req: TxnOffsetCommitRequest
    ) -> CoordinatorOutputs:
        return self.offset_metadata.txn_commit_offsets(waiter, req)

    def complete_transaction(
        self, partition: int, producer_id: int, committed: bool
    ) -> CoordinatorOutputs:
        return self.offset_metadata.complete_transaction(partition, producer_id, committed)

    def fetch_offsets(
        self,
        group_id: str,
        partitions: list[tuple[str, int]] | None,
        require_stable: bool = False,
        *,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> OffsetFetchResult:
        return self.offset_metadata.fetch_offsets(
            group_id, partitions, require_stable, member_id=member_id, member_epoch=member_epoch
        )

    def delete_offsets(
        self, waiter: Hashable, group_id: str, partitions: list[tuple[str, int]]
    ) -> CoordinatorOutputs:
        return self.offset_metadata.delete_offsets(waiter, group_id, partitions)
