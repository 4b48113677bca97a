"""TxnOffsetCommit (28): a transactional producer commits a consumer group's offsets in
its transaction (after AddOffsetsToTxn). Sent to the group's coordinator; the offsets are
written to ``__consumer_offsets`` in the producer's transaction and count only once its
COMMIT marker is written there (an ABORT drops them); OffsetFetch does not see them before.
Errors as OffsetCommit's (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
OFFSET_METADATA_TOO_LARGE...), plus INVALID_PRODUCER_EPOCH for a fenced producer. v3
(flexible) carries the consumer's group generation, member id and instance id (KIP-447): the
group coordinator checks them as for OffsetCommit (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
FENCED_INSTANCE_ID), so a zombie consumer's producer cannot commit; v0-2 carry none.
"""

from __future__ import annotations

from typing import Any

from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.coordinator.messages import TxnOffsetCommitRequest
from data_plane.security.request_authz import (
    GROUP_DENIED,
    TOPIC_DENIED,
    TXN_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
    partition_errors,
    with_denied_topics,
)


async def handle(apis: KafkaApis, request: Request) -> Body:
    body = request.body
    offsets = tuple(
        (
            (t["name"], p["partition_index"]),
            p["committed_offset"],
            p.get("committed_leader_epoch", -1),
            p.get("committed_metadata"),
        )
        for t in body.get("topics") or ()
        for p in t.get("partitions") or ()
    )
    req = TxnOffsetCommitRequest(
        transactional_id=body["transactional_id"],
        group_id=body["group_id"],
        producer_id=body["producer_id"],
        producer_epoch=body["producer_epoch"],
        offsets=offsets,
        generation_id=body.get("generation_id", -1),
        member_id=body.get("member_id") or "",
        group_instance_id=body.get("group_instance_id"),
    )
    result = await apis.group_coordinator.txn_commit_offsets(req)
    by_topic: dict[str, list[dict[str, int]]] = {}
    for (topic, partition), code in result.errors.items():
        by_topic.setdefault(topic, []).append(
            {"partition_index": partition, "error_code": int(code)}
        )
    return {
        "throttle_time_ms": 0,
        "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
    }


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Write on the transactional id (refused: every partition
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then what an OffsetCommit needs: Read on the group
    (refused: every partition GROUP_AUTHORIZATION_FAILED) and on each topic (refused: each
    partition TOPIC_AUTHORIZATION_FAILED), as :func:`offset_commit.authorize`."""
    if not authz.transactional_id(s, AclOperation.WRITE, body.get("transactional_id", "")):
        return Verdict.refused(
            body,
            {"topics": partition_errors(body.get("topics") or [], TXN_DENIED)},
            ResourceType.TRANSACTIONAL_ID,
        )
    # OffsetCommit's rule reads typed OffsetCommit bodies; this body is a dict.
    if not authz.group(s, AclOperation.READ, body.get("group_id", "")):
        return Verdict.refused(
            body,
            {"topics": partition_errors(body.get("topics") or [], GROUP_DENIED)},
            ResourceType.GROUP,
        )
    new, denied = authz.split_topics(s, body, AclOperation.READ)
    if not denied:
        return Verdict(body)
    return with_denied_topics(new, len(denied), "topics", partition_errors(denied, TOPIC_DENIED))
