"""UpdateFeatures (57): ``kafka-features.sh upgrade``. Each feature update
is forwarded to the active controller (metadata.features), which raises the finalized level
once every broker and voter supports it. Downgrades (v0 ``allow_downgrade``, v1 upgrade type
2 or 3) are refused with INVALID_UPDATE_VERSION, as the controller never lowers a level.
``validate_only`` (v1) only checks. Needs Alter on the cluster (:func:`authorize`).
"""

from __future__ import annotations

from typing import Any

from common.error_codes import ErrorCode
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers.forwarding import forward
from data_plane.security.request_authz import CLUSTER_DENIED, RequestAuthorizer, Session, Verdict
from metadata.client import ControllerError

UPGRADE = 1


async def _handle(apis: KafkaApis, request: Request) -> Body:
    body = request.body
    validate_only = bool(body.get("validate_only", False))
    results: list[dict[str, Any]] = []
    for update in body.get("feature_updates") or ():
        feature = update.get("feature", "")
        downgrade = (
            update.get("allow_downgrade", False) or update.get("upgrade_type", UPGRADE) != UPGRADE
        )
        if downgrade:
            results.append(
                {
                    "feature": feature,
                    "error_code": ErrorCode.INVALID_UPDATE_VERSION,
                    "error_message": "finalized feature levels are never lowered",
                }
            )
            continue
        try:
            answer = await forward(
                apis,
                "update_features",
                feature,
                update.get("max_version_level", 0),
                validate_only,
            )
            code, message = answer.error_code, answer.error_message
        except ControllerError as e:
            code, message = e.error_code, e.message
        results.append({"feature": feature, "error_code": code, "error_message": message})
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NO_ERROR,
        "error_message": None,
        "results": results,
    }


def handle(apis: KafkaApis, request: Request) -> Any:
    return _handle(apis, request)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Alter on the cluster (refused: CLUSTER_AUTHORIZATION_FAILED, and on every feature)."""
    if authz.cluster(s, AclOperation.ALTER):
        return Verdict(body)
    results = [
        {"feature": u.get("feature", ""), "error_code": CLUSTER_DENIED, "error_message": None}
        for u in body.get("feature_updates") or ()
    ]
    return Verdict.refused(
        body,
        {
            "throttle_time_ms": 0,
            "error_code": CLUSTER_DENIED,
            "error_message": None,
            "results": results,
        },
        ResourceType.CLUSTER,
    )
