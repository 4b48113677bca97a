"""DescribeAcls (29): the ACL bindings matching one filter (``kafka-acls --list``), from this
broker's metadata image: the bindings its own authorizer enforces. Answered grouped by resource
pattern (type, name, pattern type), in the image's order.

Errors, as Kafka: SECURITY_DISABLED when this broker has no authorizer
(``kraftlog.authorizer.enabled`` off); INVALID_REQUEST for a filter with unknown elements
(:mod:`data_plane.broker.handlers.acl_filters`). Needs Describe on the cluster
(:func:`authorize`)."""

from __future__ import annotations

from typing import Any

from common.error_codes import ErrorCode
from common.security.acl import AclBinding, AclOperation, InvalidAclError, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers.acl_filters import binding_filter
from data_plane.security.request_authz import CLUSTER_DENIED, RequestAuthorizer, Session, Verdict

NO_AUTHORIZER = "No Authorizer is configured."


def _error(code: int, message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "resources": []}


def resources(bindings: list[AclBinding]) -> list[dict[str, Any]]:
    """``bindings`` grouped by resource pattern, as DescribeAclsResponse's ``resources``."""
    by_pattern: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for b in bindings:
        p, e = b.pattern, b.entry
        by_pattern.setdefault((int(p.resource_type), p.name, int(p.pattern_type)), []).append(
            {
                "principal": e.principal,
                "host": e.host,
                "operation": int(e.operation),
                "permission_type": int(e.permission_type),
            }
        )
    return [
        {"resource_type": rtype, "resource_name": name, "pattern_type": ptype, "acls": acls}
        for (rtype, name, ptype), acls in by_pattern.items()
    ]


def handle(apis: KafkaApis, request: Request) -> Body:
    if not apis.authorizer_enabled:
        return _error(ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    try:
        flt = binding_filter(request.body)
    except InvalidAclError as e:
        return _error(ErrorCode.INVALID_REQUEST, str(e))
    matching = [b for b in apis.image.security.acl_bindings() if flt.matches(b)]
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NO_ERROR,
        "error_message": None,
        "resources": resources(matching),
    }


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Describe on the cluster (refused: CLUSTER_AUTHORIZATION_FAILED)."""
    if authz.cluster(s, AclOperation.DESCRIBE):
        return Verdict(body)
    return Verdict.refused(body, _error(CLUSTER_DENIED, None), ResourceType.CLUSTER)
