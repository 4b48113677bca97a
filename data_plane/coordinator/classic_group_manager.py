"""Classic groups (Kafka's classic group protocol: JoinGroup, SyncGroup, Heartbeat,
LeaveGroup), the part of Kafka's GroupMetadataManager that moves a classic group through its
states (:mod:`data_plane.coordinator.group`), sans-IO.

Inputs are method calls, the clock is the shard's injected one, outputs are
:class:`CoordinatorOutputs`: results for parked requests (JoinGroup waits for the rebalance,
SyncGroup for the leader's assignment) and the group's ``__consumer_offsets`` writes.

Rebalance rules:
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

The class is the largest part of the coordinator (near 600 lines): the join phase, the sync
phase and their deadlines are one state machine whose steps call each other (a leave can
complete a join, a failed assignment write restarts the join), so they stay together. The
group's record format is :mod:`data_plane.coordinator.classic_group_records`.

Thread-safety: none; the coordinator's owner (the broker event loop) serialises access.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable

from common.error_codes import ErrorCode
from data_plane.coordinator.classic_group_records import classic_group_record
from data_plane.coordinator.consumer_group_manager import consumer_tombstones
from data_plane.coordinator.group import GroupMetadata, GroupState, MemberMetadata
from data_plane.coordinator.messages import (
    CoordinatorOutputs,
    JoinGroupRequest,
    JoinGroupResult,
    JoinMember,
    SyncGroupRequest,
    SyncGroupResult,
)
from data_plane.coordinator.record_writes import ignore_write
from data_plane.coordinator.shard_context import ShardContext
from data_plane.coordinator.write_errors import METADATA_WRITE_ERRORS, map_write_error

logger = logging.getLogger(__name__)


class ClassicGroupManager:
    def __init__(self, ctx: ShardContext) -> None:
        self._ctx = ctx

    # --- join ---------------------------------------------------------------------------------

    def join_group(self, waiter: Hashable, req: JoinGroupRequest) -> CoordinatorOutputs:
        out = CoordinatorOutputs()
        error = self._join_error(req)
        if error != ErrorCode.NO_ERROR:
            out.respond(waiter, JoinGroupResult(error, member_id=req.member_id))
            return out
        group = self._ctx.groups.get(req.group_id)
        if group is None:
            if req.member_id:
                out.respond(waiter, JoinGroupResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=""))
                return out
            group = self._ctx.groups.create(
                req.group_id, self._ctx.ownership.partition_of(req.group_id), self._ctx.clock_ms()
            )
        if group.consumer is not None and not group.consumer.members:
            # An empty consumer-protocol group becomes a classic one again.
            tombstones = consumer_tombstones(group)
            if tombstones:
                self._ctx.writes.write(out, group.partition, tombstones, ignore_write)
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
            len(group.members) + len(group.pending_members) >= self._ctx.config.group_max_size
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
        self._ctx.groups.drop_if_unused(group)
        self._ctx.groups.schedule_next(group)
        return out

    def _join_error(self, req: JoinGroupRequest) -> int:
        if not req.group_id:
            return ErrorCode.INVALID_GROUP_ID
        error = self._ctx.ownership.error(req.group_id)
        if error != ErrorCode.NO_ERROR:
            return error
        cfg = self._ctx.config
        if not (
            cfg.group_min_session_timeout_ms
            <= req.session_timeout_ms
            <= cfg.group_max_session_timeout_ms
        ):
            return ErrorCode.INVALID_SESSION_TIMEOUT
        return ErrorCode.NO_ERROR

    def _join_unknown_member(
        self, group: GroupMetadata, waiter: Hashable, req: JoinGroupRequest, out: CoordinatorOutputs
    ) -> None:
        new_id = self._ctx.new_member_id(req.group_instance_id or req.client_id)
        if req.group_instance_id is not None:
            old_id = group.static_members.get(req.group_instance_id)
            if old_id is not None and old_id in group.members:
                self._replace_static_member(group, waiter, req, old_id, new_id, out)
            else:
                self._add_member_and_rebalance(group, waiter, req, new_id, out)
        elif req.require_known_member_id:
            group.pending_members[new_id] = self._ctx.clock_ms() + req.session_timeout_ms
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
                member.last_heartbeat_ms = self._ctx.clock_ms()
                out.respond(waiter, self._join_result(group, mid))
            else:
                self._update_member_and_rebalance(group, member, waiter, req, out)
        elif group.leader_id == mid or not member.matches(protocols):
            # Stable: the leader rejoining or a changed subscription means a new assignment.
            self._update_member_and_rebalance(group, member, waiter, req, out)
        else:
            member.last_heartbeat_ms = self._ctx.clock_ms()
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
            last_heartbeat_ms=self._ctx.clock_ms(),
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
        member.last_heartbeat_ms = self._ctx.clock_ms()
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
        member.last_heartbeat_ms = self._ctx.clock_ms()
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
        records = classic_group_record(
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

        self._ctx.writes.write(out, group.partition, records, done)

    def _maybe_prepare_rebalance(
        self, group: GroupMetadata, out: CoordinatorOutputs, why: str
    ) -> None:
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY):
            self._prepare_rebalance(group, out, why)

    def _prepare_rebalance(self, group: GroupMetadata, out: CoordinatorOutputs, why: str) -> None:
        now = self._ctx.clock_ms()
        if group.is_(GroupState.COMPLETING_REBALANCE):
            self._fail_pending_syncs(group, ErrorCode.REBALANCE_IN_PROGRESS, out)
        if group.is_(GroupState.EMPTY):
            delay = self._ctx.config.group_initial_rebalance_delay_ms
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
        self._ctx.groups.schedule(group, group.rebalance_deadline_ms)

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
        now = self._ctx.clock_ms()
        if group.initial_delay_remaining_ms >= 0:
            if group.new_member_added and group.initial_delay_remaining_ms > 0:
                # Kafka's InitialDelayedJoin: members keep arriving, wait a little more.
                delay = min(
                    self._ctx.config.group_initial_rebalance_delay_ms,
                    group.initial_delay_remaining_ms,
                )
                group.initial_delay_remaining_ms = max(group.initial_delay_remaining_ms - delay, 0)
                group.new_member_added = False
                group.rebalance_deadline_ms = now + delay
                self._ctx.groups.schedule(group, group.rebalance_deadline_ms)
                return
            group.initial_delay_remaining_ms = -1
        self._complete_join(group, out)

    def _complete_join(self, group: GroupMetadata, out: CoordinatorOutputs) -> None:
        """Kafka's onCompleteJoin: drop dynamic members that did not rejoin, start the next
        generation, answer every joined member."""
        now = self._ctx.clock_ms()
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
                self._ctx.groups.schedule(group, group.rebalance_deadline_ms)
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
            self._ctx.writes.write(
                out, group.partition, classic_group_record(group, {}), ignore_write
            )
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
        self._ctx.groups.schedule_next(group)

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
        now = self._ctx.clock_ms()
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
        self._ctx.groups.schedule_next(group)
        return out

    def _store_assignment(
        self, group: GroupMetadata, assignments: dict[str, bytes], out: CoordinatorOutputs
    ) -> None:
        full = {mid: assignments.get(mid, b"") for mid in group.members}
        generation = group.generation_id

        def done(error: int, o: CoordinatorOutputs) -> None:
            if (
                self._ctx.groups.get(group.group_id) is not group
                or group.generation_id != generation
                or not group.is_(GroupState.COMPLETING_REBALANCE)
            ):
                return  # a newer rebalance already answered the syncs
            if error != ErrorCode.NO_ERROR:
                self._fail_pending_syncs(group, map_write_error(METADATA_WRITE_ERRORS, error), o)
                self._prepare_rebalance(group, o, f"storing the assignment failed ({error})")
                return
            now = self._ctx.clock_ms()
            for m in group.members.values():
                m.assignment = full.get(m.member_id, b"")
                if m.sync_waiter is not None:
                    o.respond(m.sync_waiter, _synced(group, m.assignment))
                    m.sync_waiter = None
                m.last_heartbeat_ms = now
            group.rebalance_deadline_ms = -1
            group.transition_to(GroupState.STABLE, now)
            self._ctx.groups.schedule_next(group)

        self._ctx.writes.write(out, group.partition, classic_group_record(group, full), done)

    def _member_check(
        self, group_id: str, member_id: str, instance_id: str | None, generation_id: int
    ) -> tuple[GroupMetadata | None, MemberMetadata | None, int]:
        """The checks SyncGroup and Heartbeat share, in Kafka's order."""
        if not group_id:
            return None, None, ErrorCode.INVALID_GROUP_ID
        error = self._ctx.ownership.error(group_id)
        if error != ErrorCode.NO_ERROR:
            return None, None, error
        group = self._ctx.groups.get(group_id)
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
        if (
            group_id
            and self._ctx.ownership.error(group_id) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        ):
            # Kafka answers NONE while loading: the member keeps its assignment meanwhile.
            return ErrorCode.NO_ERROR
        group, member, error = self._member_check(group_id, member_id, instance_id, generation_id)
        if error != ErrorCode.NO_ERROR or group is None or member is None:
            return error
        member.last_heartbeat_ms = self._ctx.clock_ms()
        self._ctx.groups.schedule_next(group)
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
        error = self._ctx.ownership.error(group_id)
        if error != ErrorCode.NO_ERROR:
            return error, [], out
        group = self._ctx.groups.get(group_id)
        if group is None:
            return ErrorCode.NO_ERROR, [ErrorCode.UNKNOWN_MEMBER_ID] * len(members), out
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, [], out
        errors: list[int] = []
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
            self._ctx.groups.schedule_next(group)
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

    # --- timers and unloading -----------------------------------------------------------------

    def check_timeouts(self, group: GroupMetadata, now: int, out: CoordinatorOutputs) -> None:
        """The classic deadlines of ``group`` that passed by ``now``: pending members that did
        not rejoin, sessions of members not parked in a join or sync, and the join or sync
        phase's deadline."""
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

    @staticmethod
    def fail_parked(group: GroupMetadata, out: CoordinatorOutputs) -> None:
        """The group's partition moved away: parked joins and syncs get NOT_COORDINATOR (their
        clients find the new coordinator)."""
        for m in group.members.values():
            if m.join_waiter is not None:
                out.respond(m.join_waiter, JoinGroupResult(ErrorCode.NOT_COORDINATOR))
                m.join_waiter = None
            if m.sync_waiter is not None:
                out.respond(m.sync_waiter, SyncGroupResult(ErrorCode.NOT_COORDINATOR))
                m.sync_waiter = None


def _synced(group: GroupMetadata, assignment: bytes) -> SyncGroupResult:
    """A member's successful SyncGroup answer: its assignment and the group's protocol."""
    return SyncGroupResult(ErrorCode.NO_ERROR, assignment, group.protocol_type, group.protocol_name)
