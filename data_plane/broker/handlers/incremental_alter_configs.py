"""IncrementalAlterConfigs (44): per topic resource, operations on single keys: SET (0),
DELETE (1), APPEND (2) and SUBTRACT (3) for list values. Forwarded to the active controller
(:mod:`config_alteration`)."""

from __future__ import annotations

from typing import Any

from common.config_resources import OP_DELETE, OP_SET
from common.security.acl import AclOperation
from data_plane.broker.apis import KafkaApis, Request
from data_plane.broker.handlers.config_acls import configs_verdict
from data_plane.broker.handlers.config_alteration import Expected, alter, refused
from data_plane.security.request_authz import RequestAuthorizer, Session, Verdict
from metadata.messages import AlterableConfig


def handle(apis: KafkaApis, request: Request) -> Any:
    changes: dict[str, list[AlterableConfig]] = {}
    expected: Expected = {}
    for res in request.body.get("resources") or ():
        if refused(res) is not None:
            continue
        name = res["resource_name"]
        ops = [
            AlterableConfig(c["name"], c["config_operation"], c.get("value"))
            for c in res.get("configs") or ()
        ]
        changes[name] = ops
        expected[name] = {
            op.name: (op.value if op.op == OP_SET else None)
            for op in ops
            if op.op in (OP_SET, OP_DELETE)
        }
    return alter(apis, request, "incremental_alter_configs", changes, expected)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """AlterConfigs on each topic, or on the cluster for other resources; refused resources
    are answered, the rest forwarded (:func:`config_acls.configs_verdict`)."""
    return configs_verdict(authz, s, body, AclOperation.ALTER_CONFIGS, False, "responses", {})
