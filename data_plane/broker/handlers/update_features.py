"""UpdateFeatures (57): ``kafka-features.sh upgrade``. Each feature update
is forwarded to the active controller (metadata.features), which raises the finalized level
once every broker and voter supports it. Downgrades (v0 ``allow_downgrade``, v1 upgrade type
2 or 3) are refused with INVALID_UPDATE_VERSION, as the controller never lowers a level.
``validate_only`` (v1) only checks. Needs Alter on the cluster (:func:`authorize`).
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from common.error_codes import ErrorCode
from common.protocol.messages.update_features import (
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
    UpdateFeaturesResponseResult,
)
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers.forwarding import forward
from data_plane.security.request_authz import CLUSTER_DENIED, RequestAuthorizer, Session, Verdict
from metadata.client import ControllerError

UPGRADE = 1


async def _update(apis: KafkaApis, body: UpdateFeaturesRequest) -> UpdateFeaturesResponse:
    results: list[UpdateFeaturesResponseResult] = []
    for update in body.feature_updates:
        # v0 asks with allow_downgrade, v1 with upgrade_type (each field holds its default
        # in the other version).
        if update.allow_downgrade or update.upgrade_type != UPGRADE:
            results.append(
                UpdateFeaturesResponseResult(
                    feature=update.feature,
                    error_code=ErrorCode.INVALID_UPDATE_VERSION,
                    error_message="finalized feature levels are never lowered",
                )
            )
            continue
        try:
            answer = await forward(
                apis,
                "update_features",
                update.feature,
                update.max_version_level,
                body.validate_only,
            )
            code, message = answer.error_code, answer.error_message
        except ControllerError as e:
            code, message = e.error_code, e.message
        results.append(
            UpdateFeaturesResponseResult(
                feature=update.feature, error_code=code, error_message=message
            )
        )
    return UpdateFeaturesResponse(
        throttle_time_ms=0, error_code=ErrorCode.NO_ERROR, error_message=None, results=results
    )


def handle(apis: KafkaApis, request: Request) -> Coroutine[Any, Any, UpdateFeaturesResponse]:
    body = request.body
    if not isinstance(body, UpdateFeaturesRequest):
        raise TypeError(f"UpdateFeatures handler given {type(body).__name__}")
    return _update(apis, body)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Alter on the cluster (refused: CLUSTER_AUTHORIZATION_FAILED, and on every feature)."""
    if not isinstance(body, UpdateFeaturesRequest):
        raise TypeError(f"UpdateFeatures rule given {type(body).__name__}")
    if authz.cluster(s, AclOperation.ALTER):
        return Verdict(body)
    results = [
        UpdateFeaturesResponseResult(
            feature=u.feature, error_code=CLUSTER_DENIED, error_message=None
        )
        for u in body.feature_updates
    ]
    refusal = UpdateFeaturesResponse(
        throttle_time_ms=0, error_code=CLUSTER_DENIED, error_message=None, results=results
    )
    return Verdict.refused(body, refusal, ResourceType.CLUSTER)
