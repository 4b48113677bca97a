"""The data source's I/O: metadata, ListOffsets and Fetch against a kraftlog cluster.

:class:`SourceClient` wraps the native client's :class:`NetworkClient` (one selector, blocking
requests bounded by a deadline). It answers the planner's questions (which partitions match the
subscription, their log start offset and high watermark, offsets for timestamps) and reads one
:class:`OffsetRange` from the partition's leader with Fetch as raw payloads:
``kafka.isolation.level`` read_committed (the default) plans and reads up to the last stable
offset, with the aborted transactions each answer lists (the decoders drop their records);
read_uncommitted up to the high watermark.

The reader asks for the offset after the whole batches it got, and sends that Fetch before
handing the payload over (one request in flight, overlapping the caller's decoding); routing
errors (leader moved) refresh metadata and retry until the range's
deadline; OFFSET_OUT_OF_RANGE below the log start is data loss (raised, or skipped when
failOnDataLoss is false).

Created inside each Spark task (connections are never pickled); not thread-safe.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.topic_partition import TopicPartition
from kraftlog_client.config import ConsumerConfig, client_config
from kraftlog_client.errors import KafkaError, KafkaTimeoutError
from kraftlog_client.metadata import REFRESH_ERRORS
from kraftlog_client.network_client import NetworkClient
from kraftlog_client.offsets import list_offsets
from spark_integration.offsets import EARLIEST_OFFSET, LATEST_OFFSET
from spark_integration.options import Subscription
from spark_integration.planning import DataLossError, OffsetRange, PartitionBounds

# Larger than the consumer's 1 MiB default: fewer round trips per range (memory is bounded by
# one response per task).
DEFAULT_PARTITION_FETCH_BYTES = 8 * 1024 * 1024
# How long the broker may park a Fetch that finds nothing (the HW has not reached the range
# end yet, e.g. right after a leader change).
FETCH_MAX_WAIT_MS = 500
READ_UNCOMMITTED = 0
READ_COMMITTED = 1
_BATCH_PREFIX = struct.Struct(">qi")
_LAST_OFFSET_DELTA = struct.Struct(">i")
_LAST_OFFSET_DELTA_POS = 23
_HEADER_SIZE = 61


def next_offset_after(payload: bytes | memoryview, fetch_offset: int) -> int:
    """The offset after the last whole batch of ``payload`` (``fetch_offset`` if none)."""
    pos = 0
    n = len(payload)
    out = fetch_offset
    while n - pos >= _HEADER_SIZE:
        base, length = _BATCH_PREFIX.unpack_from(payload, pos)
        size = length + 12
        if length < _HEADER_SIZE - 12 or n - pos < size:
            break
        (delta,) = _LAST_OFFSET_DELTA.unpack_from(payload, pos + _LAST_OFFSET_DELTA_POS)
        out = max(out, base + delta + 1)
        pos += size
    return out


class _PendingFetch:
    """One Fetch in flight: filled by the network client's callback."""

    __slots__ = ("done", "error", "leader", "position", "response")

    def __init__(self, leader: int, position: int) -> None:
        self.leader = leader
        self.position = position
        self.done = False
        self.response: dict[str, Any] | None = None
        self.error: Exception | None = None

    def complete(self, response: dict[str, Any] | None, error: Exception | None) -> None:
        self.response, self.error, self.done = response, error, True


