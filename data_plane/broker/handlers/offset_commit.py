"""OffsetCommit (8): store committed offsets in ``__consumer_offsets``.

Answered per partition once the records are committed (acks=all semantics, bounded by
``offsets.commit.timeout.ms``). v0 commits (no generation, no member) and commits with
generation -1 and no member id are "simple" commits, allowed only while the group has no
members. A partition of a topic this broker's metadata does not know gets
UNKNOWN_TOPIC_OR_PARTITION; the others are validated by the coordinator (ILLEGAL_GENERATION,
UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID, OFFSET_METADATA_TOO_LARGE,
NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE...). Per-request
retention (v2-4 ``retention_time_ms``) is ignored, as Kafka does since it writes value v3.
"""

from __future__ import annotations

from typing import Any

from common.error_codes import ErrorCode
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request, Response
from data_plane.coordinator.messages import OffsetCommitRequest
from data_plane.security.request_authz import (
    GROUP_DENIED,
    TOPIC_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
    partition_errors,
    with_denied_topics,
)


def handle(apis: KafkaApis, request: Request) -> Response:
    b = request.body
    image = apis.image
    order: list[tuple[str, list[int]]] = []
    errors: dict[tuple[str, int], int] = {}
    offsets = []
    for t in b.get("topics") or ():
        name = t["name"] or ""
        known = image.topic(name)
        indexes = []
        for p in t.get("partitions") or ():
            tp = (name, p["partition_index"])
            indexes.append(tp[1])
            if known is None or known.partition(tp[1]) is None:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            offsets.append(
                (
                    tp,
                    p["committed_offset"],
                    p.get("committed_leader_epoch", -1),
                    p.get("committed_metadata"),
                )
            )
        order.append((name, indexes))
    req = OffsetCommitRequest(
        group_id=b["group_id"] or "",
        generation_id=b.get("generation_id_or_member_epoch", -1),
        member_id=b.get("member_id") or "",
        group_instance_id=b.get("group_instance_id"),
        offsets=tuple(offsets),
    )
    return _commit(apis, req, errors, order)


async def _commit(
    apis: KafkaApis,
    req: OffsetCommitRequest,
    errors: dict[tuple[str, int], int],
    order: list[tuple[str, list[int]]],
) -> Body:
    if req.offsets:
        result = await apis.group_coordinator.commit_offsets(req)
        errors.update(result.errors)
    topics: list[dict[str, Any]] = [
        {
            "name": name,
            "partitions": [
                {"partition_index": i, "error_code": errors.get((name, i), ErrorCode.NO_ERROR)}
                for i in indexes
            ],
        }
        for name, indexes in order
    ]
    return {"throttle_time_ms": 0, "topics": topics}


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Read on the group (refused: every partition GROUP_AUTHORIZATION_FAILED), then Read on
    each topic (refused: each partition TOPIC_AUTHORIZATION_FAILED)."""
    topics = body.get("topics") or []
    if not authz.group(s, AclOperation.READ, body.get("group_id", "")):
        return Verdict.refused(
            body, {"topics": partition_errors(topics, GROUP_DENIED)}, ResourceType.GROUP
        )
    new, denied = authz.split_topics(s, body, AclOperation.READ)
    if not denied:
        return Verdict(body)
    entries = partition_errors(denied, TOPIC_DENIED)
    return with_denied_topics(new, len(denied), "topics", entries)
