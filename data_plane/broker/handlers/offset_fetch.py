"""OffsetFetch (9): a group's committed offsets (v8: several groups at once, KIP-709;
v9: a KIP-848 member names itself and its epoch, checked in a consumer-protocol group).

A partition without a committed offset answers offset -1 and empty metadata. ``topics`` null
(v2+) means every partition the group has an offset for. Errors (NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS...) are top level from v2 and per partition before (v0-1 have no
top-level error field). v7+ with ``require_stable`` (KIP-447; read_committed consumers send
it): a partition whose transactional offset commit is still pending answers
UNSTABLE_OFFSET_COMMIT, which the client retries, instead of an offset that may change.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from common.error_codes import ErrorCode
from common.protocol.api_keys import OFFSET_FETCH_GROUPS_SINCE
from common.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestGroupTopic,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponseGroupTopic,
    OffsetFetchResponseGroupTopicPartition,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
)
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.coordinator.group_metadata_records import OffsetAndMetadata
from data_plane.security.request_authz import (
    GROUP_DENIED,
    TOPIC_DENIED,
    AnyBody,
    RequestAuthorizer,
    Session,
    Verdict,
    append,
    keep_only,
    with_denied_topics,
)

# From OffsetFetch v2 the response has a top-level error_code.
TOP_LEVEL_ERROR_SINCE_VERSION = 2


@dataclass(frozen=True, slots=True)
class _Committed:
    """One partition's answer: its committed offset (-1, epoch -1 and empty metadata when
    there is none) and its error code."""

    index: int
    offset: int
    leader_epoch: int
    metadata: str
    error: int

    @staticmethod
    def of(index: int, committed: OffsetAndMetadata | None, error: int) -> _Committed:
        if committed is None:
            return _Committed(index, -1, -1, "", error)
        return _Committed(
            index, committed.offset, committed.leader_epoch, committed.metadata, error
        )


def handle(apis: KafkaApis, request: Request) -> OffsetFetchResponse:
    b = request.body
    if not isinstance(b, OffsetFetchRequest):
        raise TypeError(f"OffsetFetch handler given {type(b).__name__}")
    version = request.header.api_version
    stable = b.require_stable
    if version >= OFFSET_FETCH_GROUPS_SINCE:
        groups = []
        for g in b.groups:
            wanted = None if g.topics is None else _wanted(g.topics)
            by_topic, error = _group_offsets(
                apis, g.group_id, wanted, stable, True, g.member_id, g.member_epoch
            )
            groups.append(
                OffsetFetchResponseGroup(
                    group_id=g.group_id, topics=_group_topics(by_topic.items()), error_code=error
                )
            )
        return OffsetFetchResponse(throttle_time_ms=0, groups=groups)
    top_level = version >= TOP_LEVEL_ERROR_SINCE_VERSION
    wanted = None if b.topics is None else _wanted(b.topics)
    by_topic, error = _group_offsets(apis, b.group_id, wanted, stable, top_level)
    return OffsetFetchResponse(
        throttle_time_ms=0, topics=_topics(by_topic.items()), error_code=error
    )


def _wanted(
    topics: Sequence[OffsetFetchRequestTopic | OffsetFetchRequestGroupTopic],
) -> list[tuple[str, int]]:
    return [(t.name, i) for t in topics for i in t.partition_indexes]


def _group_offsets(
    apis: KafkaApis,
    group_id: str,
    wanted: list[tuple[str, int]] | None,
    require_stable: bool,
    top_level: bool,
    member_id: str | None = None,
    member_epoch: int = -1,
) -> tuple[dict[str, list[_Committed]], int]:
    """One group's answers by topic (every partition the group has an offset for when
    ``wanted`` is None) and its error code (a group error empties the topics when
    ``top_level``, else every partition carries it)."""
    result = apis.group_coordinator.coordinator.fetch_offsets(
        group_id, wanted, require_stable, member_id=member_id, member_epoch=member_epoch
    )
    if result.error_code != ErrorCode.NO_ERROR and top_level:
        return {}, result.error_code
    per_partition_error = result.error_code
    by_topic: dict[str, list[_Committed]] = {}
    keys = wanted if wanted is not None else sorted({*result.offsets, *result.unstable})
    for topic, index in keys:
        if (topic, index) in result.unstable:
            # The client retries until the pending transactional commit completes.
            entry = _Committed.of(index, None, ErrorCode.UNSTABLE_OFFSET_COMMIT)
        else:
            entry = _Committed.of(index, result.offsets.get((topic, index)), per_partition_error)
        by_topic.setdefault(topic, []).append(entry)
    return by_topic, ErrorCode.NO_ERROR


def _topics(by_topic: Iterable[tuple[str, list[_Committed]]]) -> list[OffsetFetchResponseTopic]:
    """The v0-7 ``topics`` answer: (topic, its partitions' answers) in order."""
    return [
        OffsetFetchResponseTopic(
            name=name,
            partitions=[
                OffsetFetchResponsePartition(
                    partition_index=c.index,
                    committed_offset=c.offset,
                    committed_leader_epoch=c.leader_epoch,
                    metadata=c.metadata,
                    error_code=c.error,
                )
                for c in committed
            ],
        )
        for name, committed in by_topic
    ]


def _group_topics(
    by_topic: Iterable[tuple[str, list[_Committed]]],
) -> list[OffsetFetchResponseGroupTopic]:
    """The ``topics`` answer of one group of v8+: (topic, its partitions' answers) in order."""
    return [
        OffsetFetchResponseGroupTopic(
            name=name,
            partitions=[
                OffsetFetchResponseGroupTopicPartition(
                    partition_index=c.index,
                    committed_offset=c.offset,
                    committed_leader_epoch=c.leader_epoch,
                    metadata=c.metadata,
                    error_code=c.error,
                )
                for c in committed
            ],
        )
        for name, committed in by_topic
    ]


def _refused(
    topics: Sequence[OffsetFetchRequestTopic | OffsetFetchRequestGroupTopic], code: int
) -> list[tuple[str, list[_Committed]]]:
    """Answers for ``topics`` (request entries): every listed partition ``code``."""
    return [
        (t.name, [_Committed(p, -1, -1, "", code) for p in t.partition_indexes]) for t in topics
    ]


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: Body) -> Verdict:
    """Describe on the group (refused: GROUP_AUTHORIZATION_FAILED; before v2 on every listed
    partition too), then Describe on each topic: listed topics refused are answered
    TOPIC_AUTHORIZATION_FAILED per partition; when all topics are asked for, the others are
    left out. v8+ (several groups) applies this per group (:func:`_authorize_groups`)."""
    if not isinstance(body, OffsetFetchRequest):
        raise TypeError(f"OffsetFetch rule given {type(body).__name__}")
    if version >= OFFSET_FETCH_GROUPS_SINCE:
        return _authorize_groups(authz, s, body)
    topics = body.topics
    if not authz.group(s, AclOperation.DESCRIBE, body.group_id):
        response = OffsetFetchResponse(topics=[], error_code=GROUP_DENIED)
        if version < TOP_LEVEL_ERROR_SINCE_VERSION:
            response.topics = _topics(_refused(topics or [], GROUP_DENIED))
        return Verdict.refused(body, response, ResourceType.GROUP)
    if topics is None:
        v = Verdict(body)
        v.finish = keep_only("topics", lambda t: authz.topic(s, AclOperation.DESCRIBE, t.name))
        return v
    new, denied = authz.split_topics(s, body, AclOperation.DESCRIBE)
    if not denied:
        return Verdict(body)
    entries = _topics(_refused(denied, TOPIC_DENIED))
    return with_denied_topics(new, len(denied), "topics", entries)


