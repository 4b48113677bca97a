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

import dataclasses
from collections.abc import Sequence

from common.protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestTopic,
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.coordinator import messages as coordinator
from data_plane.security.request_authz import (
    GROUP_DENIED,
    TOPIC_DENIED,
    TXN_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
    with_denied,
)


async def handle(apis: KafkaApis, request: Request) -> TxnOffsetCommitResponse:
    body = request.body
    if not isinstance(body, TxnOffsetCommitRequest):
        raise TypeError(f"TxnOffsetCommit handler given {type(body).__name__}")
    offsets = tuple(
        (
            (t.name, p.partition_index),
            p.committed_offset,
            p.committed_leader_epoch,
            p.committed_metadata,
        )
        for t in body.topics
        for p in t.partitions
    )
    req = coordinator.TxnOffsetCommitRequest(
        transactional_id=body.transactional_id,
        group_id=body.group_id,
        producer_id=body.producer_id,
        producer_epoch=body.producer_epoch,
        offsets=offsets,
        generation_id=body.generation_id,
        member_id=body.member_id,
        group_instance_id=body.group_instance_id,
    )
    result = await apis.group_coordinator.txn_commit_offsets(req)
    by_topic: dict[str, list[TxnOffsetCommitResponsePartition]] = {}
    for (topic, partition), code in result.errors.items():
        by_topic.setdefault(topic, []).append(
            TxnOffsetCommitResponsePartition(partition_index=partition, error_code=int(code))
        )
    return TxnOffsetCommitResponse(
        throttle_time_ms=0,
        topics=[TxnOffsetCommitResponseTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
    )


def _errors(
    topics: Sequence[TxnOffsetCommitRequestTopic], code: int
) -> list[TxnOffsetCommitResponseTopic]:
    """Answers for ``topics``: every partition ``code``."""
    return [
        TxnOffsetCommitResponseTopic(
            name=t.name,
            partitions=[
                TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
                for p in t.partitions
            ],
        )
        for t in topics
    ]


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Write on the transactional id (refused: every partition
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then what an OffsetCommit needs: Read on the group
    (refused: every partition GROUP_AUTHORIZATION_FAILED) and on each topic (refused: each
    partition TOPIC_AUTHORIZATION_FAILED, the other topics committed)."""
    if not isinstance(body, TxnOffsetCommitRequest):
        raise TypeError(f"TxnOffsetCommit rule given {type(body).__name__}")
    if not authz.transactional_id(s, AclOperation.WRITE, body.transactional_id):
        return Verdict.refused(
            body,
            TxnOffsetCommitResponse(topics=_errors(body.topics, TXN_DENIED)),
            ResourceType.TRANSACTIONAL_ID,
        )
    if not authz.group(s, AclOperation.READ, body.group_id):
        return Verdict.refused(
            body,
            TxnOffsetCommitResponse(topics=_errors(body.topics, GROUP_DENIED)),
            ResourceType.GROUP,
        )
    readable: dict[str, bool] = {}
    for t in body.topics:
        if t.name not in readable:
            readable[t.name] = authz.topic(s, AclOperation.READ, t.name)
    denied = [t for t in body.topics if not readable[t.name]]
    if not denied:
        return Verdict(body)
    kept = dataclasses.replace(body, topics=[t for t in body.topics if readable[t.name]])
    entries = _errors(denied, TOPIC_DENIED)
    return with_denied(kept, ResourceType.TOPIC, len(denied), "topics", entries)
