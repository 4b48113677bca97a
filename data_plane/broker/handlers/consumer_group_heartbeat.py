"""ConsumerGroupHeartbeat (68): a KIP-848 consumer-protocol member joins (epoch 0),
keeps up (its epoch), or leaves (-1, or -2 for a static member) and gets its member id, epoch,
heartbeat interval and, when it changed, the partitions it may own now
(:mod:`data_plane.coordinator.consumer_group`). v1 subscribes by regular expression too.

Partitions travel by topic id; the subscribable topics are every non-internal topic of the
metadata image (:func:`subscribable_topics`, cached per image).
"""

from __future__ import annotations

import uuid
from collections.abc import Coroutine
from typing import Any

from common.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartition,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatResponseAssignment,
    ConsumerGroupHeartbeatResponseTopicPartition,
)
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.coordinator.consumer_assignors import AssignorTopic
from data_plane.coordinator.messages import ConsumerHeartbeatRequest
from data_plane.security.request_authz import GROUP_DENIED, RequestAuthorizer, Session, Verdict
from metadata.image import MetadataImage
from metadata.topics import INTERNAL_TOPICS

_cache: tuple[MetadataImage | None, dict[str, AssignorTopic]] = (None, {})


def subscribable_topics(image: MetadataImage) -> dict[str, AssignorTopic]:
    """Name -> (id, partition count) of every non-internal topic; one dict per image."""
    global _cache
    cached_image, topics = _cache
    if cached_image is not image:
        topics = {
            name: AssignorTopic(t.topic_id, name, len(t.partitions))
            for name, t in image.topics_by_name.items()
            if name not in INTERNAL_TOPICS
        }
        _cache = (image, topics)
    return topics


def _owned(
    entries: list[ConsumerGroupHeartbeatRequestTopicPartition] | None,
) -> dict[uuid.UUID, frozenset[int]] | None:
    if entries is None:
        return None
    owned: dict[uuid.UUID, frozenset[int]] = {}
    for e in entries:
        tid = uuid.UUID(bytes=bytes(e.topic_id))
        owned[tid] = owned.get(tid, frozenset()) | frozenset(e.partitions)
    return owned


def handle(
    apis: KafkaApis, request: Request
) -> Coroutine[Any, Any, ConsumerGroupHeartbeatResponse]:
    body = request.body
    if not isinstance(body, ConsumerGroupHeartbeatRequest):
        raise TypeError(f"ConsumerGroupHeartbeat handler given {type(body).__name__}")
    names = body.subscribed_topic_names
    req = ConsumerHeartbeatRequest(
        group_id=body.group_id,
        member_id=body.member_id,
        member_epoch=body.member_epoch,
        instance_id=body.instance_id,
        rack_id=body.rack_id,
        rebalance_timeout_ms=body.rebalance_timeout_ms,
        subscribed_topic_names=tuple(names) if names is not None else None,
        subscribed_topic_regex=body.subscribed_topic_regex,
        server_assignor=body.server_assignor,
        owned=_owned(body.topic_partitions),
        client_id=request.header.client_id or "",
        client_host=request.client_host,
    )
    return _heartbeat(apis, req)


async def _heartbeat(
    apis: KafkaApis, req: ConsumerHeartbeatRequest
) -> ConsumerGroupHeartbeatResponse:
    # Answered once what the heartbeat changed in the group is written (acks=all).
    result = await apis.group_coordinator.consumer_group_heartbeat(
        req, subscribable_topics(apis.image)
    )
    assignment = None
    if result.assignment is not None:
        assignment = ConsumerGroupHeartbeatResponseAssignment(
            topic_partitions=[
                ConsumerGroupHeartbeatResponseTopicPartition(
                    topic_id=tid.bytes, partitions=sorted(ps)
                )
                for tid, ps in sorted(result.assignment.items(), key=lambda kv: kv[0].bytes)
            ]
        )
    return ConsumerGroupHeartbeatResponse(
        throttle_time_ms=0,
        error_code=result.error_code,
        error_message=result.error_message,
        member_id=result.member_id,
        member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms,
        assignment=assignment,
    )


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Read on the group (refused: GROUP_AUTHORIZATION_FAILED, the handler not called)."""
    if not isinstance(body, ConsumerGroupHeartbeatRequest):
        raise TypeError(f"ConsumerGroupHeartbeat rule given {type(body).__name__}")
    if authz.group(s, AclOperation.READ, body.group_id):
        return Verdict(body)
    refusal = ConsumerGroupHeartbeatResponse(
        error_code=GROUP_DENIED,
        error_message=None,
        member_id=None,
        member_epoch=-1,
        heartbeat_interval_ms=0,
        assignment=None,
    )
    return Verdict.refused(body, refusal, ResourceType.GROUP)
