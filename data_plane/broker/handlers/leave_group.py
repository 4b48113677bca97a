"""LeaveGroup (13): members leave; the group rebalances without them at once (no wait
for their sessions to expire). v0-2 name one member; v3+ list several, static ones by group
instance id (KIP-345: how ``kafka-consumer-groups --delete --members``-style tools and
admins remove them), each answered with its own error; v4 is flexible; v5 adds a reason, which
is logged."""

from __future__ import annotations

import logging

from common.protocol.messages.leave_group import (
    LeaveGroupRequest,
    LeaveGroupResponse,
    LeaveGroupResponseMember,
)
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers import join_group
from data_plane.security.request_authz import RequestAuthorizer, Session, Verdict

logger = logging.getLogger(__name__)
FIRST_BATCH_VERSION = 3


def handle(apis: KafkaApis, request: Request) -> LeaveGroupResponse:
    body = request.body
    if not isinstance(body, LeaveGroupRequest):
        raise TypeError(f"LeaveGroup handler given {type(body).__name__}")
    group_id = body.group_id
    if request.header.api_version < FIRST_BATCH_VERSION:
        error = apis.group_coordinator.leave_group(group_id, body.member_id)
        return LeaveGroupResponse(throttle_time_ms=0, error_code=error)
    members = body.members
    for m in members:
        if m.reason:
            logger.info("group %s: member %s leaves: %s", group_id, m.member_id, m.reason)
    error, errors = apis.group_coordinator.leave_group_members(
        group_id, [(m.member_id, m.group_instance_id) for m in members]
    )
    answered = (
        [
            LeaveGroupResponseMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id, error_code=code
            )
            for m, code in zip(members, errors, strict=False)
        ]
        if not error
        else []
    )
    return LeaveGroupResponse(throttle_time_ms=0, error_code=error, members=answered)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Read on the group, refused as JoinGroup is (:func:`join_group.authorize`)."""
    return join_group.authorize(authz, s, version, body)
