"""Fetch (1): records straight from the segment files (os.sendfile), capped at the HW.

- Consumers (replica_id < 0) read below the high watermark, or with ``isolation_level`` 1
  (read_committed, v4+) below the last stable offset, answered with the aborted transactions
  the records may hold (``aborted_transactions``: producer id and first offset) so the client
  drops them; every answer from v4 carries the last stable offset. Follower replicas
  (replica_id >= 0) read to the log end (isolation LOG_END). A replica's fetch offset is its
  log end offset: the leader records it first (``ReplicaManager.record_follower_fetch``:
  caught-up time, HW = min LEO over the ISR, ISR expansion), so the answer already carries the
  HW this fetch allowed and parked acks=all produces complete at once.
- ``current_leader_epoch`` (v9+) is checked: older than ours FENCED_LEADER_EPOCH, newer
  UNKNOWN_LEADER_EPOCH.
- ``last_fetched_epoch`` (v12+, flexible): when the log does not hold that epoch up to the
  fetch offset (the fetcher's log diverged, KIP-595's check), the partition answers no records
  and ``diverging_epoch``: the largest epoch <= it this log has and where that epoch ends, to
  which the fetcher truncates.
- A full fetch's answer has every requested partition, in request order (kafka-python drops
  a response that misses one), each with its own error code.
- Sizes: each partition at most ``partition_max_bytes``; the whole response at most
  ``min(max_bytes, fetch.max.bytes)``; the first batch of the first partition with data is
  whole even above those limits (KIP-74), later partitions get what is left.
- Fetch sessions (v7+, KIP-227; :mod:`data_plane.broker.fetch_session`): epoch 0 asks for a
  session (its id is in the answer), an incremental fetch (epoch > 0) lists only changed
  partitions and is answered with only the partitions that have news. A session partition
  this request did not list is not read when it is *quiet* (:func:`_quiet`: still led here at
  the epoch the fetcher named, nothing to read at its position, the high watermark and log
  start offset last sent): it would be left out of the answer anyway, and a follower's long
  session of idle partitions then costs a comparison each instead of a read. A follower is
  still recorded as caught up on its quiet partitions. Session errors
  (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH) are top-level, with no partitions.
- Topic ids (v13+, KIP-516): topics are named by id; data_plane.broker.topic_ids resolved
  them to names before this handler. An id this broker does not know, or one that no longer
  names the topic it was looked up for (deleted, or deleted and re-created under the same
  name: also for partitions a session cached earlier), is answered UNKNOWN_TOPIC_ID, so a
  fetcher never reads a re-created topic's data as the old one's. v15+ carries the replica id
  in the tagged ``replica_state``; v16+ adds leader hints to not-the-leader errors (KIP-951,
  :mod:`data_plane.broker.leader_hints`); v17's ``replica_directory_id`` is not used.
- Delayed fetch: with fewer than ``min_bytes`` available, no error, and ``max_wait_ms`` > 0
  the request parks in the fetch purgatory until enough data arrives (an append or HW move on
  one of its partitions wakes it) or ``min(max_wait_ms, kraftlog.fetch.max.wait.cap.ms)``
  passes; the response is then built afresh.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from common.error_codes import ErrorCode
from common.errors import ApiError
from common.protocol.fetch_replica import fetch_replica_id
from common.protocol.topic_id_versions import ZERO_ID
from common.security.acl import AclOperation, ResourceType
from common.topic_partition import TopicPartition
from data_plane.broker.apis import Body, KafkaApis, Request, Response
from data_plane.broker.delayed import DelayedFetch, FetchPartitionStatus
from data_plane.broker.errors import BrokerRequestError
from data_plane.broker.fetch_session import CachedPartition, FetchContext, records_length
from data_plane.broker.leader_hints import FETCH_HINTS_SINCE, add_leader_hints
from data_plane.broker.partition import Partition
from data_plane.security.request_authz import (
    CLUSTER_DENIED,
    TOPIC_DENIED,
    RequestAuthorizer,
    Session,
    Verdict,
    append,
)
from data_plane.storage import FetchIsolation

# Fetch v0-2 have no response-wide max_bytes.
NO_RESPONSE_LIMIT = 2**31 - 1
# Fetch sessions (session_id, session_epoch, forgotten_topics_data) start at v7.
FIRST_SESSION_VERSION = 7
# isolation_level (v4+)
READ_UNCOMMITTED = 0
READ_COMMITTED = 1


def _context(
    apis: KafkaApis, request: Request, replica_id: int
) -> tuple[FetchContext, list[dict[str, Any]]]:
    """The fetch context, and the response entries of topics named by an id this broker does
    not know (v13+: UNKNOWN_TOPIC_ID for each of their partitions; they join no session)."""
    body = request.body
    unknown: list[dict[str, Any]] = []
    requested = []
    for t in body.get("topics") or ():
        name = t.get("topic")
        if name is None:  # v13+: data_plane.broker.topic_ids found no topic with this id
            unknown.append(_unknown_topic_id(t))
            continue
        topic_id = t.get("topic_id", ZERO_ID)
        for p in t.get("partitions") or ():
            if topic_id != ZERO_ID:
                p["topic_id"] = topic_id
            requested.append((TopicPartition(name, p["partition"]), p))
    if request.header.api_version < FIRST_SESSION_VERSION:
        partitions = [(tp, CachedPartition.from_request(p)) for tp, p in requested]
        return FetchContext(partitions=partitions), unknown
    forgotten: list[TopicPartition] = []
    forgotten_ids: list[tuple[bytes, int]] = []
    for t in body.get("forgotten_topics_data") or ():
        name = t.get("topic")
        for partition in t.get("partitions") or ():
            if name is not None:
                forgotten.append(TopicPartition(name, partition))
            else:
                forgotten_ids.append((t.get("topic_id", ZERO_ID), partition))
    ctx = apis.fetch_sessions.new_context(
        body.get("session_id", 0),
        body.get("session_epoch", -1),
        requested,
        forgotten,
        privileged=replica_id >= 0,
        now_ms=apis.clock_ms(),
        forgotten_ids=forgotten_ids,
    )
    return ctx, unknown


def _unknown_topic_id(t: dict[str, Any]) -> dict[str, Any]:
    return {
        "topic": "",
        "topic_id": t.get("topic_id", ZERO_ID),
        "partitions": [
            {
                "partition_index": p["partition"],
                "error_code": ErrorCode.UNKNOWN_TOPIC_ID,
                "high_watermark": -1,
                "records": None,
            }
            for p in t.get("partitions") or ()
        ],
    }


def _current_topic_id(apis: KafkaApis, ids: dict[str, bytes | None], name: str) -> bytes | None:
    """The id of the topic now named ``name`` (None: no such topic), memoised in ``ids``."""
    if name in ids:
        return ids[name]
    topic = apis.image.topic(name)
    ids[name] = found = None if topic is None else topic.topic_id.bytes
    return found


def _quiet(part: Partition | None, p: CachedPartition, isolation: FetchIsolation) -> bool:
    """Whether reading ``p`` on ``part`` now would give an incremental answer nothing to
    send: no records (the position is at the isolation's end and inside the log), no error
    (this broker leads at the epoch the fetcher named, if it named one), and the high
    watermark and log start offset the session last sent."""
    if part is None or not part.is_leader:
        return False
    if p.current_leader_epoch >= 0 and p.current_leader_epoch != part.leader_epoch:
        return False
    log = part.log
    start = log.log_start_offset
    if log.high_watermark != p.sent_high_watermark or start != p.sent_log_start_offset:
        return False
    offset = p.fetch_offset
    return start <= offset <= log.log_end_offset and offset >= part.isolation_end(isolation)


def _read_all(
    apis: KafkaApis,
    partitions: list[tuple[TopicPartition, CachedPartition]],
    response_max_bytes: int,
    isolation: FetchIsolation,
    replica_id: int = -1,
    unread: frozenset[TopicPartition] | None = None,
    candidates: set[TopicPartition] | None = None,
) -> tuple[list[tuple[TopicPartition, dict[str, Any]]], int, bool]:
    """Read every partition; return (partition, response entry) pairs, the bytes of records
    in them, and whether any partition carries an error. ``unread`` (an incremental fetch):
    the partitions that must be read even when quiet; every other quiet one is skipped (no
    entry; a follower's fetch of it is still recorded). ``candidates`` (with ``unread``):
    the only partitions that can have news; the others are skipped unchecked."""
    rm = apis.replica_manager
    remaining = min(response_max_bytes, apis.config.fetch_max_bytes)
    min_one_message = True
    total = 0
    any_error = False
    out = []
    # topic name -> the id the image has for it now: one image lookup per topic, not per
    # partition (a follower's session names every partition it follows here).
    ids: dict[str, bytes | None] = {}
    now_ms = rm.clock_ms() if replica_id >= 0 else 0  # when a follower fetched
    for tp, p in partitions:
        if unread is not None and tp not in unread:
            if candidates is not None and tp not in candidates:
                continue
            part = rm.get_partition(tp)
            if _quiet(part, p, isolation) and (
                p.topic_id == ZERO_ID or _current_topic_id(apis, ids, tp.topic) == p.topic_id
            ):
                if replica_id >= 0:
                    rm.record_follower_fetch(part, replica_id, p.fetch_offset, now_ms)
                continue
        entry: dict[str, Any] = {
            "partition_index": tp.partition,
            "error_code": ErrorCode.NO_ERROR,
            "high_watermark": -1,
            "last_stable_offset": -1,
            "log_start_offset": -1,
            "aborted_transactions": None,
            "preferred_read_replica": -1,
            "records": b"",
        }
        try:
            if p.topic_id != ZERO_ID and _current_topic_id(apis, ids, tp.topic) != p.topic_id:
                # The fetcher means another topic than the one now named so (deleted, or
                # deleted and re-created since it looked the id up).
                entry["error_code"] = ErrorCode.UNKNOWN_TOPIC_ID
                any_error = True
                out.append((tp, entry))
                continue
            part = rm.leader_partition(tp)
            if replica_id >= 0:
                part.check_leader_epoch(p.current_leader_epoch)
            entry["high_watermark"] = part.high_watermark
            entry["last_stable_offset"] = part.log.last_stable_offset
            entry["log_start_offset"] = part.log.log_start_offset
            if p.last_fetched_epoch >= 0:
                end = part.end_offset_for_epoch(p.last_fetched_epoch)
                if end.epoch < p.last_fetched_epoch or end.end_offset < p.fetch_offset:
                    # The fetcher's log diverged: it truncates before fetching again (and a
                    # follower's fetch offset is not a log end this leader may count).
                    entry["diverging_epoch"] = {"epoch": end.epoch, "end_offset": end.end_offset}
                    out.append((tp, entry))
                    continue
            if replica_id >= 0:
                rm.record_follower_fetch(part, replica_id, p.fetch_offset, now_ms)
            max_bytes = max(0, min(p.partition_max_bytes, remaining))
            result = part.read_records(
                p.fetch_offset,
                max_bytes,
                isolation,
                current_leader_epoch=p.current_leader_epoch,
                min_one_message=min_one_message,
            )
        except (BrokerRequestError, ApiError) as e:
            entry["error_code"] = e.error_code
            any_error = True
        else:
            entry["high_watermark"] = result.high_watermark
            entry["last_stable_offset"] = result.last_stable_offset
            entry["log_start_offset"] = result.log_start_offset
            if result.aborted_transactions is not None:
                entry["aborted_transactions"] = [
                    {"producer_id": t.producer_id, "first_offset": t.first_offset}
                    for t in result.aborted_transactions
                ]
            size = result.records.length
            if size:
                entry["records"] = result.records
                total += size
                remaining = max(0, remaining - size)
                min_one_message = False
        out.append((tp, entry))
    return out, total, any_error


def _body(responses: list[dict[str, Any]], session_id: int = 0, error_code: int = 0) -> Body:
    return {
        "throttle_time_ms": 0,
        "error_code": error_code,
        "session_id": session_id,
        "responses": responses,
    }


def handle(apis: KafkaApis, request: Request) -> Response:
    body = request.body
    replica_id = fetch_replica_id(request.header.api_version, body)
    ctx, unknown = _context(apis, request, replica_id)
    if ctx.error_code != ErrorCode.NO_ERROR:
        return _body([], error_code=ctx.error_code)
    if replica_id >= 0:
        isolation = FetchIsolation.LOG_END
    elif body.get("isolation_level", READ_UNCOMMITTED) == READ_COMMITTED:
        isolation = FetchIsolation.TXN_COMMITTED
    else:
        isolation = FetchIsolation.HIGH_WATERMARK
    response_max_bytes = body.get("max_bytes", NO_RESPONSE_LIMIT)
    # The partitions this request moved are read in full (their diverging-epoch check).
    unread = ctx.listed if ctx.incremental else None
    entries, total, any_error = _read_all(
        apis, ctx.partitions, response_max_bytes, isolation, replica_id, unread
    )
    max_wait_ms = min(max(0, body.get("max_wait_ms", 0)), apis.config.fetch_max_wait_cap_ms)
    min_bytes = body.get("min_bytes", 1)
    hints = request.listener_name if request.header.api_version >= FETCH_HINTS_SINCE else None
    if any_error or unknown or max_wait_ms == 0 or total >= min_bytes or not ctx.partitions:
        return _answer(apis, ctx, entries, unknown, hints)
    statuses = [
        FetchPartitionStatus(tp, p.fetch_offset, p.partition_max_bytes) for tp, p in ctx.partitions
    ]
    # What each partition held: the read ones as read, every skipped (quiet) one nothing.
    had_news = {tp: records_length(entry["records"]) for tp, entry in entries}
    return _delayed(
        apis, ctx, response_max_bytes, isolation, statuses, max_wait_ms, min_bytes, hints, had_news
    )


def _answer(
    apis: KafkaApis,
    ctx: FetchContext,
    entries: list[tuple[TopicPartition, dict[str, Any]]],
    unknown: list[dict[str, Any]],
    hints_listener: str | None,
) -> Body:
    """The response; for v16+ (``hints_listener`` set) with leader hints (KIP-951)."""
    body = _body(ctx.finish(entries) + unknown, ctx.response_session_id)
    if hints_listener is not None:
        add_leader_hints(apis.image, hints_listener, body, entries)
    return body


def _delayed(
    apis: KafkaApis,
    ctx: FetchContext,
    response_max_bytes: int,
    isolation: FetchIsolation,
    statuses: list[FetchPartitionStatus],
    max_wait_ms: int,
    min_bytes: int,
    hints_listener: str | None,
    had_news: dict[TopicPartition, int],
) -> Coroutine[Any, Any, Body]:
    """Park until ``min_bytes`` can be read (``had_news``: the bytes the partitions the
    request read held; every other one held none); return the wait for the answer.

    The operation is parked here, in the same step of the event loop as the read that found
    too few bytes, not when the returned coroutine first runs: that is a later step, and an
    append in between would wake nothing while ``had_news`` still said the partition was
    empty, so the fetch would sit until another partition moved or its wait ran out. A wait
    that never starts (its connection closed first) leaves the operation parked until its
    deadline, which bounds it."""
    done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    def on_done(forced: bool) -> None:
        if not done.done():
            done.set_result(forced)

    op = DelayedFetch(
        max_wait_ms, min_bytes, statuses, isolation, apis.replica_manager, on_done, had_news
    )
    apis.fetch_purgatory.try_complete_else_watch(op, [s.tp for s in statuses])
    return _answer_when_done(
        apis, ctx, response_max_bytes, isolation, hints_listener, had_news, op, done
    )


async def _answer_when_done(
    apis: KafkaApis,
    ctx: FetchContext,
    response_max_bytes: int,
    isolation: FetchIsolation,
    hints_listener: str | None,
    had_news: dict[TopicPartition, int],
    op: DelayedFetch,
    done: asyncio.Future[bool],
) -> Body:
    try:
        await done
    finally:
        apis.fetch_purgatory.cancel(op)  # a no-op once completed; frees it on disconnect
    # An incremental answer re-reads only what can have news: the partitions that had some
    # (too few bytes) when the request came and those whose change woke the fetch. Every
    # other one was quiet then, and a change to it would have woken the fetch under its key.
    candidates = None
    if ctx.incremental:
        candidates = op.woken
        candidates.update(had_news)
    entries, _, _ = _read_all(
        apis,
        ctx.partitions,
        response_max_bytes,
        isolation,
        unread=frozenset() if ctx.incremental else None,
        candidates=candidates,
    )
    return _answer(apis, ctx, entries, [], hints_listener)


def authorize(authz: RequestAuthorizer, s: Session, version: int, body: dict[str, Any]) -> Verdict:
    """Consumers: Read on each topic (refused topics: each partition TOPIC_AUTHORIZATION_FAILED).
    Follower replicas (replica_id >= 0): ClusterAction on the cluster (refused: every
    partition CLUSTER_AUTHORIZATION_FAILED, and the top-level error from v7). Every requested
    partition is answered: kafka-python drops a response that omits one."""
    topics = body.get("topics") or []
    if fetch_replica_id(version, body) >= 0:
        if authz.cluster(s, AclOperation.CLUSTER_ACTION):
            return Verdict(body)
        v = Verdict({**body, "topics": []})
        v.note(ResourceType.CLUSTER)
        v.finish = lambda r: _denied(r, topics, CLUSTER_DENIED, version)
        return v
    new, denied = authz.split_topics(s, body, AclOperation.READ, name_key="topic")
    if not denied:
        return Verdict(body)
    v = Verdict(new)
    v.note(ResourceType.TOPIC, len(denied))
    v.finish = lambda r: _denied(r, denied, TOPIC_DENIED, version)
    return v


def _denied(
    response: dict[str, Any], denied: list[dict[str, Any]], code: int, version: int
) -> dict[str, Any]:
    entries = [
        {
            "topic": t.get("topic") or "",
            "topic_id": t.get("topic_id") or ZERO_ID,
            "partitions": [
                {
                    "partition_index": p.get("partition", 0),
                    "error_code": code,
                    "high_watermark": -1,
                    "records": None,
                }
                for p in t.get("partitions") or []
            ],
        }
        for t in denied
    ]
    if code == CLUSTER_DENIED and version >= FIRST_SESSION_VERSION:
        response["error_code"] = code
    return append(response, "responses", entries)
