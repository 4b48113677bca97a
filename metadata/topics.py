"""Topic decisions: CreateTopics, DeleteTopics, CreatePartitions (pure; no I/O).

Errors are Kafka's: INVALID_TOPIC_EXCEPTION (17) for bad or colliding names,
TOPIC_ALREADY_EXISTS (36), INVALID_PARTITIONS (37), INVALID_REPLICATION_FACTOR (38),
INVALID_REPLICA_ASSIGNMENT (39), INVALID_CONFIG (40), INVALID_REQUEST (42) for duplicates and
contradictory fields, UNKNOWN_TOPIC_OR_PARTITION (3), TOPIC_DELETION_DISABLED (73).

One request is one atomic append. Topics whose records do not fit the remaining append budget
get THROTTLING_QUOTA_EXCEEDED (89, retriable; ``ControllerClient`` resends them), so a request
creating many topics proceeds in several appends while each topic stays atomic.
"""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Callable, Mapping, Sequence

from common.config_resources import RESOURCE_TOPIC
from common.error_codes import ErrorCode
from metadata.controller_config import ControllerConfig
from metadata.image import BrokerRegistration, MetadataImage
from metadata.messages import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    NewPartitions,
    NewTopic,
    TopicResult,
)
from metadata.placement import PlacementError, assign_replicas
from metadata.records import (
    ConfigRecord,
    MetadataRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from metadata.result import ControllerResult, RecordBudget
from metadata.topic_configs import validate_topic_configs

MAX_TOPIC_NAME_LENGTH = 249
# Kafka's internal topics: reported with is_internal=true in Metadata, and closed to client
# produce requests (only the broker's own coordinator writes them).
CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
INTERNAL_TOPICS = frozenset({CONSUMER_OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC})
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")


def topic_name_error(name: str) -> str | None:
    """Kafka's topic-name rules; None if ``name`` is legal."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return (
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters, "
            f"topic name: {name[:MAX_TOPIC_NAME_LENGTH]}..."
        )
    if not _LEGAL_TOPIC_NAME.fullmatch(name):
        return (
            f'Topic name "{name}" is illegal, it contains a character other than ASCII '
            "alphanumerics, '.', '_' and '-'"
        )
    return None


def _collision_key(name: str) -> str:
    # '.' and '_' collide in metric names, so Kafka refuses topics differing only by them.
    return name.replace(".", "_")


def _placement_brokers(image: MetadataImage) -> dict[int, str | None]:
    return {b.broker_id: b.rack for b in image.brokers.values() if b.is_active}


def _rf_error(rf: int, active: int) -> str:
    return (
        f"Unable to replicate the partition {rf} time(s): The target replication factor of "
        f"{rf} cannot be reached because only {active} broker(s) are registered."
    )


def _validate_assignment(
    assignment: Sequence[Sequence[int]], brokers: Mapping[int, BrokerRegistration]
) -> str | None:
    """Manual assignment rules: every list non-empty, no duplicate broker in a list, one
    replication factor for all, every broker registered, some replica of each partition active."""
    rf = None
    for i, replicas in enumerate(assignment):
        if not replicas:
            return f"The manual partition assignment includes an empty replica list ({i})."
        if len(set(replicas)) != len(replicas):
            return f"The manual partition assignment includes the broker(s) twice: {replicas}"
        if rf is not None and len(replicas) != rf:
            return "All partitions in the manual partition assignment must have the same size."
        rf = len(replicas)
        for b in replicas:
            if b not in brokers:
                return f"The manual partition assignment includes broker {b}, which is not known."
        if not any(brokers[b].is_active for b in replicas):
            return (
                f"All brokers specified in the manual partition assignment for partition {i} "
                "are fenced or in controlled shutdown."
            )
    return None


def _partition_records(
    topic_id: uuid.UUID,
    assignment: Mapping[int, Sequence[int]],
    brokers: Mapping[int, BrokerRegistration],
) -> list[MetadataRecord]:
    out: list[MetadataRecord] = []
    for pid in sorted(assignment):
        replicas = tuple(assignment[pid])
        isr = tuple(b for b in replicas if brokers[b].is_active)
        out.append(PartitionRecord(pid, topic_id, replicas, isr, isr[0], 0, 0))
    return out


def create_topics(
    image: MetadataImage,
    request: CreateTopicsRequest,
    config: ControllerConfig,
    rng: random.Random,
    new_topic_id: Callable[[], uuid.UUID],
    max_append_bytes: int,
) -> ControllerResult[CreateTopicsResponse]:
    budget = RecordBudget(max_append_bytes, config.max_records_per_user_op)
    counts: dict[str, int] = {}
    for t in request.topics:
        counts[t.name] = counts.get(t.name, 0) + 1
    taken = {_collision_key(n): n for n in image.topics_by_name}
    placement_brokers = _placement_brokers(image)
    results: list[TopicResult] = []
    for t in request.topics:
        if counts[t.name] > 1:
            results.append(
                TopicResult(t.name, ErrorCode.INVALID_REQUEST, "Duplicate topic name in request")
            )
            continue
        result, unit = _create_one(image, t, config, rng, new_topic_id, placement_brokers, taken)
        fits = request.validate_only or not unit or budget.try_add(unit)
        if result.error_code == 0 and not fits:
            if not budget.records:
                result = TopicResult(
                    t.name,
                    ErrorCode.POLICY_VIOLATION,
                    f"Topic {t.name} needs {len(unit)} metadata records, more than one "
                    f"controller append allows ({max_append_bytes} bytes, "
                    f"{config.max_records_per_user_op} records); use fewer partitions",
                )
            else:
                result = TopicResult(
                    t.name,
                    ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                    "Request too large for one metadata append; retry this topic",
                )
        if result.error_code == 0:
            taken[_collision_key(t.name)] = t.name
        results.append(result)
    return budget.result(CreateTopicsResponse(results))


class _Refused(Exception):
    """A topic of a CreateTopics request is refused with ``code`` and ``message``."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _create_one(
    image: MetadataImage,
    t: NewTopic,
    config: ControllerConfig,
    rng: random.Random,
    new_topic_id: Callable[[], uuid.UUID],
    placement_brokers: dict[int, str | None],
    taken: Mapping[str, str],
) -> tuple[TopicResult, list[MetadataRecord]]:
    try:
        _check_new_name(image, t.name, taken)
        err = validate_topic_configs(t.configs)
        if err:
            raise _Refused(ErrorCode.INVALID_CONFIG, err)
        if t.replica_assignment is not None:
            assignment = _manual_assignment(image, t, t.replica_assignment, config)
        else:
            assignment = _placed_assignment(t, config, rng, placement_brokers)
    except _Refused as refused:
        return TopicResult(t.name, refused.code, refused.message), []
    topic_id = new_topic_id()
    while topic_id in image.topics_by_id:
        topic_id = new_topic_id()
    unit: list[MetadataRecord] = [TopicRecord(t.name, topic_id)]
    unit.extend(
        ConfigRecord(RESOURCE_TOPIC, t.name, key, value) for key, value in sorted(t.configs.items())
    )
    unit.extend(_partition_records(topic_id, assignment, image.brokers))
    first = assignment[min(assignment)]
    return TopicResult(t.name, 0, None, topic_id, len(assignment), len(first)), unit


