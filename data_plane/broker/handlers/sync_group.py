"""SyncGroup (14): members fetch their assignment; the leader brings everyone's.

Answered once the leader's assignment is stored in ``__consumer_offsets`` (committed), or at
once in a Stable group; REBALANCE_IN_PROGRESS when a new rebalance began meanwhile. v5+
(KIP-559): a protocol type or name that is not the group's is INCONSISTENT_GROUP_PROTOCOL,
and a successful answer names the group's.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from common.protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers import join_group
from data_plane.coordinator import messages
from data_plane.security.request_authz import RequestAuthorizer, Session, Verdict


def handle(apis: KafkaApis, request: Request) -> Coroutine[Any, Any, SyncGroupResponse]:
    body = request.body
    if not isinstance(body, SyncGroupRequest):
        raise TypeError(f"SyncGroup handler given {type(body).__name__}")
    req = messages.SyncGroupRequest(
        group_id=body.group_id,
        generation_id=body.generation_id,
        member_id=body.member_id,
        group_instance_id=body.group_instance_id,
        assignments=tuple((a.member_id, bytes(a.assignment)) for a in body.assignments),
        protocol_type=body.protocol_type,
        protocol_name=body.protocol_name,
    )
    return _sync(apis, req)


async def _sync(apis: KafkaApis, req: messages.SyncGroupRequest) -> SyncGroupResponse:
    r = await apis.group_coordinator.sync_group(req)
    return SyncGroupResponse(
        throttle_time_ms=0,
        error_code=r.error_code,
        protocol_type=r.protocol_type,
        protocol_name=r.protocol_name,
        assignment=r.assignment,
    )


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Read on the group, refused as JoinGroup is (:func:`join_group.authorize`)."""
    return join_group.authorize(authz, s, version, body)
