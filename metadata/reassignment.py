"""Partition reassignment: moving a partition's replicas to other brokers while it serves traffic
(KRaft's AlterPartitionReassignments / ListPartitionReassignments, as pure functions).

A reassignment of a partition with replicas ``current`` to ``target`` runs in two records:

1. Start: ``replicas = target + removing`` (target order first, so ``replicas[0]`` is already the
   new preferred leader), ``removing_replicas = current - target``, ``adding_replicas =
   target - current``. The brokers in ``adding`` see themselves in ``replicas``, create the log and
   fetch from the leader; the leader adds them to the ISR (AlterPartition) once caught up. The
   leader, ISR and leader epoch do not change, so producers are not disturbed.
2. Complete, when every adding replica is in the ISR (checked when an AlterPartition changes the
   ISR, and on every controller tick for partitions still moving): ``replicas = target``,
   ``isr = isr & target``, adding/removing cleared; if the leader is being removed (or there is
   none), the first active ISR member of the target in target order leads. Removing replicas
   bumps the leader epoch even when the leader stays (KRaft does the same), so a removed
   replica's fetches are fenced. The removed brokers see the partition leave ``replicas`` and
   delete their copy. A completion that would leave no live leader waits.

If the adding set is empty (a pure shrink or reorder), step 2 follows at once (one record).

A new target while a reassignment is in progress replaces it: removing = replicas - target;
adding = (target - replicas) plus those target replicas that were still adding (KRaft would
treat them as caught up; keeping them in ``adding`` means the completion still waits for them).
Cancel restores the original replicas (``replicas - adding``), keeps the ISR members among them
and re-elects if the leader was an adding replica; if no original replica is in the ISR any
more, cancelling would lose committed data and is refused.

Refusals (per partition): unknown topic or partition -> UNKNOWN_TOPIC_OR_PARTITION; a target
that is empty, has duplicates, or names an unknown, fenced or shutting-down broker ->
INVALID_REPLICA_ASSIGNMENT; a target of another size than the partition's replication factor
(its original replicas) when the request does not allow that (KIP-860) ->
INVALID_REPLICATION_FACTOR; cancel without a reassignment -> NO_REASSIGNMENT_IN_PROGRESS.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from dataclasses import replace

from common.error_codes import ErrorCode
from metadata.election import check_partition, choose_leader
from metadata.election_log import log_leader_moves
from metadata.image import MetadataImage, PartitionRegistration
from metadata.messages import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    OngoingPartitionReassignment,
    ReassignablePartitionResult,
)
from metadata.records import NO_LEADER, NO_LEADER_CHANGE, MetadataRecord, PartitionChangeRecord
from metadata.result import ControllerResult, RecordBudget


class ReassignmentRefused(ValueError):
    """A reassignment or cancel request cannot be applied; carries the Kafka error code."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


def change_record(
    topic_id: uuid.UUID, partition_id: int, old: PartitionRegistration, new: PartitionRegistration
) -> PartitionChangeRecord | None:
    """The PartitionChangeRecord turning ``old`` into ``new`` (epochs excepted); None if equal.

    The leader field is set (bumping the leader epoch) when the leader changes, and also when
    replicas are removed, so that a removed replica can no longer fetch with the old epoch."""
    # Eligible leader replicas leave with their replicas, and never overlap the ISR.
    new = replace(new, elr=tuple(r for r in new.elr if r in new.replicas and r not in new.isr))
    check_partition(new, ("after reassignment of partition", topic_id, partition_id))
    replicas_removed = not set(old.replicas) <= set(new.replicas)
    same = (
        new.replicas == old.replicas
        and new.isr == old.isr
        and new.leader == old.leader
        and new.removing_replicas == old.removing_replicas
        and new.adding_replicas == old.adding_replicas
        and new.elr == old.elr
    )
    if same:
        return None
    bump = new.leader != old.leader or replicas_removed
    return PartitionChangeRecord(
        partition_id=partition_id,
        topic_id=topic_id,
        isr=new.isr if new.isr != old.isr else None,
        leader=new.leader if bump else NO_LEADER_CHANGE,
        replicas=new.replicas if new.replicas != old.replicas else None,
        removing_replicas=new.removing_replicas
        if new.removing_replicas != old.removing_replicas
        else None,
        adding_replicas=new.adding_replicas if new.adding_replicas != old.adding_replicas else None,
        elr=new.elr if new.elr != old.elr else None,
    )


