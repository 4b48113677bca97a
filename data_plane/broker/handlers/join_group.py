"""JoinGroup (11): join (or rejoin) a group; answered when the rebalance completes.

v0 has no rebalance timeout: the session timeout is used. v4+ joins without a member id get
MEMBER_ID_REQUIRED with an id to rejoin with (KIP-394); v5 carries group.instance.id (static
membership). The leader's answer lists every member with its protocol metadata. v7+ answers
the group's protocol type (KIP-559); v8's reason is not used; v9's skip_assignment is always
false (KIP-814: a rejoining static leader is sent the members and assigns again).
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from common.protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from common.protocol.messages.join_group import (
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
)
from common.protocol.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse
from common.protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.coordinator import messages
from data_plane.security.request_authz import GROUP_DENIED, RequestAuthorizer, Session, Verdict

# KIP-394: from JoinGroup v4 a new member first gets its id with MEMBER_ID_REQUIRED.
MEMBER_ID_REQUIRED_SINCE_VERSION = 4


# JoinGroup v7+ answers the protocol type and may answer a null protocol name (KIP-559).
NULLABLE_PROTOCOL_SINCE = 7

# The requests of the APIs whose rule is :func:`authorize` (Read on the group).
_MEMBERSHIP_REQUESTS = (JoinGroupRequest, SyncGroupRequest, HeartbeatRequest, LeaveGroupRequest)


def handle(apis: KafkaApis, request: Request) -> Coroutine[Any, Any, JoinGroupResponse]:
    body = request.body
    if not isinstance(body, JoinGroupRequest):
        raise TypeError(f"JoinGroup handler given {type(body).__name__}")
    version = request.header.api_version
    # v0 has no rebalance timeout (decoded as the field's default, -1).
    rebalance_timeout_ms = body.rebalance_timeout_ms
    req = messages.JoinGroupRequest(
        group_id=body.group_id,
        member_id=body.member_id,
        group_instance_id=body.group_instance_id,
        session_timeout_ms=body.session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout_ms
        if rebalance_timeout_ms >= 0
        else body.session_timeout_ms,
        protocol_type=body.protocol_type,
        protocols=tuple((p.name, bytes(p.metadata)) for p in body.protocols),
        client_id=request.header.client_id or "",
        client_host=request.client_host,
        require_known_member_id=version >= MEMBER_ID_REQUIRED_SINCE_VERSION,
    )
    return _join(apis, req, version)


async def _join(apis: KafkaApis, req: messages.JoinGroupRequest, version: int) -> JoinGroupResponse:
    r = await apis.group_coordinator.join_group(req)
    ok = r.error_code == 0
    return JoinGroupResponse(
        throttle_time_ms=0,
        error_code=r.error_code,
        generation_id=r.generation_id,
        # v7+: the group's protocol type and a null protocol name when there is none.
        protocol_type=req.protocol_type if ok else None,
        protocol_name=r.protocol_name or (None if version >= NULLABLE_PROTOCOL_SINCE else ""),
        leader=r.leader_id,
        skip_assignment=False,
        member_id=r.member_id,
        members=[
            JoinGroupResponseMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                metadata=m.metadata,
            )
            for m in r.members
        ],
    )


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Read on the group (refused: GROUP_AUTHORIZATION_FAILED, the handler not called).
    SyncGroup, Heartbeat and LeaveGroup check the same; the refusal is the response of the
    API at hand, which the request's class tells."""
    if not isinstance(body, _MEMBERSHIP_REQUESTS):
        raise TypeError(f"group membership rule given {type(body).__name__}")
    if authz.group(s, AclOperation.READ, body.group_id):
        return Verdict(body)
    return Verdict.refused(body, _refusal(body), ResourceType.GROUP)


def _refusal(
    body: JoinGroupRequest | SyncGroupRequest | HeartbeatRequest | LeaveGroupRequest,
) -> JoinGroupResponse | SyncGroupResponse | HeartbeatResponse | LeaveGroupResponse:
    """GROUP_AUTHORIZATION_FAILED in the response of ``body``'s API."""
    if isinstance(body, JoinGroupRequest):
        return JoinGroupResponse(
            error_code=GROUP_DENIED,
            generation_id=-1,
            protocol_name="",
            leader="",
            member_id=body.member_id,
            members=[],
        )
    if isinstance(body, SyncGroupRequest):
        return SyncGroupResponse(error_code=GROUP_DENIED, assignment=b"")
    if isinstance(body, HeartbeatRequest):
        return HeartbeatResponse(error_code=GROUP_DENIED)
    return LeaveGroupResponse(error_code=GROUP_DENIED, members=[])
