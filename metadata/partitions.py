"""Partition decisions: AlterPartition (ISR changes proposed by leaders) and leader elections
(ElectLeaders and periodic preferred-leader rebalancing). Pure functions.

AlterPartition checks, in Kafka's order: the broker epoch (STALE_BROKER_EPOCH for the whole
request), the topic (UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID), that the sender leads the
partition (NOT_LEADER_OR_FOLLOWER), its leader epoch (older: FENCED_LEADER_EPOCH, newer:
UNKNOWN_LEADER_EPOCH), the partition epoch (INVALID_UPDATE_VERSION), then the proposed ISR
(non-empty, no duplicates, a subset of the replicas containing the leader: INVALID_REQUEST; new
members must be unfenced and not shutting down: INELIGIBLE_REPLICA).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from common.error_codes import ErrorCode
from metadata.delta import merge_partition_change
from metadata.election import (
    TopicRules,
    change_isr,
    choose_leader,
    elect_preferred,
    leader_candidates,
)
from metadata.election_log import log_leader_moves
from metadata.image import MetadataImage, PartitionRegistration, TopicImage
from metadata.messages import (
    ELECTION_PREFERRED,
    ELECTION_UNCLEAN,
    AlterPartitionItem,
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionResult,
    ElectionResult,
    ElectLeadersRequest,
    ElectLeadersResponse,
)
from metadata.reassignment import change_record, completed
from metadata.records import NO_LEADER, MetadataRecord, PartitionChangeRecord
from metadata.result import ControllerResult, RecordBudget


def _result(
    name: str,
    item: AlterPartitionItem,
    code: int,
    message: str | None,
    reg: PartitionRegistration | None,
) -> AlterPartitionResult:
    if reg is None:
        return AlterPartitionResult(name, item.partition_index, code, message)
    return AlterPartitionResult(
        name,
        item.partition_index,
        code,
        message,
        reg.leader,
        reg.leader_epoch,
        list(reg.isr),
        reg.partition_epoch,
    )


def alter_partition(
    image: MetadataImage, request: AlterPartitionRequest, rules: Callable[[str], TopicRules]
) -> ControllerResult[AlterPartitionResponse]:
    b = image.brokers.get(request.broker_id)
    if b is None or b.epoch != request.broker_epoch:
        return ControllerResult.of(
            [],
            AlterPartitionResponse(
                ErrorCode.STALE_BROKER_EPOCH,
                f"Broker {request.broker_id} epoch {request.broker_epoch} is not current",
            ),
        )
    active = {x.broker_id for x in image.brokers.values() if x.is_active}
    records: list[MetadataRecord] = []
    results: list[AlterPartitionResult] = []
    seen: set[tuple[str, int]] = set()
    for t in request.topics:
        topic = image.topics_by_name.get(t.name)
        for item in t.partitions:
            key = (t.name, item.partition_index)
            if key in seen:
                results.append(
                    _result(t.name, item, ErrorCode.INVALID_REQUEST, "duplicate partition", None)
                )
                continue
            seen.add(key)
            results.append(
                _alter_one(
                    topic, t.name, t.topic_id, item, request.broker_id, active, records, rules
                )
            )
    return ControllerResult.of(records, AlterPartitionResponse(0, None, results))


def _alter_one(
    topic: TopicImage | None,
    name: str,
    topic_id: uuid.UUID | None,
    item: AlterPartitionItem,
    broker_id: int,
    active: set[int],
    records: list[MetadataRecord],
    rules: Callable[[str], TopicRules],
) -> AlterPartitionResult:
    if topic is None:
        return _result(name, item, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "unknown topic", None)
    if topic_id is not None and topic_id != topic.topic_id:
        return _result(name, item, ErrorCode.UNKNOWN_TOPIC_ID, "topic id does not match", None)
    reg = topic.partitions.get(item.partition_index)
    if reg is None:
        return _result(name, item, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "unknown partition", None)
    if reg.leader != broker_id:
        return _result(name, item, ErrorCode.NOT_LEADER_OR_FOLLOWER, f"leader is {reg.leader}", reg)
    if item.leader_epoch < reg.leader_epoch:
        return _result(name, item, ErrorCode.FENCED_LEADER_EPOCH, "stale leader epoch", reg)
    if item.leader_epoch > reg.leader_epoch:
        return _result(
            name, item, ErrorCode.UNKNOWN_LEADER_EPOCH, "leader epoch from the future", reg
        )
    if item.partition_epoch != reg.partition_epoch:
        return _result(
            name,
            item,
            ErrorCode.INVALID_UPDATE_VERSION,
            f"partition epoch {item.partition_epoch}, current {reg.partition_epoch}",
            reg,
        )
    new_isr = tuple(item.new_isr)
    if not new_isr or len(set(new_isr)) != len(new_isr):
        return _result(name, item, ErrorCode.INVALID_REQUEST, "ISR empty or duplicated", reg)
    if not set(new_isr) <= set(reg.replicas):
        return _result(name, item, ErrorCode.INVALID_REQUEST, "ISR not a subset of replicas", reg)
    if reg.leader not in new_isr:
        return _result(name, item, ErrorCode.INVALID_REQUEST, "ISR must contain the leader", reg)
    ineligible = [r for r in new_isr if r not in reg.isr and r not in active]
    if ineligible:
        return _result(
            name,
            item,
            ErrorCode.INELIGIBLE_REPLICA,
            f"replicas {ineligible} are fenced or shutting down",
            reg,
        )
    change = change_isr(topic.topic_id, item.partition_index, reg, new_isr, rules(name))
    if change is None:
        return _result(name, item, 0, None, reg)
    done = completed(merge_partition_change(reg, change), active)
    if done is not None:
        # The ISR expansion that brings in the last adding replica completes the reassignment
        # in the same record (as KRaft does).
        change = change_record(topic.topic_id, item.partition_index, reg, done) or change
    records.append(change)
    return _result(name, item, 0, None, merge_partition_change(reg, change))


def elect_leaders(
    image: MetadataImage, request: ElectLeadersRequest, max_append_bytes: int, max_records: int
) -> ControllerResult[ElectLeadersResponse]:
    active = {x.broker_id for x in image.brokers.values() if x.is_active}
    budget = RecordBudget(max_append_bytes, max_records)
    results: list[ElectionResult] = []
    if request.election_type not in (ELECTION_PREFERRED, ELECTION_UNCLEAN):
        return ControllerResult.of(
            [],
            ElectLeadersResponse(
                [ElectionResult("", -1, ErrorCode.INVALID_REQUEST, "unknown election type")]
            ),
        )
    explicit = request.partitions is not None
    if request.partitions is None:
        targets = [(t.name, pid) for t, pid, _ in image.iter_partitions()]
    else:
        targets = [(name, pid) for name, pids in request.partitions.items() for pid in pids]
    for name, pid in targets:
        topic = image.topics_by_name.get(name)
        reg = topic.partitions.get(pid) if topic is not None else None
        if topic is None or reg is None:
            results.append(
                ElectionResult(name, pid, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "unknown partition")
            )
            continue
        change: PartitionChangeRecord | None
        if request.election_type == ELECTION_PREFERRED:
            change = elect_preferred(topic.topic_id, pid, reg, active)
            if change is None:
                if reg.leader == reg.replicas[0]:
                    code, msg = ErrorCode.ELECTION_NOT_NEEDED, "preferred replica already leads"
                else:
                    code, msg = (
                        ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                        f"preferred replica {reg.replicas[0]} is not an active ISR member",
                    )
                if explicit:
                    results.append(ElectionResult(name, pid, code, msg))
                continue
        else:
            if reg.leader != NO_LEADER:
                if explicit:
                    results.append(
                        ElectionResult(name, pid, ErrorCode.ELECTION_NOT_NEEDED, "has a leader")
                    )
                continue
            # Eligible leader replicas first: they hold every committed record.
            leader, _ = choose_leader(reg.replicas, leader_candidates(reg), active, True)
            if leader == NO_LEADER:
                results.append(
                    ElectionResult(
                        name, pid, ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, "no live replica"
                    )
                )
                continue
            outside_isr = leader not in reg.isr
            change = PartitionChangeRecord(
                pid,
                topic.topic_id,
                (leader,) if outside_isr else None,
                leader,
                None,
                elr=() if outside_isr and reg.elr else None,
            )
        if budget.try_add([change]):
            results.append(ElectionResult(name, pid, 0, None))
        else:
            results.append(
                ElectionResult(
                    name, pid, ErrorCode.THROTTLING_QUOTA_EXCEEDED, "too many elections at once"
                )
            )
    if budget.records:
        kind = "preferred" if request.election_type == ELECTION_PREFERRED else "unclean"
        log_leader_moves(image, f"ElectLeaders ({kind})", budget.records)
    return budget.result(ElectLeadersResponse(results))


def preferred_leader_records(
    image: MetadataImage, max_append_bytes: int, max_records: int
) -> list[MetadataRecord]:
    """Changes moving leadership back to preferred replicas, as many as fit one append."""
    active = {x.broker_id for x in image.brokers.values() if x.is_active}
    budget = RecordBudget(max_append_bytes, max_records)
    for topic, pid, reg in image.iter_partitions():
        if reg.leader == reg.replicas[0]:
            continue
        change = elect_preferred(topic.topic_id, pid, reg, active)
        if change is not None and not budget.try_add([change]):
            break
    if budget.records:
        log_leader_moves(image, "preferred-leader rebalancing", budget.records)
    return budget.records
