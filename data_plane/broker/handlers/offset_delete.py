"""OffsetDelete (47): remove a group's committed offsets for some partitions
(``kafka-consumer-groups --delete-offsets``), answered once the tombstones are committed to
``__consumer_offsets``. Group-level errors (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP for a group
with members outside the consumer protocol, NOT_COORDINATOR...) go in ``error_code``; a topic
the group's members subscribe to answers GROUP_SUBSCRIBED_TO_TOPIC for its partitions
(data_plane.coordinator). Needs Delete on the group and Read on each topic (:func:`authorize`).
"""

from __future__ import annotations

from typing import Any

from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request, Response
from data_plane.security.request_authz import (
    GROUP_DENIED,
    TOPIC_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
    with_denied_topics,
)


async def _delete(apis: KafkaApis, group_id: str, topics: list[dict]) -> Body:
    partitions = [
        (t.get("name", ""), p.get("partition_index", -1))
        for t in topics
        for p in t.get("partitions") or ()
    ]
    result = await apis.group_coordinator.delete_offsets(group_id, partitions)
    if result.error_code:
        return {"error_code": result.error_code, "throttle_time_ms": 0, "topics": []}
    return {
        "error_code": 0,
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": t.get("name", ""),
                "partitions": [
                    {
                        "partition_index": p.get("partition_index", -1),
                        "error_code": result.partition_errors[
                            (t.get("name", ""), p.get("partition_index", -1))
                        ],
                    }
                    for p in t.get("partitions") or ()
                ],
            }
            for t in topics
        ],
    }


def handle(apis: KafkaApis, request: Request) -> Response:
    return _delete(apis, request.body.get("group_id") or "", list(request.body.get("topics") or ()))


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Delete on the group (refused: GROUP_AUTHORIZATION_FAILED), then Read on each topic
    (refused: each partition TOPIC_AUTHORIZATION_FAILED)."""
    if not authz.group(s, AclOperation.DELETE, body.get("group_id") or ""):
        return Verdict.refused(
            body,
            {"error_code": GROUP_DENIED, "throttle_time_ms": 0, "topics": []},
            ResourceType.GROUP,
        )
    new, denied = authz.split_topics(s, body, AclOperation.READ)
    if not denied:
        return Verdict(body)
    entries = [
        {
            "name": t.get("name", ""),
            "partitions": [
                {"partition_index": p.get("partition_index", -1), "error_code": TOPIC_DENIED}
                for p in t.get("partitions") or ()
            ],
        }
        for t in denied
    ]
    return with_denied_topics(new, len(denied), "topics", entries)
