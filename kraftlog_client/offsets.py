"""ListOffsets for the consumer and the admin client: offsets by timestamp, by leader.

Timestamps -2 (earliest) and -1 (latest: the high watermark) are Kafka's special values; any
other value asks for the first offset whose timestamp is at or after it (-1 offset if none).
Requests go to each partition's leader; routing errors refresh metadata and retry until the
deadline. Runs on the calling thread through :meth:`NetworkClient.request`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import NamedTuple

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.topic_partition import TopicPartition
from kraftlog_client.errors import KafkaError, KafkaTimeoutError
from kraftlog_client.metadata import REFRESH_ERRORS
from kraftlog_client.network_client import NetworkClient


class OffsetAndTimestamp(NamedTuple):
    offset: int
    timestamp: int


def list_offsets(
    client: NetworkClient,
    timestamps: Mapping[TopicPartition, int],
    timeout_ms: float,
    retry_backoff_ms: int,
    *,
    isolation_level: int = 0,
) -> dict[TopicPartition, OffsetAndTimestamp]:
    """Resolve each partition's timestamp to an offset (with ``isolation_level`` 1, "latest"
    is the last stable offset, not the high watermark); raises :class:`KafkaError` for a
    non-retriable partition error and :class:`KafkaTimeoutError` at the deadline."""
    deadline = time.monotonic() + timeout_ms / 1000.0
    pending = dict(timestamps)
    out: dict[TopicPartition, OffsetAndTimestamp] = {}
    metadata = client.metadata
    last_error: Exception | None = None
    while pending:
        remaining_ms = (deadline - time.monotonic()) * 1000.0
        if remaining_ms <= 0:
            raise KafkaTimeoutError(
                f"ListOffsets for {len(pending)} partition(s) did not finish in {timeout_ms} ms"
                + (f" (last error {last_error})" if last_error else "")
            )
        missing = {tp.topic for tp in pending if metadata.leader_for(tp) is None}
        if missing:
            metadata.add_interest(missing)
            try:
                client.fetch_metadata(sorted(metadata.interest), remaining_ms)
            except KafkaError as e:
                last_error = e
            if any(metadata.leader_for(tp) is None for tp in pending):
                time.sleep(min(retry_backoff_ms / 1000.0, max(0.0, remaining_ms / 1000.0)))
                last_error = last_error or KafkaError(ErrorCode.LEADER_NOT_AVAILABLE)
                continue
        by_leader: dict[int, dict[str, list[dict[str, int]]]] = {}
        for tp, ts in pending.items():
            leader = metadata.leader_for(tp)
            if leader is None:
                continue
            by_leader.setdefault(leader, {}).setdefault(tp.topic, []).append(
                {"partition_index": tp.partition, "current_leader_epoch": -1, "timestamp": ts}
            )
        retry = False
        for leader, topics in by_leader.items():
            body = {
                "replica_id": -1,
                "isolation_level": isolation_level,
                "topics": [{"name": t, "partitions": parts} for t, parts in topics.items()],
            }
            try:
                response = client.request(
                    leader, ApiKey.LIST_OFFSETS, body, (deadline - time.monotonic()) * 1000.0
                )
            except KafkaError as e:
                last_error = e
                if not e.retriable:
                    raise
                metadata.request_update()
                retry = True
                continue
            for topic in response.get("topics", []):
                for part in topic.get("partitions", []):
                    tp = TopicPartition(topic["name"], part["partition_index"])
                    code = part.get("error_code", 0)
                    if code == 0:
                        out[tp] = OffsetAndTimestamp(
                            part.get("offset", -1), part.get("timestamp", -1)
                        )
                        pending.pop(tp, None)
                    elif code in REFRESH_ERRORS or KafkaError(code).retriable:
                        last_error = KafkaError(code, f"{tp.topic}-{tp.partition}")
                        metadata.request_update()
                        retry = True
                    else:
                        raise KafkaError(code, f"ListOffsets {tp.topic}-{tp.partition}")
        if retry and pending:
            # Forget stale leaders so the next round asks the cluster again.
            try:
                client.fetch_metadata(
                    sorted({tp.topic for tp in pending}),
                    max(1.0, (deadline - time.monotonic()) * 1000.0),
                )
            except KafkaError as e:
                last_error = e
            time.sleep(min(retry_backoff_ms / 1000.0, max(0.0, deadline - time.monotonic())))
    return out
