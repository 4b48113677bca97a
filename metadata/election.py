"""Leader election and partition changes (Kafka's PartitionChangeBuilder, reduced), with
KIP-966's eligible leader replicas (ELR) and unclean-shutdown recovery.

Rules:
- The leader is the first replica, in replica order, that is in the ISR and active (unfenced,
  not in controlled shutdown). Unclean election (the first active replica outside the ISR,
  which then becomes the whole ISR) only when ``unclean`` is set for the topic.
- Removing a broker (fenced, shutting down, re-registered) drops it from the ISR, except that the
  ISR never becomes empty: when the broker was its last member, the ISR keeps it and the
  partition is left without a leader (-1), as KRaft does, so that the broker, which holds every
  committed record, can be elected again when it comes back.
- ELR: a broker removed that way, or by its leader's ISR shrink (AlterPartition), while the
  ISR drops below ``min.insync.replicas`` joins the ELR. It held every committed record then,
  and while the ISR stays below the minimum nothing more commits (acks=all produce is refused
  and the leader's high watermark does not move: data_plane.broker.partition), so it may
  still lead. The ELR is cleared as soon as the ISR is back at the minimum, and loses a
  member that rejoins the ISR. Replicas join the ELR only when the finalized metadata.version
  allows it (``TopicRules.elr``; metadata.features); below that the ISR rules alone apply.
- A leaderless partition's *candidates* are its ISR and ELR members. A broker whose current
  registration says its previous process did not close its logs cleanly (kill -9, power loss)
  may have lost the unflushed tail of its log, committed records included. So: the first
  active candidate with a clean shutdown leads; if there is none and the partition has a single
  candidate, that one leads (no other replica can have more); otherwise the controller waits
  until every candidate is active and has reported its log end (last leader epoch, log end
  offset) for the partition, and elects the longest log (unclean recovery). The new ISR is the
  leader alone; the other candidates stay in the ELR unless they are active with an unclean
  shutdown (their logs may be short: they rejoin the ISR by catching up).
- A replica the broker reported offline (its log directory failed) may not lead its
  partition (``Electorate.offline``), even though the broker is active.
- A changed leader (including to -1) bumps the leader epoch; any change bumps the partition epoch
  (see :func:`metadata.delta.merge_partition_change`).

Pure functions over :class:`PartitionRegistration`; :class:`Electorate` says who may lead.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from metadata.image import PartitionRegistration
from metadata.records import NO_LEADER, NO_LEADER_CHANGE, PartitionChangeRecord

# A replica's log end as reported for a leaderless partition: (last leader epoch, log end offset).
LogEnd = tuple[int, int]
_NO_LOG_ENDS: Mapping[int, LogEnd] = {}


@dataclass(frozen=True, slots=True)
class Electorate:
    """Who may lead: ``active`` brokers (unfenced, not shutting down); of those, ``clean``
    ones registered after a clean shutdown; ``log_ends`` per (topic id, partition): the log
    end each broker reported for it while it had no leader (see BrokerHeartbeatManager)."""

    active: Collection[int]
    clean: Collection[int] = frozenset()
    log_ends: Mapping[tuple[uuid.UUID, int], Mapping[int, LogEnd]] = field(default_factory=dict)
    # (topic id, partition) -> brokers whose replica of it is offline (a failed log
    # directory): they may not lead that partition even while active.
    offline: Mapping[tuple[uuid.UUID, int], Collection[int]] = field(default_factory=dict)

    def without(self, broker_id: int) -> Electorate:
        return replace(self, active={b for b in self.active if b != broker_id})

    def for_partition(self, topic_id: uuid.UUID, partition_id: int) -> Electorate:
        """The electorate of one partition: without the brokers whose replica is offline."""
        offline = self.offline.get((topic_id, partition_id))
        if not offline:
            return self
        return replace(self, active={b for b in self.active if b not in offline})

    def reported(self, topic_id: uuid.UUID, partition_id: int) -> Mapping[int, LogEnd]:
        return self.log_ends.get((topic_id, partition_id), _NO_LOG_ENDS)


@dataclass(frozen=True, slots=True)
class TopicRules:
    """The topic configs elections follow."""

    unclean: bool = False  # unclean.leader.election.enable
    min_isr: int = 1  # min.insync.replicas
    # Eligible leader replicas are kept (metadata.version allows them: metadata.features).
    elr: bool = True

    def below_min_isr(self, isr_size: int, replica_count: int) -> bool:
        # A minimum above the replication factor can never be met; count it as the factor
        # (the broker's high-watermark rule uses the same effective minimum).
        return isr_size < min(self.min_isr, replica_count)

    def keeps_elr(self, isr_size: int, replica_count: int) -> bool:
        """Replicas leaving an ISR of ``isr_size`` join the ELR."""
        return self.elr and self.below_min_isr(isr_size, replica_count)


class InvariantViolation(RuntimeError):
    """Metadata state breaks an invariant (a bug or corrupted log): the operation is refused."""


def check_partition(reg: PartitionRegistration, where: object) -> None:
    """Raise :class:`InvariantViolation` unless the ISR is a non-empty duplicate-free subset of
    the replicas, the leader is in the ISR or -1, and the epochs are non-negative. ``where``
    names the partition in the error (formatted only on failure: this runs per partition)."""
    replicas = set(reg.replicas)
    isr = set(reg.isr)
    if len(replicas) != len(reg.replicas) or not reg.replicas:
        raise InvariantViolation(f"{where}: replicas {reg.replicas} empty or duplicated")
    if not isr or len(isr) != len(reg.isr) or not isr <= replicas:
        raise InvariantViolation(f"{where}: ISR {reg.isr} not a non-empty subset of replicas")
    if reg.leader != NO_LEADER and reg.leader not in isr:
        raise InvariantViolation(f"{where}: leader {reg.leader} not in ISR {reg.isr}")
    if reg.leader_epoch < 0 or reg.partition_epoch < 0:
        raise InvariantViolation(f"{where}: negative epoch")
    if reg.elr:
        elr = set(reg.elr)
        if len(elr) != len(reg.elr) or not elr <= replicas or elr & isr:
            raise InvariantViolation(
                f"{where}: ELR {reg.elr} not a duplicate-free subset of replicas {reg.replicas} "
                f"outside the ISR {reg.isr}"
            )
    if reg.removing_replicas or reg.adding_replicas:
        removing = set(reg.removing_replicas)
        adding = set(reg.adding_replicas)
        if (
            len(removing) != len(reg.removing_replicas)
            or len(adding) != len(reg.adding_replicas)
            or not removing <= replicas
            or not adding <= replicas
            or removing & adding
            or removing == replicas
        ):
            raise InvariantViolation(
                f"{where}: removing {reg.removing_replicas} / adding {reg.adding_replicas} "
                f"not disjoint proper subsets of replicas {reg.replicas}"
            )


def choose_leader(
    replicas: Sequence[int], isr: Collection[int], active: Collection[int], unclean: bool
) -> tuple[int, bool]:
    """(leader, was_unclean): the first active ISR member in replica order, else (when
    ``unclean``) the first active replica, else NO_LEADER."""
    for r in replicas:
        if r in isr and r in active:
            return r, False
    if unclean:
        for r in replicas:
            if r in active:
                return r, True
    return NO_LEADER, False


def _change(
    topic_id: uuid.UUID,
    partition_id: int,
    reg: PartitionRegistration,
    isr: tuple[int, ...],
    leader: int,
    elr: tuple[int, ...] | None = None,
) -> PartitionChangeRecord | None:
    """The record taking ``reg`` to (``isr``, ``leader``, ``elr``; None = ELR unchanged)."""
    if elr is None:
        elr = reg.elr
    new = replace(reg, isr=isr, leader=leader, elr=elr)
    check_partition(new, ("after change of partition", topic_id, partition_id))
    if isr == reg.isr and leader == reg.leader and elr == reg.elr:
        return None
    return PartitionChangeRecord(
        partition_id=partition_id,
        topic_id=topic_id,
        isr=isr if isr != reg.isr else None,
        leader=leader if leader != reg.leader else NO_LEADER_CHANGE,
        replicas=None,
        elr=elr if elr != reg.elr else None,
    )


def _in_replica_order(reg: PartitionRegistration, members: Collection[int]) -> tuple[int, ...]:
    return tuple(r for r in reg.replicas if r in members)


def leader_candidates(reg: PartitionRegistration) -> tuple[int, ...]:
    """ISR and ELR members, in replica order."""
    return tuple(r for r in reg.replicas if r in reg.isr or r in reg.elr)


def _recovery_leader(
    candidates: Sequence[int], electorate: Electorate, reported: Mapping[int, LogEnd]
) -> int:
    """The candidate to lead a leaderless partition (see the module docstring), or NO_LEADER
    while the choice must wait."""
    live = [r for r in candidates if r in electorate.active]
    for r in live:
        if r in electorate.clean:
            return r
    if not live:
        return NO_LEADER
    if len(candidates) == 1:
        return live[0]
    if len(live) < len(candidates) or any(r not in reported for r in candidates):
        return NO_LEADER
    # Longest log: highest last leader epoch, then highest log end offset, then replica order.
    return max(candidates, key=lambda r: (reported[r], -candidates.index(r)))


def _leaderless_outcome(
    topic_id: uuid.UUID,
    partition_id: int,
    reg: PartitionRegistration,
    electorate: Electorate,
    rules: TopicRules,
) -> tuple[tuple[int, ...], int, tuple[int, ...]]:
    """(isr, leader, elr) for ``reg`` whose leader is gone (``reg.leader`` may still name the
    departing broker); the leader is NO_LEADER, the rest unchanged, while nobody can lead."""
    candidates = leader_candidates(reg)
    leader = _recovery_leader(candidates, electorate, electorate.reported(topic_id, partition_id))
    if leader == NO_LEADER and rules.unclean:
        leader, _ = choose_leader(reg.replicas, candidates, electorate.active, True)
        if leader != NO_LEADER and leader not in candidates:
            return (leader,), leader, ()
    if leader == NO_LEADER:
        return reg.isr, NO_LEADER, reg.elr
    doubtful = {r for r in electorate.active if r not in electorate.clean}
    keep = tuple(r for r in candidates if r != leader and r not in doubtful)
    elr = keep if rules.keeps_elr(1, len(reg.replicas)) else ()
    return (leader,), leader, elr


def remove_broker_from_partition(
    topic_id: uuid.UUID,
    partition_id: int,
    reg: PartitionRegistration,
    broker_id: int,
    electorate: Electorate,
    rules: TopicRules,
    *,
    eligible: bool = True,
) -> PartitionChangeRecord | None:
    """The change that takes ``broker_id`` out of leadership and the ISR (fence, controlled
    shutdown, re-registration); None when it holds neither. ``electorate.active`` must not
    contain it. ``eligible``: the broker's log still holds everything it had (false for a
    re-registration after an unclean shutdown); only then may it join the ELR."""
    check_partition(reg, ("partition", topic_id, partition_id))
    if broker_id not in reg.isr and reg.leader != broker_id:
        return None
    electorate = electorate.for_partition(topic_id, partition_id)
    isr = tuple(r for r in reg.isr if r != broker_id) or reg.isr
    elr = reg.elr
    if eligible and isr != reg.isr and rules.keeps_elr(len(isr), len(reg.replicas)):
        elr = _in_replica_order(reg, {*reg.elr, broker_id})
    if reg.leader != broker_id and reg.leader != NO_LEADER and reg.leader in electorate.active:
        return _change(topic_id, partition_id, reg, isr, reg.leader, elr)
    leader, _ = choose_leader(reg.replicas, isr, electorate.active, False)
    if leader != NO_LEADER:
        return _change(topic_id, partition_id, reg, isr, leader, elr)
    shrunk = replace(reg, isr=isr, elr=elr)
    outcome = _leaderless_outcome(topic_id, partition_id, shrunk, electorate, rules)
    return _change(topic_id, partition_id, reg, *outcome)


def elect_if_leaderless(
    topic_id: uuid.UUID,
    partition_id: int,
    reg: PartitionRegistration,
    electorate: Electorate,
    rules: TopicRules,
) -> PartitionChangeRecord | None:
    """Elect a leader for a partition that has none (a broker came back or reported its log
    end); None if not possible yet."""
    check_partition(reg, ("partition", topic_id, partition_id))
    if reg.leader != NO_LEADER:
        return None
    electorate = electorate.for_partition(topic_id, partition_id)
    isr, leader, elr = _leaderless_outcome(topic_id, partition_id, reg, electorate, rules)
    if leader == NO_LEADER:
        return None
    return _change(topic_id, partition_id, reg, isr, leader, elr)


def elect_preferred(
    topic_id: uuid.UUID,
    partition_id: int,
    reg: PartitionRegistration,
    active: Collection[int],
) -> PartitionChangeRecord | None:
    """Move leadership to the preferred replica (replicas[0]) when it is an active ISR member
    and not already leader; None otherwise."""
    check_partition(reg, ("partition", topic_id, partition_id))
    preferred = reg.replicas[0]
    if reg.leader == preferred or preferred not in reg.isr or preferred not in active:
        return None
    return _change(topic_id, partition_id, reg, reg.isr, preferred)


def change_isr(
    topic_id: uuid.UUID,
    partition_id: int,
    reg: PartitionRegistration,
    new_isr: tuple[int, ...],
    rules: TopicRules,
) -> PartitionChangeRecord | None:
    """The change that sets the ISR (AlterPartition); the leader stays (its epoch too). Below
    the minimum, members the leader drops join the ELR (the HW could not pass their log end
    while they were in the ISR, and stops moving now) and members that rejoin leave it; at the
    minimum the ELR empties."""
    check_partition(reg, ("partition", topic_id, partition_id))
    if rules.keeps_elr(len(new_isr), len(reg.replicas)):
        dropped = {r for r in reg.isr if r not in new_isr}
        elr = _in_replica_order(reg, {r for r in (*reg.elr, *dropped) if r not in new_isr})
    else:
        elr = ()
    return _change(topic_id, partition_id, reg, new_isr, reg.leader, elr)
