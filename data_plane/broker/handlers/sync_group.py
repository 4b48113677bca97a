"""SyncGroup (14): members fetch their assignment; the leader brings everyone's.

Answered once the leader's assignment is stored in ``__consumer_offsets`` (committed), or at
once in a Stable group; REBALANCE_IN_PROGRESS when a new rebalance began meanwhile. v5+
(KIP-559): a protocol type or name that is not the group's is INCONSISTENT_GROUP_PROTOCOL,
and a successful answer names the group's.
"""

from __future__ import annotations

from typing import Any

from data_plane.broker.apis import Body, KafkaApis, Request, Response
from data_plane.broker.handlers import join_group
from data_plane.coordinator.messages import SyncGroupRequest
from data_plane.security.request_authz import RequestAuthorizer, Session, Verdict


def handle(apis: KafkaApis, request: Request) -> Response:
    b = request.body
    req = SyncGroupRequest(
        group_id=b["group_id"] or "",
        generation_id=b["generation_id"],
        member_id=b["member_id"] or "",
        group_instance_id=b.get("group_instance_id"),
        assignments=tuple(
            (a["member_id"] or "", bytes(a["assignment"] or b"")) for a in b["assignments"] or ()
        ),
        protocol_type=b.get("protocol_type"),
        protocol_name=b.get("protocol_name"),
    )
    return _sync(apis, req)


async def _sync(apis: KafkaApis, req: SyncGroupRequest) -> Body:
    r = await apis.group_coordinator.sync_group(req)
    return {
        "throttle_time_ms": 0,
        "error_code": r.error_code,
        "protocol_type": r.protocol_type,
        "protocol_name": r.protocol_name,
        "assignment": r.assignment,
    }


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Read on the group, refused as JoinGroup is (:func:`join_group.authorize`)."""
    return join_group.authorize(authz, s, version, body)
