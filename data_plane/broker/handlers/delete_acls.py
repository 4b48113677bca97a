"""DeleteAcls (31): delete every ACL binding matching each filter (``kafka-acls --remove``),
forwarded to the active controller (metadata.security_control), which commits the removals
to the metadata log; answered once this broker's image no longer holds the removed bindings
(bounded by request.timeout.ms). One result per filter, in request order, listing the bindings
it matched; a filter that matches nothing is answered with none.

Errors, as Kafka: SECURITY_DISABLED for every filter when this broker has no authorizer
(``kraftlog.authorizer.enabled`` off); INVALID_REQUEST for a filter with unknown elements
(:mod:`data_plane.broker.handlers.acl_filters`; the other filters are still applied). Needs
Alter on the cluster (:func:`authorize`)."""

from __future__ import annotations

import dataclasses
from typing import Any

from common.error_codes import ErrorCode
from common.security.acl import AclOperation, InvalidAclError, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers.acl_filters import binding_filter
from data_plane.broker.handlers.describe_acls import NO_AUTHORIZER
from data_plane.broker.handlers.forwarding import forward
from data_plane.security.request_authz import CLUSTER_DENIED, RequestAuthorizer, Session, Verdict
from metadata import security_messages as sm
from metadata.client import ControllerError
from metadata.security_control import binding_from_creation


def _filter_result(code: int, message: str | None, acls: list[sm.AclDescription]) -> dict[str, Any]:
    return {
        "error_code": code,
        "error_message": message,
        "matching_acls": [
            {
                "error_code": ErrorCode.NO_ERROR,
                "error_message": None,
                "resource_type": a.resource_type,
                "resource_name": a.resource_name,
                "pattern_type": a.pattern_type,
                "principal": a.principal,
                "host": a.host,
                "operation": a.operation,
                "permission_type": a.permission_type,
            }
            for a in acls
        ],
    }


def _message(entry: dict[str, Any]) -> sm.AclFilter:
    """The filter of one request entry as the controller takes it; InvalidAclError if it has
    unknown elements."""
    flt = binding_filter(entry)
    return sm.AclFilter(
        int(flt.resource_type),
        flt.name,
        int(flt.pattern_type),
        flt.principal,
        flt.host,
        int(flt.operation),
        int(flt.permission_type),
    )


async def _handle(apis: KafkaApis, request: Request) -> Body:
    entries = list(request.body.get("filters") or ())
    if not apis.authorizer_enabled:
        results = [_filter_result(ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER, [])] * len(entries)
        return {"throttle_time_ms": 0, "filter_results": results}
    # Index in the request -> the filter's error (invalid filters are not forwarded).
    invalid: dict[int, str] = {}
    valid: list[sm.AclFilter] = []
    for i, entry in enumerate(entries):
        try:
            valid.append(_message(entry))
        except InvalidAclError as e:
            invalid[i] = str(e)
    answered: list[dict[str, Any]] = []
    if valid:
        try:
            answer = await forward(
                apis, "call", "DeleteAcls", sm.DeleteAclsRequest(valid), sm.DeleteAclsResponse
            )
        except ControllerError as e:
            answered = [_filter_result(e.error_code, e.message, [])] * len(valid)
        else:
            answered = [
                _filter_result(r.error_code, r.error_message, r.matching_acls)
                for r in answer.filter_results
            ]
            removed = {
                binding_from_creation(sm.AclCreation(**dataclasses.asdict(a)))
                for r in answer.filter_results
                for a in r.matching_acls
            }
            if removed:
                await apis.wait_for_image(
                    lambda img: not removed & set(img.security.acls.values()),
                    apis.config.request_timeout_ms,
                )
    results, forwarded = [], iter(answered)
    for i in range(len(entries)):
        if i in invalid:
            results.append(_filter_result(ErrorCode.INVALID_REQUEST, invalid[i], []))
        else:
            results.append(next(forwarded))
    return {"throttle_time_ms": 0, "filter_results": results}


def handle(apis: KafkaApis, request: Request) -> Any:
    return _handle(apis, request)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Alter on the cluster (refused: every filter CLUSTER_AUTHORIZATION_FAILED)."""
    if authz.cluster(s, AclOperation.ALTER):
        return Verdict(body)
    count = len(body.get("filters") or ())
    results = [_filter_result(CLUSTER_DENIED, None, [])] * count
    return Verdict.refused(
        body, {"throttle_time_ms": 0, "filter_results": results}, ResourceType.CLUSTER
    )
