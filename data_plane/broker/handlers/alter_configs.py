"""AlterConfigs (33), the non-incremental form kafka-python's admin and Sarama use: each
topic resource's ``configs`` REPLACE all of its overrides (keys left out go back to their
defaults). Forwarded to the active controller (:mod:`config_alteration`)."""

from __future__ import annotations

from typing import Any

from common.security.acl import AclOperation
from data_plane.broker.apis import KafkaApis, Request
from data_plane.broker.handlers.config_acls import configs_verdict
from data_plane.broker.handlers.config_alteration import Expected, alter, refused
from data_plane.security.request_authz import RequestAuthorizer, Session, Verdict


def handle(apis: KafkaApis, request: Request) -> Any:
    changes: dict[str, dict[str, str]] = {}
    expected: Expected = {}
    for res in request.body.get("resources") or ():
        if refused(res) is not None:
            continue
        values = {c["name"]: c["value"] for c in res.get("configs") or () if c["value"] is not None}
        changes[res["resource_name"]] = values
        expected[res["resource_name"]] = dict(values)
    return alter(apis, request, "alter_configs", changes, expected)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """AlterConfigs on each topic, or on the cluster for other resources; refused resources
    are answered, the rest forwarded (:func:`config_acls.configs_verdict`)."""
    return configs_verdict(authz, s, body, AclOperation.ALTER_CONFIGS, False, "responses", {})
