"""AlterConfigs (33), the non-incremental form kafka-python's admin and Sarama use: each
topic resource's ``configs`` REPLACE all of its overrides (keys left out go back to their
defaults). Forwarded to the active controller (:mod:`config_alteration`)."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from common.protocol.messages.alter_configs import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    AlterConfigsResponseResponse,
)
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.handlers.config_acls import authorize_alteration
from data_plane.broker.handlers.config_alteration import (
    Expected,
    alter,
    refused,
    response_entries,
)
from data_plane.security.request_authz import RequestAuthorizer, Session, Verdict


async def _alter(apis: KafkaApis, body: AlterConfigsRequest) -> AlterConfigsResponse:
    changes: dict[str, dict[str, str]] = {}
    expected: Expected = {}
    for res in body.resources:
        if refused(res) is not None:
            continue
        values = {c.name: c.value for c in res.configs if c.value is not None}
        changes[res.resource_name] = values
        expected[res.resource_name] = dict(values)
    outcomes = await alter(
        apis, body.resources, body.validate_only, "alter_configs", changes, expected
    )
    return AlterConfigsResponse(
        throttle_time_ms=0, responses=response_entries(outcomes, AlterConfigsResponseResponse)
    )


def handle(apis: KafkaApis, request: Request) -> Coroutine[Any, Any, AlterConfigsResponse]:
    body = request.body
    if not isinstance(body, AlterConfigsRequest):
        raise TypeError(f"AlterConfigs handler given {type(body).__name__}")
    return _alter(apis, body)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """AlterConfigs on each topic, or on the cluster for other resources
    (:func:`config_acls.authorize_alteration`)."""
    if not isinstance(body, AlterConfigsRequest):
        raise TypeError(f"AlterConfigs rule given {type(body).__name__}")
    return authorize_alteration(authz, s, body, AlterConfigsResponseResponse)
