"""ListPartitionReassignments (46): the partitions whose replicas are moving
(``kafka-reassign-partitions.sh --verify``, ``kafka-topics.sh --describe`` of a moving
partition), asked of the active controller, which answers from its committed image
(metadata.reassignment). Null ``topics`` lists every partition; otherwise only the named
partitions, and names of unknown topics or partitions are skipped, as Kafka does. Each entry
gives the replicas (target first, then the brokers being removed), the brokers being added and
those being removed; topics and partitions in order. When the controller cannot be reached,
its error is the top-level error. ``timeout_ms`` bounds the wait for the controller (at most
request.timeout.ms). Needs Describe on the cluster (:func:`authorize`).
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from common.protocol.messages.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    ListPartitionReassignmentsResponsePartition,
    ListPartitionReassignmentsResponseTopic,
)
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers.forwarding import forward, timeout_s
from data_plane.security.request_authz import CLUSTER_DENIED, RequestAuthorizer, Session, Verdict
from metadata import messages as m
from metadata.client import ControllerError


def _wanted(body: ListPartitionReassignmentsRequest) -> dict[str, list[int]] | None:
    """The request's partitions by topic (a topic named twice: both lists), None for all."""
    if body.topics is None:
        return None
    wanted: dict[str, list[int]] = {}
    for t in body.topics:
        wanted.setdefault(t.name, []).extend(t.partition_indexes)
    return wanted


def _topics(
    ongoing: list[m.OngoingPartitionReassignment],
) -> list[ListPartitionReassignmentsResponseTopic]:
    by_topic: dict[str, list[ListPartitionReassignmentsResponsePartition]] = {}
    for r in sorted(ongoing, key=lambda r: (r.name, r.partition_index)):
        by_topic.setdefault(r.name, []).append(
            ListPartitionReassignmentsResponsePartition(
                r.partition_index,
                list(r.replicas),
                list(r.adding_replicas),
                list(r.removing_replicas),
            )
        )
    return [ListPartitionReassignmentsResponseTopic(n, ps) for n, ps in by_topic.items()]


async def _handle(
    apis: KafkaApis, body: ListPartitionReassignmentsRequest
) -> ListPartitionReassignmentsResponse:
    try:
        ongoing = await forward(
            apis,
            "list_partition_reassignments",
            _wanted(body),
            timeout_s(apis, body.timeout_ms),
        )
    except ControllerError as e:
        return ListPartitionReassignmentsResponse(error_code=e.error_code, error_message=e.message)
    return ListPartitionReassignmentsResponse(topics=_topics(ongoing))


def handle(
    apis: KafkaApis, request: Request
) -> Coroutine[Any, Any, ListPartitionReassignmentsResponse]:
    body = request.body
    if not isinstance(body, ListPartitionReassignmentsRequest):
        raise TypeError(f"ListPartitionReassignments handler given {type(body).__name__}")
    return _handle(apis, body)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Describe on the cluster (refused: CLUSTER_AUTHORIZATION_FAILED and no topics)."""
    if not isinstance(body, ListPartitionReassignmentsRequest):
        raise TypeError(f"ListPartitionReassignments rule given {type(body).__name__}")
    if authz.cluster(s, AclOperation.DESCRIBE):
        return Verdict(body)
    denied = ListPartitionReassignmentsResponse(error_code=CLUSTER_DENIED)
    return Verdict.refused(body, denied, ResourceType.CLUSTER)
