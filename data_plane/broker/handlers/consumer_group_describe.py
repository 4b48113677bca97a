"""ConsumerGroupDescribe (69): a KIP-848 group's state, group and assignment epochs,
assignor, and each member's epoch, subscription, current and target assignment (topic ids
with their names). A classic group or an unknown one is GROUP_ID_NOT_FOUND; a group
coordinated elsewhere NOT_COORDINATOR."""

from __future__ import annotations

import uuid
from typing import Any

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


def _assignment(image: MetadataImage, parts: dict[uuid.UUID, frozenset[int]]) -> dict[str, Any]:
    out = []
    for tid, ps in sorted(parts.items(), key=lambda kv: kv[0].bytes):
        topic = image.topics_by_id.get(tid)
        out.append(
            {
                "topic_id": tid.bytes,
                "topic_name": topic.name if topic is not None else "",
                "partitions": sorted(ps),
            }
        )
    return {"topic_partitions": out}


def handle(apis: KafkaApis, request: Request) -> Body:
    coordinator = apis.group_coordinator.coordinator
    image = apis.image
    groups = []
    for gid in request.body.get("group_ids") or ():
        d = coordinator.consumer_group_describe(gid or "")
        groups.append(
            {
                "error_code": d.error_code,
                "error_message": d.error_message,
                "group_id": d.group_id,
                "group_state": d.state,
                "group_epoch": d.group_epoch,
                "assignment_epoch": d.assignment_epoch,
                "assignor_name": d.assignor_name,
                "members": [
                    {
                        "member_id": m.member_id,
                        "instance_id": m.instance_id,
                        "rack_id": m.rack_id,
                        "member_epoch": m.member_epoch,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "subscribed_topic_names": list(m.subscribed_topic_names),
                        "subscribed_topic_regex": m.subscribed_topic_regex,
                        "assignment": _assignment(image, m.assignment),
                        "target_assignment": _assignment(image, m.target_assignment),
                    }
                    for m in d.members
                ],
                "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
            }
        )
    return {"throttle_time_ms": 0, "groups": groups}


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Describe on each group (refused groups answered GROUP_AUTHORIZATION_FAILED)."""
    groups = body.get("group_ids") or []
    allowed = [g for g in groups if authz.group(s, AclOperation.DESCRIBE, g)]
    if len(allowed) == len(groups):
        return Verdict(body)
    entries = [
        {
            "error_code": GROUP_DENIED,
            "error_message": None,
            "group_id": g,
            "group_state": "",
            "group_epoch": -1,
            "assignment_epoch": -1,
            "assignor_name": "",
            "members": [],
        }
        for g in groups
        if g not in allowed
    ]
    kept = {**body, "group_ids": allowed}
    return with_denied(kept, ResourceType.GROUP, len(entries), "groups", entries)
