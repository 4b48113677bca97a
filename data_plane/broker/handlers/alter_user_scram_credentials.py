"""AlterUserScramCredentials (51): add, replace or delete users' SCRAM
credentials (``kafka-configs --alter --entity-type users --add-config SCRAM-SHA-512=[...]``).
The client sends the salt and the salted password; the active controller derives and stores
only the stored and server keys (metadata.security_control) and answers per user. Needs Alter
on the cluster (:func:`authorize`)."""

from __future__ import annotations

from typing import Any

from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers.forwarding import forward
from data_plane.security.request_authz import CLUSTER_DENIED, RequestAuthorizer, Session, Verdict
from metadata import security_messages as sm
from metadata.client import ControllerError


async def _handle(apis: KafkaApis, request: Request) -> Body:
    body = request.body
    deletions = [
        sm.ScramCredentialDeletion(d.get("name", ""), d.get("mechanism", 0))
        for d in body.get("deletions") or ()
    ]
    upsertions = [
        sm.ScramCredentialUpsertion(
            u.get("name", ""),
            u.get("mechanism", 0),
            u.get("iterations", 0),
            bytes(u.get("salt") or b""),
            bytes(u.get("salted_password") or b""),
        )
        for u in body.get("upsertions") or ()
    ]
    try:
        answer = await forward(
            apis,
            "call",
            "AlterUserScramCredentials",
            sm.AlterUserScramCredentialsRequest(deletions, upsertions),
            sm.AlterUserScramCredentialsResponse,
        )
    except ControllerError as e:
        names = dict.fromkeys(x.name for x in [*deletions, *upsertions])
        return {
            "throttle_time_ms": 0,
            "results": [
                {"user": n, "error_code": e.error_code, "error_message": e.message} for n in names
            ],
        }
    return {
        "throttle_time_ms": 0,
        "results": [
            {"user": r.user, "error_code": r.error_code, "error_message": r.error_message}
            for r in answer.results
        ],
    }


def handle(apis: KafkaApis, request: Request) -> Any:
    return _handle(apis, request)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Alter on the cluster (refused: every user CLUSTER_AUTHORIZATION_FAILED)."""
    if authz.cluster(s, AclOperation.ALTER):
        return Verdict(body)
    changes = [*(body.get("deletions") or ()), *(body.get("upsertions") or ())]
    names = dict.fromkeys(x.get("name", "") for x in changes)
    results = [{"user": n, "error_code": CLUSTER_DENIED, "error_message": None} for n in names]
    return Verdict.refused(body, {"throttle_time_ms": 0, "results": results}, ResourceType.CLUSTER)
