"""OffsetFetch (9), v0-9: a group's committed offsets (v8: several groups at once, KIP-709;
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
from data_plane.broker.apis import Body, KafkaApis, Request

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
