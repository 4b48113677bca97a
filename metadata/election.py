"""Leader election and partition changes (Kafka's PartitionChangeBuilder, reduced).

Rules:
- The leader is the first replica, in replica order, that is in the ISR and active (unfenced,
  not in controlled shutdown). Unclean election (the first active replica outside the ISR,
  which then becomes the whole ISR) only when ``unclean`` is set for the topic.
- Removing a broker (fenced, shutting down, re-registered) drops it from the ISR, except that the
  ISR never becomes empty: when the broker was its last member, the ISR keeps it and the
  partition is left without a leader (-1), as KRaft does, so that the broker, which holds every
  committed record, can be elected again when it comes back.
- A changed leader (including to -1) bumps the leader epoch; any change bumps the partition epoch
  (see :func:`metadata.delta.merge_partition_change`).

Pure functions over :class:`PartitionRegistration`; ``active`` is the set of eligible brokers.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from dataclasses import replace

from metadata.image import PartitionRegistration
from metadata.records import NO_LEADER, NO_LEADER_CHANGE, PartitionChangeRecord


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
) -> PartitionChangeRecord | None:
    new = replace(reg, isr=isr, leader=leader)
    check_partition(new, ("after change of partition", topic_id, partition_id))
    if isr == reg.isr and leader == reg.leader:
        return None
    return PartitionChangeRecord(
        partition_id=partition_id,
        topic_id=topic_id,
        isr=isr if isr != reg.isr else None,
        leader=leader if leader != reg.leader else NO_LEADER_CHANGE,
        replicas=None,
    )


def remove_broker_from_partition(
    topic_id: uuid.UUID,
    partition_id: int,
    reg: PartitionRegistration,
    broker_id: int,
    active: Collection[int],
    unclean: bool,
) -> PartitionChangeRecord | None:
    """The change that takes ``broker_id`` out of leadership and the ISR (fence, controlled
    shutdown, re-registration); None when it holds neither. ``active`` must not contain it."""
    check_partition(reg, ("partition", topic_id, partition_id))
    if broker_id not in reg.isr and reg.leader != broker_id:
        return None
    isr = tuple(r for r in reg.isr if r != broker_id) or reg.isr
    if reg.leader != broker_id and reg.leader != NO_LEADER and reg.leader in active:
        return _change(topic_id, partition_id, reg, isr, reg.leader)
    leader, was_unclean = choose_leader(reg.replicas, isr, active, unclean)
    if was_unclean:
        isr = (leader,)
    return _change(topic_id, partition_id, reg, isr, leader)


def elect_if_leaderless(
    topic_id: uuid.UUID,
    partition_id: int,
    reg: PartitionRegistration,
    active: Collection[int],
    unclean: bool,
) -> PartitionChangeRecord | None:
    """Elect a leader for a partition that has none (a broker came back); None if impossible."""
    check_partition(reg, ("partition", topic_id, partition_id))
    if reg.leader != NO_LEADER:
        return None
    leader, was_unclean = choose_leader(reg.replicas, reg.isr, active, unclean)
    if leader == NO_LEADER:
        return None
    isr = (leader,) if was_unclean else reg.isr
    return _change(topic_id, partition_id, reg, isr, leader)


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
) -> PartitionChangeRecord | None:
    """The change that sets the ISR (AlterPartition); the leader stays (its epoch too)."""
    check_partition(reg, ("partition", topic_id, partition_id))
    return _change(topic_id, partition_id, reg, new_isr, reg.leader)
