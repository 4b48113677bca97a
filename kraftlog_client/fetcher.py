"""The consumer's Fetcher: pipelined Fetch requests, decoded records, positions.

For every fetchable partition (assigned, position known, not paused) whose leader is known,
the fetcher keeps one Fetch in flight per leader broker, asking each partition from its
*fetch offset*: the offset after the data already buffered, so the next request is on the wire
while poll() hands out the previous one (pipelined prefetch). Each partition buffers at most
:data:`MAX_BUFFERED_FETCHES` decoded responses; records leave the buffer through
:meth:`Fetcher.fetched_records`, which advances the consumer *position*.

A seek, a reset or an assignment change bumps the partition's epoch in the fetcher; responses
requested under an older epoch are dropped, so no record from before a seek is ever returned.

Errors per partition: OFFSET_OUT_OF_RANGE resets the position with ``auto.offset.reset``
(or raises :class:`OffsetOutOfRangeError` when it is ``none``); routing errors refresh metadata;
other errors are raised from poll().

Not thread-safe: used by the consumer's thread only (the network client's callbacks run inside
the consumer's poll()).
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.topic_partition import TopicPartition
from kraftlog_client.config import ConsumerConfig
from kraftlog_client.errors import KafkaError
from kraftlog_client.metadata import REFRESH_ERRORS
from kraftlog_client.network_client import NetworkClient
from kraftlog_client.record_decoder import FetchedRecords
from kraftlog_client.record_types import ConsumerRecord
from kraftlog_client.subscription import SubscriptionState

MAX_BUFFERED_FETCHES = 2


class OffsetOutOfRangeError(KafkaError):
    """A fetch position is outside the log and auto.offset.reset is none."""

    def __init__(self, tp: TopicPartition, offset: int) -> None:
        super().__init__(
            ErrorCode.OFFSET_OUT_OF_RANGE,
            f"offset {offset} of {tp.topic}-{tp.partition} is out of range "
            "and auto.offset.reset is none",
        )
        self.partition = tp
        self.offset = offset


class _PartitionFetchState:
    __slots__ = ("buffered", "epoch", "fetch_offset", "in_flight", "retry_after_s")

    def __init__(self, epoch: int, fetch_offset: int) -> None:
        self.epoch = epoch
        self.fetch_offset = fetch_offset
        self.buffered: deque[FetchedRecords] = deque()
        self.in_flight = False
        self.retry_after_s = 0.0  # after a routing error: wait retry.backoff.ms


class Fetcher:
    def __init__(
        self, config: ConsumerConfig, client: NetworkClient, subscriptions: SubscriptionState
    ) -> None:
        self._config = config
        self._client = client
        self._subs = subscriptions
        self._states: dict[TopicPartition, _PartitionFetchState] = {}
        self._epoch = 0
        self._nodes_in_flight: set[int] = set()
        self._errors: deque[Exception] = deque()
        self._isolation = 1 if config.isolation_level == "read_committed" else 0

    def _state_for(self, tp: TopicPartition, position: int) -> _PartitionFetchState:
        st = self._states.get(tp)
        if st is None:
            self._epoch += 1
            st = self._states[tp] = _PartitionFetchState(self._epoch, position)
        return st

    def invalidate(self, tp: TopicPartition | None = None) -> None:
        """Drop buffered data and in-flight answers (after seek/reset/assignment changes)."""
        if tp is None:
            self._states.clear()
        else:
            self._states.pop(tp, None)

    # -- requests ------------------------------------------------------------------------

    def send_fetches(self) -> int:
        """Send a Fetch to every ready leader that has partitions to fetch and none in flight;
        returns the number of requests sent."""
        metadata = self._client.metadata
        assignment = self._subs.assignment
        for tp in [t for t in self._states if t not in assignment]:
            del self._states[tp]
        by_node: dict[int, list[tuple[TopicPartition, _PartitionFetchState]]] = {}
        for tp, pst in assignment.items():
            if not pst.is_fetchable:
                continue
            # is_fetchable implies a position, which mypy cannot see through the method.
            st = self._state_for(tp, pst.position)  # type: ignore[arg-type]
            if st.in_flight or len(st.buffered) >= MAX_BUFFERED_FETCHES:
                continue
            if st.retry_after_s and time.monotonic() < st.retry_after_s:
                continue
            leader = metadata.leader_for(tp)
            if leader is None:
                metadata.add_interest([tp.topic])
                metadata.request_update()
                continue
            if leader in self._nodes_in_flight:
                continue
            by_node.setdefault(leader, []).append((tp, st))
        sent = 0
        for node_id, parts in by_node.items():
            if not self._client.is_ready(node_id):
                continue
            self._send_fetch(node_id, parts)
            sent += 1
        return sent

    def _send_fetch(
        self, node_id: int, parts: list[tuple[TopicPartition, _PartitionFetchState]]
    ) -> None:
        c = self._config
        topics: dict[str, list[dict[str, int]]] = {}
        requested: dict[TopicPartition, tuple[int, int]] = {}
        for tp, st in parts:
            topics.setdefault(tp.topic, []).append(
                {
                    "partition": tp.partition,
                    # A broker on another leader epoch fences the fetch (KIP-320).
                    "current_leader_epoch": self._client.metadata.leader_epoch_for(tp),
                    "fetch_offset": st.fetch_offset,
                    "log_start_offset": -1,
                    "partition_max_bytes": c.max_partition_fetch_bytes,
                }
            )
            requested[tp] = (st.epoch, st.fetch_offset)
            st.in_flight = True
        body = {
            "replica_id": -1,
            "max_wait_ms": c.fetch_max_wait_ms,
            "min_bytes": c.fetch_min_bytes,
            "max_bytes": c.fetch_max_bytes,
            "isolation_level": self._isolation,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [{"topic": t, "partitions": p} for t, p in topics.items()],
            "forgotten_topics_data": [],
            "rack_id": "",
        }
        self._nodes_in_flight.add(node_id)

        def on_response(response: dict[str, Any] | None, error: Exception | None) -> None:
            self._nodes_in_flight.discard(node_id)
            self._handle_response(requested, response, error)

        try:
            self._client.send(node_id, ApiKey.FETCH, body, on_response)
        except KafkaError as e:
            on_response(None, e)

    def _handle_response(
        self,
        requested: dict[TopicPartition, tuple[int, int]],
        response: dict[str, Any] | None,
        error: Exception | None,
    ) -> None:
        for tp, (epoch, _offset) in requested.items():
            st = self._states.get(tp)
            if st is not None and st.epoch == epoch:
                st.in_flight = False
        if error is not None or response is None:
            self._client.metadata.request_update()
            return  # connection-level failure: the next poll fetches again
        top_error = response.get("error_code", 0)
        if top_error:
            self._errors.append(KafkaError(top_error, "Fetch"))
            return
        for topic in response.get("responses", []):
            name = topic["topic"]
            for part in topic.get("partitions", []):
                tp = TopicPartition(name, part["partition_index"])
                req = requested.get(tp)
                st = self._states.get(tp)
                if req is None or st is None or st.epoch != req[0]:
                    continue  # a seek or reassignment happened meanwhile
                self._handle_partition(tp, st, req[1], part)

    def _handle_partition(
        self,
        tp: TopicPartition,
        st: _PartitionFetchState,
        fetch_offset: int,
        part: dict[str, Any],
    ) -> None:
        code = part.get("error_code", 0)
        pst = self._subs.assignment.get(tp)
        if pst is None:
            return
        if code == ErrorCode.NO_ERROR:
            pst.high_watermark = part.get("high_watermark", -1)
            pst.log_start_offset = part.get("log_start_offset", -1)
            records = part.get("records")
            if not records:
                return
            try:
                aborted = part.get("aborted_transactions") if self._isolation else None
                fetched = FetchedRecords(
                    tp.topic,
                    tp.partition,
                    records,
                    fetch_offset,
                    check_crcs=self._config.check_crcs,
                    aborted_transactions=(
                        [(t["producer_id"], t["first_offset"]) for t in aborted]
                        if aborted
                        else None
                    ),
                )
            except KafkaError as e:
                self._errors.append(e)
                return
            if fetched.next_offset == fetch_offset:
                self._errors.append(
                    KafkaError(
                        ErrorCode.MESSAGE_SIZE_TOO_LARGE,
                        f"{tp.topic}-{tp.partition} at offset {fetch_offset}: the fetch held "
                        "no whole batch; raise max.partition.fetch.bytes",
                    )
                )
                return
            st.fetch_offset = fetched.next_offset
            st.buffered.append(fetched)
        elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
            strategy = self._subs.default_reset_strategy
            if strategy == "none":
                self._errors.append(OffsetOutOfRangeError(tp, fetch_offset))
            else:
                self._subs.request_reset(tp, strategy)
                self.invalidate(tp)
        elif code in REFRESH_ERRORS or KafkaError(code).retriable:
            self._client.metadata.request_update()
            st.retry_after_s = time.monotonic() + self._config.retry_backoff_ms / 1000.0
        else:
            self._errors.append(KafkaError(code, f"fetch {tp.topic}-{tp.partition}"))

    # -- handing out records -------------------------------------------------------------

    def raise_pending_error(self) -> None:
        if self._errors:
            raise self._errors.popleft()

    def fetched_records(self, max_records: int) -> list[ConsumerRecord]:
        """Up to ``max_records`` buffered records, advancing positions past them. Partitions
        that returned records move to the back of the line, so none starves."""
        out: list[ConsumerRecord] = []
        assignment = self._subs.assignment
        served: list[TopicPartition] = []
        failed: list[TopicPartition] = []
        for tp, st in self._states.items():
            if len(out) >= max_records:
                break
            pst = assignment.get(tp)
            if pst is None or pst.paused or pst.position is None or not st.buffered:
                continue
            served.append(tp)
            buffered = st.buffered
            while buffered and len(out) < max_records:
                chunk = buffered[0]
                before = len(out)
                try:
                    chunk.take(max_records - len(out), out)
                except KafkaError as e:
                    # Corrupt records: hand out the good ones before them, report the error
                    # on the next poll and fetch again from the first bad record (the error
                    # repeats until the caller seeks past it, as in Kafka).
                    if len(out) > before:
                        pst.position = out[-1].offset + 1
                    self._errors.append(e)
                    failed.append(tp)
                    break
                pst.position = chunk.position
                if chunk.exhausted:
                    buffered.popleft()
        for tp in served:
            self._states[tp] = self._states.pop(tp)
        for tp in failed:
            self.invalidate(tp)
        return out
