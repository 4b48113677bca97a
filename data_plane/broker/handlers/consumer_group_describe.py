"""ConsumerGroupDescribe (69): a KIP-848 group's state, group and assignment epochs,
assignor, and each member's epoch, subscription, current and target assignment (topic ids
with their names). A classic group or an unknown one is GROUP_ID_NOT_FOUND; a group
coordinated elsewhere NOT_COORDINATOR."""

from __future__ import annotations

import dataclasses
import uuid

from common.protocol.messages.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupDescribeResponseAssignment,
    ConsumerGroupDescribeResponseGroup,
    ConsumerGroupDescribeResponseMember,
    ConsumerGroupDescribeResponseTargetAssignment,
    ConsumerGroupDescribeResponseTargetAssignmentTopicPartition,
    ConsumerGroupDescribeResponseTopicPartition,
)
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.security.request_authz import (
    GROUP_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
    with_denied,
)
from metadata.image import MetadataImage

# "Operations not requested" (Kafka's Integer.MIN_VALUE sentinel).
AUTHORIZED_OPERATIONS_OMITTED = -2147483648


def _topic_partitions(
    image: MetadataImage, parts: dict[uuid.UUID, frozenset[int]]
) -> list[tuple[bytes, str, list[int]]]:
    """(topic id, its name or "" if unknown, sorted partitions), in topic id order."""
    out = []
    for tid, ps in sorted(parts.items(), key=lambda kv: kv[0].bytes):
        topic = image.topics_by_id.get(tid)
        out.append((tid.bytes, topic.name if topic is not None else "", sorted(ps)))
    return out


def _assignment(
    image: MetadataImage, parts: dict[uuid.UUID, frozenset[int]]
) -> ConsumerGroupDescribeResponseAssignment:
    return ConsumerGroupDescribeResponseAssignment(
        topic_partitions=[
            ConsumerGroupDescribeResponseTopicPartition(
                topic_id=tid, topic_name=name, partitions=ps
            )
            for tid, name, ps in _topic_partitions(image, parts)
        ]
    )


def _target_assignment(
    image: MetadataImage, parts: dict[uuid.UUID, frozenset[int]]
) -> ConsumerGroupDescribeResponseTargetAssignment:
    return ConsumerGroupDescribeResponseTargetAssignment(
        topic_partitions=[
            ConsumerGroupDescribeResponseTargetAssignmentTopicPartition(
                topic_id=tid, topic_name=name, partitions=ps
            )
            for tid, name, ps in _topic_partitions(image, parts)
        ]
    )


def handle(apis: KafkaApis, request: Request) -> ConsumerGroupDescribeResponse:
    body = request.body
    if not isinstance(body, ConsumerGroupDescribeRequest):
        raise TypeError(f"ConsumerGroupDescribe handler given {type(body).__name__}")
    coordinator = apis.group_coordinator.coordinator
    image = apis.image
    groups = []
    for gid in body.group_ids:
        d = coordinator.consumer_group_describe(gid)
        groups.append(
            ConsumerGroupDescribeResponseGroup(
                error_code=d.error_code,
                error_message=d.error_message,
                group_id=d.group_id,
                group_state=d.state,
                group_epoch=d.group_epoch,
                assignment_epoch=d.assignment_epoch,
                assignor_name=d.assignor_name,
                members=[
                    ConsumerGroupDescribeResponseMember(
                        member_id=m.member_id,
                        instance_id=m.instance_id,
                        rack_id=m.rack_id,
                        member_epoch=m.member_epoch,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        subscribed_topic_names=list(m.subscribed_topic_names),
                        subscribed_topic_regex=m.subscribed_topic_regex,
                        assignment=_assignment(image, m.assignment),
                        target_assignment=_target_assignment(image, m.target_assignment),
                    )
                    for m in d.members
                ],
                authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
            )
        )
    return ConsumerGroupDescribeResponse(throttle_time_ms=0, groups=groups)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Describe on each group (refused groups answered GROUP_AUTHORIZATION_FAILED)."""
    if not isinstance(body, ConsumerGroupDescribeRequest):
        raise TypeError(f"ConsumerGroupDescribe rule given {type(body).__name__}")
    groups = body.group_ids
    allowed = [g for g in groups if authz.group(s, AclOperation.DESCRIBE, g)]
    if len(allowed) == len(groups):
        return Verdict(body)
    entries = [
        ConsumerGroupDescribeResponseGroup(
            error_code=GROUP_DENIED,
            error_message=None,
            group_id=g,
            group_state="",
            group_epoch=-1,
            assignment_epoch=-1,
            assignor_name="",
            members=[],
        )
        for g in groups
        if g not in allowed
    ]
    kept = dataclasses.replace(body, group_ids=allowed)
    return with_denied(kept, ResourceType.GROUP, len(entries), "groups", entries)
