"""ElectLeaders (43): forwarded to the active controller, which moves
leadership to the preferred replica (election type 0; v0 knows only that) or, when a partition
has no live ISR member, to any live replica (type 1, unclean). ``topic_partitions`` null means
every partition. Each partition answers its own error (ELECTION_NOT_NEEDED when its preferred
replica already leads); v1+ add a top-level error. Needs Alter on the cluster (:func:`authorize`).
"""

from __future__ import annotations

from typing import Any

from common.error_codes import ErrorCode
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers.forwarding import forward
from data_plane.security.request_authz import CLUSTER_DENIED, RequestAuthorizer, Session, Verdict
from metadata.client import ControllerError
from metadata.messages import ELECTION_PREFERRED


async def _handle(apis: KafkaApis, request: Request) -> Body:
    body = request.body
    election = body.get("election_type", ELECTION_PREFERRED)
    requested = body.get("topic_partitions")
    partitions = (
        None
        if requested is None
        else {t["topic"]: list(t.get("partitions") or ()) for t in requested}
    )
    try:
        results = await forward(apis, "elect_leaders", election == ELECTION_PREFERRED, partitions)
    except ControllerError as e:
        failed = [
            {
                "topic": name,
                "partition_result": [
                    {"partition_id": p, "error_code": e.error_code, "error_message": e.message}
                    for p in pids
                ],
            }
            for name, pids in (partitions or {}).items()
        ]
        return {
            "throttle_time_ms": 0,
            "error_code": e.error_code,
            "replica_election_results": failed,
        }
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        by_topic.setdefault(r.name, []).append(
            {
                "partition_id": r.partition_index,
                "error_code": r.error_code,
                "error_message": r.error_message,
            }
        )
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NO_ERROR,
        "replica_election_results": [
            {"topic": name, "partition_result": parts} for name, parts in sorted(by_topic.items())
        ],
    }


def handle(apis: KafkaApis, request: Request) -> Any:
    return _handle(apis, request)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Alter on the cluster (refused: CLUSTER_AUTHORIZATION_FAILED, and on every partition)."""
    if authz.cluster(s, AclOperation.ALTER):
        return Verdict(body)
    results = [
        {
            "topic": t.get("topic", ""),
            "partition_result": [
                {"partition_id": p, "error_code": CLUSTER_DENIED, "error_message": None}
                for p in t.get("partitions") or ()
            ],
        }
        for t in body.get("topic_partitions") or ()
    ]
    return Verdict.refused(
        body,
        {"throttle_time_ms": 0, "error_code": CLUSTER_DENIED, "replica_election_results": results},
        ResourceType.CLUSTER,
    )
