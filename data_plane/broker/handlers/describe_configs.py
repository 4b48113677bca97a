"""DescribeConfigs (32): topic resources (type 2) come from the active controller
(topic overrides and the effective defaults); the broker resource (type 4) naming this broker
lists its own settings as static broker configs. ``configuration_keys`` filters the entries.
Other brokers' ids and other resource types get an error for that resource. From v3 each
entry has Kafka's config type and, when ``include_documentation`` asks for it, its
documentation (data_plane.broker.config_types); v4 is flexible."""

from __future__ import annotations

from typing import Any

from common.config_resources import (
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    SOURCE_DEFAULT,
    SOURCE_DYNAMIC_TOPIC,
    SOURCE_STATIC_BROKER,
)
from common.error_codes import ErrorCode
from common.security.acl import AclOperation
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.broker.config_types import config_type_and_doc
from data_plane.broker.handlers.config_acls import configs_verdict
from data_plane.broker.handlers.forwarding import forward
from data_plane.security.request_authz import RequestAuthorizer, Session, Verdict
from metadata.client import ControllerError


def _entry(
    name: str,
    value: str | None,
    is_default: bool,
    source: int,
    read_only: bool,
    *,
    topic: bool,
    documentation: bool,
) -> dict:
    config_type, doc = config_type_and_doc(name, topic=topic)
    return {
        "name": name,
        "value": value,
        "read_only": read_only,
        "is_default": is_default,
        "config_source": source,
        "is_sensitive": False,
        "synonyms": [],
        "config_type": config_type,
        "documentation": doc if documentation else None,
    }


def _result(rtype: int, name: str, code: int = 0, message: str | None = None) -> dict[str, Any]:
    return {
        "error_code": code,
        "error_message": message,
        "resource_type": rtype,
        "resource_name": name,
        "configs": [],
    }


async def _handle(apis: KafkaApis, request: Request) -> Body:
    resources = list(request.body.get("resources") or ())
    documentation = bool(request.body.get("include_documentation", False))
    topics = [r["resource_name"] for r in resources if r["resource_type"] == RESOURCE_TOPIC]
    described: dict[str, Any] = {}
    failure: ControllerError | None = None
    if topics:
        try:
            described = await forward(apis, "describe_configs", topics)
        except ControllerError as e:
            failure = e
    results = []
    for r in resources:
        rtype, name = r["resource_type"], r["resource_name"]
        keys = r.get("configuration_keys")
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
            res["configs"] = [
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
            res["configs"] = [
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
    return {"throttle_time_ms": 0, "results": results}


def handle(apis: KafkaApis, request: Request) -> Any:
    return _handle(apis, request)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """DescribeConfigs on each topic, or on the cluster for broker resources; refused
    resources are answered, the rest described (:func:`config_acls.configs_verdict`)."""
    return configs_verdict(
        authz, s, body, AclOperation.DESCRIBE_CONFIGS, True, "results", {"configs": []}
    )
