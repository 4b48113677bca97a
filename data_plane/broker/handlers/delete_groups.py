"""DeleteGroups (42): tombstone empty groups' metadata and offsets in
``__consumer_offsets``; answered once the tombstones are committed. Per group: NON_EMPTY_GROUP
while it has members, GROUP_ID_NOT_FOUND if unknown, NOT_COORDINATOR if another broker owns it."""

from __future__ import annotations

from typing import Any

from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request, Response
from data_plane.security.request_authz import (
    GROUP_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
    with_denied,
)


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


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Delete on each group (refused groups answered GROUP_AUTHORIZATION_FAILED)."""
    names = list(body.get("groups_names") or ())
    denied = [g for g in names if not authz.group(s, AclOperation.DELETE, g or "")]
    if not denied:
        return Verdict(body)
    kept = {**body, "groups_names": [g for g in names if g not in denied]}
    entries = [{"group_id": g, "error_code": GROUP_DENIED} for g in dict.fromkeys(denied)]
    return with_denied(kept, ResourceType.GROUP, len(set(denied)), "results", entries)
