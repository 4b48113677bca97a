"""KIP-848 consumer groups: the group and member state and the reconciliation rules, sans-IO.

A consumer group (``group.protocol=consumer``) has no join and sync phases. Each member
heartbeats (ConsumerGroupHeartbeat) with its subscription and the partitions it owns; the
coordinator computes a *target assignment* with a server-side assignor and moves each member
towards its share one heartbeat at a time, so that no partition is ever owned by two members:

- ``group_epoch`` moves on every change of membership or subscriptions (a member joins,
  leaves or is fenced; a subscription, regex or assignor changes; a subscribed topic is
  created, deleted or grows). The target assignment is recomputed at once for the new epoch
  (``assignment_epoch`` = ``group_epoch`` after every heartbeat).
- A member at an older epoch than the target first gives back what the target took from it:
  it stays at its epoch in UNREVOKED_PARTITIONS, its assignment shrunk to what it keeps, until
  a heartbeat reports those partitions no longer owned (or ``rebalance.timeout.ms`` passes:
  it is then fenced). Then it moves to the target epoch and gets the target's new partitions
  that nobody else holds; those still held by another member (assigned to it or pending its
  revocation) come in later heartbeats (UNRELEASED_PARTITIONS) as their owners release them.
- ``owners`` maps every partition assigned to or pending revocation by a member to that
  member. Invariant: a partition has at most one owner, and a member's assignment and pending
  revocations are exactly the partitions ``owners`` gives it.

Member epochs: 0 joins, -1 leaves, -2 leaves a static member (its assignment is kept for the
session timeout so that the same ``group.instance.id`` can take it back). A heartbeat at the
member's epoch is normal; at its previous epoch it is accepted only if what it owns is within
its assignment (the answer to its last heartbeat was lost); anything else is
FENCED_MEMBER_EPOCH.

Group states (ConsumerGroupDescribe, ListGroups): Empty (no members), Assigning (the target is
behind the group epoch; never visible here, the target is recomputed synchronously),
Reconciling (a member is not yet at the target epoch or not Stable), Stable.

The state is persisted by the coordinator in ``__consumer_offsets``
(:mod:`data_plane.coordinator.consumer_group_records`); ``persisted`` is what was last written.

Thread-safety: none; the group coordinator's owner (the broker event loop) serialises access.
"""

from __future__ import annotations

import enum
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from common.error_codes import ErrorCode
from data_plane.coordinator.consumer_assignors import (
    AssignorMember,
    AssignorTopic,
    ServerAssignor,
    assignor_for,
)
from data_plane.coordinator.messages import ConsumerHeartbeatRequest, ConsumerHeartbeatResult

Partitions = dict[uuid.UUID, frozenset[int]]
PartitionKey = tuple[uuid.UUID, int]

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2
# Kafka 4's INVALID_REGULAR_EXPRESSION (ConsumerGroupHeartbeat v1+).
INVALID_REGULAR_EXPRESSION = 128


@dataclass(frozen=True, slots=True)
class HeartbeatSettings:
    """What the coordinator's configuration says about consumer-protocol groups."""

    session_timeout_ms: int
    heartbeat_interval_ms: int
    assignors: tuple[str, ...]
    max_size: int


class MemberState(enum.Enum):
    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"


class ConsumerGroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"


@dataclass(slots=True)
class ConsumerMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Partitions = field(default_factory=dict)
    pending_revocation: Partitions = field(default_factory=dict)
    session_deadline_ms: int = -1
    # While UNREVOKED_PARTITIONS: when the member is fenced if it has not revoked.
    revocation_deadline_ms: int = -1
    # Left with epoch -2: a static member whose instance may come back within the session.
    static_leaving: bool = False


