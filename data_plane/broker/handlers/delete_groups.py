"""DeleteGroups (42), v0-1: tombstone empty groups' metadata and offsets in
``__consumer_offsets``; answered once the tombstones are committed. Per group: NON_EMPTY_GROUP
while it has members, GROUP_ID_NOT_FOUND if unknown, NOT_COORDINATOR if another broker owns it."""

from __future__ import annotations

from data_plane.broker.apis import Body, KafkaApis, Request, Response


async def _delete(apis: KafkaApis, group_ids: list[str]) -> Body:
    result = await apis.group_coordinator.delete_groups(group_ids)
    return {
        "throttle_time_ms": 0,
        "results": [{"group_id": g, "error_code": result.errors[g]} for g in group_ids],
    }


def handle(apis: KafkaApis, request: Request) -> Response:
    # Duplicates collapse as in Kafka (one result per distinct group id, first-seen order).
    group_ids = list(dict.fromkeys(g or "" for g in request.body.get("groups_names") or ()))
    return _delete(apis, group_ids)
