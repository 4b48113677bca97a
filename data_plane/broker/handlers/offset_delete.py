"""OffsetDelete (47): remove a group's committed offsets for some partitions
(``kafka-consumer-groups --delete-offsets``), answered once the tombstones are committed to
``__consumer_offsets``. Group-level errors (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP for a group
with members outside the consumer protocol, NOT_COORDINATOR...) go in ``error_code``; a topic
the group's members subscribe to answers GROUP_SUBSCRIBED_TO_TOPIC for its partitions
(data_plane.coordinator). Needs Delete on the group and Read on each topic (:func:`authorize`).
"""

from __future__ import annotations

from common.protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestTopic,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
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


async def _delete(
    apis: KafkaApis, group_id: str, topics: list[OffsetDeleteRequestTopic]
) -> OffsetDeleteResponse:
    partitions = [(t.name, p.partition_index) for t in topics for p in t.partitions]
    result = await apis.group_coordinator.delete_offsets(group_id, partitions)
    if result.error_code:
        return OffsetDeleteResponse(error_code=result.error_code, throttle_time_ms=0, topics=[])
    return OffsetDeleteResponse(
        error_code=0,
        throttle_time_ms=0,
        topics=[
            OffsetDeleteResponseTopic(
                name=t.name,
                partitions=[
                    OffsetDeleteResponsePartition(
                        partition_index=p.partition_index,
                        error_code=result.partition_errors[(t.name, p.partition_index)],
                    )
                    for p in t.partitions
                ],
            )
            for t in topics
        ],
    )


def handle(apis: KafkaApis, request: Request) -> Response:
    body = request.body
    if not isinstance(body, OffsetDeleteRequest):
        raise TypeError(f"OffsetDelete handler given {type(body).__name__}")
    return _delete(apis, body.group_id, body.topics)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Delete on the group (refused: GROUP_AUTHORIZATION_FAILED), then Read on each topic
    (refused: each partition TOPIC_AUTHORIZATION_FAILED)."""
    if not isinstance(body, OffsetDeleteRequest):
        raise TypeError(f"OffsetDelete rule given {type(body).__name__}")
    if not authz.group(s, AclOperation.DELETE, body.group_id):
        return Verdict.refused(
            body,
            OffsetDeleteResponse(error_code=GROUP_DENIED, throttle_time_ms=0, topics=[]),
            ResourceType.GROUP,
        )
    new, denied = authz.split_topics(s, body, AclOperation.READ)
    if not denied:
        return Verdict(body)
    entries = [
        OffsetDeleteResponseTopic(
            name=t.name,
            partitions=[
                OffsetDeleteResponsePartition(
                    partition_index=p.partition_index, error_code=TOPIC_DENIED
                )
                for p in t.partitions
            ],
        )
        for t in denied
    ]
    return with_denied_topics(new, len(denied), "topics", entries)
