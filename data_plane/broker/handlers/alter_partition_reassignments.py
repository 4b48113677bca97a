"""AlterPartitionReassignments (45): start, replace or cancel the movement of partitions'
replicas (``kafka-reassign-partitions.sh --execute`` / ``--cancel``), forwarded to the active
controller, which runs KRaft's algorithm (metadata.reassignment, docs/reassignment.md) and
answers once its records are committed. One answer per partition, in the request's shape
(its topics, each with its partitions, in order).

Per partition, as Kafka: null ``replicas`` cancels the partition's reassignment
(NO_REASSIGNMENT_IN_PROGRESS when none is in progress); an unknown topic or partition is
UNKNOWN_TOPIC_OR_PARTITION; an empty target, a duplicate broker or a broker that is not
registered, fenced or shutting down is INVALID_REPLICA_ASSIGNMENT; with v1's
``allow_replication_factor_change`` false (KIP-860), a target of another size than the
partition's replication factor is INVALID_REPLICATION_FACTOR. The response echoes that flag.
When the controller cannot be reached, its error is the top-level error and every
partition's. ``timeout_ms`` bounds the wait for the controller (at most request.timeout.ms).
Needs Alter on the cluster (:func:`authorize`).
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from common.error_codes import ErrorCode
from common.protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    AlterPartitionReassignmentsResponsePartition,
    AlterPartitionReassignmentsResponseResponse,
)
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers.forwarding import forward, timeout_s
from data_plane.security.request_authz import CLUSTER_DENIED, RequestAuthorizer, Session, Verdict
from metadata import messages as m
from metadata.client import ControllerError


def answer_all(
    body: AlterPartitionReassignmentsRequest, code: int, message: str | None
) -> AlterPartitionReassignmentsResponse:
    """Every partition of ``body`` answered ``code``, which is also the top-level error."""
    responses = [
        AlterPartitionReassignmentsResponseResponse(
            t.name,
            [
                AlterPartitionReassignmentsResponsePartition(p.partition_index, code, message)
                for p in t.partitions
            ],
        )
        for t in body.topics
    ]
    return AlterPartitionReassignmentsResponse(
        allow_replication_factor_change=body.allow_replication_factor_change,
        error_code=code,
        error_message=message,
        responses=responses,
    )


def _controller_request(
    body: AlterPartitionReassignmentsRequest,
) -> m.AlterPartitionReassignmentsRequest:
    return m.AlterPartitionReassignmentsRequest(
        [
            m.ReassignableTopic(
                t.name,
                [
                    m.ReassignablePartition(
                        p.partition_index, None if p.replicas is None else list(p.replicas)
                    )
                    for p in t.partitions
                ],
            )
            for t in body.topics
        ],
        body.allow_replication_factor_change,
    )


def _answer(
    body: AlterPartitionReassignmentsRequest, results: list[m.ReassignablePartitionResult]
) -> AlterPartitionReassignmentsResponse:
    """The controller's results (one per partition of ``body``, in its order) in the shape of
    the request: its topics, each with its partitions."""
    keys = [(t.name, p.partition_index) for t in body.topics for p in t.partitions]
    if keys != [(r.name, r.partition_index) for r in results]:
        return answer_all(
            body, ErrorCode.UNKNOWN_SERVER_ERROR, "the controller answered other partitions"
        )
    answers = iter(results)
    responses = []
    for t in body.topics:
        partitions = []
        for _ in t.partitions:
            r = next(answers)
            partitions.append(
                AlterPartitionReassignmentsResponsePartition(
                    r.partition_index, r.error_code, r.error_message
                )
            )
        responses.append(AlterPartitionReassignmentsResponseResponse(t.name, partitions))
    return AlterPartitionReassignmentsResponse(
        allow_replication_factor_change=body.allow_replication_factor_change,
        responses=responses,
    )


async def _handle(
    apis: KafkaApis, body: AlterPartitionReassignmentsRequest
) -> AlterPartitionReassignmentsResponse:
    if not any(t.partitions for t in body.topics):
        return answer_all(body, ErrorCode.NO_ERROR, None)  # nothing to ask the controller
    try:
        results = await forward(
            apis,
            "alter_reassignments",
            _controller_request(body),
            timeout_s(apis, body.timeout_ms),
        )
    except ControllerError as e:
        return answer_all(body, e.error_code, e.message)
    return _answer(body, results)


def handle(
    apis: KafkaApis, request: Request
) -> Coroutine[Any, Any, AlterPartitionReassignmentsResponse]:
    body = request.body
    if not isinstance(body, AlterPartitionReassignmentsRequest):
        raise TypeError(f"AlterPartitionReassignments handler given {type(body).__name__}")
    return _handle(apis, body)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Alter on the cluster (refused: CLUSTER_AUTHORIZATION_FAILED, top level and on every
    partition)."""
    if not isinstance(body, AlterPartitionReassignmentsRequest):
        raise TypeError(f"AlterPartitionReassignments rule given {type(body).__name__}")
    if authz.cluster(s, AclOperation.ALTER):
        return Verdict(body)
    return Verdict.refused(body, answer_all(body, CLUSTER_DENIED, None), ResourceType.CLUSTER)