def _check_new_name(image: MetadataImage, name: str, taken: Mapping[str, str]) -> None:
    """_Refused unless ``name`` is valid and free (``taken``: the names created earlier in
    the same request, by collision key)."""
    err = topic_name_error(name)
    if err:
        raise _Refused(ErrorCode.INVALID_TOPIC_EXCEPTION, err)
    if name in image.topics_by_name:
        raise _Refused(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    other = taken.get(_collision_key(name))
    if other is not None:
        raise _Refused(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Topic '{name}' collides with existing topic: {other}",
        )


def _manual_assignment(
    image: MetadataImage,
    t: NewTopic,
    replica_assignment: Mapping[int, Sequence[int]],
    config: ControllerConfig,
) -> Mapping[int, Sequence[int]]:
    """The request's own assignment (``t.replica_assignment``), once checked."""
    if t.num_partitions != -1 or t.replication_factor != -1:
        raise _Refused(
            ErrorCode.INVALID_REQUEST,
            "A manual partition assignment was given, so num_partitions and "
            "replication_factor must be -1",
        )
    pids = sorted(replica_assignment)
    if pids != list(range(len(pids))) or not pids:
        raise _Refused(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Partitions of a manual assignment must be numbered 0..n-1 without gaps",
        )
    if len(pids) > config.max_partitions_per_topic:
        raise _Refused(
            ErrorCode.INVALID_PARTITIONS,
            f"Too many partitions: at most {config.max_partitions_per_topic} per topic",
        )
    err = _validate_assignment([replica_assignment[p] for p in pids], image.brokers)
    if err:
        raise _Refused(ErrorCode.INVALID_REPLICA_ASSIGNMENT, err)
    return replica_assignment


def _placed_assignment(
    t: NewTopic,
    config: ControllerConfig,
    rng: random.Random,
    placement_brokers: dict[int, str | None],
) -> Mapping[int, Sequence[int]]:
    """Replicas placed on ``placement_brokers`` for the request's (or the default) partition
    count and replication factor."""
    num_partitions = config.num_partitions if t.num_partitions == -1 else t.num_partitions
    rf = config.default_replication_factor if t.replication_factor == -1 else t.replication_factor
    if num_partitions <= 0:
        raise _Refused(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
    if num_partitions > config.max_partitions_per_topic:
        raise _Refused(
            ErrorCode.INVALID_PARTITIONS,
            f"Too many partitions: at most {config.max_partitions_per_topic} per topic",
        )
    if rf <= 0:
        raise _Refused(
            ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0."
        )
    if rf > len(placement_brokers):
        raise _Refused(ErrorCode.INVALID_REPLICATION_FACTOR, _rf_error(rf, len(placement_brokers)))
    try:
        return assign_replicas(placement_brokers, num_partitions, rf, rng)
    except PlacementError as exc:
        raise _Refused(ErrorCode.INVALID_REPLICATION_FACTOR, str(exc)) from None


def delete_topics(
    image: MetadataImage, request: DeleteTopicsRequest, config: ControllerConfig
) -> ControllerResult[DeleteTopicsResponse]:
    counts: dict[str, int] = {}
    for n in request.names:
        counts[n] = counts.get(n, 0) + 1
    records: list[MetadataRecord] = []
    results: list[TopicResult] = []
    for name in request.names:
        t = image.topics_by_name.get(name)
        if counts[name] > 1:
            results.append(
                TopicResult(name, ErrorCode.INVALID_REQUEST, "Duplicate topic name in request")
            )
        elif not config.delete_topic_enable:
            results.append(
                TopicResult(name, ErrorCode.TOPIC_DELETION_DISABLED, "Topic deletion is disabled.")
            )
        elif t is None:
            results.append(
                TopicResult(
                    name,
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    "This server does not host this topic-partition.",
                )
            )
        elif request.topic_ids is not None and request.topic_ids.get(name, t.topic_id) != (
            t.topic_id
        ):
            results.append(
                TopicResult(name, ErrorCode.UNKNOWN_TOPIC_ID, "This topic id no longer exists.")
            )
        else:
            records.append(RemoveTopicRecord(t.topic_id))
            results.append(TopicResult(name, 0, None, t.topic_id, len(t.partitions)))
    return ControllerResult.of(records, DeleteTopicsResponse(results))


def create_partitions(
    image: MetadataImage,
    request: CreatePartitionsRequest,
    config: ControllerConfig,
    rng: random.Random,
    max_append_bytes: int,
) -> ControllerResult[CreatePartitionsResponse]:
    budget = RecordBudget(max_append_bytes, config.max_records_per_user_op)
    counts: dict[str, int] = {}
    for t in request.topics:
        counts[t.name] = counts.get(t.name, 0) + 1
    results: list[TopicResult] = []
    for t in request.topics:
        if counts[t.name] > 1:
            results.append(
                TopicResult(t.name, ErrorCode.INVALID_REQUEST, "Duplicate topic name in request")
            )
            continue
        result, unit = _grow_one(image, t, config, rng)
        fits = request.validate_only or not unit or budget.try_add(unit)
        if result.error_code == 0 and not fits:
            code = (
                ErrorCode.THROTTLING_QUOTA_EXCEEDED
                if budget.records
                else ErrorCode.POLICY_VIOLATION
            )
            result = TopicResult(t.name, code, "Too many new partitions for one metadata append")
        results.append(result)
    return budget.result(CreatePartitionsResponse(results))


def _grow_one(
    image: MetadataImage, t: NewPartitions, config: ControllerConfig, rng: random.Random
) -> tuple[TopicResult, list[MetadataRecord]]:
    def fail(code: ErrorCode, message: str) -> tuple[TopicResult, list[MetadataRecord]]:
        return TopicResult(t.name, code, message), []

    topic = image.topics_by_name.get(t.name)
    if topic is None:
        return fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{t.name}' does not exist.")
    current = len(topic.partitions)
    if t.count < current:
        return fail(
            ErrorCode.INVALID_PARTITIONS,
            f"The topic {t.name} currently has {current} partition(s); {t.count} would not be "
            "an increase.",
        )
    if t.count == current:
        return fail(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
    if t.count > config.max_partitions_per_topic:
        return fail(
            ErrorCode.INVALID_PARTITIONS,
            f"Too many partitions: at most {config.max_partitions_per_topic} per topic",
        )
    add = t.count - current
    first = topic.partitions.get(0)
    rf = len(first.replicas) if first is not None else 1
    if t.assignments is not None:
        if len(t.assignments) != add:
            return fail(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Attempted to add {add} additional partition(s), but only "
                f"{len(t.assignments)} assignment(s) were specified.",
            )
        err = _validate_assignment(t.assignments, image.brokers)
        if err:
            return fail(ErrorCode.INVALID_REPLICA_ASSIGNMENT, err)
        if len(t.assignments[0]) != rf:
            return fail(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment has replication factor "
                f"{len(t.assignments[0])}, but the topic has {rf}.",
            )
        assignment = {current + i: list(r) for i, r in enumerate(t.assignments)}
    else:
        brokers = _placement_brokers(image)
        if rf > len(brokers):
            return fail(ErrorCode.INVALID_REPLICATION_FACTOR, _rf_error(rf, len(brokers)))
        # As Kafka: continue the pattern from where partition 0's preferred leader sits.
        ordered = sorted(brokers)
        anchor = first.replicas[0] if first is not None else ordered[0]
        start = next((i for i, b in enumerate(ordered) if b >= anchor), 0)
        try:
            assignment = assign_replicas(
                brokers, add, rf, rng, fixed_start_index=start, start_partition_id=current
            )
        except PlacementError as exc:
            return fail(ErrorCode.INVALID_REPLICATION_FACTOR, str(exc))
    unit = _partition_records(topic.topic_id, assignment, image.brokers)
    return TopicResult(t.name, 0, None, topic.topic_id, t.count, rf), unit
