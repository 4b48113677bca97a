"""DeleteGroups (42), v0-1: tombstone empty groups' metadata and offsets in
``__consumer_offsets``; answered once the tombstones are committed. Per group: NON_EMPTY_GROUP
while it has members, GROUP_ID_NOT_FOUND if unknown, NOT_COORDINATOR if another broker owns it."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from common.protocol.messages.delete_groups import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DeleteGroupsResponseResult,
)
from data_plane.broker.apis import KafkaApis, Request


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
