"""The native Kafka consumer (without consumer groups until issue 6).

    consumer = Consumer({"bootstrap.servers": "127.0.0.1:9092", "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition("events", 0)])      # or consumer.subscribe(["events"])
    consumer.seek(TopicPartition("events", 0), 42)      # optional
    for record in consumer.poll(timeout_ms=1000):       # list of ConsumerRecord
        ...
    consumer.close()

Without a group, ``subscribe(topics)`` reads every partition of those topics and follows
partition additions through metadata refreshes; ``group.id`` is rejected until issue 6 brings
the group coordinator client, which will plug into :class:`SubscriptionState` through
``assign_from_subscription``. Positions start from ``auto.offset.reset`` (earliest / latest /
none = raise) unless seek() set them.

All network I/O happens inside poll(), position(), the seek_to_* resolution and the offset
queries, on the caller's thread; the Fetcher keeps the next Fetch in flight between polls.

Thread-safety: like Kafka's consumer, not thread-safe; use it from one thread.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from data_plane.client.config import ConsumerConfig, client_config
from data_plane.client.errors import (
    ClientClosedError,
    IllegalStateError,
    KafkaTimeoutError,
    NoOffsetForPartitionError,
    UnsupportedFeatureError,
)
from data_plane.client.fetcher import Fetcher
from data_plane.client.network_client import NetworkClient
from data_plane.client.offsets import OffsetAndTimestamp, list_offsets
from data_plane.client.records import ConsumerRecord, TopicPartition
from data_plane.client.subscription import (
    EARLIEST,
    EARLIEST_TIMESTAMP,
    LATEST,
    LATEST_TIMESTAMP,
    SubscriptionState,
)

_MAX_IDLE_POLL_S = 0.1  # bound on one network wait inside poll(): metadata and resets move on


class Consumer:
    def __init__(
        self, config: Mapping[str, Any] | ConsumerConfig | None = None, **kwargs: Any
    ) -> None:
        if isinstance(config, ConsumerConfig):
            if kwargs:
                raise TypeError("pass either a ConsumerConfig or properties, not both")
            self.config = config
        else:
            self.config = client_config(ConsumerConfig, config, **kwargs)
        if self.config.group_id is not None:
            raise UnsupportedFeatureError(
                "group.id is set, but consumer groups arrive with issue 6; use assign() or "
                "subscribe() without a group"
            )
        self._client = NetworkClient(self.config, max_in_flight=5)
        self._subs = SubscriptionState(self.config.auto_offset_reset)
        self._fetcher = Fetcher(self.config, self._client, self._subs)
        self._closed = False

    # -- assignment ----------------------------------------------------------------------

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        self._check_open()
        self._subs.assign(partitions)  # type: ignore[arg-type]
        self._client.metadata.add_interest({tp.topic for tp in self._subs.assignment})
        self._fetcher.invalidate()

    def subscribe(self, topics: Iterable[str]) -> None:
        self._check_open()
        self._subs.subscribe(topics)
        self._client.metadata.add_interest(self._subs.subscription)
        self._fetcher.invalidate()

    def unsubscribe(self) -> None:
        self._subs.unsubscribe()
        self._fetcher.invalidate()

    def assignment(self) -> set[TopicPartition]:
        return set(self._subs.assignment)

    def subscription(self) -> set[str]:
        return set(self._subs.subscription)

    def _update_subscription(self) -> None:
        if self._subs.manual or not self._subs.subscription:
            return
        metadata = self._client.metadata
        partitions = [
            TopicPartition(topic, p.partition)
            for topic in self._subs.subscription
            for p in metadata.partitions_for(topic)
        ]
        if self._subs.assign_from_subscription(partitions):
            self._fetcher.invalidate()

    # -- positions -----------------------------------------------------------------------

    def seek(self, partition: TopicPartition, offset: int) -> None:
        self._check_open()
        self._subs.seek(partition, offset)
        self._fetcher.invalidate(partition)

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._reset(partitions, EARLIEST)

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._reset(partitions, LATEST)

    def _reset(self, partitions: Iterable[TopicPartition] | None, strategy: str) -> None:
        self._check_open()
        for tp in list(self._subs.assignment) if partitions is None else partitions:
            self._subs.request_reset(tp, strategy)
            self._fetcher.invalidate(tp)

    def position(self, partition: TopicPartition, timeout_ms: float | None = None) -> int:
        """The offset of the next record poll() returns for ``partition`` (resolving a
        pending reset with ListOffsets first)."""
        self._check_open()
        st = self._subs.state(partition)
        if st.position is None:
            self._subs.initialize_missing_positions()
            self._resolve_resets(self._timeout(timeout_ms))
        if st.position is None:
            raise KafkaTimeoutError(f"position of {partition} not resolved")
        return st.position

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        self._subs.pause(partitions)

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        self._subs.resume(partitions)

    def highwater(self, partition: TopicPartition) -> int:
        """The high watermark the last fetch of ``partition`` reported (-1 before any)."""
        return self._subs.state(partition).high_watermark

    def beginning_offsets(
        self, partitions: Iterable[TopicPartition], timeout_ms: float | None = None
    ) -> dict[TopicPartition, int]:
        found = self._list({tp: EARLIEST_TIMESTAMP for tp in partitions}, timeout_ms)
        return {tp: v.offset for tp, v in found.items()}

    def end_offsets(
        self, partitions: Iterable[TopicPartition], timeout_ms: float | None = None
    ) -> dict[TopicPartition, int]:
        """The high watermarks (offset after the last committed record)."""
        found = self._list({tp: LATEST_TIMESTAMP for tp in partitions}, timeout_ms)
        return {tp: v.offset for tp, v in found.items()}

    def offsets_for_times(
        self, timestamps: Mapping[TopicPartition, int], timeout_ms: float | None = None
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        found = self._list(dict(timestamps), timeout_ms)
        return {tp: (v if v.offset >= 0 else None) for tp, v in found.items()}

    def partitions_for_topic(self, topic: str, timeout_ms: float | None = None) -> list[int]:
        self._check_open()
        self._client.metadata.add_interest([topic])
        self._client.fetch_metadata([topic], self._timeout(timeout_ms))
        return [p.partition for p in self._client.metadata.partitions_for(topic)]

    def _list(
        self, timestamps: dict[TopicPartition, int], timeout_ms: float | None
    ) -> dict[TopicPartition, OffsetAndTimestamp]:
        self._check_open()
        return list_offsets(
            self._client, timestamps, self._timeout(timeout_ms), self.config.retry_backoff_ms
        )

    def _timeout(self, timeout_ms: float | None) -> float:
        return float(self.config.request_timeout_ms if timeout_ms is None else timeout_ms)

    def _resolve_resets(self, timeout_ms: float) -> None:
        needing = self._subs.partitions_needing_reset()
        if not needing:
            return
        timestamps = {}
        for tp in needing:
            strategy = self._subs.state(tp).reset_strategy
            if strategy == "none":
                raise NoOffsetForPartitionError(
                    f"{tp.topic}-{tp.partition} has no position and auto.offset.reset is none: "
                    "seek() first"
                )
            timestamps[tp] = EARLIEST_TIMESTAMP if strategy == EARLIEST else LATEST_TIMESTAMP
        found = list_offsets(self._client, timestamps, timeout_ms, self.config.retry_backoff_ms)
        for tp, result in found.items():
            st = self._subs.assignment.get(tp)
            if st is not None and st.reset_strategy is not None:
                st.position = result.offset
                st.reset_strategy = None
                self._fetcher.invalidate(tp)

    # -- polling -------------------------------------------------------------------------

    def poll(self, timeout_ms: float = 0, max_records: int | None = None) -> list[ConsumerRecord]:
        """Records from the assigned partitions, in offset order per partition; waits up to
        ``timeout_ms`` for some (an empty list when none came). At most ``max_records``
        (default ``max.poll.records``)."""
        self._check_open()
        if not self._subs.assignment and not self._subs.subscription:
            raise IllegalStateError("poll() needs assign() or subscribe() first")
        limit = self.config.max_poll_records if max_records is None else max_records
        if limit < 1:
            raise ValueError("max_records must be >= 1")
        deadline = time.monotonic() + timeout_ms / 1000.0
        client = self._client
        fetcher = self._fetcher
        while True:
            fetcher.raise_pending_error()
            records = fetcher.fetched_records(limit)
            if records:
                fetcher.send_fetches()  # keep the pipeline full while the caller works
                return records
            metadata_wait_ms = client.maybe_update_metadata()
            self._update_subscription()
            self._subs.initialize_missing_positions()
            if self._subs.partitions_needing_reset():
                remaining_ms = max(1.0, (deadline - time.monotonic()) * 1000.0)
                try:
                    self._resolve_resets(min(remaining_ms, self._timeout(None)))
                except KafkaTimeoutError:
                    if time.monotonic() >= deadline:
                        return []
            fetcher.send_fetches()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                client.poll(0)
                fetcher.raise_pending_error()
                return fetcher.fetched_records(limit)
            client.poll(min(remaining, metadata_wait_ms / 1000.0, _MAX_IDLE_POLL_S))

    # -- closing -------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._client.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ClientClosedError("the consumer is closed")

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
