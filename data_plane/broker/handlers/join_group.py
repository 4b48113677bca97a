"""JoinGroup (11): join (or rejoin) a group; answered when the rebalance completes.

v0 has no rebalance timeout: the session timeout is used. v4+ joins without a member id get
MEMBER_ID_REQUIRED with an id to rejoin with (KIP-394); v5 carries group.instance.id (static
membership). The leader's answer lists every member with its protocol metadata. v7+ answers
the group's protocol type (KIP-559); v8's reason is not used; v9's skip_assignment is always
false (KIP-814: a rejoining static leader is sent the members and assigns again).
"""

from __future__ import annotations

from typing import Any

from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request, Response
from data_plane.coordinator.messages import JoinGroupRequest
from data_plane.security.request_authz import GROUP_DENIED, RequestAuthorizer, Session, Verdict

# KIP-394: from JoinGroup v4 a new member first gets its id with MEMBER_ID_REQUIRED.
MEMBER_ID_REQUIRED_SINCE_VERSION = 4


# JoinGroup v7+ answers the protocol type and may answer a null protocol name (KIP-559).
NULLABLE_PROTOCOL_SINCE = 7


def handle(apis: KafkaApis, request: Request) -> Response:
    b = request.body
    version = request.header.api_version
    session_timeout_ms = b["session_timeout_ms"]
    rebalance_timeout_ms = b.get("rebalance_timeout_ms", -1) if version >= 1 else -1
    req = JoinGroupRequest(
        group_id=b["group_id"] or "",
        member_id=b["member_id"] or "",
        group_instance_id=b.get("group_instance_id"),
        session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout_ms
        if rebalance_timeout_ms >= 0
        else session_timeout_ms,
        protocol_type=b["protocol_type"] or "",
        protocols=tuple(
            (p["name"] or "", bytes(p["metadata"] or b"")) for p in b["protocols"] or ()
        ),
        client_id=request.header.client_id or "",
        client_host=request.client_host,
        require_known_member_id=version >= MEMBER_ID_REQUIRED_SINCE_VERSION,
    )
    return _join(apis, req, version)


async def _join(apis: KafkaApis, req: JoinGroupRequest, version: int) -> Body:
    r = await apis.group_coordinator.join_group(req)
    ok = r.error_code == 0
    return {
        "throttle_time_ms": 0,
        "error_code": r.error_code,
        "generation_id": r.generation_id,
        # v7+: the group's protocol type and a null protocol name when there is none.
        "protocol_type": req.protocol_type if ok else None,
        "protocol_name": r.protocol_name or (None if version >= NULLABLE_PROTOCOL_SINCE else ""),
        "skip_assignment": False,
        "leader": r.leader_id,
        "member_id": r.member_id,
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "metadata": m.metadata,
            }
            for m in r.members
        ],
    }


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Read on the group (refused: GROUP_AUTHORIZATION_FAILED, the handler not called).
    SyncGroup, Heartbeat and LeaveGroup check the same; the refusal carries the fields of each
    of their responses (the codec encodes those of the API at hand)."""
    if authz.group(s, AclOperation.READ, body.get("group_id", "")):
        return Verdict(body)
    return Verdict.refused(
        body,
        {
            "error_code": GROUP_DENIED,
            "generation_id": -1,
            "protocol_name": "",
            "leader": "",
            "member_id": body.get("member_id", ""),
            "members": [],
            "assignment": b"",
        },
        ResourceType.GROUP,
    )
