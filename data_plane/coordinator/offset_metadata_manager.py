"""OffsetMetadataManager: the committed offsets of a group coordinator shard's groups
(Kafka's OffsetMetadataManager), sans-IO: OffsetCommit, TxnOffsetCommit, OffsetFetch,
OffsetDelete, offset retention, the tombstones of a deleted group's offsets, and the offsets
loaded from ``__consumer_offsets`` (:class:`OffsetRecordsLoad`).

A group's offsets are held on its :class:`~data_plane.coordinator.group.GroupMetadata` (every
part finds a group by id in the shard's :class:`GroupStore`), and this class is the only code
that changes them:

- ``offsets``: committed offsets, visible to OffsetFetch only once written (above the high
  watermark). Commits come from the current generation's members (a KIP-848 group: at the
  member's epoch), or are "simple" (generation -1, no member id) while the group has no
  members; a commit to an unknown group creates it (Empty).
- ``pending_offset_commits``: commit writes in flight; the group is not removed meanwhile.
- ``pending_txn_offsets``: TxnOffsetCommit offsets written in an undecided transaction; the
  transaction's marker on the group's partition (:meth:`complete_transaction`) commits or
  drops them. ``txn_offsets_in_flight``: their writes not yet replicated.

Retention: offsets of an Empty group expire ``offsets.retention.minutes`` after the group
became empty (after their commit time for groups that never had members); in a Stable
consumer group, offsets of topics no member subscribes to any more expire from their commit
(KIP-496). The shard removes a group left with no offsets and no members.

Thread-safety: none; the coordinator's owner (the broker event loop) serialises access.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from common.error_codes import ErrorCode
from data_plane.coordinator.consumer_protocol import PROTOCOL_TYPE
from data_plane.coordinator.group import GroupMetadata, GroupState
from data_plane.coordinator.group_metadata_records import (
    OffsetAndMetadata,
    OffsetKey,
    decode_offset_value,
    offset_commit_key,
    offset_commit_value,
)
from data_plane.coordinator.messages import (
    CoordinatorOutputs,
    OffsetCommitRequest,
    OffsetCommitResult,
    OffsetDeleteResult,
    OffsetFetchResult,
    TxnOffsetCommitRequest,
)
from data_plane.coordinator.record_writes import Records
from data_plane.coordinator.shard_context import ShardContext
from data_plane.coordinator.skipped_records import SkippedRecords
from data_plane.coordinator.write_errors import (
    COMMIT_WRITE_ERRORS,
    METADATA_WRITE_ERRORS,
    map_write_error,
)

logger = logging.getLogger(__name__)

TopicPartitionKey = tuple[str, int]
# (topic, partition) -> value bytes of one group's offset records.
RawOffsets = dict[TopicPartitionKey, bytes]
# (partition, offset, leader epoch, metadata) as the commit requests carry them.
CommitEntries = tuple[tuple[TopicPartitionKey, int, int, str | None], ...]


@dataclass(slots=True)
class OffsetRecordsLoad:
    """The offset records of one partition seen so far while loading it (later records win;
    values stay bytes until loading completes, as in
    :class:`~data_plane.coordinator.group_metadata_manager.GroupRecordsLoad`)."""

    offsets: dict[str, RawOffsets] = field(default_factory=dict)
    # Transactional offset commits whose marker was not seen yet: producer id -> group -> ...
    txn_offsets: dict[int, dict[str, RawOffsets]] = field(default_factory=dict)

    def replay_offset(self, key: OffsetKey, value: bytes | None) -> None:
        per_group = self.offsets.setdefault(key.group, {})
        if value is None:
            per_group.pop((key.topic, key.partition), None)
        else:
            per_group[(key.topic, key.partition)] = value

    def replay_txn_offset(self, producer_id: int, key: OffsetKey, value: bytes) -> None:
        """An offset commit in ``producer_id``'s transaction: held until its marker."""
        pending = self.txn_offsets.setdefault(producer_id, {}).setdefault(key.group, {})
        pending[(key.topic, key.partition)] = value

    def replay_marker(self, producer_id: int, committed: bool) -> None:
        """``producer_id``'s transaction ended: its offsets count (COMMIT) or not."""
        pending = self.txn_offsets.pop(producer_id, None)
        if committed and pending:
            for gid, offsets in pending.items():
                self.offsets.setdefault(gid, {}).update(offsets)

    def group_ids(self) -> set[str]:
        pending = {gid for per in self.txn_offsets.values() for gid in per}
        return self.offsets.keys() | pending


