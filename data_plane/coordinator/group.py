"""One consumer group's state (Kafka's GroupMetadata and MemberMetadata), without the logic
that moves it between states (that is :mod:`data_plane.coordinator.classic_group_manager`,
:mod:`data_plane.coordinator.consumer_group_manager` and, for its offsets,
:mod:`data_plane.coordinator.offset_metadata_manager`).

States and the only legal transitions (Kafka's classic group protocol)::

    Empty ----------------> PreparingRebalance <---------------+
      ^                       |        ^                        |
      |   (join completes     |        | (join, leave, expiry,  |
      |    with no members)   v        |  subscription change)  |
      +---------------- CompletingRebalance ---(leader's sync)--> Stable
    any state --> Dead (group deleted, expired, or its partition unloaded)

An illegal transition raises :class:`IllegalGroupTransitionError` and leaves the state as it
was. Invariants: ``leader_id`` is a member id of ``members`` or None; ``static_members`` maps
each group.instance.id to the member id currently holding it; a member awaits at most one
JoinGroup and one SyncGroup (``join_waiter`` / ``sync_waiter``, opaque tokens of the I/O layer).

Thread-safety: none; the coordinator's owner (the broker event loop) serialises access.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field

from common.error_codes import ErrorCode
from data_plane.coordinator.consumer_group import ConsumerGroup
from data_plane.coordinator.consumer_protocol import subscribed_topics
from data_plane.coordinator.group_metadata_records import OffsetAndMetadata


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


class IllegalGroupTransitionError(RuntimeError):
    """A state change the group protocol does not allow (a coordinator bug, never input)."""


@dataclass(slots=True)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    # (protocol name, metadata) in the member's order of preference.
    protocols: list[tuple[str, bytes]]
    last_heartbeat_ms: int
    assignment: bytes = b""
    join_waiter: Hashable | None = None
    sync_waiter: Hashable | None = None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata_for(self, protocol: str) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        raise KeyError(protocol)

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among ``candidates``."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")


@dataclass(slots=True)
class GroupMetadata:
    group_id: str
    # The __consumer_offsets partition that stores this group.
    partition: int
    state: GroupState = GroupState.EMPTY
    state_timestamp_ms: int = -1
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, MemberMetadata] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    # Member ids handed out with MEMBER_ID_REQUIRED: member id -> deadline (clock ms) to rejoin.
    pending_members: dict[str, int] = field(default_factory=dict)
    offsets: dict[tuple[str, int], OffsetAndMetadata] = field(default_factory=dict)
    # OffsetCommit writes not yet replicated: the group is not removed while any is in flight.
    pending_offset_commits: int = 0
    # TxnOffsetCommit offsets written but whose transaction is undecided: producer id ->
    # offsets; the transaction's marker on the group's partition commits or drops them.
    pending_txn_offsets: dict[int, dict[tuple[str, int], OffsetAndMetadata]] = field(
        default_factory=dict
    )
    # TxnOffsetCommit writes not yet replicated: producer id -> how many writes of each
    # partition are in flight. The transaction's marker drops the entry, so a write that
    # completes after the marker is known to belong to an ended transaction and adds nothing
    # to ``pending_txn_offsets``. Its partitions are unstable meanwhile (require_stable).
    txn_offsets_in_flight: dict[int, Counter[tuple[str, int]]] = field(default_factory=dict)
    # Deadline of the current PreparingRebalance join phase or CompletingRebalance sync phase.
    rebalance_deadline_ms: int = -1
    # Initial rebalance delay of an Empty group (Kafka's InitialDelayedJoin): time left of the
    # rebalance timeout, and whether a member joined during the current delay.
    initial_delay_remaining_ms: int = -1
    new_member_added: bool = False
    # A KIP-848 consumer-protocol group: its members and assignments (the classic state then
    # stays Empty, with no classic members). None: a classic group.
    consumer: ConsumerGroup | None = None

    def has_members(self) -> bool:
        """Classic or consumer-protocol members."""
        return bool(self.members) or (self.consumer is not None and bool(self.consumer.members))

    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[target]:
            raise IllegalGroupTransitionError(
                f"group {self.group_id}: {self.state.value} -> {target.value} is not allowed"
            )
        self.state = target
        self.state_timestamp_ms = now_ms

    # --- members ------------------------------------------------------------------------------

    def add(self, member: MemberMetadata) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id

    def remove(self, member_id: str) -> MemberMetadata | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        gid = member.group_instance_id
        if gid is not None and self.static_members.get(gid) == member_id:
            del self.static_members[gid]
        if self.leader_id == member_id:
            # Kafka: the next leader is whichever member rejoined first; any member will do.
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> MemberMetadata:
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        self.static_members[instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        return member

    def is_static_fenced(self, member_id: str, instance_id: str | None) -> bool:
        """A static member whose instance id is now held by another member id."""
        if instance_id is None:
            return False
        holder = self.static_members.get(instance_id)
        return holder is not None and holder != member_id

    # --- protocols ----------------------------------------------------------------------------

    def candidate_protocols(self) -> set[str]:
        """Protocols every member supports."""
        sets = [set(m.protocol_names()) for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def supports_protocols(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        """May a member with these protocols join? (Kafka's isProtocolSupported.)"""
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        names = {name for name, _ in protocols}
        return protocol_type == self.protocol_type and bool(names & self.candidate_protocols())

    def select_protocol(self) -> str:
        """Kafka's selectProtocol: among the protocols all members support, the one most members
        prefer (each votes for its first supported candidate); ties go to the protocol the
        earliest-joined member prefers, so the choice is deterministic."""
        candidates = self.candidate_protocols()
        if not candidates:
            raise ValueError(f"group {self.group_id}: no protocol common to all members")
        votes: dict[str, int] = {}
        order: list[str] = []
        for m in self.members.values():
            choice = m.vote(candidates)
            if choice not in votes:
                votes[choice] = 0
                order.append(choice)
            votes[choice] += 1
        return max(order, key=lambda p: (votes[p], -order.index(p)))

    # --- rebalance bookkeeping ----------------------------------------------------------------

    def all_members_joined(self) -> bool:
        return not self.pending_members and all(
            m.join_waiter is not None for m in self.members.values()
        )

    def max_rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # --- questions the other parts of the coordinator ask -------------------------------------

    def next_deadline_ms(self) -> int | None:
        """The earliest timer of the group (clock ms): a pending member's rejoin deadline, the
        rebalance deadline, a session of a member not parked in a join or sync, or a KIP-848
        member's session or revocation deadline; None when it has none."""
        deadlines = list(self.pending_members.values())
        if self.rebalance_deadline_ms >= 0:
            deadlines.append(self.rebalance_deadline_ms)
        for m in self.members.values():
            if m.join_waiter is None and m.sync_waiter is None:
                deadlines.append(m.last_heartbeat_ms + m.session_timeout_ms)
        if self.consumer is not None:
            consumer_deadline = self.consumer.next_deadline_ms()
            if consumer_deadline is not None:
                deadlines.append(consumer_deadline)
        return min(deadlines) if deadlines else None

    def subscribed_topics(self) -> set[str] | None:
        """Every topic the classic members of a consumer-protocol group subscribe to; None when
        that is not known (no protocol chosen yet, or a subscription that does not decode)."""
        if self.protocol_name is None:
            return None
        subscribed: set[str] = set()
        for m in self.members.values():
            topics = subscribed_topics(m.metadata_for(self.protocol_name))
            if topics is None:
                return None
            subscribed |= topics
        return subscribed

    def offset_commit_member_error(
        self,
        member_id: str,
        generation_id: int,
        instance_id: str | None,
        *,
        transactional: bool = False,
    ) -> int:
        """Is ``member_id`` a member at ``generation_id`` (a KIP-848 group: at that member
        epoch) that may commit or fetch offsets? Kafka's validateOffsetCommit member checks."""
        if self.consumer is not None:
            # KIP-848: the generation field carries the member epoch.
            member = self.consumer.members.get(member_id)
            if member is None or member.static_leaving:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if generation_id != member.member_epoch:
                # Kafka: a stale epoch is retriable for OffsetCommit, fatal for TxnOffsetCommit.
                return (
                    ErrorCode.ILLEGAL_GENERATION if transactional else ErrorCode.STALE_MEMBER_EPOCH
                )
            return ErrorCode.NO_ERROR
        if self.is_static_fenced(member_id, instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != self.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NO_ERROR