def completed(reg: PartitionRegistration, active: Collection[int]) -> PartitionRegistration | None:
    """The partition with its reassignment finished, or None while it cannot finish yet (an
    adding replica is not in the ISR, or no ISR member of the target could lead)."""
    if not reg.is_reassigning:
        return None
    if not set(reg.adding_replicas) <= set(reg.isr):
        return None
    target = reg.target_replicas
    isr = tuple(r for r in reg.isr if r in target)
    if not isr:
        return None
    leader = reg.leader
    if leader not in isr:
        leader, _ = choose_leader(target, isr, active, False)
        if leader == NO_LEADER:
            return None
    return replace(
        reg, replicas=target, isr=isr, leader=leader, removing_replicas=(), adding_replicas=()
    )


def validate_target(
    target: Sequence[int], image: MetadataImage, active: Collection[int]
) -> tuple[int, ...]:
    """``target`` as a tuple, or :class:`ReassignmentRefused` (INVALID_REPLICA_ASSIGNMENT)."""
    if not target:
        raise ReassignmentRefused(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "empty replica list")
    if len(set(target)) != len(target):
        raise ReassignmentRefused(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"duplicate broker in {list(target)}"
        )
    unknown = [b for b in target if b not in image.brokers]
    if unknown:
        raise ReassignmentRefused(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"brokers {unknown} are not registered"
        )
    inactive = [b for b in target if b not in active]
    if inactive:
        raise ReassignmentRefused(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"brokers {inactive} are fenced or shutting down",
        )
    return tuple(target)


def check_replication_factor(reg: PartitionRegistration, target: Sequence[int]) -> None:
    """:class:`ReassignmentRefused` (INVALID_REPLICATION_FACTOR) unless ``target`` keeps the
    partition's replication factor: the size of its replicas before any reassignment in
    progress, as KRaft counts it (``replicas`` alone include the brokers being added)."""
    factor = len(reg.original_replicas)
    if len(target) != factor:
        raise ReassignmentRefused(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"the replication factor would change from {factor} to {len(target)}",
        )


def reassign(
    reg: PartitionRegistration, target: tuple[int, ...], active: Collection[int]
) -> PartitionRegistration:
    """The partition after starting (and, if possible, completing) a reassignment to
    ``target`` (already validated)."""
    adding_now = set(reg.adding_replicas)
    removing = tuple(r for r in reg.replicas if r not in target)
    adding = tuple(r for r in target if r not in reg.replicas or r in adding_now)
    moving = replace(
        reg,
        replicas=target + removing,
        removing_replicas=removing,
        adding_replicas=adding,
    )
    if not moving.is_reassigning:
        return moving  # the same brokers: at most the order (the preferred leader) changes
    done = completed(moving, active)
    return done if done is not None else moving


def cancel(reg: PartitionRegistration, active: Collection[int]) -> PartitionRegistration:
    """The partition with its reassignment reverted, or :class:`ReassignmentRefused`."""
    if not reg.is_reassigning:
        raise ReassignmentRefused(
            ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "no reassignment in progress"
        )
    original = reg.original_replicas
    isr = tuple(r for r in reg.isr if r in original)
    if not isr:
        raise ReassignmentRefused(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"no original replica of {list(original)} is in the ISR {list(reg.isr)}; "
            "cancelling would lose committed records",
        )
    leader = reg.leader
    if leader not in isr:
        leader, _ = choose_leader(original, isr, active, False)
    return replace(
        reg, replicas=original, isr=isr, leader=leader, removing_replicas=(), adding_replicas=()
    )


