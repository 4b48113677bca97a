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

from collections.abc import Sequence

from common.error_codes import ErrorCode
from common.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request, Response
from data_plane.coordinator import messages as group_messages
from data_plane.security.request_authz import (
    GROUP_DENIED,
    TOPIC_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
    with_denied_topics,
)


def handle(apis: KafkaApis, request: Request) -> Response:
    b = request.body
    if not isinstance(b, OffsetCommitRequest):
        raise TypeError(f"OffsetCommit handler given {type(b).__name__}")
    image = apis.image
    order: list[tuple[str, list[int]]] = []
    errors: dict[tuple[str, int], int] = {}
    offsets = []
    for t in b.topics:
        name = t.name
        known = image.topic(name)
        indexes = []
        for p in t.partitions:
            tp = (name, p.partition_index)
            indexes.append(tp[1])
            if known is None or known.partition(tp[1]) is None:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            offsets.append((tp, p.committed_offset, p.committed_leader_epoch, p.committed_metadata))
        order.append((name, indexes))
    req = group_messages.OffsetCommitRequest(
        group_id=b.group_id,
        generation_id=b.generation_id_or_member_epoch,
        member_id=b.member_id,
        group_instance_id=b.group_instance_id,
        offsets=tuple(offsets),
    )
    return _commit(apis, req, errors, order)


async def _commit(
    apis: KafkaApis,
    req: group_messages.OffsetCommitRequest,
    errors: dict[tuple[str, int], int],
    order: list[tuple[str, list[int]]],
) -> OffsetCommitResponse:
    if req.offsets:
        result = await apis.group_coordinator.commit_offsets(req)
        errors.update(result.errors)
    topics = [
        OffsetCommitResponseTopic(
            name=name,
            partitions=[
                OffsetCommitResponsePartition(
                    partition_index=i, error_code=errors.get((name, i), ErrorCode.NO_ERROR)
                )
                for i in indexes
            ],
        )
        for name, indexes in order
    ]
    return OffsetCommitResponse(throttle_time_ms=0, topics=topics)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Read on the group (refused: every partition GROUP_AUTHORIZATION_FAILED), then Read on
    each topic (refused: each partition TOPIC_AUTHORIZATION_FAILED)."""
    if not isinstance(body, OffsetCommitRequest):
        raise TypeError(f"OffsetCommit rule given {type(body).__name__}")
    if not authz.group(s, AclOperation.READ, body.group_id):
        refused = OffsetCommitResponse(topics=_answers(body.topics, GROUP_DENIED))
        return Verdict.refused(body, refused, ResourceType.GROUP)
    new, denied = authz.split_topics(s, body, AclOperation.READ)
    if not denied:
        return Verdict(body)
    return with_denied_topics(new, len(denied), "topics", _answers(denied, TOPIC_DENIED))


def _answers(
    topics: Sequence[OffsetCommitRequestTopic], code: int
) -> list[OffsetCommitResponseTopic]:
    """Answers for ``topics`` (request entries): every partition ``code``."""
    return [
        OffsetCommitResponseTopic(
            name=t.name,
            partitions=[
                OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
                for p in t.partitions
            ],
        )
        for t in topics
    ]
