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

from typing import Any

from common.error_codes import ErrorCode
from common.protocol.api_keys import OFFSET_FETCH_GROUPS_SINCE
from common.security.acl import AclOperation, ResourceType
from data_plane.broker.apis import Body, KafkaApis, Request
from data_plane.security.request_authz import (
    GROUP_DENIED,
    TOPIC_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
    append,
    keep_only,
    with_denied_topics,
)

# From OffsetFetch v2 the response has a top-level error_code.
TOP_LEVEL_ERROR_SINCE_VERSION = 2


def _partition(index: int, offset: Any, error: int) -> dict[str, Any]:
    return {
        "partition_index": index,
        "committed_offset": offset.offset if offset is not None else -1,
        "committed_leader_epoch": offset.leader_epoch if offset is not None else -1,
        "metadata": offset.metadata if offset is not None else "",
        "error_code": error,
    }


def handle(apis: KafkaApis, request: Request) -> Body:
    b = request.body
    version = request.header.api_version
    stable = bool(b.get("require_stable"))
    if version >= OFFSET_FETCH_GROUPS_SINCE:
        groups = []
        for g in b.get("groups") or ():
            topics, error = _group_offsets(
                apis,
                g["group_id"] or "",
                g.get("topics"),
                stable,
                True,
                g.get("member_id"),
                g.get("member_epoch", -1),
            )
            groups.append({"group_id": g["group_id"], "topics": topics, "error_code": error})
        return {"throttle_time_ms": 0, "groups": groups}
    top_level = version >= TOP_LEVEL_ERROR_SINCE_VERSION
    topics, error = _group_offsets(apis, b["group_id"] or "", b.get("topics"), stable, top_level)
    return {"throttle_time_ms": 0, "topics": topics, "error_code": error}


def _group_offsets(
    apis: KafkaApis,
    group_id: str,
    requested: list[dict[str, Any]] | None,
    require_stable: bool,
    top_level: bool,
    member_id: str | None = None,
    member_epoch: int = -1,
) -> tuple[list[dict[str, Any]], int]:
    """The ``topics`` answer for one group and its error code (a group error empties the
    topics when ``top_level``, else every partition carries it)."""
    wanted = (
        None
        if requested is None
        else [(t["name"] or "", i) for t in requested for i in t.get("partition_indexes") or ()]
    )
    result = apis.group_coordinator.coordinator.fetch_offsets(
        group_id, wanted, require_stable, member_id=member_id, member_epoch=member_epoch
    )
    if result.error_code != ErrorCode.NO_ERROR and top_level:
        return [], result.error_code
    per_partition_error = result.error_code
    by_topic: dict[str, list[dict[str, Any]]] = {}
    keys = wanted if wanted is not None else sorted({*result.offsets, *result.unstable})
    for topic, index in keys:
        if (topic, index) in result.unstable:
            # The client retries until the pending transactional commit completes.
            entry = _partition(index, None, ErrorCode.UNSTABLE_OFFSET_COMMIT)
        else:
            entry = _partition(index, result.offsets.get((topic, index)), per_partition_error)
        by_topic.setdefault(topic, []).append(entry)
    topics = [{"name": n, "partitions": parts} for n, parts in by_topic.items()]
    return topics, ErrorCode.NO_ERROR


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Describe on the group (refused: GROUP_AUTHORIZATION_FAILED; before v2 on every listed
    partition too), then Describe on each topic: listed topics refused are answered
    TOPIC_AUTHORIZATION_FAILED per partition; when all topics are asked for, the others are
    left out. v8+ (several groups) applies this per group (:func:`_authorize_groups`)."""
    if version >= OFFSET_FETCH_GROUPS_SINCE:
        return _authorize_groups(authz, s, body)
    topics = body.get("topics")
    if not authz.group(s, AclOperation.DESCRIBE, body.get("group_id", "")):
        response: dict[str, Any] = {"topics": [], "error_code": GROUP_DENIED}
        if version < 2:
            response["topics"] = _denied(topics or [], GROUP_DENIED)
        return Verdict.refused(body, response, ResourceType.GROUP)
    if topics is None:
        v = Verdict(body)
        v.finish = keep_only(
            "topics", lambda t: authz.topic(s, AclOperation.DESCRIBE, t.get("name", ""))
        )
        return v
    new, denied = authz.split_topics(s, body, AclOperation.DESCRIBE)
    if not denied:
        return Verdict(body)
    return with_denied_topics(new, len(denied), "topics", _denied(denied, TOPIC_DENIED))


def _authorize_groups(authz: RequestAuthorizer, s: Session, body: dict[str, Any]) -> Verdict:
    """OffsetFetch v8+ (several groups): a group the principal may not describe is
    answered GROUP_DENIED; within the others, topics it may not describe are answered
    TOPIC_DENIED per partition (listed ones) or left out (all topics asked). The handler
    answers the kept groups in request order, so their fixes go by position."""
    kept: list[dict[str, Any]] = []
    denied_groups: list[str] = []
    denied_topics: dict[int, list[dict[str, Any]]] = {}  # position in kept -> entries
    hide_in: set[int] = set()
    for g in body.get("groups") or []:
        gid = g.get("group_id", "")
        if not authz.group(s, AclOperation.DESCRIBE, gid):
            denied_groups.append(gid)
            continue
        if g.get("topics") is None:
            hide_in.add(len(kept))
            kept.append(g)
            continue
        new, denied = authz.split_topics(s, g, AclOperation.DESCRIBE)
        if denied:
            denied_topics[len(kept)] = _denied(denied, TOPIC_DENIED)
        kept.append(new)
    if not denied_groups and not denied_topics and not hide_in:
        return Verdict(body)
    v = Verdict({**body, "groups": kept})
    if denied_groups:
        v.note(ResourceType.GROUP, len(denied_groups))
    if denied_topics:
        v.note(ResourceType.TOPIC, sum(len(t) for t in denied_topics.values()))

    def finish(response: dict[str, Any]) -> dict[str, Any]:
        for i, g in enumerate(response.get("groups") or []):
            topics = list(g.get("topics") or [])
            if i in hide_in:
                topics = [
                    t for t in topics if authz.topic(s, AclOperation.DESCRIBE, t.get("name", ""))
                ]
            g["topics"] = topics + denied_topics.get(i, [])
        entries = [
            {"group_id": gid, "topics": [], "error_code": GROUP_DENIED} for gid in denied_groups
        ]
        return append(response, "groups", entries)

    v.finish = finish
    return v


def _denied(topics: list[dict[str, Any]], code: int) -> list[dict[str, Any]]:
    """OffsetFetch answers for ``topics`` (request entries): every listed partition ``code``."""
    return [
        {
            "name": t.get("name", ""),
            "partitions": [
                {
                    "partition_index": p,
                    "committed_offset": -1,
                    "metadata": "",
                    "error_code": code,
                }
                for p in t.get("partition_indexes") or []
            ],
        }
        for t in topics
    ]
