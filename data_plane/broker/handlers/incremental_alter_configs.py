"""IncrementalAlterConfigs (44): per topic resource, operations on single keys: SET (0),
DELETE (1), APPEND (2) and SUBTRACT (3) for list values. Forwarded to the active controller
(:mod:`config_alteration`)."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from common.config_resources import OP_DELETE, OP_SET
from common.protocol.messages.incremental_alter_configs import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    IncrementalAlterConfigsResponseResponse,
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
from metadata.messages import AlterableConfig


async def _alter(
    apis: KafkaApis, body: IncrementalAlterConfigsRequest
) -> IncrementalAlterConfigsResponse:
    changes: dict[str, list[AlterableConfig]] = {}
    expected: Expected = {}
    for res in body.resources:
        if refused(res) is not None:
            continue
        name = res.resource_name
        ops = [AlterableConfig(c.name, c.config_operation, c.value) for c in res.configs]
        changes[name] = ops
        expected[name] = {
            op.name: (op.value if op.op == OP_SET else None)
            for op in ops
            if op.op in (OP_SET, OP_DELETE)
        }
    outcomes = await alter(
        apis, body.resources, body.validate_only, "incremental_alter_configs", changes, expected
    )
    return IncrementalAlterConfigsResponse(
        throttle_time_ms=0,
        responses=response_entries(outcomes, IncrementalAlterConfigsResponseResponse),
    )


def handle(
    apis: KafkaApis, request: Request
) -> Coroutine[Any, Any, IncrementalAlterConfigsResponse]:
    body = request.body
    if not isinstance(body, IncrementalAlterConfigsRequest):
        raise TypeError(f"IncrementalAlterConfigs handler given {type(body).__name__}")
    return _alter(apis, body)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """AlterConfigs on each topic, or on the cluster for other resources
    (:func:`config_acls.authorize_alteration`)."""
    if not isinstance(body, IncrementalAlterConfigsRequest):
        raise TypeError(f"IncrementalAlterConfigs rule given {type(body).__name__}")
    return authorize_alteration(authz, s, body, IncrementalAlterConfigsResponseResponse)
