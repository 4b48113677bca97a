"""Partition reassignment over the Kafka protocol (used by :class:`Admin`), as Kafka's
AdminClient and kafka-reassign-partitions.sh do it: AlterPartitionReassignments and
ListPartitionReassignments to any broker, which forwards them to the active controller.

A request the cluster refuses as a whole (CLUSTER_AUTHORIZATION_FAILED without Alter, or
Describe, on the cluster; the controller unreachable) raises :class:`KafkaError`; a refused
partition is answered with its own KafkaError (UNKNOWN_TOPIC_OR_PARTITION,
INVALID_REPLICA_ASSIGNMENT, INVALID_REPLICATION_FACTOR, NO_REASSIGNMENT_IN_PROGRESS, ...).

Functions block on the calling thread up to ``timeout_ms``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsRequestPartition,
    AlterPartitionReassignmentsRequestTopic,
    AlterPartitionReassignmentsResponse,
)
from common.protocol.messages.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsRequestTopic,
    ListPartitionReassignmentsResponse,
)
from common.topic_partition import TopicPartition
from kraftlog_client.errors import KafkaConnectionError, KafkaError
from kraftlog_client.network_client import NetworkClient

# AlterPartitionReassignments v1 is the first that carries allow_replication_factor_change.
ALLOW_REPLICATION_FACTOR_CHANGE_SINCE = 1


@dataclass(frozen=True, slots=True)
class PartitionReassignment:
    """A reassignment in progress (Kafka's ``PartitionReassignment``): ``replicas`` is the
    whole set during the move (the target first, then the brokers being removed)."""

    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]


def _raise_for(code: int, message: str | None) -> None:
    if code != ErrorCode.NO_ERROR:
        raise KafkaError(code, message or "")


def alter_partition_reassignments(
    client: NetworkClient,
    reassignments: Mapping[TopicPartition, Sequence[int] | None],
    timeout_ms: float,
    allow_replication_factor_change: bool = True,
) -> dict[TopicPartition, KafkaError | None]:
    """Move each partition to its target replicas (the first is the preferred leader), or
    cancel its reassignment (target None). Per partition: None when the controller accepted
    it, else its KafkaError. ``allow_replication_factor_change`` False refuses a target of
    another size than the partition's replication factor; it needs a broker serving v1 (else
    UNSUPPORTED_VERSION is raised and nothing is sent)."""
    by_topic: dict[str, list[AlterPartitionReassignmentsRequestPartition]] = {}
    for tp, target in reassignments.items():
        replicas = None if target is None else [int(b) for b in target]
        by_topic.setdefault(tp.topic, []).append(
            AlterPartitionReassignmentsRequestPartition(tp.partition, replicas)
        )
    body = AlterPartitionReassignmentsRequest(
        timeout_ms=int(timeout_ms),
        allow_replication_factor_change=allow_replication_factor_change,
        topics=[AlterPartitionReassignmentsRequestTopic(n, ps) for n, ps in by_topic.items()],
    )
    key = ApiKey.ALTER_PARTITION_REASSIGNMENTS
    node = None
    deadline = time.monotonic() + timeout_ms / 1000.0
    if not allow_replication_factor_change:
        # A v0 request cannot carry the flag: sent to an older broker, it would let the
        # replication factor change. Pick the broker first and check what it speaks.
        client.fetch_metadata([], timeout_ms)
        node = client.any_ready_node()
        if node is None:
            raise KafkaConnectionError("no broker connection is ready")
        if client.version_for(node, key) < ALLOW_REPLICATION_FACTOR_CHANGE_SINCE:
            raise KafkaError(
                ErrorCode.UNSUPPORTED_VERSION,
                f"broker {node} does not serve AlterPartitionReassignments v1, which "
                "allow_replication_factor_change=False needs",
            )
    remaining_ms = max(0.0, deadline - time.monotonic()) * 1000.0
    response = client.request(node, key, body, remaining_ms)
    if not isinstance(response, AlterPartitionReassignmentsResponse):
        raise TypeError(f"AlterPartitionReassignments answered {type(response).__name__}")
    _raise_for(response.error_code, response.error_message)
    out: dict[TopicPartition, KafkaError | None] = {}
    for t in response.responses:
        for p in t.partitions:
            error = None
            if p.error_code != ErrorCode.NO_ERROR:
                error = KafkaError(p.error_code, p.error_message or "")
            out[TopicPartition(t.name, p.partition_index)] = error
    return out


def list_partition_reassignments(
    client: NetworkClient, partitions: Iterable[TopicPartition] | None, timeout_ms: float
) -> dict[TopicPartition, PartitionReassignment]:
    """The reassignments in progress among ``partitions`` (every partition when None);
    partitions that do not exist or are not moving are left out."""
    topics = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        topics = [ListPartitionReassignmentsRequestTopic(n, ps) for n, ps in by_topic.items()]
    body = ListPartitionReassignmentsRequest(timeout_ms=int(timeout_ms), topics=topics)
    response = client.request(None, ApiKey.LIST_PARTITION_REASSIGNMENTS, body, timeout_ms)
    if not isinstance(response, ListPartitionReassignmentsResponse):
        raise TypeError(f"ListPartitionReassignments answered {type(response).__name__}")
    _raise_for(response.error_code, response.error_message)
    return {
        TopicPartition(t.name, p.partition_index): PartitionReassignment(
            tuple(p.replicas), tuple(p.adding_replicas), tuple(p.removing_replicas)
        )
        for t in response.topics
        for p in t.partitions
    }
