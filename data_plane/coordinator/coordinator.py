"""GroupCoordinator: Kafka's consumer groups (the classic protocol and KIP-848's consumer
protocol, :mod:`data_plane.coordinator.consumer_group`) and committed offsets, sans-IO.

Modelled on Kafka's GroupCoordinator / GroupMetadataManager. Inputs are method calls with an
injected clock (``clock_ms``); outputs are :class:`CoordinatorOutputs`: results for parked
requests (JoinGroup waits for the rebalance, SyncGroup for the leader's assignment, OffsetCommit
for its write) and ``__consumer_offsets`` writes that the I/O layer appends with acks=all and
reports back with :meth:`complete_write`. Timers are deadlines checked by :meth:`tick`.

Ownership: the coordinator serves the groups of the ``__consumer_offsets`` partitions this
broker leads (``partition_for(group_id, num_partitions)``). :meth:`begin_loading` /
:meth:`load_record` / :meth:`complete_loading` rebuild them from the partition's records
(COORDINATOR_LOAD_IN_PROGRESS meanwhile); :meth:`unload` drops them when leadership moves
(NOT_COORDINATOR to everything parked). Requests for other groups get NOT_COORDINATOR.

Rebalance rules (see :mod:`data_plane.coordinator.group` for the states):
- a join by a new member, a leave, a session expiry, or a changed subscription (protocol
  metadata) of a Stable member, or any join of the leader, starts PreparingRebalance;
- the join phase ends when every member has rejoined (or at the largest rebalance timeout,
  removing the dynamic members that did not); an Empty group first waits
  ``group.initial.rebalance.delay.ms``, extended while new members keep arriving, up to the
  rebalance timeout;
- then the generation increments, a protocol all members support is chosen by votes, every
  joined member gets its answer (the leader with all members' metadata), and the group waits
  in CompletingRebalance for the leader's SyncGroup; its assignment is written to
  ``__consumer_offsets`` and only then the group is Stable and the syncs are answered. Members
  that do not sync within the rebalance timeout are removed (new rebalance).
- static members (group.instance.id) keep their assignment across restarts: a rejoin with an
  unknown member id but a known instance id replaces the old member id (the old one is then
  FENCED_INSTANCE_ID) without a rebalance when the group is Stable and its protocols are
  unchanged.

Offsets: commits from the current generation's members, or "simple" commits (generation -1,
no member id) while the group has no members; visible to OffsetFetch only once written (above
the high watermark). Offsets of an Empty group expire ``offsets.retention.minutes`` after the
group became empty (after their commit time for groups that never had members); a group
without offsets and members is then removed (tombstone).

Thread-safety: none; the broker's event loop owns the coordinator.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import uuid
from collections import Counter
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from common.error_codes import ErrorCode
from data_plane.coordinator.config import (
    CLASSIC_PROTOCOL,
    CONSUMER_PROTOCOL,
    GroupCoordinatorConfig,
)
from data_plane.coordinator.consumer_assignors import AssignorTopic
from data_plane.coordinator.consumer_group import (
    JOIN_EPOCH,
    ConsumerGroup,
    HeartbeatSettings,
    PersistedGroup,
)
from data_plane.coordinator.consumer_group_records import (
    FIRST_CONSUMER_GROUP_KEY,
    GROUP_EPOCH_KEY,
    LAST_CONSUMER_GROUP_KEY,
    changed_records,
    group_tombstones,
    record_kind,
    restore,
)
from data_plane.coordinator.consumer_group_records import decode_key as decode_consumer_key
from data_plane.coordinator.consumer_protocol import PROTOCOL_TYPE, subscribed_topics
from data_plane.coordinator.group import GroupMetadata, GroupState, MemberMetadata
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
from data_plane.coordinator.hashing import partition_for
from data_plane.coordinator.messages import (
    ConsumerGroupDescription,
    ConsumerHeartbeatRequest,
    ConsumerHeartbeatResult,
    ConsumerMemberDescription,
    CoordinatorOutputs,
    DeleteGroupsResult,
    GroupDescription,
    JoinGroupRequest,
    JoinGroupResult,
    JoinMember,
    MemberDescription,
    OffsetCommitRequest,
    OffsetCommitResult,
    OffsetDeleteResult,
    OffsetFetchResult,
    RecordWrite,
    SyncGroupRequest,
    SyncGroupResult,
    TxnOffsetCommitRequest,
)
from data_plane.coordinator.write_errors import (
    COMMIT_WRITE_ERRORS,
    METADATA_WRITE_ERRORS,
    map_write_error,
)

logger = logging.getLogger(__name__)

Clock = Callable[[], int]
T = TypeVar("T")
Records = list[tuple[bytes, bytes | None]]


@dataclass(slots=True)
class _LoadState:
    """Records of one partition seen so far while loading it (later records win). Values are
    kept as bytes and decoded once loading completes: in a log not yet compacted most values
    are superseded, and decoding only the last one per key halves the load time."""

    groups: dict[str, bytes | None] = field(default_factory=dict)
    offsets: dict[str, dict[tuple[str, int], bytes]] = field(default_factory=dict)
    # KIP-848 groups' records (key versions 3-8): group -> (kind, member id) -> value.
    consumer: dict[str, dict[tuple[int, str | None], bytes]] = field(default_factory=dict)
    # Transactional offset commits whose marker was not seen yet: producer id -> group -> ...
    txn_offsets: dict[int, dict[str, dict[tuple[str, int], bytes]]] = field(default_factory=dict)
    bad_records: int = 0


class GroupCoordinator:
    def __init__(
        self,
        config: GroupCoordinatorConfig,
        clock_ms: Clock,
        num_partitions: int = 0,
        *,
        new_member_id: Callable[[str], str] | None = None,
    ) -> None:
        self.config = config
        self._clock_ms = clock_ms
        self.num_partitions = num_partitions
        self._new_member_id = new_member_id or (lambda prefix: f"{prefix}-{uuid.uuid4()}")
        self._groups: dict[str, GroupMetadata] = {}
        # __consumer_offsets partitions led here: partition -> its load state (None = loaded).
        self._owned: dict[int, _LoadState | None] = {}
        self._pending_writes: dict[int, tuple[int, Callable[[int, CoordinatorOutputs], None]]] = {}
        self._write_ids = itertools.count(1)
        # (deadline ms, sequence, group id); stale entries are harmless (re-checked on pop).
        self._timers: list[tuple[int, int, str]] = []
        self._timer_seq = itertools.count()
        self._scheduled: dict[str, int] = {}
        self._last_retention_check_ms = clock_ms()

    # --- ownership and loading ----------------------------------------------------------------

    def set_num_partitions(self, num_partitions: int) -> None:
        """The partition count of ``__consumer_offsets`` (from the metadata image)."""
        if num_partitions < 0:
            raise ValueError(f"num_partitions must be >= 0, got {num_partitions}")
        self.num_partitions = num_partitions

    def partition_of(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def owned_partitions(self) -> dict[int, bool]:
        """Partition -> True when loaded, False while loading."""
        return {p: st is None for p, st in self._owned.items()}

    def begin_loading(self, partition: int) -> CoordinatorOutputs:
        """This broker became leader of ``partition``: forget what it held of it before and
        start collecting its records."""
        out = self.unload(partition)
        self._owned[partition] = _LoadState()
        return out

    def load_record(self, partition: int, key: bytes | None, value: bytes | None) -> None:
        """One record of ``partition`` in log order. Undecodable records are counted and
        skipped (a newer broker's record types; Kafka skips unknown ones the same way)."""
        state = self._owned.get(partition)
        if state is None:
            raise ValueError(f"partition {partition} is not loading")
        if key is None:
            state.bad_records += 1
            return
        try:
            kind = record_kind(key)
            if FIRST_CONSUMER_GROUP_KEY <= kind <= LAST_CONSUMER_GROUP_KEY:
                ck = decode_consumer_key(kind, key)
                values = state.consumer.setdefault(ck.group, {})
                if value is None:
                    values.pop((kind, ck.member_id), None)
                else:
                    values[(kind, ck.member_id)] = value
                return
            k = decode_key(key)
            if isinstance(k, OffsetKey):
                per_group = state.offsets.setdefault(k.group, {})
                if value is None:
                    per_group.pop((k.topic, k.partition), None)
                else:
                    per_group[(k.topic, k.partition)] = value
            elif isinstance(k, GroupKey):
                state.groups[k.group] = value
        except InvalidOffsetsRecordError as e:
            state.bad_records += 1
            logger.warning("__consumer_offsets-%d: skipping a record: %s", partition, e)

    def load_txn_record(
        self, partition: int, producer_id: int, key: bytes | None, value: bytes | None
    ) -> None:
        """One record of a transactional batch (a TxnOffsetCommit): held until the
        producer's marker says whether it counts."""
        state = self._owned.get(partition)
        if state is None:
            raise ValueError(f"partition {partition} is not loading")
        try:
            k = decode_key(key) if key is not None else None
        except InvalidOffsetsRecordError as e:
            state.bad_records += 1
            logger.warning("__consumer_offsets-%d: skipping a record: %s", partition, e)
            return
        if not isinstance(k, OffsetKey) or value is None:
            state.bad_records += 1
            return
        pending = state.txn_offsets.setdefault(producer_id, {}).setdefault(k.group, {})
        pending[(k.topic, k.partition)] = value

    def load_txn_marker(self, partition: int, producer_id: int, committed: bool) -> None:
        """The marker of ``producer_id``'s transaction: its offsets count (COMMIT) or not."""
        state = self._owned.get(partition)
        if state is None:
            raise ValueError(f"partition {partition} is not loading")
        pending = state.txn_offsets.pop(producer_id, None)
        if committed and pending:
            for gid, offsets in pending.items():
                state.offsets.setdefault(gid, {}).update(offsets)

    def complete_loading(self, partition: int) -> CoordinatorOutputs:
        """Every record up to the log end was given: build the groups and serve them."""
        state = self._owned.get(partition)
        if state is None:
            raise ValueError(f"partition {partition} is not loading")
        now = self._clock_ms()
        pending_groups = {gid for per in state.txn_offsets.values() for gid in per}
        for gid in (
            state.groups.keys() | state.offsets.keys() | pending_groups | state.consumer.keys()
        ):
            consumer = self._load_consumer_group(partition, state, gid, now)
            value = self._decode_loaded(partition, state, decode_group_value, state.groups.get(gid))
            offsets = {}
            for tp, raw in state.offsets.get(gid, {}).items():
                decoded = self._decode_loaded(partition, state, decode_offset_value, raw)
                if decoded is not None:
                    offsets[tp] = decoded
            pending: dict[int, dict[tuple[str, int], OffsetAndMetadata]] = {}
            for pid, per_group in state.txn_offsets.items():
                for tp, raw in per_group.get(gid, {}).items():
                    decoded = self._decode_loaded(partition, state, decode_offset_value, raw)
                    if decoded is not None:
                        pending.setdefault(pid, {})[tp] = decoded
            if value is None and consumer is None and not offsets and not pending:
                continue  # tombstoned group and no offsets left
            group = GroupMetadata(gid, partition, state_timestamp_ms=now)
            if consumer is not None:
                group.consumer = consumer
                group.protocol_type = PROTOCOL_TYPE
            elif value is not None:
                self._restore(group, value, now)
            group.offsets = dict(offsets)
            group.pending_txn_offsets = pending
            self._groups[gid] = group
            self._schedule_next(group)
        self._owned[partition] = None
        logger.info(
            "loaded __consumer_offsets-%d: %d groups (%d records skipped)",
            partition,
            sum(1 for g in self._groups.values() if g.partition == partition),
            state.bad_records,
        )
        return CoordinatorOutputs()

    @staticmethod
    def _decode_loaded(
        partition: int,
        state: _LoadState,
        decode: Callable[[bytes], T],
        raw: bytes | None,
    ) -> T | None:
        if raw is None:
            return None
        try:
            return decode(raw)
        except InvalidOffsetsRecordError as e:
            state.bad_records += 1
            logger.warning("__consumer_offsets-%d: skipping a record: %s", partition, e)
            return None

    def _load_consumer_group(
        self, partition: int, state: _LoadState, gid: str, now: int
    ) -> ConsumerGroup | None:
        """The KIP-848 group whose records were loaded (None: none, or its group epoch record
        was tombstoned); undecodable records count as skipped and drop the group's state."""
        values = state.consumer.get(gid)
        if not values or (GROUP_EPOCH_KEY, None) not in values:
            return None
        group = ConsumerGroup(gid)
        try:
            restore(group, values, now + self.config.consumer_session_timeout_ms, now)
        except InvalidOffsetsRecordError as e:
            state.bad_records += 1
            logger.warning("__consumer_offsets-%d: skipping group %s: %s", partition, gid, e)
            return None
        return group

    def _restore(self, group: GroupMetadata, value: GroupMetadataValue, now: int) -> None:
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

    def unload(self, partition: int) -> CoordinatorOutputs:
        """Leadership of ``partition`` moved away: drop its groups; parked requests get
        NOT_COORDINATOR (their clients find the new coordinator)."""
        out = CoordinatorOutputs()
        if self._owned.pop(partition, ...) is ...:
            return out
        for gid in [g for g, grp in self._groups.items() if grp.partition == partition]:
            group = self._groups.pop(gid)
            for m in group.members.values():
                if m.join_waiter is not None:
                    out.respond(m.join_waiter, JoinGroupResult(ErrorCode.NOT_COORDINATOR))
                    m.join_waiter = None
                if m.sync_waiter is not None:
                    out.respond(m.sync_waiter, SyncGroupResult(ErrorCode.NOT_COORDINATOR))
                    m.sync_waiter = None
            group.state = GroupState.DEAD
            self._scheduled.pop(gid, None)
        return out

    def _ownership_error(self, group_id: str) -> int:
        if self.num_partitions <= 0:
            return ErrorCode.NOT_COORDINATOR
        p = self.partition_of(group_id)
        if p not in self._owned:
            return ErrorCode.NOT_COORDINATOR
        if self._owned[p] is not None:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NO_ERROR

    # --- writes -------------------------------------------------------------------------------

    def _write(
        self,
        out: CoordinatorOutputs,
        partition: int,
        records: Records,
        on_done: Callable[[int, CoordinatorOutputs], None],
        *,
        producer_id: int = -1,
        producer_epoch: int = -1,
    ) -> None:
        write_id = next(self._write_ids)
        self._pending_writes[write_id] = (partition, on_done)
        out.writes.append(
            RecordWrite(write_id, partition, tuple(records), producer_id, producer_epoch)
        )

    def complete_write(self, write_id: int, error_code: int) -> CoordinatorOutputs:
        """The outcome of a :class:`RecordWrite`: NO_ERROR once committed (above the high
        watermark), else the append's error code."""
        out = CoordinatorOutputs()
        entry = self._pending_writes.pop(write_id, None)
        if entry is None:
            return out
        partition, on_done = entry
        if error_code == ErrorCode.NO_ERROR and self._owned.get(partition, ...) is not None:
            error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER  # unloaded (or reloading) meanwhile
        on_done(error_code, out)
        return out

    def _group_record(self, group: GroupMetadata, assignments: dict[str, bytes]) -> Records:
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

    # --- timers -------------------------------------------------------------------------------

    def _schedule(self, group: GroupMetadata, deadline_ms: int) -> None:
        current = self._scheduled.get(group.group_id)
        if current is not None and current <= deadline_ms:
            return
        self._scheduled[group.group_id] = deadline_ms
        heapq.heappush(self._timers, (deadline_ms, next(self._timer_seq), group.group_id))

    def _next_deadline(self, group: GroupMetadata) -> int | None:
        deadlines = list(group.pending_members.values())
        if group.rebalance_deadline_ms >= 0:
            deadlines.append(group.rebalance_deadline_ms)
        for m in group.members.values():
            if m.join_waiter is None and m.sync_waiter is None:
                deadlines.append(m.last_heartbeat_ms + m.session_timeout_ms)
        if group.consumer is not None:
            consumer_deadline = group.consumer.next_deadline_ms()
            if consumer_deadline is not None:
                deadlines.append(consumer_deadline)
        return min(deadlines) if deadlines else None

    def _schedule_next(self, group: GroupMetadata) -> None:
        deadline = self._next_deadline(group)
        if deadline is not None:
            self._schedule(group, deadline)

    def next_deadline_ms(self) -> int | None:
        """When :meth:`tick` next has work (clock ms), for an I/O layer that sleeps."""
        return self._timers[0][0] if self._timers else None

    def tick(self) -> CoordinatorOutputs:
        """Session expiries, rebalance and initial-delay deadlines, pending member expiry, and
        every ``offsets.retention.check.interval.ms`` the offset retention."""
        out = CoordinatorOutputs()
        now = self._clock_ms()
        due: list[str] = []
        while self._timers and self._timers[0][0] <= now:
            deadline, _, gid = heapq.heappop(self._timers)
            if self._scheduled.get(gid) == deadline:
                del self._scheduled[gid]
                due.append(gid)
        for gid in due:
            group = self._groups.get(gid)
            if group is not None and not group.is_(GroupState.DEAD):
                self._check_timeouts(group, now, out)
                self._schedule_next(group)
        if now - self._last_retention_check_ms >= self.config.offsets_retention_check_interval_ms:
            self._last_retention_check_ms = now
            self.expire_offsets(out)
        return out

    def _check_timeouts(self, group: GroupMetadata, now: int, out: CoordinatorOutputs) -> None:
        if group.consumer is not None:
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
                self._write(out, group.partition, changed_records(group.consumer), _ignore_write)
        for mid, deadline in list(group.pending_members.items()):
            if deadline <= now:
                del group.pending_members[mid]
                self._try_complete_join(group, out)
        for m in list(group.members.values()):
            if m.join_waiter is not None or m.sync_waiter is not None:
                continue
            if m.last_heartbeat_ms + m.session_timeout_ms <= now and m.member_id in group.members:
                logger.info("group %s: member %s session expired", group.group_id, m.member_id)
                self._remove_member(group, m, out)
        if 0 <= group.rebalance_deadline_ms <= now:
            if group.is_(GroupState.PREPARING_REBALANCE):
                self._on_join_deadline(group, out)
            elif group.is_(GroupState.COMPLETING_REBALANCE):
                self._on_sync_deadline(group, out)
            else:
                group.rebalance_deadline_ms = -1

    # --- join ---------------------------------------------------------------------------------

    def join_group(self, waiter: Hashable, req: JoinGroupRequest) -> CoordinatorOutputs:
        out = CoordinatorOutputs()
        error = self._join_error(req)
        if error != ErrorCode.NO_ERROR:
            out.respond(waiter, JoinGroupResult(error, member_id=req.member_id))
            return out
        group = self._groups.get(req.group_id)
        if group is None:
            if req.member_id:
                out.respond(waiter, JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=""))
                return out
            group = GroupMetadata(
                req.group_id, self.partition_of(req.group_id), state_timestamp_ms=self._clock_ms()
            )
            self._groups[req.group_id] = group
        if group.consumer is not None and not group.consumer.members:
            # An empty consumer-protocol group becomes a classic one again.
            tombstones = _consumer_tombstones(group)
            if tombstones:
                self._write(out, group.partition, tombstones, _ignore_write)
            group.consumer = None
            group.protocol_type = None
        if group.is_(GroupState.DEAD):
            # Being removed (deleted or expired) right now: the client retries.
            out.respond(waiter, JoinGroupResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        elif group.consumer is not None:
            # Classic members cannot join a group of consumer-protocol members.
            out.respond(
                waiter,
                JoinGroupResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=req.member_id),
            )
        elif not req.member_id and (
            len(group.members) + len(group.pending_members) >= self.config.group_max_size
        ):
            out.respond(waiter, JoinGroupResult(ErrorCode.GROUP_MAX_SIZE_REACHED))
        elif not group.supports_protocols(req.protocol_type, list(req.protocols)):
            out.respond(
                waiter,
                JoinGroupResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=req.member_id),
            )
        elif not req.member_id:
            self._join_unknown_member(group, waiter, req, out)
        else:
            self._join_known_member(group, waiter, req, out)
        self._drop_if_unused(group)
        self._schedule_next(group)
        return out

    def _join_error(self, req: JoinGroupRequest) -> int:
        if not req.group_id:
            return ErrorCode.INVALID_GROUP_ID
        error = self._ownership_error(req.group_id)
        if error != ErrorCode.NO_ERROR:
            return error
        cfg = self.config
        if not (
            cfg.group_min_session_timeout_ms
            <= req.session_timeout_ms
            <= cfg.group_max_session_timeout_ms
        ):
            return ErrorCode.INVALID_SESSION_TIMEOUT
        return ErrorCode.NO_ERROR

    def _drop_if_unused(self, group: GroupMetadata) -> bool:
        """A group a failed first join (or a consumer group's last leave) left holding
        nothing is not kept; True when it was dropped."""
        if (
            group.is_(GroupState.EMPTY)
            and not group.has_members()
            and not group.pending_members
            and not group.offsets
            and not group.pending_txn_offsets
            and group.generation_id == 0
            and group.pending_offset_commits == 0
        ):
            self._groups.pop(group.group_id, None)
            return True
        return False

    def _join_unknown_member(
        self, group: GroupMetadata, waiter: Hashable, req: JoinGroupRequest, out: CoordinatorOutputs
    ) -> None:
        new_id = self._new_member_id(req.group_instance_id or req.client_id)
        if req.group_instance_id is not None:
            old_id = group.static_members.get(req.group_instance_id)
            if old_id is not None and old_id in group.members:
                self._replace_static_member(group, waiter, req, old_id, new_id, out)
            else:
                self._add_member_and_rebalance(group, waiter, req, new_id, out)
        elif req.require_known_member_id:
            group.pending_members[new_id] = self._clock_ms() + req.session_timeout_ms
            out.respond(
                waiter,
                JoinGroupResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=new_id, generation_id=-1),
            )
        else:
            self._add_member_and_rebalance(group, waiter, req, new_id, out)

    def _join_known_member(
        self, group: GroupMetadata, waiter: Hashable, req: JoinGroupRequest, out: CoordinatorOutputs
    ) -> None:
        mid = req.member_id
        if mid in group.pending_members:
            self._add_member_and_rebalance(group, waiter, req, mid, out)
            return
        if group.is_static_fenced(mid, req.group_instance_id):
            out.respond(waiter, JoinGroupResult(ErrorCode.FENCED_INSTANCE_ID, member_id=mid))
            return
        member = group.members.get(mid)
        if member is None or group.state in (GroupState.EMPTY, GroupState.DEAD):
            out.respond(waiter, JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=mid))
            return
        protocols = list(req.protocols)
        if group.is_(GroupState.PREPARING_REBALANCE):
            self._update_member_and_rebalance(group, member, waiter, req, out)
        elif group.is_(GroupState.COMPLETING_REBALANCE):
            if member.matches(protocols):
                # The member missed our answer (a retried join): give it the same one.
                member.last_heartbeat_ms = self._clock_ms()
                out.respond(waiter, self._join_result(group, mid))
            else:
                self._update_member_and_rebalance(group, member, waiter, req, out)
        elif group.leader_id == mid or not member.matches(protocols):
            # Stable: the leader rejoining or a changed subscription means a new assignment.
            self._update_member_and_rebalance(group, member, waiter, req, out)
        else:
            member.last_heartbeat_ms = self._clock_ms()
            out.respond(waiter, self._join_result(group, mid, with_members=False))

    def _join_result(
        self, group: GroupMetadata, member_id: str, *, with_members: bool = True
    ) -> JoinGroupResult:
        members: tuple[JoinMember, ...] = ()
        if with_members and group.leader_id == member_id and group.protocol_name is not None:
            protocol = group.protocol_name
            members = tuple(
                JoinMember(m.member_id, m.group_instance_id, m.metadata_for(protocol))
                for m in group.members.values()
            )
        return JoinGroupResult(
            ErrorCode.NO_ERROR,
            group.generation_id,
            group.protocol_name,
            group.leader_id or "",
            member_id,
            members,
        )

    def _add_member_and_rebalance(
        self,
        group: GroupMetadata,
        waiter: Hashable,
        req: JoinGroupRequest,
        member_id: str,
        out: CoordinatorOutputs,
    ) -> None:
        group.pending_members.pop(member_id, None)
        member = MemberMetadata(
            member_id,
            req.group_instance_id,
            req.client_id,
            req.client_host,
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            req.protocol_type,
            list(req.protocols),
            last_heartbeat_ms=self._clock_ms(),
            join_waiter=waiter,
        )
        group.add(member)
        if group.is_(GroupState.PREPARING_REBALANCE) and group.initial_delay_remaining_ms >= 0:
            group.new_member_added = True
        self._maybe_prepare_rebalance(group, out, f"member {member_id} joined")
        self._try_complete_join(group, out)

    def _update_member_and_rebalance(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        waiter: Hashable,
        req: JoinGroupRequest,
        out: CoordinatorOutputs,
    ) -> None:
        if member.join_waiter is not None and member.join_waiter != waiter:
            # A second join while one is parked: the client gave up on the first.
            out.respond(member.join_waiter, JoinGroupResult(ErrorCode.REBALANCE_IN_PROGRESS))
        member.protocols = list(req.protocols)
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        member.join_waiter = waiter
        member.last_heartbeat_ms = self._clock_ms()
        self._maybe_prepare_rebalance(group, out, f"member {member.member_id} rejoined")
        self._try_complete_join(group, out)

    def _replace_static_member(
        self,
        group: GroupMetadata,
        waiter: Hashable,
        req: JoinGroupRequest,
        old_id: str,
        new_id: str,
        out: CoordinatorOutputs,
    ) -> None:
        instance_id = req.group_instance_id
        if instance_id is None:
            raise ValueError("static member replacement needs a group.instance.id")
        old = group.members[old_id]
        # The old incarnation's parked requests are answered: it is fenced from now on.
        if old.join_waiter is not None:
            out.respond(old.join_waiter, JoinGroupResult(ErrorCode.FENCED_INSTANCE_ID))
            old.join_waiter = None
        if old.sync_waiter is not None:
            out.respond(old.sync_waiter, SyncGroupResult(ErrorCode.FENCED_INSTANCE_ID))
            old.sync_waiter = None
        old_protocols = list(old.protocols)
        member = group.replace_static_member(instance_id, old_id, new_id)
        member.last_heartbeat_ms = self._clock_ms()
        member.client_id, member.client_host = req.client_id, req.client_host
        if not group.is_(GroupState.STABLE):
            self._update_member_and_rebalance(group, member, waiter, req, out)
            return
        # Stable: the new metadata (a restarted client no longer lists owned partitions, so it
        # differs) matters only if it changes the protocol the next generation would choose
        # (Kafka's updateStaticMemberAndRebalance); otherwise persist the new member id and
        # answer without a rebalance.
        member.protocols = list(req.protocols)
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        # join_group checked that the protocols intersect the group's candidates, so a protocol
        # common to all members exists.
        if group.select_protocol() != group.protocol_name:
            member.join_waiter = waiter
            self._prepare_rebalance(group, out, f"static member {instance_id} changed protocols")
            self._try_complete_join(group, out)
            return
        records = self._group_record(
            group, {m.member_id: m.assignment for m in group.members.values()}
        )
        generation = group.generation_id

        def done(error: int, o: CoordinatorOutputs) -> None:
            if error != ErrorCode.NO_ERROR:
                if group.generation_id == generation and new_id in group.members:
                    restored = group.replace_static_member(instance_id, new_id, old_id)
                    restored.protocols = old_protocols
                o.respond(waiter, JoinGroupResult(map_write_error(METADATA_WRITE_ERRORS, error)))
                return
            o.respond(waiter, self._join_result(group, new_id, with_members=False))

        self._write(out, group.partition, records, done)

    def _maybe_prepare_rebalance(
        self, group: GroupMetadata, out: CoordinatorOutputs, why: str
    ) -> None:
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY):
            self._prepare_rebalance(group, out, why)

    def _prepare_rebalance(self, group: GroupMetadata, out: CoordinatorOutputs, why: str) -> None:
        now = self._clock_ms()
        if group.is_(GroupState.COMPLETING_REBALANCE):
            self._fail_pending_syncs(group, ErrorCode.REBALANCE_IN_PROGRESS, out)
        if group.is_(GroupState.EMPTY):
            delay = self.config.group_initial_rebalance_delay_ms
            group.initial_delay_remaining_ms = max(group.max_rebalance_timeout_ms() - delay, 0)
            group.new_member_added = False
            group.rebalance_deadline_ms = now + delay
        else:
            group.initial_delay_remaining_ms = -1
            group.rebalance_deadline_ms = now + group.max_rebalance_timeout_ms()
        group.transition_to(GroupState.PREPARING_REBALANCE, now)
        logger.info(
            "group %s: preparing to rebalance (generation %d): %s",
            group.group_id,
            group.generation_id,
            why,
        )
        self._schedule(group, group.rebalance_deadline_ms)

    def _fail_pending_syncs(
        self, group: GroupMetadata, error: int, out: CoordinatorOutputs
    ) -> None:
        for m in group.members.values():
            m.assignment = b""
            if m.sync_waiter is not None:
                out.respond(m.sync_waiter, SyncGroupResult(error))
                m.sync_waiter = None

    def _try_complete_join(self, group: GroupMetadata, out: CoordinatorOutputs) -> None:
        if (
            group.is_(GroupState.PREPARING_REBALANCE)
            and group.initial_delay_remaining_ms < 0
            and group.all_members_joined()
        ):
            self._complete_join(group, out)

    def _on_join_deadline(self, group: GroupMetadata, out: CoordinatorOutputs) -> None:
        now = self._clock_ms()
        if group.initial_delay_remaining_ms >= 0:
            if group.new_member_added and group.initial_delay_remaining_ms > 0:
                # Kafka's InitialDelayedJoin: members keep arriving, wait a little more.
                delay = min(
                    self.config.group_initial_rebalance_delay_ms, group.initial_delay_remaining_ms
                )
                group.initial_delay_remaining_ms = max(group.initial_delay_remaining_ms - delay, 0)
                group.new_member_added = False
                group.rebalance_deadline_ms = now + delay
                self._schedule(group, group.rebalance_deadline_ms)
                return
            group.initial_delay_remaining_ms = -1
        self._complete_join(group, out)

    def _complete_join(self, group: GroupMetadata, out: CoordinatorOutputs) -> None:
        """Kafka's onCompleteJoin: drop dynamic members that did not rejoin, start the next
        generation, answer every joined member."""
        now = self._clock_ms()
        for m in list(group.members.values()):
            if m.join_waiter is None and m.group_instance_id is None:
                self._remove_member(group, m, out, update=False)
        group.pending_members.clear()
        if group.members and (
            group.leader_id is None or group.members[group.leader_id].join_waiter is None
        ):
            joined = [m.member_id for m in group.members.values() if m.join_waiter is not None]
            if not joined:
                # Only static members that have not rejoined: wait for them (or their expiry).
                group.rebalance_deadline_ms = now + group.max_rebalance_timeout_ms()
                self._schedule(group, group.rebalance_deadline_ms)
                return
            group.leader_id = joined[0]
        group.generation_id += 1
        group.initial_delay_remaining_ms = -1
        if not group.members:
            group.protocol_name = None
            group.leader_id = None
            group.rebalance_deadline_ms = -1
            group.transition_to(GroupState.EMPTY, now)
            logger.info("group %s: generation %d is empty", group.group_id, group.generation_id)
            self._write(out, group.partition, self._group_record(group, {}), _ignore_write)
            return
        group.protocol_name = group.select_protocol()
        group.transition_to(GroupState.COMPLETING_REBALANCE, now)
        # Members must sync within the rebalance timeout (Kafka's pending-sync timeout).
        group.rebalance_deadline_ms = now + group.max_rebalance_timeout_ms()
        logger.info(
            "group %s: generation %d with %d members, protocol %s, leader %s",
            group.group_id,
            group.generation_id,
            len(group.members),
            group.protocol_name,
            group.leader_id,
        )
        for m in group.members.values():
            m.last_heartbeat_ms = now
            if m.join_waiter is not None:
                out.respond(m.join_waiter, self._join_result(group, m.member_id))
                m.join_waiter = None
        self._schedule_next(group)

    def _on_sync_deadline(self, group: GroupMetadata, out: CoordinatorOutputs) -> None:
        missing = [m for m in group.members.values() if m.sync_waiter is None]
        group.rebalance_deadline_ms = -1
        if not missing:
            return  # every member synced; the leader's assignment write is in flight
        for m in missing:
            logger.info("group %s: member %s did not sync in time", group.group_id, m.member_id)
            group.remove(m.member_id)
        # With no member left the new join phase ends at once (an Empty generation).
        self._prepare_rebalance(group, out, f"{len(missing)} members did not sync in time")

    # --- sync ---------------------------------------------------------------------------------

    def sync_group(self, waiter: Hashable, req: SyncGroupRequest) -> CoordinatorOutputs:
        out = CoordinatorOutputs()
        group, member, error = self._member_check(
            req.group_id, req.member_id, req.group_instance_id, req.generation_id
        )
        if error != ErrorCode.NO_ERROR or group is None or member is None:
            out.respond(waiter, SyncGroupResult(error))
            return out
        if (req.protocol_type is not None and req.protocol_type != group.protocol_type) or (
            req.protocol_name is not None and req.protocol_name != group.protocol_name
        ):
            out.respond(waiter, SyncGroupResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return out
        now = self._clock_ms()
        if group.is_(GroupState.PREPARING_REBALANCE):
            out.respond(waiter, SyncGroupResult(ErrorCode.REBALANCE_IN_PROGRESS))
        elif group.is_(GroupState.STABLE):
            member.last_heartbeat_ms = now
            out.respond(waiter, _synced(group, member.assignment))
        elif group.is_(GroupState.COMPLETING_REBALANCE):
            if member.sync_waiter is not None and member.sync_waiter != waiter:
                out.respond(member.sync_waiter, SyncGroupResult(ErrorCode.REBALANCE_IN_PROGRESS))
            member.sync_waiter = waiter
            member.last_heartbeat_ms = now
            if member.member_id == group.leader_id:
                self._store_assignment(group, dict(req.assignments), out)
        else:
            out.respond(waiter, SyncGroupResult(ErrorCode.UNKNOWN_MEMBER_ID))
        self._schedule_next(group)
        return out

    def _store_assignment(
        self, group: GroupMetadata, assignments: dict[str, bytes], out: CoordinatorOutputs
    ) -> None:
        full = {mid: assignments.get(mid, b"") for mid in group.members}
        generation = group.generation_id

        def done(error: int, o: CoordinatorOutputs) -> None:
            if (
                self._groups.get(group.group_id) is not group
                or group.generation_id != generation
                or not group.is_(GroupState.COMPLETING_REBALANCE)
            ):
                return  # a newer rebalance already answered the syncs
            if error != ErrorCode.NO_ERROR:
                self._fail_pending_syncs(group, map_write_error(METADATA_WRITE_ERRORS, error), o)
                self._prepare_rebalance(group, o, f"storing the assignment failed ({error})")
                return
            now = self._clock_ms()
            for m in group.members.values():
                m.assignment = full.get(m.member_id, b"")
                if m.sync_waiter is not None:
                    o.respond(m.sync_waiter, _synced(group, m.assignment))
                    m.sync_waiter = None
                m.last_heartbeat_ms = now
            group.rebalance_deadline_ms = -1
            group.transition_to(GroupState.STABLE, now)
            self._schedule_next(group)

        self._write(out, group.partition, self._group_record(group, full), done)

    def _member_check(
        self, group_id: str, member_id: str, instance_id: str | None, generation_id: int
    ) -> tuple[GroupMetadata | None, MemberMetadata | None, int]:
        """The checks SyncGroup and Heartbeat share, in Kafka's order."""
        if not group_id:
            return None, None, ErrorCode.INVALID_GROUP_ID
        error = self._ownership_error(group_id)
        if error != ErrorCode.NO_ERROR:
            return None, None, error
        group = self._groups.get(group_id)
        if group is None:
            return None, None, ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_(GroupState.DEAD):
            return group, None, ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group.is_static_fenced(member_id, instance_id):
            return group, None, ErrorCode.FENCED_INSTANCE_ID
        member = group.members.get(member_id)
        if member is None or group.is_(GroupState.EMPTY):
            return group, None, ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return group, member, ErrorCode.ILLEGAL_GENERATION
        return group, member, ErrorCode.NO_ERROR

    # --- heartbeat and leave ------------------------------------------------------------------

    def heartbeat(
        self, group_id: str, generation_id: int, member_id: str, instance_id: str | None = None
    ) -> int:
        """The Heartbeat answer; a heartbeat of a known member renews its session."""
        if group_id and self._ownership_error(group_id) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            # Kafka answers NONE while loading: the member keeps its assignment meanwhile.
            return ErrorCode.NO_ERROR
        group, member, error = self._member_check(group_id, member_id, instance_id, generation_id)
        if error != ErrorCode.NO_ERROR or group is None or member is None:
            return error
        member.last_heartbeat_ms = self._clock_ms()
        self._schedule_next(group)
        if group.is_(GroupState.PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NO_ERROR

    def leave_group(self, group_id: str, member_id: str) -> tuple[int, CoordinatorOutputs]:
        """LeaveGroup v0-2: one dynamic member leaves (see :meth:`leave_group_members`); its
        error is the group's, else the member's."""
        error, errors, out = self.leave_group_members(group_id, [(member_id, None)])
        return (error or errors[0]), out

    def leave_group_members(
        self, group_id: str, members: list[tuple[str, str | None]]
    ) -> tuple[int, list[int], CoordinatorOutputs]:
        """LeaveGroup v3+ (KIP-345): remove each (member id, group instance id). A static
        member is found by its instance id: UNKNOWN_MEMBER_ID if no member holds it,
        FENCED_INSTANCE_ID if the member id given is not the holder's; a dynamic one by its
        id (UNKNOWN_MEMBER_ID if absent). Returns the group-level error, one error per member
        (in order) and the outputs; the group rebalances without them at once."""
        out = CoordinatorOutputs()
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, [], out
        error = self._ownership_error(group_id)
        if error != ErrorCode.NO_ERROR:
            return error, [], out
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.NO_ERROR, [ErrorCode.UNKNOWN_MEMBER_ID] * len(members), out
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, [], out
        errors = []
        removed = pending_removed = False
        for member_id, instance_id in members:
            if instance_id is not None:
                holder = group.static_members.get(instance_id)
                if holder is None:
                    errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
                    continue
                if member_id and member_id != holder:
                    errors.append(ErrorCode.FENCED_INSTANCE_ID)
                    continue
                member_id = holder
            if group.pending_members.pop(member_id, None) is not None:
                errors.append(ErrorCode.NO_ERROR)
                pending_removed = True
                continue
            member = group.members.get(member_id)
            if member is None:
                errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
                continue
            logger.info("group %s: member %s left", group_id, member_id)
            self._remove_member(group, member, out)
            errors.append(ErrorCode.NO_ERROR)
            removed = True
        if pending_removed:
            self._try_complete_join(group, out)
        if removed:
            self._schedule_next(group)
        return ErrorCode.NO_ERROR, errors, out

    def _remove_member(
        self,
        group: GroupMetadata,
        member: MemberMetadata,
        out: CoordinatorOutputs,
        *,
        update: bool = True,
    ) -> None:
        if member.join_waiter is not None:
            out.respond(member.join_waiter, JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID))
            member.join_waiter = None
        if member.sync_waiter is not None:
            out.respond(member.sync_waiter, SyncGroupResult(ErrorCode.UNKNOWN_MEMBER_ID))
            member.sync_waiter = None
        group.remove(member.member_id)
        if not update:
            return
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, out, f"member {member.member_id} removed")
        # As Kafka's join purgatory tries a new DelayedJoin at once: when the last member left
        # (or every remaining one has already rejoined) the join completes now, so a group
        # whose members all left is Empty (deletable, resettable) right away, not at the
        # rebalance deadline.
        if group.is_(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group, out)

    # --- offsets ------------------------------------------------------------------------------

    def txn_commit_offsets(
        self, waiter: Hashable, req: TxnOffsetCommitRequest
    ) -> CoordinatorOutputs:
        """TxnOffsetCommit (Kafka's handleTxnCommitOffsets): write the offsets in the
        producer's transaction; they count once its COMMIT marker reaches the group's
        partition (:meth:`complete_transaction`). Answers an :class:`OffsetCommitResult`."""
        out = CoordinatorOutputs()
        error = self._ownership_error(req.group_id)
        now = self._clock_ms()
        group = self._commit_group(req.group_id, now) if error == ErrorCode.NO_ERROR else None
        if group is not None and group.is_(GroupState.DEAD):
            error = ErrorCode.COORDINATOR_NOT_AVAILABLE
        elif group is not None and (req.member_id or req.generation_id >= 0):
            # KIP-447: the producer's consumer must still be a member of this generation.
            error = self._membership_error(
                group, req.member_id, req.generation_id, req.group_instance_id, transactional=True
            )
        if group is None or error != ErrorCode.NO_ERROR:
            return self._refuse_commit(out, waiter, req.offsets, error)
        pid = req.producer_id
        in_flight = group.txn_offsets_in_flight.setdefault(pid, Counter())
        tps = [tp for tp, _offset, _epoch, _metadata in req.offsets]
        in_flight.update(tps)

        def pend(values: dict[tuple[str, int], OffsetAndMetadata]) -> None:
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
        for group in self._groups.values():
            if group.partition != partition:
                continue
            group.txn_offsets_in_flight.pop(producer_id, None)
            pending = group.pending_txn_offsets.pop(producer_id, None)
            if committed and pending:
                group.offsets.update(pending)
        return CoordinatorOutputs()

    def commit_offsets(self, waiter: Hashable, req: OffsetCommitRequest) -> CoordinatorOutputs:
        out = CoordinatorOutputs()
        error = self._ownership_error(req.group_id)
        if error != ErrorCode.NO_ERROR:
            return self._refuse_commit(out, waiter, req.offsets, error)
        now = self._clock_ms()
        if req.group_id not in self._groups and (
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
            self._schedule_next(group)
        return self._store_offsets(out, waiter, group, req.offsets, now, group.offsets.update)

    def _commit_group(self, group_id: str, now: int) -> GroupMetadata:
        """The group an offset commit goes to, created (Empty) when it has none yet."""
        group = self._groups.get(group_id)
        if group is None:
            group = GroupMetadata(group_id, self.partition_of(group_id), state_timestamp_ms=now)
            self._groups[group_id] = group
        return group

    @staticmethod
    def _refuse_commit(
        out: CoordinatorOutputs,
        waiter: Hashable,
        offsets: tuple[tuple[tuple[str, int], int, int, str | None], ...],
        error: int,
    ) -> CoordinatorOutputs:
        out.respond(waiter, OffsetCommitResult({tp: error for tp, _, _, _ in offsets}))
        return out

    def _store_offsets(
        self,
        out: CoordinatorOutputs,
        waiter: Hashable,
        group: GroupMetadata,
        offsets: tuple[tuple[tuple[str, int], int, int, str | None], ...],
        now: int,
        on_written: Callable[[dict[tuple[str, int], OffsetAndMetadata]], None],
        *,
        producer_id: int = -1,
        producer_epoch: int = -1,
        on_finished: Callable[[], None] | None = None,
    ) -> CoordinatorOutputs:
        """Write the commit's records (a transactional batch when ``producer_id`` is set) and
        answer ``waiter`` once written; ``on_written`` installs the values then, and
        ``on_finished`` runs after it whether or not anything was written. Metadata over
        ``offset.metadata.max.bytes`` is refused per partition."""
        errors: dict[tuple[str, int], int] = {}
        values: dict[tuple[str, int], OffsetAndMetadata] = {}
        records: Records = []
        limit = self.config.offset_metadata_max_bytes
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
            if code == ErrorCode.NO_ERROR and self._groups.get(group.group_id) is group:
                on_written(values)
            if on_finished is not None:
                on_finished()
            for tp in values:
                errors[tp] = code
            o.respond(waiter, OffsetCommitResult(errors))

        self._write(
            out,
            group.partition,
            records,
            done,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
        )
        return out

    def _membership_error(
        self,
        group: GroupMetadata,
        member_id: str,
        generation_id: int,
        instance_id: str | None,
        *,
        transactional: bool = False,
    ) -> int:
        if group.consumer is not None:
            # KIP-848: the generation field carries the member epoch.
            member = group.consumer.members.get(member_id)
            if member is None or member.static_leaving:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if generation_id != member.member_epoch:
                # Kafka: a stale epoch is retriable for OffsetCommit, fatal for TxnOffsetCommit.
                return (
                    ErrorCode.ILLEGAL_GENERATION if transactional else ErrorCode.STALE_MEMBER_EPOCH
                )
            return ErrorCode.NO_ERROR
        if group.is_static_fenced(member_id, instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NO_ERROR

    def _commit_error(self, group: GroupMetadata, req: OffsetCommitRequest) -> int:
        """Kafka's validateOffsetCommit."""
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if req.generation_id >= 0 or req.member_id or req.group_instance_id is not None:
            error = self._membership_error(
                group, req.member_id, req.generation_id, req.group_instance_id
            )
            if error != ErrorCode.NO_ERROR:
                return error
        elif not group.is_(GroupState.EMPTY) or group.has_members():
            # A simple commit to a group managed by the coordinator.
            return ErrorCode.ILLEGAL_GENERATION
        if group.is_(GroupState.COMPLETING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NO_ERROR

    def fetch_offsets(
        self,
        group_id: str,
        partitions: list[tuple[str, int]] | None,
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
        error = self._ownership_error(group_id)
        if error != ErrorCode.NO_ERROR:
            return OffsetFetchResult(error)
        group = self._groups.get(group_id)
        if (
            group is not None
            and group.consumer is not None
            and (member_id is not None or member_epoch >= 0)
        ):
            error = self._membership_error(group, member_id or "", member_epoch, None)
            if error != ErrorCode.NO_ERROR:
                return OffsetFetchResult(error)
        stored = group.offsets if group is not None else {}
        offsets = dict(stored) if partitions is None else {tp: stored.get(tp) for tp in partitions}
        unstable: frozenset[tuple[str, int]] = frozenset()
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

    def expire_offsets(self, out: CoordinatorOutputs | None = None) -> CoordinatorOutputs:
        """Offset retention (Kafka's cleanupGroupMetadata): offsets of Empty groups older than
        ``offsets.retention.minutes`` get tombstones (counted from when the group became empty,
        or from their commit for groups that never had members); in a Stable consumer group,
        offsets of topics no member subscribes to any more expire from their commit (KIP-496).
        An Empty group left with no offsets is removed (a group tombstone when it was ever
        written)."""
        out = out if out is not None else CoordinatorOutputs()
        now = self._clock_ms()
        retention = self.config.offsets_retention_ms
        for gid, group in list(self._groups.items()):
            if self._owned.get(group.partition, ...) is not None:
                continue  # loading or not ours
            if group.pending_offset_commits:
                continue
            expired = self._expired_offsets(group, now, retention)
            records: Records = [(offset_commit_key(gid, topic, p), None) for topic, p in expired]
            for tp in expired:
                del group.offsets[tp]
            if group.is_(GroupState.EMPTY) and not group.has_members() and not group.offsets:
                group.transition_to(GroupState.DEAD, now)
                del self._groups[gid]
                self._scheduled.pop(gid, None)
                if group.generation_id > 0 or group.protocol_type is not None:
                    records.append((group_metadata_key(gid), None))
                records.extend(_consumer_tombstones(group))
            if records:
                logger.info("group %s: %d offsets expired", gid, len(expired))
                self._write(out, group.partition, records, _ignore_write)
        return out

    def _expired_offsets(
        self, group: GroupMetadata, now: int, retention: int
    ) -> list[tuple[str, int]]:
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
        subscribed = self._subscribed_topics(group)
        if subscribed is None:
            return []  # an undecodable subscription: expire nothing
        return [
            tp
            for tp, v in group.offsets.items()
            if tp[0] not in subscribed and v.commit_timestamp_ms + retention <= now
        ]

    # --- admin --------------------------------------------------------------------------------

    def describe_group(self, group_id: str) -> GroupDescription:
        error = self._ownership_error(group_id)
        if error != ErrorCode.NO_ERROR:
            return GroupDescription(error, group_id, "")
        group = self._groups.get(group_id)
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
        loading = any(st is not None for st in self._owned.values())
        groups = [
            (g.group_id, g.protocol_type or "", g.state.value, CLASSIC_PROTOCOL)
            if g.consumer is None
            else (g.group_id, g.protocol_type or "", g.consumer.state().value, CONSUMER_PROTOCOL)
            for g in self._groups.values()
            if not g.is_(GroupState.DEAD)
        ]
        error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if loading else ErrorCode.NO_ERROR
        return error, groups

    def delete_groups(self, waiter: Hashable, group_ids: list[str]) -> CoordinatorOutputs:
        """Kafka's DeleteGroups: an Empty group's offsets and metadata are tombstoned; a
        group with members gets NON_EMPTY_GROUP, an unknown one GROUP_ID_NOT_FOUND."""
        out = CoordinatorOutputs()
        errors: dict[str, int] = {}
        doomed: list[GroupMetadata] = []
        for gid in group_ids:
            error = ErrorCode.INVALID_GROUP_ID if not gid else self._ownership_error(gid)
            group = self._groups.get(gid) if error == ErrorCode.NO_ERROR else None
            if error != ErrorCode.NO_ERROR:
                errors[gid] = error
            elif group is None or group.is_(GroupState.DEAD):
                errors[gid] = ErrorCode.GROUP_ID_NOT_FOUND
            elif (
                not group.is_(GroupState.EMPTY)
                or group.has_members()
                or group.pending_offset_commits
            ):
                errors[gid] = ErrorCode.NON_EMPTY_GROUP
            else:
                doomed.append(group)
        if not doomed:
            out.respond(waiter, DeleteGroupsResult(errors))
            return out
        remaining = [len(doomed)]
        now = self._clock_ms()
        for group in doomed:
            gid = group.group_id
            records: Records = [(offset_commit_key(gid, t, p), None) for t, p in group.offsets]
            records.append((group_metadata_key(gid), None))
            records.extend(_consumer_tombstones(group))
            group.transition_to(GroupState.DEAD, now)
            del self._groups[gid]
            self._scheduled.pop(gid, None)

            def done(error: int, o: CoordinatorOutputs, gid: str = gid) -> None:
                errors[gid] = map_write_error(METADATA_WRITE_ERRORS, error)
                remaining[0] -= 1
                if remaining[0] == 0:
                    o.respond(waiter, DeleteGroupsResult(dict(errors)))

            self._write(out, group.partition, records, done)
        return out

    def delete_offsets(
        self, waiter: Hashable, group_id: str, partitions: list[tuple[str, int]]
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
        error = self._ownership_error(group_id)
        if error != ErrorCode.NO_ERROR:
            return refused(error)
        group = self._groups.get(group_id)
        if group is None or group.is_(GroupState.DEAD):
            return refused(ErrorCode.GROUP_ID_NOT_FOUND)
        subscribed: set[str] | None = set()
        if not group.is_(GroupState.EMPTY):
            if group.protocol_type != PROTOCOL_TYPE:
                return refused(ErrorCode.NON_EMPTY_GROUP)
            subscribed = self._subscribed_topics(group)
        errors: dict[tuple[str, int], int] = {}
        doomed: list[tuple[str, int]] = []
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

        self._write(out, group.partition, records, done)
        return out

    def _subscribed_topics(self, group: GroupMetadata) -> set[str] | None:
        """Every topic the members of a consumer-protocol group subscribe to; None when that
        is not known (no protocol chosen yet, or a subscription that does not decode)."""
        if group.protocol_name is None:
            return None
        subscribed: set[str] = set()
        for m in group.members.values():
            topics = subscribed_topics(m.metadata_for(group.protocol_name))
            if topics is None:
                return None
            subscribed |= topics
        return subscribed

    # --- KIP-848 consumer groups ----------------------------------------------------------------

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
        group = self._groups.get(req.group_id)  # None: its last member left, it was dropped

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

        self._write(out, self.partition_of(req.group_id), records, done)
        return out

    def _consumer_heartbeat(
        self, req: ConsumerHeartbeatRequest, topics: Mapping[str, AssignorTopic], records: Records
    ) -> ConsumerHeartbeatResult:
        """ConsumerGroupHeartbeat (see :mod:`data_plane.coordinator.consumer_group`).
        ``topics``: every topic a member may subscribe to, by name, from the metadata image.
        A new group is created by a join; an empty classic group is converted by one; a
        classic group with members answers GROUP_ID_NOT_FOUND."""
        if CONSUMER_PROTOCOL not in self.config.rebalance_protocols:
            return ConsumerHeartbeatResult(
                ErrorCode.UNSUPPORTED_VERSION, "the consumer group protocol is not enabled"
            )
        if not req.group_id:
            return ConsumerHeartbeatResult(ErrorCode.INVALID_REQUEST, "the group id is empty")
        if req.member_epoch != JOIN_EPOCH and not req.member_id:
            return ConsumerHeartbeatResult(ErrorCode.INVALID_REQUEST, "the member id is empty")
        error = self._ownership_error(req.group_id)
        if error != ErrorCode.NO_ERROR:
            return ConsumerHeartbeatResult(error)
        now = self._clock_ms()
        group = self._groups.get(req.group_id)
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
                group = GroupMetadata(req.group_id, self.partition_of(req.group_id))
                self._groups[req.group_id] = group
            elif group.generation_id > 0 or group.protocol_type is not None:
                records.append((group_metadata_key(req.group_id), None))  # no longer classic
            group.consumer = ConsumerGroup(req.group_id)
            group.protocol_type = PROTOCOL_TYPE
            group.state_timestamp_ms = now
        consumer = group.consumer
        cfg = self.config
        settings = HeartbeatSettings(
            cfg.consumer_session_timeout_ms,
            cfg.consumer_heartbeat_interval_ms,
            cfg.consumer_assignors,
            cfg.consumer_max_size,
        )
        had_members = bool(consumer.members)
        result = consumer.heartbeat(
            req, topics, settings, self._new_member_id(req.client_id or "consumer"), now
        )
        if had_members and not consumer.members:
            group.state_timestamp_ms = now
        if result.error_code == ErrorCode.NO_ERROR:
            records.extend(changed_records(consumer))
        if self._drop_if_unused(group):
            records.extend(_consumer_tombstones(group))
        self._schedule_next(group)
        return result

    def consumer_group_describe(self, group_id: str) -> ConsumerGroupDescription:
        error = ErrorCode.INVALID_GROUP_ID if not group_id else self._ownership_error(group_id)
        if error != ErrorCode.NO_ERROR:
            return ConsumerGroupDescription(error, group_id)
        group = self._groups.get(group_id)
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

    def group(self, group_id: str) -> GroupMetadata | None:
        """The live group object (for tests and describe tools; do not mutate)."""
        return self._groups.get(group_id)


def _ignore_write(error: int, _out: CoordinatorOutputs) -> None:
    if error != ErrorCode.NO_ERROR:
        logger.warning("a group metadata write failed with error %d", error)


def _consumer_tombstones(group: GroupMetadata) -> Records:
    """Tombstones of a consumer-protocol group's group-level records, when it wrote any (it
    is removed, or turns classic)."""
    consumer = group.consumer
    if consumer is None or consumer.persisted.epoch is None:
        return []
    return group_tombstones(group.group_id)


def _synced(group: GroupMetadata, assignment: bytes) -> SyncGroupResult:
    """A member's successful SyncGroup answer: its assignment and the group's protocol."""
    return SyncGroupResult(ErrorCode.NO_ERROR, assignment, group.protocol_type, group.protocol_name)