@dataclass(slots=True)
class PersistedGroup:
    """What a group last wrote to ``__consumer_offsets``: the bodies of its records, compared
    whole to find what changed (:mod:`data_plane.coordinator.consumer_group_records`)."""

    epoch: int | None = None
    metadata: frozenset[tuple[uuid.UUID, str, int]] | None = None
    assignment_epoch: int | None = None
    # Member id -> its ConsumerGroupMemberMetadata value body.
    members: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Member id -> the topic_partitions of its ConsumerGroupTargetAssignmentMember value.
    targets: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # Member id -> its ConsumerGroupCurrentMemberAssignment value body.
    current: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(slots=True)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    target: dict[str, Partitions] = field(default_factory=dict)
    owners: dict[PartitionKey, str] = field(default_factory=dict)
    # The subscribed topics' (id, name, partition count) the target was computed for.
    subscription_metadata: frozenset[tuple[uuid.UUID, str, int]] = frozenset()
    assignor_name: str = ""
    persisted: PersistedGroup = field(default_factory=PersistedGroup)

    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.assignment_epoch < self.group_epoch:
            return ConsumerGroupState.ASSIGNING
        for m in self.members.values():
            if m.member_epoch != self.assignment_epoch or m.state is not MemberState.STABLE:
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    # --- membership ---------------------------------------------------------------------------

    def add(self, member: ConsumerMember) -> None:
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove(self, member_id: str) -> ConsumerMember | None:
        """Drop a member and release every partition it holds."""
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.instance_id is not None and self.static_members.get(member.instance_id) == (
            member_id
        ):
            del self.static_members[member.instance_id]
        self._release(member_id, member.assigned)
        self._release(member_id, member.pending_revocation)
        self.target.pop(member_id, None)
        return member

    def replace_static(self, old: ConsumerMember, new: ConsumerMember) -> None:
        """``new`` takes over the instance id, epoch and partitions of ``old`` (a static member
        that restarted): no partition moves."""
        del self.members[old.member_id]
        new.member_epoch, new.previous_member_epoch = old.member_epoch, old.previous_member_epoch
        new.state, new.assigned = old.state, old.assigned
        new.pending_revocation = old.pending_revocation
        new.revocation_deadline_ms = old.revocation_deadline_ms
        self.hold_all(new)
        if old.member_id in self.target:
            self.target[new.member_id] = self.target.pop(old.member_id)
        self.add(new)

    def hold_all(self, member: ConsumerMember) -> None:
        """Record ``member`` as the holder of what it is assigned or revoking (loading)."""
        self._hold(member.member_id, member.assigned)
        self._hold(member.member_id, member.pending_revocation)

    def _release(self, member_id: str, parts: Partitions) -> None:
        for tid, ps in parts.items():
            for p in ps:
                if self.owners.get((tid, p)) == member_id:
                    del self.owners[(tid, p)]

    def _hold(self, member_id: str, parts: Partitions) -> None:
        for tid, ps in parts.items():
            for p in ps:
                self.owners[(tid, p)] = member_id

    # --- subscriptions and the target assignment ----------------------------------------------

    def subscribed_topic_ids(
        self, member: ConsumerMember, topics: Mapping[str, AssignorTopic]
    ) -> frozenset[uuid.UUID]:
        ids = {topics[n].topic_id for n in member.subscribed_topic_names if n in topics}
        if member.subscribed_topic_regex is not None:
            pattern = compile_regex(member.subscribed_topic_regex)
            if pattern is not None:
                ids.update(t.topic_id for n, t in topics.items() if pattern.fullmatch(n))
        return frozenset(ids)

    def compute_subscription_metadata(
        self, topics: Mapping[str, AssignorTopic]
    ) -> frozenset[tuple[uuid.UUID, str, int]]:
        by_id = {t.topic_id: t for t in topics.values()}
        ids: set[uuid.UUID] = set()
        for m in self.members.values():
            ids |= self.subscribed_topic_ids(m, topics)
        return frozenset((tid, by_id[tid].name, by_id[tid].partitions) for tid in ids)

    def compute_target(self, assignor: ServerAssignor, topics: Mapping[str, AssignorTopic]) -> None:
        """A new target assignment for the group epoch."""
        by_id = {t.topic_id: t for t in topics.values()}
        members = [
            AssignorMember(
                m.member_id,
                m.instance_id,
                m.rack_id,
                self.subscribed_topic_ids(m, topics),
                self.target.get(m.member_id, {}),
            )
            for m in sorted(self.members.values(), key=lambda m: m.member_id)
        ]
        self.target = assignor.assign(members, by_id)
        self.assignor_name = assignor.name
        self.assignment_epoch = self.group_epoch

    # --- reconciliation -----------------------------------------------------------------------

    def reconcile(self, member: ConsumerMember, owned: Partitions | None, now_ms: int) -> bool:
        """Move ``member`` towards its target (see the module docstring); ``owned`` is what its
        heartbeat says it owns (None: not said). True when its assignment or epoch changed."""
        changed = False
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            if owned is None or _overlaps(owned, member.pending_revocation):
                return False
            self._release(member.member_id, member.pending_revocation)
            member.pending_revocation = {}
            member.revocation_deadline_ms = -1
            changed = True
        if member.member_epoch == self.assignment_epoch and member.state is MemberState.STABLE:
            return changed
        target = self.target.get(member.member_id, {})
        keep = _intersect(member.assigned, target)
        revoke = _minus(member.assigned, target)
        if revoke:
            member.assigned = keep
            member.pending_revocation = revoke
            member.state = MemberState.UNREVOKED_PARTITIONS
            member.revocation_deadline_ms = now_ms + member.rebalance_timeout_ms
            return True
        wanted = _minus(target, member.assigned)
        free: Partitions = {}
        unreleased = False
        for tid, ps in wanted.items():
            got = frozenset(p for p in ps if self.owners.get((tid, p)) in (None, member.member_id))
            unreleased = unreleased or len(got) < len(ps)
            if got:
                free[tid] = got
        new_assigned = _union(keep, free)
        self._hold(member.member_id, new_assigned)
        if new_assigned != member.assigned:
            changed = True
        member.assigned = new_assigned
        if member.member_epoch != self.assignment_epoch:
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = self.assignment_epoch
            changed = True
        member.state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
        return changed

    # --- heartbeats and deadlines --------------------------------------------------------------

    def heartbeat(
        self,
        req: ConsumerHeartbeatRequest,
        topics: Mapping[str, AssignorTopic],
        settings: HeartbeatSettings,
        new_member_id: str,
        now_ms: int,
    ) -> ConsumerHeartbeatResult:
        """One ConsumerGroupHeartbeat: join (epoch 0), leave (-1 / -2) or keep up; then the
        target assignment for the group epoch and the member's next step towards it.
        ``new_member_id`` names a joining member that brings no id of its own."""
        if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self._leave(req)
        if (
            req.subscribed_topic_regex is not None
            and compile_regex(req.subscribed_topic_regex) is None
        ):
            return _refused(INVALID_REGULAR_EXPRESSION, f"bad regex {req.subscribed_topic_regex!r}")
        if req.server_assignor is not None and (
            req.server_assignor not in settings.assignors
            or assignor_for(req.server_assignor) is None
        ):
            return _refused(ErrorCode.UNSUPPORTED_ASSIGNOR, f"no assignor {req.server_assignor!r}")
        joined = req.member_epoch == JOIN_EPOCH
        if joined:
            result = self._join(req, settings, new_member_id)
            if isinstance(result, ConsumerHeartbeatResult):
                return result
            member = result
        else:
            found = self.members.get(req.member_id)
            if found is None or found.static_leaving:
                return _refused(ErrorCode.UNKNOWN_MEMBER_ID, f"no member {req.member_id}")
            member = found
            error = self.epoch_error(member, req.member_epoch, req.owned)
            if error != ErrorCode.NO_ERROR:
                return _refused(
                    error, f"epoch {req.member_epoch}, the member is at {member.member_epoch}"
                )
            if self._update_subscription(member, req):
                self.group_epoch += 1
        member.session_deadline_ms = now_ms + settings.session_timeout_ms
        metadata = self.compute_subscription_metadata(topics)
        if metadata != self.subscription_metadata:
            # A subscribed topic was created, deleted or grew (or the subscriptions moved).
            self.subscription_metadata = metadata
            self.group_epoch += 1
        if self.assignment_epoch < self.group_epoch:
            assignor = assignor_for(self._group_assignor(settings))
            if assignor is not None:
                self.compute_target(assignor, topics)
        changed = self.reconcile(member, req.owned, now_ms)
        resend = req.owned is not None and req.owned != member.assigned
        return ConsumerHeartbeatResult(
            ErrorCode.NO_ERROR,
            member_id=member.member_id,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=settings.heartbeat_interval_ms,
            assignment=dict(member.assigned) if joined or changed or resend else None,
        )

    def _join(
        self,
        req: ConsumerHeartbeatRequest,
        settings: HeartbeatSettings,
        new_member_id: str,
    ) -> ConsumerMember | ConsumerHeartbeatResult:
        if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
            return _refused(ErrorCode.INVALID_REQUEST, "a joining member must subscribe")
        if req.rebalance_timeout_ms <= 0:
            return _refused(
                ErrorCode.INVALID_REQUEST, "a joining member must give its rebalance timeout"
            )
        member = ConsumerMember(
            req.member_id or new_member_id,
            req.instance_id,
            req.rack_id,
            req.client_id,
            req.client_host,
            req.rebalance_timeout_ms,
        )
        self._update_subscription(member, req)
        previous = None
        if req.instance_id is not None:
            holder = self.static_members.get(req.instance_id)
            previous = self.members.get(holder) if holder is not None else None
            if previous is not None and not previous.static_leaving:
                return _refused(
                    ErrorCode.UNRELEASED_INSTANCE_ID,
                    f"instance {req.instance_id} is held by member {previous.member_id}",
                )
        if previous is not None:
            # A static member back within its session: same partitions, no epoch change
            # unless its subscription moved.
            subscription_changed = _subscription(previous) != _subscription(member)
            self.replace_static(previous, member)
            if subscription_changed:
                self.group_epoch += 1
            return member
        if member.member_id in self.members:
            # A member that rejoins under its id (it was fenced, or lost its state) starts over.
            self.remove(member.member_id)
        elif len(self.members) >= settings.max_size:
            return _refused(
                ErrorCode.GROUP_MAX_SIZE_REACHED, f"the group has {len(self.members)} members"
            )
        self.add(member)
        self.group_epoch += 1
        return member

    def _leave(self, req: ConsumerHeartbeatRequest) -> ConsumerHeartbeatResult:
        member = self.members.get(req.member_id)
        if member is None:
            return _refused(ErrorCode.UNKNOWN_MEMBER_ID, f"no member {req.member_id}")
        if req.member_epoch == STATIC_LEAVE_EPOCH and member.instance_id is not None:
            member.static_leaving = True
        else:
            self.remove(member.member_id)
            self.group_epoch += 1
        return ConsumerHeartbeatResult(
            ErrorCode.NO_ERROR, member_id=member.member_id, member_epoch=req.member_epoch
        )

    @staticmethod
    def _update_subscription(member: ConsumerMember, req: ConsumerHeartbeatRequest) -> bool:
        """Take the fields the heartbeat changes; True when the subscription moved."""
        before = _subscription(member)
        if req.subscribed_topic_names is not None:
            member.subscribed_topic_names = tuple(sorted(set(req.subscribed_topic_names)))
        if req.subscribed_topic_regex is not None:
            # An empty regex clears it (Kafka: "" means no regex any more).
            member.subscribed_topic_regex = req.subscribed_topic_regex or None
        if req.server_assignor is not None:
            member.server_assignor = req.server_assignor
        if req.rebalance_timeout_ms > 0:
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        return before != _subscription(member)

    def _group_assignor(self, settings: HeartbeatSettings) -> str:
        """The assignor most members ask for (ties: the configured order), else the first
        configured one."""
        votes: dict[str, int] = {}
        for m in self.members.values():
            if m.server_assignor is not None:
                votes[m.server_assignor] = votes.get(m.server_assignor, 0) + 1
        if not votes:
            return settings.assignors[0]
        return max(
            settings.assignors, key=lambda n: (votes.get(n, 0), -settings.assignors.index(n))
        )

    def next_deadline_ms(self) -> int | None:
        deadlines = [
            m.session_deadline_ms for m in self.members.values() if m.session_deadline_ms >= 0
        ]
        deadlines += [
            m.revocation_deadline_ms for m in self.members.values() if m.revocation_deadline_ms >= 0
        ]
        return min(deadlines) if deadlines else None

    def expire(self, now_ms: int) -> list[str]:
        """Remove members whose session ended or who did not revoke within their rebalance
        timeout; their ids (the group epoch moved if any)."""
        gone = [
            m.member_id
            for m in self.members.values()
            if 0 <= m.session_deadline_ms <= now_ms or 0 <= m.revocation_deadline_ms <= now_ms
        ]
        for mid in gone:
            self.remove(mid)
        if gone:
            self.group_epoch += 1
        return gone

    def epoch_error(self, member: ConsumerMember, epoch: int, owned: Partitions | None) -> int:
        """FENCED_MEMBER_EPOCH unless ``epoch`` is the member's, or its previous one with
        ``owned`` inside its assignment (the answer to its last heartbeat was lost)."""
        if epoch == member.member_epoch:
            return ErrorCode.NO_ERROR
        if (
            epoch == member.previous_member_epoch
            and owned is not None
            and not _minus(owned, member.assigned)
        ):
            return ErrorCode.NO_ERROR
        return ErrorCode.FENCED_MEMBER_EPOCH


