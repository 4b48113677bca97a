"""ElectLeaders (43): forwarded to the active controller, which moves
leadership to the preferred replica (election type 0; v0 knows only that) or, when a partition
has no live ISR member, to any live replica (type 1, unclean). ``topic_partitions`` null means
every partition. Each partition answers its own error (ELECTION_NOT_NEEDED when its preferred
replica already leads); v1+ add a top-level error. Needs Alter on the cluster (:func:`authorize`).
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from common.error_codes import ErrorCode
from common.protocol.messages.elect_leaders import (
    ElectLeadersRequest,
    ElectLeadersResponse,
    ElectLeadersResponsePartitionResult,
    ElectLeadersResponseReplicaElectionResult,
)
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers.forwarding import forward
from data_plane.security.request_authz import CLUSTER_DENIED, RequestAuthorizer, Session, Verdict
from metadata.client import ControllerError
from metadata.messages import ELECTION_PREFERRED


def _every_partition(
    partitions: dict[str, list[int]], code: int, message: str | None
) -> list[ElectLeadersResponseReplicaElectionResult]:
    """``code`` (and ``message``) for every requested partition."""
    return [
        ElectLeadersResponseReplicaElectionResult(
            topic=name,
            partition_result=[
                ElectLeadersResponsePartitionResult(
                    partition_id=p, error_code=code, error_message=message
                )
                for p in pids
            ],
        )
        for name, pids in partitions.items()
    ]


def _requested(body: ElectLeadersRequest) -> dict[str, list[int]] | None:
    """Topic -> partitions asked for; None: every partition."""
    if body.topic_partitions is None:
        return None
    return {t.topic: list(t.partitions) for t in body.topic_partitions}


async def _elect(apis: KafkaApis, body: ElectLeadersRequest) -> ElectLeadersResponse:
    partitions = _requested(body)
    preferred = body.election_type == ELECTION_PREFERRED
    try:
        results = await forward(apis, "elect_leaders", preferred, partitions)
    except ControllerError as e:
        return ElectLeadersResponse(
            throttle_time_ms=0,
            error_code=e.error_code,
            replica_election_results=_every_partition(partitions or {}, e.error_code, e.message),
        )
    by_topic: dict[str, list[ElectLeadersResponsePartitionResult]] = {}
    for r in results:
        by_topic.setdefault(r.name, []).append(
            ElectLeadersResponsePartitionResult(
                partition_id=r.partition_index,
                error_code=r.error_code,
                error_message=r.error_message,
            )
        )
    return ElectLeadersResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.NO_ERROR,
        replica_election_results=[
            ElectLeadersResponseReplicaElectionResult(topic=name, partition_result=parts)
            for name, parts in sorted(by_topic.items())
        ],
    )


def handle(apis: KafkaApis, request: Request) -> Coroutine[Any, Any, ElectLeadersResponse]:
    body = request.body
    if not isinstance(body, ElectLeadersRequest):
        raise TypeError(f"ElectLeaders handler given {type(body).__name__}")
    return _elect(apis, body)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Alter on the cluster (refused: CLUSTER_AUTHORIZATION_FAILED, and on every partition)."""
    if not isinstance(body, ElectLeadersRequest):
        raise TypeError(f"ElectLeaders rule given {type(body).__name__}")
    if authz.cluster(s, AclOperation.ALTER):
        return Verdict(body)
    results = [
        ElectLeadersResponseReplicaElectionResult(
            topic=t.topic,
            partition_result=[
                ElectLeadersResponsePartitionResult(
                    partition_id=p, error_code=CLUSTER_DENIED, error_message=None
                )
                for p in t.partitions
            ],
        )
        for t in body.topic_partitions or ()
    ]
    refusal = ElectLeadersResponse(
        throttle_time_ms=0, error_code=CLUSTER_DENIED, replica_election_results=results
    )
    return Verdict.refused(body, refusal, ResourceType.CLUSTER)