class OffsetMetadataManager:
    def __init__(self, ctx: ShardContext) -> None:
        self._ctx = ctx

    # --- commits ------------------------------------------------------------------------------

    def commit_offsets(self, waiter: Hashable, req: OffsetCommitRequest) -> CoordinatorOutputs:
        """OffsetCommit (Kafka's commitOffset): checked by :meth:`_commit_error`, written, and
        answered with an :class:`OffsetCommitResult` once written; a member's commit renews
        its session."""
        out = CoordinatorOutputs()
        error = self._ctx.ownership.error(req.group_id)
        if error != ErrorCode.NO_ERROR:
            return self._refuse_commit(out, waiter, req.offsets, error)
        now = self._ctx.clock_ms()
        if self._ctx.groups.get(req.group_id) is None and (
            req.generation_id >= 0 or req.member_id or req.group_instance_id is not None
        ):
            return self._refuse_commit(out, waiter, req.offsets, ErrorCode.ILLEGAL_GENERATION)
        group = self._commit_group(req.group_id, now)
        error = self._commit_error(group, req)
        if error != ErrorCode.NO_ERROR:
            return self._refuse_commit(out, waiter, req.offsets, error)
        member = group.members.get(req.member_id)
        if member is not None:
            member.last_heartbeat_ms = now
            self._ctx.groups.schedule_next(group)
        return self._store_offsets(out, waiter, group, req.offsets, now, group.offsets.update)

    def _commit_error(self, group: GroupMetadata, req: OffsetCommitRequest) -> int:
        """Kafka's validateOffsetCommit."""
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if req.generation_id >= 0 or req.member_id or req.group_instance_id is not None:
            error = group.offset_commit_member_error(
                req.member_id, req.generation_id, req.group_instance_id
            )
            if error != ErrorCode.NO_ERROR:
                return error
        elif not group.is_(GroupState.EMPTY) or group.has_members():
            # A simple commit to a group managed by the coordinator.
            return ErrorCode.ILLEGAL_GENERATION
        if group.is_(GroupState.COMPLETING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NO_ERROR

    def txn_commit_offsets(
        self, waiter: Hashable, req: TxnOffsetCommitRequest
    ) -> CoordinatorOutputs:
        """TxnOffsetCommit (Kafka's handleTxnCommitOffsets): write the offsets in the
        producer's transaction; they count once its COMMIT marker reaches the group's
        partition (:meth:`complete_transaction`). Answers an :class:`OffsetCommitResult`."""
        out = CoordinatorOutputs()
        error = self._ctx.ownership.error(req.group_id)
        now = self._ctx.clock_ms()
        group = self._commit_group(req.group_id, now) if error == ErrorCode.NO_ERROR else None
        if group is not None and group.is_(GroupState.DEAD):
            error = ErrorCode.COORDINATOR_NOT_AVAILABLE
        elif group is not None and (req.member_id or req.generation_id >= 0):
            # KIP-447: the producer's consumer must still be a member of this generation.
            error = group.offset_commit_member_error(
                req.member_id, req.generation_id, req.group_instance_id, transactional=True
            )
        if group is None or error != ErrorCode.NO_ERROR:
            return self._refuse_commit(out, waiter, req.offsets, error)
        pid = req.producer_id
        in_flight = group.txn_offsets_in_flight.setdefault(pid, Counter())
        tps = [tp for tp, _offset, _epoch, _metadata in req.offsets]
        in_flight.update(tps)

        def pend(values: dict[TopicPartitionKey, OffsetAndMetadata]) -> None:
            # Only while the same transaction is open: its marker drops ``in_flight``.
            if group.txn_offsets_in_flight.get(pid) is in_flight:
                group.pending_txn_offsets.setdefault(pid, {}).update(values)

        def finished() -> None:
            writes = group.txn_offsets_in_flight
            if writes.get(pid) is in_flight:
                writes[pid] -= Counter(tps)  # in place, dropping the counts that reach zero
                if not in_flight:
                    del writes[pid]

        return self._store_offsets(
            out,
            waiter,
            group,
            req.offsets,
            now,
            pend,
            producer_id=pid,
            producer_epoch=req.producer_epoch,
            on_finished=finished,
        )

    def complete_transaction(
        self, partition: int, producer_id: int, committed: bool
    ) -> CoordinatorOutputs:
        """``producer_id``'s end marker was written to ``partition``: its pending offsets in
        that partition's groups become committed offsets (COMMIT) or are dropped (ABORT)."""
        for group in self._ctx.groups.in_partition(partition):
            group.txn_offsets_in_flight.pop(producer_id, None)
            pending = group.pending_txn_offsets.pop(producer_id, None)
            if committed and pending:
                group.offsets.update(pending)
        return CoordinatorOutputs()

    def _commit_group(self, group_id: str, now: int) -> GroupMetadata:
        """The group an offset commit goes to, created (Empty) when it has none yet."""
        group = self._ctx.groups.get(group_id)
        if group is None:
            group = self._ctx.groups.create(
                group_id, self._ctx.ownership.partition_of(group_id), now
            )
        return group

    @staticmethod
    def _refuse_commit(
        out: CoordinatorOutputs,
        waiter: Hashable,
        offsets: CommitEntries,
        error: int,
    ) -> CoordinatorOutputs:
        out.respond(waiter, OffsetCommitResult({tp: error for tp, _, _, _ in offsets}))
        return out

    def _store_offsets(
        self,
        out: CoordinatorOutputs,
        waiter: Hashable,
        group: GroupMetadata,
        offsets: CommitEntries,
        now: int,
        on_written: Callable[[dict[TopicPartitionKey, OffsetAndMetadata]], None],
        *,
        producer_id: int = -1,
        producer_epoch: int = -1,
        on_finished: Callable[[], None] | None = None,
    ) -> CoordinatorOutputs:
        """Write the commit's records (a transactional batch when ``producer_id`` is set) and
        answer ``waiter`` once written; ``on_written`` installs the values then, and
        ``on_finished`` runs after it whether or not anything was written. Metadata over
        ``offset.metadata.max.bytes`` is refused per partition."""
        errors: dict[TopicPartitionKey, int] = {}
        values: dict[TopicPartitionKey, OffsetAndMetadata] = {}
        records: Records = []
        limit = self._ctx.config.offset_metadata_max_bytes
        for tp, offset, leader_epoch, metadata in offsets:
            text = metadata or ""
            if len(text.encode("utf-8")) > limit:
                errors[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                continue
            value = OffsetAndMetadata(offset, leader_epoch, text, now)
            values[tp] = value
            records.append(
                (offset_commit_key(group.group_id, tp[0], tp[1]), offset_commit_value(value))
            )
        if not records:
            if on_finished is not None:
                on_finished()
            out.respond(waiter, OffsetCommitResult(errors))
            return out
        group.pending_offset_commits += 1

        def done(write_error: int, o: CoordinatorOutputs) -> None:
            group.pending_offset_commits -= 1
            code = map_write_error(COMMIT_WRITE_ERRORS, write_error)
            if code == ErrorCode.NO_ERROR and self._ctx.groups.get(group.group_id) is group:
                on_written(values)
            if on_finished is not None:
                on_finished()
            for tp in values:
                errors[tp] = code
            o.respond(waiter, OffsetCommitResult(errors))

        self._ctx.writes.write(
            out,
            group.partition,
            records,
            done,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
        )
        return out

    # --- fetch and delete ---------------------------------------------------------------------

    def fetch_offsets(
        self,
        group_id: str,
        partitions: list[TopicPartitionKey] | None,
        require_stable: bool = False,
        *,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> OffsetFetchResult:
        """Committed offsets of ``partitions`` (None: every partition the group has one for).
        With ``require_stable`` (OffsetFetch v7+, KIP-447) the result also names the
        partitions whose transactional offset commit is still pending. A member of a
        consumer-protocol group that names itself (OffsetFetch v9) must be one at that epoch
        (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH)."""
        error = self._ctx.ownership.error(group_id)
        if error != ErrorCode.NO_ERROR:
            return OffsetFetchResult(error)
        group = self._ctx.groups.get(group_id)
        if (
            group is not None
            and group.consumer is not None
            and (member_id is not None or member_epoch >= 0)
        ):
            error = group.offset_commit_member_error(member_id or "", member_epoch, None)
            if error != ErrorCode.NO_ERROR:
                return OffsetFetchResult(error)
        stored = group.offsets if group is not None else {}
        offsets: dict[TopicPartitionKey, OffsetAndMetadata | None] = (
            dict(stored) if partitions is None else {tp: stored.get(tp) for tp in partitions}
        )
        unstable: frozenset[TopicPartitionKey] = frozenset()
        if (
            require_stable
            and group is not None
            and (group.pending_txn_offsets or group.txn_offsets_in_flight)
        ):
            pending = {tp for values in group.pending_txn_offsets.values() for tp in values}
            pending.update(tp for writes in group.txn_offsets_in_flight.values() for tp in writes)
            asked = pending if partitions is None else partitions
            unstable = frozenset(tp for tp in asked if tp in pending)
        return OffsetFetchResult(ErrorCode.NO_ERROR, offsets, unstable)

    def delete_offsets(
        self, waiter: Hashable, group_id: str, partitions: list[TopicPartitionKey]
    ) -> CoordinatorOutputs:
        """Kafka's OffsetDelete: tombstone the group's committed offsets of ``partitions``.
        Group-level errors: INVALID_GROUP_ID, NOT_COORDINATOR (and load in progress),
        GROUP_ID_NOT_FOUND, and NON_EMPTY_GROUP for a group with members that does not use the
        consumer protocol. A group with members keeps the offsets of the topics they subscribe
        to (GROUP_SUBSCRIBED_TO_TOPIC; every topic counts as subscribed while a subscription
        cannot be read). A partition without an offset answers success."""
        out = CoordinatorOutputs()

        def refused(error: int) -> CoordinatorOutputs:
            out.respond(waiter, OffsetDeleteResult(error, {}))
            return out

        if not group_id:
            return refused(ErrorCode.INVALID_GROUP_ID)
        error = self._ctx.ownership.error(group_id)
        if error != ErrorCode.NO_ERROR:
            return refused(error)
        group = self._ctx.groups.get(group_id)
        if group is None or group.is_(GroupState.DEAD):
            return refused(ErrorCode.GROUP_ID_NOT_FOUND)
        subscribed: set[str] | None = set()
        if not group.is_(GroupState.EMPTY):
            if group.protocol_type != PROTOCOL_TYPE:
                return refused(ErrorCode.NON_EMPTY_GROUP)
            subscribed = group.subscribed_topics()
        errors: dict[TopicPartitionKey, int] = {}
        doomed: list[TopicPartitionKey] = []
        for tp in partitions:
            if subscribed is None or tp[0] in subscribed:
                errors[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                continue
            errors[tp] = ErrorCode.NO_ERROR
            if group.offsets.pop(tp, None) is not None:
                doomed.append(tp)
        if not doomed:
            out.respond(waiter, OffsetDeleteResult(ErrorCode.NO_ERROR, errors))
            return out
        records: Records = [(offset_commit_key(group_id, t, p), None) for t, p in doomed]

        def done(write_error: int, o: CoordinatorOutputs) -> None:
            code = map_write_error(METADATA_WRITE_ERRORS, write_error)
            for tp in doomed:
                errors[tp] = code
            o.respond(waiter, OffsetDeleteResult(ErrorCode.NO_ERROR, dict(errors)))

        self._ctx.writes.write(out, group.partition, records, done)
        return out

    # --- retention and deletion ---------------------------------------------------------------

    def cleanup_expired_offsets(self, group: GroupMetadata, now: int, records: Records) -> bool:
        """Kafka's cleanupExpiredOffsets: drop the group's expired offsets and add their
        tombstones to ``records``; True when the group has no offsets left (the shard may then
        remove it). A group with a commit in flight keeps everything."""
        if group.pending_offset_commits:
            return False
        expired = self._expired_offsets(group, now, self._ctx.config.offsets_retention_ms)
        gid = group.group_id
        records.extend((offset_commit_key(gid, topic, p), None) for topic, p in expired)
        for tp in expired:
            del group.offsets[tp]
        return not group.offsets

    @staticmethod
    def delete_all_offsets(group: GroupMetadata, records: Records) -> None:
        """The tombstones of every committed offset of ``group`` (it is being deleted)."""
        gid = group.group_id
        records.extend((offset_commit_key(gid, t, p), None) for t, p in group.offsets)

    @staticmethod
    def has_commits_in_flight(group: GroupMetadata) -> bool:
        return group.pending_offset_commits > 0

    def _expired_offsets(
        self, group: GroupMetadata, now: int, retention: int
    ) -> list[TopicPartitionKey]:
        if group.consumer is not None and group.consumer.members:
            return []  # a consumer-protocol group in use keeps its offsets
        if group.is_(GroupState.EMPTY):
            managed = group.protocol_type is not None
            return [
                tp
                for tp, v in group.offsets.items()
                if (group.state_timestamp_ms if managed else v.commit_timestamp_ms) + retention
                <= now
            ]
        if not (
            group.is_(GroupState.STABLE)
            and group.protocol_type == PROTOCOL_TYPE
            and group.protocol_name is not None
        ):
            return []
        subscribed = group.subscribed_topics()
        if subscribed is None:
            return []  # an undecodable subscription: expire nothing
        return [
            tp
            for tp, v in group.offsets.items()
            if tp[0] not in subscribed and v.commit_timestamp_ms + retention <= now
        ]

    # --- loading ------------------------------------------------------------------------------

    @staticmethod
    def load_offsets(
        load: OffsetRecordsLoad, group: GroupMetadata, skipped: SkippedRecords
    ) -> bool:
        """Install the offsets ``load`` holds for ``group`` (committed, and pending in open
        transactions); False when it holds none that decode."""
        gid = group.group_id
        offsets: dict[TopicPartitionKey, OffsetAndMetadata] = {}
        for tp, raw in load.offsets.get(gid, {}).items():
            decoded = skipped.decode(decode_offset_value, raw)
            if decoded is not None:
                offsets[tp] = decoded
        pending: dict[int, dict[TopicPartitionKey, OffsetAndMetadata]] = {}
        for pid, per_group in load.txn_offsets.items():
            for tp, raw in per_group.get(gid, {}).items():
                decoded = skipped.decode(decode_offset_value, raw)
                if decoded is not None:
                    pending.setdefault(pid, {})[tp] = decoded
        group.offsets = offsets
        group.pending_txn_offsets = pending
        return bool(offsets or pending)
