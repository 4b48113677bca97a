"""DescribeUserScramCredentials (50): each user's SCRAM mechanisms and
iteration counts (never the salt or keys), from the active controller (metadata.security_control).
``users`` null means every user; an unknown one answers RESOURCE_NOT_FOUND. Needs Describe on
the cluster (:func:`authorize`)."""

from __future__ import annotations

from typing import Any

from common.error_codes import ErrorCode
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers.forwarding import forward
from data_plane.security.request_authz import CLUSTER_DENIED, RequestAuthorizer, Session, Verdict
from metadata import security_messages as sm
from metadata.client import ControllerError


async def _handle(apis: KafkaApis, request: Request) -> Body:
    users = request.body.get("users")
    names = None if users is None else [u.get("name", "") for u in users]
    try:
        answer = await forward(
            apis,
            "call",
            "DescribeUserScramCredentials",
            sm.DescribeUserScramCredentialsRequest(names),
            sm.DescribeUserScramCredentialsResponse,
        )
    except ControllerError as e:
        return {
            "throttle_time_ms": 0,
            "error_code": e.error_code,
            "error_message": e.message,
            "results": [],
        }
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NO_ERROR,
        "error_message": None,
        "results": [
            {
                "user": r.user,
                "error_code": r.error_code,
                "error_message": r.error_message,
                "credential_infos": [
                    {"mechanism": c.mechanism, "iterations": c.iterations}
                    for c in r.credential_infos
                ],
            }
            for r in answer.results
        ],
    }


def handle(apis: KafkaApis, request: Request) -> Any:
    return _handle(apis, request)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Describe on the cluster (refused: CLUSTER_AUTHORIZATION_FAILED)."""
    if authz.cluster(s, AclOperation.DESCRIBE):
        return Verdict(body)
    return Verdict.refused(
        body,
        {
            "throttle_time_ms": 0,
            "error_code": CLUSTER_DENIED,
            "error_message": None,
            "results": [],
        },
        ResourceType.CLUSTER,
    )
