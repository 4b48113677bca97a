"""What the authorization rules of DescribeConfigs, AlterConfigs and IncrementalAlterConfigs
share: each resource needs the operation on its topic, or on the cluster for broker resources
(Kafka's rule); refused resources are answered, the rest go to the handler. Every refusal
counts as a denied topic in the metric."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from common.config_resources import RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_TOPIC
from common.protocol.message_base import Message
from common.security.acl import AclOperation, ResourceType
from data_plane.security.request_authz import (
    CLUSTER_DENIED,
    TOPIC_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
    with_denied,
)

DENIED_MESSAGE = "Authorization failed."


class ConfigResource(Protocol):
    """A resource of a configs request (the ``resources`` entries of the three APIs)."""

    resource_type: int
    resource_name: str


R = TypeVar("R", bound=ConfigResource)


def split_resources(
    authz: RequestAuthorizer,
    s: Session,
    resources: Sequence[R],
    op: AclOperation,
    others_allowed: bool,
) -> tuple[list[R], list[tuple[R, int]]]:
    """(allowed resources, denied ones with their error code): ``op`` on each topic, or on
    the cluster for broker resources; other resource types pass when ``others_allowed`` (the
    handler answers them), else they need the cluster too."""
    allowed: list[R] = []
    denied: list[tuple[R, int]] = []
    for res in resources:
        rtype = res.resource_type
        if rtype == RESOURCE_TOPIC:
            ok = authz.topic(s, op, res.resource_name)
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


def authorize_alteration(
    authz: RequestAuthorizer, s: Session, body: Any, entry: Callable[..., Message]
) -> Verdict:
    """The rule of AlterConfigs and IncrementalAlterConfigs (``body`` is either request):
    AlterConfigs on each topic, or on the cluster for other resources; each refused resource
    is answered with an ``entry`` (the API's response entry class), the rest forwarded."""
    allowed, denied = split_resources(authz, s, body.resources, AclOperation.ALTER_CONFIGS, False)
    if not denied:
        return Verdict(body)
    entries = [
        entry(
            error_code=code,
            error_message=DENIED_MESSAGE,
            resource_type=res.resource_type,
            resource_name=res.resource_name,
        )
        for res, code in denied
    ]
    kept = dataclasses.replace(body, resources=allowed)
    return with_denied(kept, ResourceType.TOPIC, len(denied), "responses", entries)
