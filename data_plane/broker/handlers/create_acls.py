"""CreateAcls (30): create ACL bindings (``kafka-acls --add``), forwarded to the active
controller (metadata.security_control), which checks each binding and commits the new ones
to the metadata log; answered once this broker's image holds them (bounded by
request.timeout.ms), so a DescribeAcls to this broker right after sees them. One result per
creation, in request order; a binding that exists already succeeds and adds nothing.

Errors, as Kafka: SECURITY_DISABLED for every creation when this broker has no authorizer
(``kraftlog.authorizer.enabled`` off); INVALID_REQUEST for a creation with an unknown or
non-concrete element (ANY, MATCH, UNKNOWN), an empty name or a cluster resource not named
``kafka-cluster``. Before v1 a creation has no pattern type and is LITERAL. Needs Alter on the
cluster (:func:`authorize`)."""

from __future__ import annotations

from typing import Any

from common.error_codes import ErrorCode
from common.security.acl import AclBinding, AclOperation, InvalidAclError, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers.describe_acls import NO_AUTHORIZER
from data_plane.broker.handlers.forwarding import forward
from data_plane.security.request_authz import CLUSTER_DENIED, RequestAuthorizer, Session, Verdict
from metadata import security_messages as sm
from metadata.client import ControllerError
from metadata.security_control import binding_from_creation


def _creation(c: dict[str, Any]) -> sm.AclCreation:
    return sm.AclCreation(
        c.get("resource_type", 0),
        c.get("resource_name", ""),
        c.get("resource_pattern_type", 3),
        c.get("principal", ""),
        c.get("host", ""),
        c.get("operation", 0),
        c.get("permission_type", 0),
    )


def _answer(results: list[tuple[int, str | None]]) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "results": [{"error_code": code, "error_message": msg} for code, msg in results],
    }


def _created(creations: list[sm.AclCreation], answer: sm.CreateAclsResponse) -> set[AclBinding]:
    """The bindings the controller accepted (what this broker's image must come to hold)."""
    out = set()
    for creation, result in zip(creations, answer.results, strict=False):
        if result.error_code == ErrorCode.NO_ERROR:
            try:
                out.add(binding_from_creation(creation))
            except InvalidAclError:
                continue
    return out


async def _handle(apis: KafkaApis, request: Request) -> Body:
    creations = [_creation(c) for c in request.body.get("creations") or ()]
    if not apis.authorizer_enabled:
        return _answer([(ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)] * len(creations))
    if not creations:
        return _answer([])
    try:
        answer = await forward(
            apis, "call", "CreateAcls", sm.CreateAclsRequest(creations), sm.CreateAclsResponse
        )
    except ControllerError as e:
        return _answer([(e.error_code, e.message)] * len(creations))
    created = _created(creations, answer)
    if created:
        await apis.wait_for_image(
            lambda img: created <= set(img.security.acls.values()),
            apis.config.request_timeout_ms,
        )
    return _answer([(r.error_code, r.error_message) for r in answer.results])


def handle(apis: KafkaApis, request: Request) -> Any:
    return _handle(apis, request)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Alter on the cluster (refused: every creation CLUSTER_AUTHORIZATION_FAILED)."""
    if authz.cluster(s, AclOperation.ALTER):
        return Verdict(body)
    count = len(body.get("creations") or ())
    return Verdict.refused(body, _answer([(CLUSTER_DENIED, None)] * count), ResourceType.CLUSTER)