class SourceClient:
    def __init__(self, client_props: Mapping[str, str], *, timeout_ms: int) -> None:
        props = dict(client_props)
        props.setdefault("max.partition.fetch.bytes", str(DEFAULT_PARTITION_FETCH_BYTES))
        props.setdefault("client.id", "kraftlog-spark")
        # kafka.isolation.level: committed data unless the query asks for read_uncommitted.
        props.setdefault("isolation.level", "read_committed")
        self.config = client_config(ConsumerConfig, props)
        self.isolation = (
            READ_COMMITTED if self.config.isolation_level == "read_committed" else READ_UNCOMMITTED
        )
        self.timeout_ms = timeout_ms
        self._client = NetworkClient(self.config, max_in_flight=1)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> SourceClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- planning ------------------------------------------------------------------------

    def partitions(self, subscription: Subscription) -> list[TopicPartition]:
        """The partitions the subscription covers now (topics that do not exist yet are
        skipped, as Spark's Kafka source does for subscribe)."""
        if subscription.kind == "assign":
            return list(subscription.assigned)
        topics = list(subscription.topics) if subscription.kind == "subscribe" else None
        self._client.fetch_metadata(topics, self.timeout_ms)
        metadata = self._client.metadata
        out = []
        for name, info in metadata.topics.items():
            if info.is_internal or info.error_code or not subscription.matches(name):
                continue
            out.extend(TopicPartition(name, p.partition) for p in info.partitions)
        return sorted(out)

    def _list(self, timestamps: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        if not timestamps:
            return {}
        answer = list_offsets(
            self._client,
            {TopicPartition(*tp): ts for tp, ts in timestamps.items()},
            self.timeout_ms,
            self.config.retry_backoff_ms,
            isolation_level=self.isolation,
        )
        return {TopicPartition(*tp): found.offset for tp, found in answer.items()}

    def bounds(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, PartitionBounds]:
        """Log start offset and end of each partition: the last stable offset when reading
        committed data (the default), else the high watermark."""
        earliest = self._list({tp: EARLIEST_OFFSET for tp in partitions})
        latest = self._list({tp: LATEST_OFFSET for tp in partitions})
        return {tp: PartitionBounds(earliest[tp], latest[tp]) for tp in partitions}

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | None]:
        """The first offset at or after each timestamp (None: no such committed record)."""
        found = self._list(timestamps)
        return {tp: (off if off >= 0 else None) for tp, off in found.items()}

    # -- reading -------------------------------------------------------------------------

    def read_range(
        self, r: OffsetRange, *, fail_on_data_loss: bool
    ) -> Iterator[tuple[bytes | memoryview, int, list[tuple[int, int]]]]:
        """Yield ``(payload, fetch_offset, aborted)`` until every offset of ``r`` was fetched;
        the payloads may hold records before ``fetch_offset`` and after ``r.end`` (whole
        batches); ``aborted`` lists the (producer id, first offset) of the aborted
        transactions the payload may hold, whose records the decoders drop.
        The next Fetch is sent before a payload is yielded, so the broker and the network work
        while the caller decodes. Raises :class:`DataLossError` or :class:`KafkaTimeoutError`
        (``timeout_ms`` without progress)."""
        tp = TopicPartition(r.topic, r.partition)
        position = r.start
        deadline = time.monotonic() + self.timeout_ms / 1000.0
        pending: _PendingFetch | None = None
        while position < r.end:
            if time.monotonic() > deadline:
                raise KafkaTimeoutError(
                    f"reading {r.topic}-{r.partition} made no progress at offset {position} "
                    f"within {self.timeout_ms} ms (kafkaConsumer.pollTimeoutMs)"
                )
            if pending is None or pending.position != position:
                pending = self._start_fetch(tp, position, deadline)
            part = self._finish_fetch(tp, pending, deadline) if pending is not None else None
            pending = None
            if part is None:
                continue
            code = part.get("error_code", 0)
            if code == ErrorCode.OFFSET_OUT_OF_RANGE:
                position = self._after_out_of_range(r, position, fail_on_data_loss)
                continue
            if code:
                error = KafkaError(code, f"fetch {r.topic}-{r.partition} at {position}")
                if code in REFRESH_ERRORS or error.retriable:
                    self._backoff(deadline)
                    continue
                raise error
            records = part.get("records") or b""
            aborted = [
                (t["producer_id"], t["first_offset"])
                for t in part.get("aborted_transactions") or ()
            ]
            log_start = part.get("log_start_offset", -1)
            if log_start > position:
                position = self._lost(r, position, log_start, fail_on_data_loss)
                continue
            next_offset = next_offset_after(records, position)
            if next_offset == position:
                continue  # nothing committed yet at this offset: the broker waited, ask again
            if next_offset < r.end:
                pending = self._start_fetch(tp, next_offset, deadline)  # prefetch
            yield records, position, aborted
            position = next_offset
            deadline = time.monotonic() + self.timeout_ms / 1000.0

    def _fetch_body(self, tp: TopicPartition, position: int) -> dict[str, Any]:
        return {
            "replica_id": -1,
            "max_wait_ms": FETCH_MAX_WAIT_MS,
            "min_bytes": 1,
            "max_bytes": self.config.fetch_max_bytes,
            "isolation_level": self.isolation,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": tp.topic,
                    "partitions": [
                        {
                            "partition": tp.partition,
                            "current_leader_epoch": -1,
                            "fetch_offset": position,
                            "log_start_offset": -1,
                            "partition_max_bytes": self.config.max_partition_fetch_bytes,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        }

    def _start_fetch(
        self, tp: TopicPartition, position: int, deadline: float
    ) -> _PendingFetch | None:
        """Send a Fetch to the leader (None when there is no leader or connection yet)."""
        client = self._client
        metadata = client.metadata
        leader = metadata.leader_for(tp)
        if leader is None:
            try:
                client.fetch_metadata([tp.topic], max(1.0, (deadline - time.monotonic()) * 1e3))
            except KafkaError:
                pass
            if metadata.leader_for(tp) is None:
                self._backoff(deadline)
            return None
        while not client.is_ready(leader):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            client.poll(min(remaining, 0.1))
        pending = _PendingFetch(leader, position)
        try:
            client.send(leader, ApiKey.FETCH, self._fetch_body(tp, position), pending.complete)
        except KafkaError:
            metadata.request_update()
            self._backoff(deadline)
            return None
        return pending

    def _finish_fetch(
        self, tp: TopicPartition, pending: _PendingFetch, deadline: float
    ) -> dict[str, Any] | None:
        """Wait for ``pending``; its partition's answer, or None after a retriable failure."""
        client = self._client
        while not pending.done:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                client.disconnect(pending.leader)  # drop the late answer with the connection
                return None
            client.poll(remaining)
        if pending.error is not None or pending.response is None:
            error = pending.error
            if isinstance(error, KafkaError) and not error.retriable:
                raise error
            client.metadata.request_update()
            self._backoff(deadline)
            return None
        response = pending.response
        if response.get("error_code", 0):
            raise KafkaError(response["error_code"], f"fetch {tp.topic}-{tp.partition}")
        for topic in response.get("responses", []):
            for part in topic.get("partitions", []):
                if topic["topic"] == tp.topic and part["partition_index"] == tp.partition:
                    if part.get("error_code", 0) in REFRESH_ERRORS:
                        client.metadata.request_update()
                        try:
                            client.fetch_metadata(
                                [tp.topic], max(1.0, (deadline - time.monotonic()) * 1e3)
                            )
                        except KafkaError:
                            pass
                    return part
        return None

    def _backoff(self, deadline: float) -> None:
        self._client.metadata.request_update()
        time.sleep(
            min(self.config.retry_backoff_ms / 1000.0, max(0.0, deadline - time.monotonic()))
        )

    def _after_out_of_range(self, r: OffsetRange, position: int, fail_on_data_loss: bool) -> int:
        tp = TopicPartition(r.topic, r.partition)
        b = self.bounds([tp])[tp]
        if position < b.earliest:
            return self._lost(r, position, b.earliest, fail_on_data_loss)
        if position >= b.latest:
            # Below the planned end but above the HW: the HW went back (an unclean leader
            # election lost committed records), or a new leader has not caught up yet.
            if b.latest < r.end and fail_on_data_loss:
                raise DataLossError(
                    f"{r.topic}-{r.partition}: the high watermark {b.latest} is below the "
                    f"planned end {r.end}"
                )
            if b.latest < r.end:
                return r.end
        return position

    @staticmethod
    def _lost(r: OffsetRange, position: int, log_start: int, fail_on_data_loss: bool) -> int:
        if fail_on_data_loss:
            raise DataLossError(
                f"offsets {position}..{min(log_start, r.end) - 1} of {r.topic}-{r.partition} "
                f"are gone (the log now starts at {log_start})"
            )
        return min(log_start, r.end)
