"""The native Kafka consumer: assign() by hand, or subscribe() alone or in a consumer group.

    consumer = Consumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "billing",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["events"], listener=MyListener())   # or pattern=r"events-.*"
    for record in consumer.poll(timeout_ms=1000):           # list of ConsumerRecord
        ...
    consumer.commit()            # or leave enable.auto.commit on (every auto.commit.interval.ms)
    consumer.close()             # commits (auto commit), revokes, leaves the group

With ``group.id``, subscribe() makes the consumer a member of Kafka's classic group protocol
(:mod:`kraftlog_client.consumer_coordinator`): the group's leader assigns partitions with the
range (default) or roundrobin assignor, every member reads only its share, and a rebalance
follows members joining or leaving and partition count changes. Positions of newly assigned
partitions start at the group's committed offset, else ``auto.offset.reset``. Delivery is
at-least-once: offsets are committed (automatically on poll boundaries, before a revocation
and on close, or by commit()/commit_async()) only for records poll() already returned, so a
member that fails hands its partitions on from the last commit.

Without a group, ``subscribe(topics)`` reads every partition of those topics and follows
partition additions through metadata refreshes. ``assign()`` works with or without a group
(with one, commit() and committed() use the group's offsets, as a "simple" consumer).

All network I/O happens inside the consumer's calls on the caller's thread, plus a heartbeat
thread (group members only) that keeps the membership alive between polls.

Thread-safety: like Kafka's consumer, use it from one thread. An internal lock serialises the
application's calls with the heartbeat thread; rebalance listeners and commit callbacks run
inside poll() (or commit()/close()) on the application's thread.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from common.error_codes import ErrorCode
from common.topic_partition import TopicPartition
from kraftlog_client.config import ConsumerConfig, client_config
from kraftlog_client.errors import (
    ClientClosedError,
    IllegalStateError,
    KafkaError,
    KafkaTimeoutError,
    NoOffsetForPartitionError,
)
from kraftlog_client.fetcher import Fetcher
from kraftlog_client.group_client import (
    LEAVE_TIMEOUT_MS,
    CommitCallback,
    ConsumerRebalanceListener,
    GroupClient,
    HeartbeatThread,
)
from kraftlog_client.network_client import NetworkClient
from kraftlog_client.offsets import OffsetAndTimestamp, list_offsets
from kraftlog_client.record_types import ConsumerRecord
from kraftlog_client.subscription import (
    EARLIEST,
    EARLIEST_TIMESTAMP,
    LATEST,
    LATEST_TIMESTAMP,
    SubscriptionState,
)
from kraftlog_client.transaction_manager import ConsumerGroupMetadata

logger = logging.getLogger(__name__)

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
        self._client = NetworkClient(self.config, max_in_flight=5)
        self._subs = SubscriptionState(self.config.auto_offset_reset)
        self._fetcher = Fetcher(self.config, self._client, self._subs)
        self._closed = False
        # Serialises the application's calls with the heartbeat thread (re-entrant: a
        # rebalance listener may call commit()).
        self._lock = threading.RLock()
        self._pattern: re.Pattern[str] | None = None
        self._next_pattern_check_s = 0.0
        self._group: GroupClient | None = None
        self._heartbeat: HeartbeatThread | None = None
        if self.config.group_id is not None:
            self._group = GroupClient(self.config, self._client, self._subs, self._fetcher)

    # -- assignment ----------------------------------------------------------------------

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        with self._lock:
            self._check_open()
            self._subs.assign(partitions)
            self._client.metadata.add_interest({tp.topic for tp in self._subs.assignment})
            self._fetcher.invalidate()

    def subscribe(
        self,
        topics: Iterable[str] | None = None,
        *,
        pattern: str | re.Pattern[str] | None = None,
        listener: ConsumerRebalanceListener | None = None,
    ) -> None:
        """Read ``topics`` (or every topic whose whole name matches ``pattern``, checked
        every metadata.max.age.ms). With a group, the partitions are shared with the other
        members and ``listener`` hears of every revocation and assignment."""
        with self._lock:
            self._check_open()
            if (topics is None) == (pattern is None):
                raise ValueError("subscribe() takes either topics or pattern")
            if listener is not None and self._group is None:
                raise IllegalStateError("a rebalance listener needs group.id")
            if self._subs.manual and self._subs.assignment:
                raise IllegalStateError("subscribe() after assign(): call unsubscribe() first")
            if pattern is not None:
                self._pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
                self._next_pattern_check_s = 0.0
                self._subs.manual = False
            elif topics is not None:  # exactly one of the two is given (checked above)
                self._pattern = None
                self._subs.subscribe(topics)
                self._client.metadata.add_interest(self._subs.subscription)
                if self._group is not None:
                    self._group.subscribe(self._subs.subscription)
            if self._group is not None:
                if listener is not None:
                    self._group.listener = listener
                self._start_heartbeat()
            self._fetcher.invalidate()

    def unsubscribe(self) -> None:
        """Stop reading; a group member revokes its partitions and leaves the group."""
        with self._lock:
            if self._group is not None and self._group.coordinator.subscribed:
                self._group.leave(LEAVE_TIMEOUT_MS)
            self._pattern = None
            self._subs.unsubscribe()
            self._fetcher.invalidate()

    def assignment(self) -> set[TopicPartition]:
        with self._lock:
            return set(self._subs.assignment)

    def subscription(self) -> set[str]:
        with self._lock:
            return set(self._subs.subscription)

    def _start_heartbeat(self) -> None:
        if self._heartbeat is None and self._group is not None:
            self._heartbeat = HeartbeatThread(self._group, self._client, self._lock)
            self._heartbeat.start()

    def _check_pattern(self) -> None:
        """Pattern subscriptions: match every topic name of a full metadata refresh."""
        if self._pattern is None or time.monotonic() < self._next_pattern_check_s:
            return
        self._next_pattern_check_s = time.monotonic() + self.config.metadata_max_age_ms / 1000
        try:
            self._client.fetch_metadata(None, self._timeout(None))
        except KafkaError:
            self._next_pattern_check_s = time.monotonic() + self.config.retry_backoff_ms / 1000
            return
        matched = {
            name
            for name, info in self._client.metadata.topics.items()
            if self._pattern.fullmatch(name)
            and not (self.config.exclude_internal_topics and info.is_internal)
        }
        if matched != self._subs.subscription:
            if matched:
                self._subs.subscribe(matched)
                self._client.metadata.add_interest(matched)
            else:
                self._subs.unsubscribe()
            self._fetcher.invalidate()
        if self._group is not None:
            self._group.subscribe(matched)

    def _update_subscription(self) -> None:
        if self._subs.manual or not self._subs.subscription or self._group is not None:
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
        with self._lock:
            self._check_open()
            self._subs.seek(partition, offset)
            self._fetcher.invalidate(partition)

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._reset(partitions, EARLIEST)

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._reset(partitions, LATEST)

    def _reset(self, partitions: Iterable[TopicPartition] | None, strategy: str) -> None:
        with self._lock:
            self._check_open()
            for tp in list(self._subs.assignment) if partitions is None else partitions:
                self._subs.request_reset(tp, strategy)
                self._fetcher.invalidate(tp)

    def position(self, partition: TopicPartition, timeout_ms: float | None = None) -> int:
        """The offset of the next record poll() returns for ``partition`` (resolving it from
        the committed offset or with ListOffsets first)."""
        with self._lock:
            self._check_open()
            st = self._subs.state(partition)
            if st.position is None:
                self._initialize_positions(self._timeout(timeout_ms))
                self._resolve_resets(self._timeout(timeout_ms))
            if st.position is None:
                raise KafkaTimeoutError(f"position of {partition} not resolved")
            return st.position

    def _initialize_positions(self, timeout_ms: float) -> None:
        """Committed offsets first (with a group), then auto.offset.reset for the rest."""
        if self._group is not None:
            self._group.refresh_committed_positions(timeout_ms)
        self._subs.initialize_missing_positions()

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        with self._lock:
            self._subs.pause(partitions)

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        with self._lock:
            self._subs.resume(partitions)

    def highwater(self, partition: TopicPartition) -> int:
        """The high watermark the last fetch of ``partition`` reported (-1 before any)."""
        with self._lock:
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
        with self._lock:
            self._check_open()
            self._client.metadata.add_interest([topic])
            self._client.fetch_metadata([topic], self._timeout(timeout_ms))
            return [p.partition for p in self._client.metadata.partitions_for(topic)]

    def _list(
        self, timestamps: dict[TopicPartition, int], timeout_ms: float | None
    ) -> dict[TopicPartition, OffsetAndTimestamp]:
        with self._lock:
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

    # -- committed offsets (group.id) ----------------------------------------------------

    def _group_client(self) -> GroupClient:
        self._check_open()
        if self._group is None:
            raise IllegalStateError("committing offsets needs group.id")
        return self._group

    def commit(
        self,
        offsets: Mapping[TopicPartition, int] | None = None,
        timeout_ms: float | None = None,
    ) -> None:
        """Commit ``offsets`` (the offset of the next record to read, per partition; default:
        the current positions of every assigned partition) and wait for the coordinator.
        Raises :class:`CommitFailedError` if the group rebalanced the partitions away."""
        with self._lock:
            group = self._group_client()
            group.run_commit_callbacks()
            chosen = group.consumed_offsets() if offsets is None else dict(offsets)
            if chosen:
                group.commit_sync(chosen, self._timeout(timeout_ms))

    def commit_async(
        self,
        offsets: Mapping[TopicPartition, int] | None = None,
        callback: Callable[[dict[TopicPartition, int], Exception | None], None] | None = None,
    ) -> None:
        """Send a commit without waiting; ``callback(offsets, error)`` runs in a later
        poll(), commit() or close()."""
        with self._lock:
            group = self._group_client()
            chosen = group.consumed_offsets() if offsets is None else dict(offsets)
            cb: CommitCallback | None = callback
            group.commit_async(chosen, cb)

    def committed(
        self, partitions: Iterable[TopicPartition], timeout_ms: float | None = None
    ) -> dict[TopicPartition, int | None]:
        """The group's committed offset of each partition (None when nothing is committed)."""
        with self._lock:
            return self._group_client().fetch_committed(partitions, self._timeout(timeout_ms))

    def group_generation(self) -> tuple[int, str]:
        """(generation id, member id) of this member; (-1, "") when not in a group."""
        with self._lock:
            if self._group is None:
                return (-1, "")
            c = self._group.coordinator
            return (c.generation_id, c.member_id)

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This member's group metadata, for ``Producer.send_offsets_to_transaction``."""
        if self.config.group_id is None:
            raise KafkaError(ErrorCode.INVALID_GROUP_ID, "group_metadata() needs a group.id")
        generation, member_id = self.group_generation()
        return ConsumerGroupMetadata(
            self.config.group_id, generation, member_id, self.config.group_instance_id
        )

    # -- polling -------------------------------------------------------------------------

    def poll(self, timeout_ms: float = 0, max_records: int | None = None) -> list[ConsumerRecord]:
        """Records from the assigned partitions, in offset order per partition; waits up to
        ``timeout_ms`` for some (an empty list when none came). At most ``max_records``
        (default ``max.poll.records``). Group members also heartbeat, rebalance, run their
        listeners and auto-commit here."""
        with self._lock:
            return self._poll(timeout_ms, max_records)

    def _poll(self, timeout_ms: float, max_records: int | None) -> list[ConsumerRecord]:
        self._check_open()
        if not self._subs.assignment and not self._subs.subscription and self._pattern is None:
            raise IllegalStateError("poll() needs assign() or subscribe() first")
        limit = self.config.max_poll_records if max_records is None else max_records
        if limit < 1:
            raise ValueError("max_records must be >= 1")
        deadline = time.monotonic() + timeout_ms / 1000.0
        client = self._client
        fetcher = self._fetcher
        group = self._group
        if group is not None:
            group.on_user_poll()
        while True:
            fetcher.raise_pending_error()
            if group is not None:
                self._drive_group(group)
            records = fetcher.fetched_records(limit)
            if records:
                fetcher.send_fetches()  # keep the pipeline full while the caller works
                return records
            metadata_wait_ms = client.maybe_update_metadata()
            self._check_pattern()
            self._update_subscription()
            remaining_ms = max(1.0, (deadline - time.monotonic()) * 1000.0)
            try:
                self._initialize_positions(min(remaining_ms, self._timeout(None)))
                if self._subs.partitions_needing_reset():
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
            wait_s = min(remaining, metadata_wait_ms / 1000.0, _MAX_IDLE_POLL_S)
            if group is not None:
                wait_s = min(wait_s, group.time_to_next_drive_s())
            client.poll(wait_s)

    def _drive_group(self, group: GroupClient) -> None:
        if not group.coordinator.subscribed:
            return
        group.check_metadata()
        group.drive(may_rejoin=True)
        # The commit before a revocation and the leader's metadata refresh get a full
        # request.timeout.ms even if poll()'s own timeout is shorter (as Kafka's consumer
        # overruns poll() inside a rebalance): skipping them would only cause duplicates.
        group.process_events(self._timeout(None))

    # -- closing -------------------------------------------------------------------------

    def close(self, timeout_ms: float = LEAVE_TIMEOUT_MS) -> None:
        """Leave the group (final auto commit, revocation, LeaveGroup; bounded by
        ``timeout_ms``) and close every connection."""
        with self._lock:
            if self._closed:
                return
            try:
                if self._group is not None:
                    try:
                        if self._group.coordinator.subscribed:
                            self._group.leave(timeout_ms)
                        else:
                            self._group.run_commit_callbacks()
                    except KafkaError as e:
                        logger.warning("leaving group %s: %s", self.config.group_id, e)
            finally:
                self._closed = True
                if self._heartbeat is not None:
                    self._heartbeat.stop()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=5.0)
        with self._lock:
            self._client.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ClientClosedError("the consumer is closed")

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
