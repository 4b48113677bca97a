"""DescribeConfigs (32): topic resources (type 2) come from the active controller
(topic overrides and the effective defaults); the broker resource (type 4) naming this broker
lists its own settings as static broker configs. ``configuration_keys`` filters the entries.
Other brokers' ids and other resource types get an error for that resource. From v3 each
entry has Kafka's config type and, when ``include_documentation`` asks for it, its
documentation (data_plane.broker.config_types); v4 is flexible."""

from __future__ import annotations

import dataclasses
from collections.abc import Coroutine
from typing import Any

from common.config_resources import (
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    SOURCE_DEFAULT,
    SOURCE_DYNAMIC_TOPIC,
    SOURCE_STATIC_BROKER,
)
from common.error_codes import ErrorCode
from common.protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeConfigsResponseConfig,
    DescribeConfigsResponseResult,
)
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.config_types import config_type_and_doc
from data_plane.broker.handlers.config_acls import DENIED_MESSAGE, split_resources
from data_plane.broker.handlers.forwarding import forward
from data_plane.security.request_authz import RequestAuthorizer, Session, Verdict, with_denied
from metadata.client import ControllerError
from metadata.messages import DescribeConfigsResult


def _entry(
    name: str,
    value: str | None,
    is_default: bool,
    source: int,
    read_only: bool,
    *,
    topic: bool,
    documentation: bool,
) -> DescribeConfigsResponseConfig:
    config_type, doc = config_type_and_doc(name, topic=topic)
    return DescribeConfigsResponseConfig(
        name=name,
        value=value,
        read_only=read_only,
        is_default=is_default,
        config_source=source,
        is_sensitive=False,
        synonyms=[],
        config_type=config_type,
        documentation=doc if documentation else None,
    )


def _result(
    rtype: int, name: str, code: int = 0, message: str | None = None
) -> DescribeConfigsResponseResult:
    return DescribeConfigsResponseResult(
        error_code=code, error_message=message, resource_type=rtype, resource_name=name
    )


async def _describe(apis: KafkaApis, body: DescribeConfigsRequest) -> DescribeConfigsResponse:
    resources = body.resources
    documentation = body.include_documentation
    topics = [r.resource_name for r in resources if r.resource_type == RESOURCE_TOPIC]
    described: dict[str, DescribeConfigsResult] = {}
    failure: ControllerError | None = None
    if topics:
        try:
            described = await forward(apis, "describe_configs", topics)
        except ControllerError as e:
            failure = e
    results = []
    for r in resources:
        rtype, name = r.resource_type, r.resource_name
        keys = r.configuration_keys
        wanted = None if keys is None else set(keys)
        if rtype == RESOURCE_TOPIC:
            if failure is not None:
                results.append(_result(rtype, name, failure.error_code, failure.message))
                continue
            d = described.get(name)
            if d is None:
                results.append(_result(rtype, name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            res = _result(rtype, name, d.error_code, d.error_message)
            res.configs = [
                _entry(
                    c.name,
                    c.value,
                    c.is_default,
                    SOURCE_DEFAULT if c.is_default else SOURCE_DYNAMIC_TOPIC,
                    c.read_only,
                    topic=True,
                    documentation=documentation,
                )
                for c in d.configs
                if wanted is None or c.name in wanted
            ]
            results.append(res)
        elif rtype == RESOURCE_BROKER and name in ("", str(apis.broker_id)):
            res = _result(rtype, name)
            res.configs = [
                _entry(
                    k,
                    v,
                    False,
                    SOURCE_STATIC_BROKER,
                    True,
                    topic=False,
                    documentation=documentation,
                )
                for k, v in sorted(apis.local_config().items())
                if wanted is None or k in wanted
            ]
            results.append(res)
        elif rtype == RESOURCE_BROKER:
            results.append(
                _result(rtype, name, ErrorCode.INVALID_REQUEST, "ask that broker for its config")
            )
        else:
            results.append(
                _result(rtype, name, ErrorCode.INVALID_REQUEST, f"resource type {rtype}")
            )
    return DescribeConfigsResponse(throttle_time_ms=0, results=results)


def handle(apis: KafkaApis, request: Request) -> Coroutine[Any, Any, DescribeConfigsResponse]:
    body = request.body
    if not isinstance(body, DescribeConfigsRequest):
        raise TypeError(f"DescribeConfigs handler given {type(body).__name__}")
    return _describe(apis, body)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """DescribeConfigs on each topic, or on the cluster for broker resources; refused
    resources are answered, the rest described (:func:`config_acls.split_resources`)."""
    if not isinstance(body, DescribeConfigsRequest):
        raise TypeError(f"DescribeConfigs rule given {type(body).__name__}")
    allowed, denied = split_resources(authz, s, body.resources, AclOperation.DESCRIBE_CONFIGS, True)
    if not denied:
        return Verdict(body)
    entries = [
        _result(res.resource_type, res.resource_name, code, DENIED_MESSAGE) for res, code in denied
    ]
    kept = dataclasses.replace(body, resources=allowed)
    return with_denied(kept, ResourceType.TOPIC, len(denied), "results", entries)
