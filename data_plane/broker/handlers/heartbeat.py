"""Heartbeat (12): a member renews its session; REBALANCE_IN_PROGRESS tells it to rejoin,
ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID that it is no longer a member."""

from __future__ import annotations

from common.protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers import join_group
from data_plane.security.request_authz import RequestAuthorizer, Session, Verdict


def handle(apis: KafkaApis, request: Request) -> HeartbeatResponse:
    body = request.body
    if not isinstance(body, HeartbeatRequest):
        raise TypeError(f"Heartbeat handler given {type(body).__name__}")
    error = apis.group_coordinator.coordinator.heartbeat(
        body.group_id, body.generation_id, body.member_id, body.group_instance_id
    )
    return HeartbeatResponse(throttle_time_ms=0, error_code=error)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Read on the group, refused as JoinGroup is (:func:`join_group.authorize`)."""
    return join_group.authorize(authz, s, version, body)