def _subscription(member: ConsumerMember) -> tuple[object, ...]:
    """What a member subscribes with: a change of it moves the group epoch."""
    return (member.subscribed_topic_names, member.subscribed_topic_regex, member.server_assignor)


def _refused(error: int, message: str) -> ConsumerHeartbeatResult:
    return ConsumerHeartbeatResult(int(error), message)


def compile_regex(pattern: str) -> re.Pattern[str] | None:
    """A subscription regex (Kafka takes RE2J syntax; the common subset is Python's too), or
    None when it does not compile."""
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _intersect(a: Partitions, b: Partitions) -> Partitions:
    out = {}
    for tid, ps in a.items():
        common = ps & b.get(tid, frozenset())
        if common:
            out[tid] = common
    return out


def _minus(a: Partitions, b: Partitions) -> Partitions:
    out = {}
    for tid, ps in a.items():
        rest = ps - b.get(tid, frozenset())
        if rest:
            out[tid] = rest
    return out


def _union(a: Partitions, b: Partitions) -> Partitions:
    out = dict(a)
    for tid, ps in b.items():
        out[tid] = out.get(tid, frozenset()) | ps
    return out


def _overlaps(a: Partitions, b: Partitions) -> bool:
    return any(ps & b.get(tid, frozenset()) for tid, ps in a.items())