def _authorize_groups(authz: RequestAuthorizer, s: Session, body: OffsetFetchRequest) -> Verdict:
    """OffsetFetch v8+ (several groups): a group the principal may not describe is
    answered GROUP_DENIED; within the others, topics it may not describe are answered
    TOPIC_DENIED per partition (listed ones) or left out (all topics asked). The handler
    answers the kept groups in request order, so their fixes go by position."""
    kept: list[OffsetFetchRequestGroup] = []
    denied_groups: list[str] = []
    denied_topics: dict[int, list[OffsetFetchResponseGroupTopic]] = {}  # position in kept
    hide_in: set[int] = set()
    for g in body.groups:
        if not authz.group(s, AclOperation.DESCRIBE, g.group_id):
            denied_groups.append(g.group_id)
            continue
        if g.topics is None:
            hide_in.add(len(kept))
            kept.append(g)
            continue
        new, denied = authz.split_topics(s, g, AclOperation.DESCRIBE)
        if denied:
            denied_topics[len(kept)] = _group_topics(_refused(denied, TOPIC_DENIED))
        kept.append(new)
    if not denied_groups and not denied_topics and not hide_in:
        return Verdict(body)
    v = Verdict(dataclasses.replace(body, groups=kept))
    if denied_groups:
        v.note(ResourceType.GROUP, len(denied_groups))
    if denied_topics:
        v.note(ResourceType.TOPIC, sum(len(t) for t in denied_topics.values()))

    def finish(response: AnyBody) -> AnyBody:
        if not isinstance(response, OffsetFetchResponse):
            raise TypeError(f"OffsetFetch answered with {type(response).__name__}")
        for i, g in enumerate(response.groups):
            topics = g.topics
            if i in hide_in:
                topics = [t for t in topics if authz.topic(s, AclOperation.DESCRIBE, t.name)]
            g.topics = [*topics, *denied_topics.get(i, [])]
        entries = [
            OffsetFetchResponseGroup(group_id=gid, topics=[], error_code=GROUP_DENIED)
            for gid in denied_groups
        ]
        return append(response, "groups", entries)

    v.finish = finish
    return v
