"""Fetch (1): records straight from the segment files (os.sendfile), capped at the HW.

- Consumers (replica_id < 0) read below the high watermark; follower replicas
  (replica_id >= 0) read to the log end (isolation LOG_END). A replica's fetch offset is its
  log end offset: the leader records it first (``ReplicaManager.record_follower_fetch``:
  caught-up time, HW = min LEO over the ISR, ISR expansion), so the answer already carries the
  HW this fetch allowed and parked acks=all produces complete at once.
- ``current_leader_epoch`` (v9+) is checked: older than ours FENCED_LEADER_EPOCH, newer
  UNKNOWN_LEADER_EPOCH.
- Every requested partition is in the response, in request order (kafka-python drops a
  response that misses one), each with its own error code.
- Sizes: each partition at most ``partition_max_bytes``; the whole response at most
  ``min(max_bytes, fetch.max.bytes)``; the first batch of the first partition with data is
  whole even above those limits (KIP-74), later partitions get what is left.
- Fetch sessions are not implemented: session id 0 / epoch -1 or 0 is a full fetch answered
  sessionless (session_id 0); an incremental fetch (a session id or an epoch > 0) gets
  FETCH_SESSION_ID_NOT_FOUND and the client falls back to full fetches.
- Delayed fetch: with fewer than ``min_bytes`` available, no error, and ``max_wait_ms`` > 0
  the request parks in the fetch purgatory until enough data arrives (an append or HW move on
  one of its partitions wakes it) or ``min(max_wait_ms, kraftlog.fetch.max.wait.cap.ms)``
  passes; the response is then built afresh.
"""

from __future__ import annotations

import asyncio
from typing import Any

from data_plane.broker.apis import Body, KafkaApis, Request, Response
from data_plane.broker.delayed import DelayedFetch, FetchPartitionStatus
from data_plane.broker.errors import BrokerRequestError
from data_plane.protocol.errors import ErrorCode
from data_plane.storage import FetchIsolation, StorageError
from metadata.image import TopicPartition

# Fetch v0-2 have no response-wide max_bytes.
NO_RESPONSE_LIMIT = 2**31 - 1


def _requested(body: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    return [(t["topic"], list(t.get("partitions") or ())) for t in body.get("topics") or ()]


def _read_all(
    apis: KafkaApis, body: dict[str, Any], isolation: FetchIsolation, replica_id: int = -1
) -> tuple[list[dict[str, Any]], int, bool]:
    """Build the ``responses`` array; return it, the bytes of records in it, and whether any
    partition carries an error."""
    rm = apis.replica_manager
    remaining = min(body.get("max_bytes", NO_RESPONSE_LIMIT), apis.config.fetch_max_bytes)
    min_one_message = True
    total = 0
    any_error = False
    responses = []
    for name, partitions in _requested(body):
        out = []
        for p in partitions:
            tp = TopicPartition(name, p["partition"])
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
                part = rm.leader_partition(tp)
                if replica_id >= 0:
                    part.check_leader_epoch(p.get("current_leader_epoch", -1))
                    rm.record_follower_fetch(part, replica_id, p["fetch_offset"])
                entry["high_watermark"] = part.high_watermark
                entry["last_stable_offset"] = part.high_watermark
                entry["log_start_offset"] = part.log.log_start_offset
                max_bytes = max(0, min(p.get("partition_max_bytes", 0), remaining))
                result = part.read_records(
                    p["fetch_offset"],
                    max_bytes,
                    isolation,
                    current_leader_epoch=p.get("current_leader_epoch", -1),
                    min_one_message=min_one_message,
                )
            except (BrokerRequestError, StorageError) as e:
                entry["error_code"] = e.error_code
                any_error = True
            else:
                entry["high_watermark"] = result.high_watermark
                entry["last_stable_offset"] = result.high_watermark
                entry["log_start_offset"] = result.log_start_offset
                size = result.records.length
                if size:
                    entry["records"] = result.records
                    total += size
                    remaining = max(0, remaining - size)
                    min_one_message = False
            out.append(entry)
        responses.append({"topic": name, "partitions": out})
    return responses, total, any_error


def _body(responses: list[dict[str, Any]]) -> Body:
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NO_ERROR,
        "session_id": 0,
        "responses": responses,
    }


def handle(apis: KafkaApis, request: Request) -> Response:
    body = request.body
    if body.get("session_id", 0) != 0 or body.get("session_epoch", -1) > 0:
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
            "session_id": 0,
            "responses": [],
        }
    replica_id = body.get("replica_id", -1)
    isolation = FetchIsolation.LOG_END if replica_id >= 0 else FetchIsolation.HIGH_WATERMARK
    responses, total, any_error = _read_all(apis, body, isolation, replica_id)
    max_wait_ms = min(max(0, body.get("max_wait_ms", 0)), apis.config.fetch_max_wait_cap_ms)
    min_bytes = body.get("min_bytes", 1)
    if any_error or max_wait_ms == 0 or total >= min_bytes or not responses:
        return _body(responses)
    statuses = [
        FetchPartitionStatus(
            TopicPartition(name, p["partition"]), p["fetch_offset"], p.get("partition_max_bytes", 0)
        )
        for name, partitions in _requested(body)
        for p in partitions
    ]
    return _delayed(apis, body, isolation, statuses, max_wait_ms, min_bytes)


async def _delayed(
    apis: KafkaApis,
    body: dict[str, Any],
    isolation: FetchIsolation,
    statuses: list[FetchPartitionStatus],
    max_wait_ms: int,
    min_bytes: int,
) -> Body:
    done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    def on_done(forced: bool) -> None:
        if not done.done():
            done.set_result(forced)

    op = DelayedFetch(max_wait_ms, min_bytes, statuses, isolation, apis.replica_manager, on_done)
    apis.fetch_purgatory.try_complete_else_watch(op, [s.tp for s in statuses])
    try:
        await done
    finally:
        apis.fetch_purgatory.cancel(op)  # a no-op once completed; frees it on disconnect
    responses, _, _ = _read_all(apis, body, isolation)
    return _body(responses)
