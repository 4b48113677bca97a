"""What the authorization rules of DescribeConfigs, AlterConfigs and IncrementalAlterConfigs
share: each resource needs the operation on its topic, or on the cluster for broker resources
(Kafka's rule); refused resources are answered, the rest go to the handler."""

from __future__ import annotations

from typing import Any

from common.config_resources import RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_TOPIC
from common.security.acl import AclOperation, ResourceType
from data_plane.security.request_authz import (
    CLUSTER_DENIED,
    TOPIC_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
    with_denied,
)


def _split(
    authz: RequestAuthorizer,
    s: Session,
    body: dict[str, Any],
    op: AclOperation,
    others_allowed: bool,
) -> tuple[list[dict[str, Any]], list[tuple[dict[str, Any], int]]]:
    """(allowed resources, denied ones with their error): ``op`` on each topic, or on the
    cluster for broker resources; other resource types pass when ``others_allowed`` (the
    handler answers them), else they need the cluster too."""
    allowed, denied = [], []
    for res in body.get("resources") or []:
        rtype = res.get("resource_type")
        if rtype == RESOURCE_TOPIC:
            ok = authz.topic(s, op, res.get("resource_name", ""))
            code = TOPIC_DENIED
        elif rtype in (RESOURCE_BROKER, RESOURCE_BROKER_LOGGER) or not others_allowed:
            ok = authz.cluster(s, op)
            code = CLUSTER_DENIED
        else:
            ok, code = True, 0
        if ok:
            allowed.append(res)
        else:
            denied.append((res, code))
    return allowed, denied


def configs_verdict(
    authz: RequestAuthorizer,
    s: Session,
    body: dict[str, Any],
    op: AclOperation,
    others_allowed: bool,
    list_key: str,
    extra: dict[str, Any],
) -> Verdict:
    """Forward the resources :func:`_split` allows; answer the denied ones in ``list_key``
    (each with ``extra``). Every refusal counts as a denied topic in the metric."""
    allowed, denied = _split(authz, s, body, op, others_allowed)
    if not denied:
        return Verdict(body)
    entries = [
        {
            "error_code": code,
            "error_message": "Authorization failed.",
            "resource_type": res.get("resource_type"),
            "resource_name": res.get("resource_name", ""),
            **extra,
        }
        for res, code in denied
    ]
    kept = {**body, "resources": allowed}
    return with_denied(kept, ResourceType.TOPIC, len(denied), list_key, entries)
