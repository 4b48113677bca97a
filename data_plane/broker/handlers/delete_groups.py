"""DeleteGroups (42): tombstone empty groups' metadata and offsets in
``__consumer_offsets``; answered once the tombstones are committed. Per group: NON_EMPTY_GROUP
while it has members, GROUP_ID_NOT_FOUND if unknown, NOT_COORDINATOR if another broker owns it."""

from __future__ import annotations

import dataclasses
from collections.abc import Coroutine
from typing import Any

from common.protocol.messages.delete_groups import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DeleteGroupsResponseResult,
)
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.security.request_authz import (
    GROUP_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
    with_denied,
)


async def _delete(apis: KafkaApis, group_ids: list[str]) -> DeleteGroupsResponse:
    result = await apis.group_coordinator.delete_groups(group_ids)
    return DeleteGroupsResponse(
        throttle_time_ms=0,
        results=[DeleteGroupsResponseResult(g, result.errors[g]) for g in group_ids],
    )


def handle(apis: KafkaApis, request: Request) -> Coroutine[Any, Any, DeleteGroupsResponse]:
    body = request.body
    if not isinstance(body, DeleteGroupsRequest):
        raise TypeError(f"DeleteGroups handler given {type(body).__name__}")
    # Duplicates collapse as in Kafka (one result per distinct group id, first-seen order).
    group_ids = list(dict.fromkeys(body.groups_names))
    return _delete(apis, group_ids)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Delete on each group (refused groups answered GROUP_AUTHORIZATION_FAILED)."""
    if not isinstance(body, DeleteGroupsRequest):
        raise TypeError(f"DeleteGroups rule given {type(body).__name__}")
    names = body.groups_names
    denied = [g for g in names if not authz.group(s, AclOperation.DELETE, g)]
    if not denied:
        return Verdict(body)
    kept = dataclasses.replace(body, groups_names=[g for g in names if g not in denied])
    entries = [DeleteGroupsResponseResult(g, GROUP_DENIED) for g in dict.fromkeys(denied)]
    return with_denied(kept, ResourceType.GROUP, len(set(denied)), "results", entries)