def alter_partition_reassignments(
    image: MetadataImage,
    request: AlterPartitionReassignmentsRequest,
    max_append_bytes: int,
    max_records: int,
) -> ControllerResult[AlterPartitionReassignmentsResponse]:
    """Start, replace or cancel (``replicas`` None) reassignments; one result per partition,
    in request order."""
    active = set(image.active_broker_ids())
    budget = RecordBudget(max_append_bytes, max_records)
    results: list[ReassignablePartitionResult] = []
    seen: set[tuple[str, int]] = set()
    for t in request.topics:
        topic = image.topics_by_name.get(t.name)
        for item in t.partitions:
            pid = item.partition_index

            def answer(code: int = 0, message: str | None = None) -> None:
                results.append(ReassignablePartitionResult(t.name, pid, code, message))  # noqa: B023

            if (t.name, pid) in seen:
                answer(ErrorCode.INVALID_REQUEST, "partition named twice")
                continue
            seen.add((t.name, pid))
            reg = topic.partitions.get(pid) if topic is not None else None
            if topic is None or reg is None:
                answer(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "unknown topic or partition")
                continue
            check_partition(reg, (t.name, pid))
            try:
                if item.replicas is None:
                    new = cancel(reg, active)
                else:
                    target = validate_target(item.replicas, image, active)
                    if not request.allow_replication_factor_change:
                        check_replication_factor(reg, target)
                    new = reassign(reg, target, active)
            except ReassignmentRefused as exc:
                answer(exc.error_code, str(exc))
                continue
            record = change_record(topic.topic_id, pid, reg, new)
            if record is not None and not budget.try_add([record]):
                answer(ErrorCode.THROTTLING_QUOTA_EXCEEDED, "too many reassignments at once")
                continue
            answer()
    if budget.records:
        log_leader_moves(image, "reassignments started or cancelled", budget.records)
    return budget.result(AlterPartitionReassignmentsResponse(results))


def list_partition_reassignments(
    image: MetadataImage, request: ListPartitionReassignmentsRequest
) -> ListPartitionReassignmentsResponse:
    """Reassignments in progress (of the named partitions, or all); unknown ones are skipped,
    as Kafka does."""
    out: list[OngoingPartitionReassignment] = []
    if request.partitions is None:
        items = [(t.name, pid, reg) for t, pid, reg in image.iter_partitions()]
    else:
        items = []
        for name, pids in request.partitions.items():
            for pid in pids:
                reg = image.partition(name, pid)
                if reg is not None:
                    items.append((name, pid, reg))
    for name, pid, reg in sorted(items, key=lambda x: (x[0], x[1])):
        if reg.is_reassigning:
            out.append(
                OngoingPartitionReassignment(
                    name,
                    pid,
                    list(reg.replicas),
                    list(reg.adding_replicas),
                    list(reg.removing_replicas),
                )
            )
    return ListPartitionReassignmentsResponse(out)


def completion_records(
    image: MetadataImage,
    moving: Collection[tuple[uuid.UUID, int]],
    max_append_bytes: int,
    max_records: int,
) -> list[MetadataRecord]:
    """Records completing the reassignments of ``moving`` (topic id, partition) that can
    complete now, as many as fit one append (the controller's tick calls this)."""
    active = set(image.active_broker_ids())
    budget = RecordBudget(max_append_bytes, max_records)
    for topic_id, pid in sorted(moving):
        topic = image.topics_by_id.get(topic_id)
        reg = topic.partitions.get(pid) if topic is not None else None
        if topic is None or reg is None:
            continue
        done = completed(reg, active)
        if done is None:
            continue
        record = change_record(topic_id, pid, reg, done)
        if record is not None and not budget.try_add([record]):
            break
    if budget.records:
        log_leader_moves(image, "reassignments completed", budget.records)
    return budget.records
