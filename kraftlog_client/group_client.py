"""The consumer's group I/O: drives :class:`ConsumerCoordinator` over the NetworkClient,
applies its events to the subscription, commits and fetches offsets, and runs the heartbeat
thread.

Who runs what:

- The application's thread, inside Consumer.poll() and the other consumer calls, drives the
  coordinator with rejoins allowed and applies events (:meth:`GroupClient.process_events`):
  revocation (commit, listener), loss, assignment, the leader's assignment and fatal errors.
  Listeners therefore always run on the application's thread, inside poll(), as in Kafka.
- The :class:`HeartbeatThread` wakes every :data:`HEARTBEAT_TICK_S`, takes the consumer's lock
  if it is free within a tick, and drives the coordinator with rejoins *not* allowed: it
  heartbeats while the application processes records, and leaves the group when poll() is not
  called for ``max.poll.interval.ms``. Events it causes wait for the next poll().

Thread-safety: every method must be called with the consumer's lock held (an RLock, so a
listener may call commit()). Network callbacks run inside NetworkClient.poll() on whichever of
the two threads holds the lock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.message_base import Message
from common.protocol.messages.offset_commit import OffsetCommitResponse
from common.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
)
from common.topic_partition import TopicPartition
from kraftlog_client.assignors import assignor_for
from kraftlog_client.config import ConsumerConfig
from kraftlog_client.consumer_coordinator import (
    AWAITING_ASSIGNMENT,
    STABLE,
    AssignmentNeeded,
    ConsumerCoordinator,
    GroupFatalError,
    GroupSettings,
    Output,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    Send,
    error_code,
)
from kraftlog_client.errors import CommitFailedError, KafkaError, KafkaTimeoutError
from kraftlog_client.fetcher import Fetcher
from kraftlog_client.network_client import NetworkClient
from kraftlog_client.subscription import SubscriptionState

logger = logging.getLogger(__name__)

HEARTBEAT_TICK_S = 0.1  # the heartbeat thread's wake-up period
# close(): how long to wait for the LeaveGroup answer before closing the sockets anyway.
LEAVE_TIMEOUT_MS = 5000.0
# JoinGroup/SyncGroup wait for the rebalance timeout plus this (Kafka's client adds 5 s too).
REBALANCE_TIMEOUT_MARGIN_MS = 5000

_MEMBERSHIP_ERRORS = frozenset(
    {ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION, ErrorCode.FENCED_INSTANCE_ID}
)
_RETRY_COMMIT_ERRORS = frozenset(
    {
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.UNSTABLE_OFFSET_COMMIT,
    }
)

CommitCallback = Callable[[dict[TopicPartition, int], Exception | None], None]


class ConsumerRebalanceListener:
    """Override to act on rebalances; every method runs inside Consumer.poll() on the
    application's thread. ``on_partitions_lost`` defaults to ``on_partitions_revoked``
    (as in Kafka), but then the partitions already belong to another member: do not commit."""

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        """Before a rebalance: the last chance to commit offsets of ``revoked``."""

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        """After a rebalance: positions come from committed offsets (else
        auto.offset.reset) unless seek() sets them here."""

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        self.on_partitions_revoked(lost)


class GroupClient:
    def __init__(
        self,
        config: ConsumerConfig,
        client: NetworkClient,
        subscriptions: SubscriptionState,
        fetcher: Fetcher,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if config.group_id is None:
            raise ValueError("GroupClient needs group.id")
        self._config = config
        self._client = client
        self._subs = subscriptions
        self._fetcher = fetcher
        self._clock = clock
        self.listener: ConsumerRebalanceListener = ConsumerRebalanceListener()
        settings = GroupSettings(
            group_id=config.group_id,
            session_timeout_ms=config.session_timeout_ms,
            heartbeat_interval_ms=config.heartbeat_interval_ms,
            max_poll_interval_ms=config.max_poll_interval_ms,
            retry_backoff_ms=config.retry_backoff_ms,
            assignors=tuple(assignor_for(n) for n in config.partition_assignment_strategy),
            group_instance_id=config.group_instance_id,
        )
        self.coordinator = ConsumerCoordinator(settings, self._now_ms())
        self._unsent: deque[tuple[Send, float]] = deque()
        self._events: deque[Output] = deque()
        self._commit_completions: deque[
            tuple[CommitCallback, dict[TopicPartition, int], Exception | None]
        ] = deque()
        self._next_auto_commit_ms = self._now_ms() + config.auto_commit_interval_ms
        self._last_metadata_version = -1

    def _now_ms(self) -> float:
        return self._clock() * 1000.0

    # -- driving the state machine -------------------------------------------------------

    def drive(self, *, may_rejoin: bool) -> None:
        """Advance the coordinator's timers and send what it asks for."""
        self._dispatch(self.coordinator.poll(self._now_ms(), may_rejoin=may_rejoin))
        self._flush_unsent()

    def _dispatch(self, outputs: Iterable[Output]) -> None:
        now_ms = self._now_ms()
        for out in outputs:
            if isinstance(out, Send):
                self._unsent.append((out, now_ms))
            else:
                self._events.append(out)

    def _flush_unsent(self) -> None:
        now_ms = self._now_ms()
        # Callbacks may run synchronously below (a failed send) and queue new requests: take
        # the current queue and put whatever still waits back in front of those.
        pending, self._unsent = self._unsent, deque()
        waiting: deque[tuple[Send, float]] = deque()
        while pending:
            send, since_ms = pending.popleft()
            target = send.target if send.target is not None else self._client.any_ready_node()
            if target is not None and self._client.is_ready(target):
                self._send(target, send)
            elif now_ms - since_ms > self._unreachable_after_ms(send.target):
                self._on_response(send, None, KafkaTimeoutError(f"no connection for {send}"))
            else:
                if target is not None and self._client.metadata.broker(target) is None:
                    self._client.metadata.request_update()  # learn the coordinator's address
                waiting.append((send, since_ms))
        waiting.extend(self._unsent)
        self._unsent = waiting

    def _unreachable_after_ms(self, target: int | None) -> float:
        """How long a request waits for a connection. The coordinator gets one heartbeat
        interval: a broker that was killed refuses connections until the controller fences
        it, and finding the new coordinator is cheap, while waiting longer would let the
        member's session expire there (Kafka's client gives up on the coordinator at the
        first failed connection)."""
        if target is None:
            return float(self._config.request_timeout_ms)
        return float(max(self._config.heartbeat_interval_ms, self._config.retry_backoff_ms))

    def _wait_until_coordinator_ready(self, coordinator: int, deadline_s: float) -> bool:
        """Wait (heartbeating) for a connection to the coordinator; False if it cannot be
        reached within :meth:`_unreachable_after_ms` (it is then marked dead)."""
        limit = min(deadline_s, self._clock() + self._unreachable_after_ms(coordinator) / 1000)
        while not self._client.is_ready(coordinator):
            if self.coordinator.coordinator_id != coordinator:
                return False  # declared dead meanwhile (heartbeat failure)
            if self._clock() >= limit:
                self.coordinator.on_commit_error(
                    ErrorCode.COORDINATOR_NOT_AVAILABLE, self._now_ms()
                )
                return False
            self.drive(may_rejoin=False)
            self._client.poll(min(HEARTBEAT_TICK_S, max(0.0, limit - self._clock())))
        return True

    def _send(self, target: int, send: Send) -> None:
        def callback(response: Message | None, error: Exception | None) -> None:
            self._on_response(send, response, error)

        timeout_ms = None
        if send.api_key in (ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP):
            # Answered only when every member rejoined (or the leader assigned): up to the
            # rebalance timeout, which is max.poll.interval.ms. Kafka's client waits as long.
            timeout_ms = max(
                self._config.request_timeout_ms,
                self._config.max_poll_interval_ms + REBALANCE_TIMEOUT_MARGIN_MS,
            )
        try:
            self._client.send(target, send.api_key, send.body, callback, timeout_ms=timeout_ms)
        except KafkaError as e:
            if e.code == ErrorCode.UNSUPPORTED_VERSION:
                # The broker lacks the group APIs: retrying would loop silently.
                self._events.append(GroupFatalError(e.code, str(e)))
            self._on_response(send, None, e)

    def _on_response(self, send: Send, response: Message | None, error: Exception | None) -> None:
        if error is not None:
            logger.debug("group request %s failed: %s", send.api_key.name, error)
            response = None
        self._dispatch(
            self.coordinator.on_response(send.request_id, send.api_key, response, self._now_ms())
        )

    def time_to_next_drive_s(self) -> float:
        return self.coordinator.time_to_next_poll_ms(self._now_ms()) / 1000.0

    # -- on the application's thread -----------------------------------------------------

    def subscribe(self, topics: Iterable[str]) -> None:
        self.coordinator.subscribe(topics)

    def on_user_poll(self) -> None:
        """Start of Consumer.poll(): liveness, async commit callbacks, auto commit."""
        now_ms = self._now_ms()
        self.coordinator.user_polled(now_ms)
        self.run_commit_callbacks()
        if self._config.enable_auto_commit and now_ms >= self._next_auto_commit_ms:
            self._next_auto_commit_ms = now_ms + self._config.auto_commit_interval_ms
            offsets = self.consumed_offsets()
            if offsets and self._may_commit():
                self.commit_async(offsets, None)

    def check_metadata(self) -> None:
        """Partition counts of the subscribed topics changed: rebalance (leader and member)."""
        metadata = self._client.metadata
        if metadata.version == self._last_metadata_version:
            return
        self._last_metadata_version = metadata.version
        counts = {
            t: len(info.partitions) for t, info in metadata.topics.items() if not info.error_code
        }
        self.coordinator.metadata_updated(counts)

    def process_events(self, timeout_ms: float) -> None:
        """Apply what the coordinator decided; raises a fatal group error."""
        while self._events:
            event = self._events.popleft()
            if isinstance(event, PartitionsRevoked):
                self._revoke(set(event.partitions), timeout_ms)
            elif isinstance(event, PartitionsLost):
                self._drop_assignment()
                self.listener.on_partitions_lost(set(event.partitions))
            elif isinstance(event, PartitionsAssigned):
                self._assign(event)
            elif isinstance(event, AssignmentNeeded):
                self._lead(event, timeout_ms)
            elif isinstance(event, GroupFatalError):
                raise KafkaError(event.code, f"group {self._config.group_id}: {event.message}")

    def _revoke(self, revoked: set[TopicPartition], timeout_ms: float) -> None:
        if self._config.enable_auto_commit:
            offsets = {tp: o for tp, o in self.consumed_offsets().items() if tp in revoked}
            if offsets:
                try:
                    self.commit_sync(offsets, timeout_ms)
                except KafkaError as e:
                    # The records after the last commit will be delivered again to the next
                    # owner: at-least-once holds, only duplicates grow.
                    logger.warning("commit before revoking %s failed: %s", sorted(revoked), e)
        try:
            self.listener.on_partitions_revoked(revoked)
        finally:
            self._drop_assignment()
            if self.coordinator.subscribed:
                self._dispatch(self.coordinator.revocation_done(self._now_ms()))
                self._flush_unsent()

    def _drop_assignment(self) -> None:
        if self._subs.subscription or not self._subs.manual:
            self._subs.assign_from_subscription(())
        self._fetcher.invalidate()

    def _assign(self, event: PartitionsAssigned) -> None:
        partitions = set(event.partitions)
        self._subs.assign_from_subscription(partitions)
        self._fetcher.invalidate()
        metadata = self._client.metadata
        self._client.metadata.add_interest({tp.topic for tp in partitions})
        self.coordinator.set_metadata_snapshot(
            {t: len(info.partitions) for t, info in metadata.topics.items() if not info.error_code}
        )
        self.listener.on_partitions_assigned(partitions)

    def _lead(self, event: AssignmentNeeded, timeout_ms: float) -> None:
        metadata = self._client.metadata
        topics = sorted(event.topics)
        counts: dict[str, int] = {}
        if topics:
            metadata.add_interest(topics)
            try:
                self._client.fetch_metadata(topics, timeout_ms)
            except KafkaError as e:
                logger.warning("leader could not refresh metadata of %s: %s", topics, e)
            counts = {t: len(metadata.partitions_for(t)) for t in topics}
        if self.coordinator.state == AWAITING_ASSIGNMENT:  # not reset meanwhile
            self._dispatch(self.coordinator.perform_assignment(counts))
            self._flush_unsent()

    # -- offsets -------------------------------------------------------------------------

    def consumed_offsets(self) -> dict[TopicPartition, int]:
        return {
            tp: st.position for tp, st in self._subs.assignment.items() if st.position is not None
        }

    def _may_commit(self) -> bool:
        """Subscribed members commit only as members of the current generation; assign()
        users commit as a "simple" consumer (generation -1)."""
        c = self.coordinator
        return not c.subscribed or c.state == STABLE

    def ensure_coordinator(self, deadline_s: float) -> int:
        while True:
            coordinator = self.coordinator.coordinator_id
            if coordinator is not None:
                return coordinator
            self.drive(may_rejoin=False)
            if self.coordinator.coordinator_id is not None:
                continue
            remaining = deadline_s - self._clock()
            if remaining <= 0:
                raise KafkaTimeoutError(f"no coordinator found for group {self._config.group_id}")
            self._client.poll(min(remaining, HEARTBEAT_TICK_S))

    def commit_sync(self, offsets: Mapping[TopicPartition, int], timeout_ms: float) -> None:
        """Commit ``offsets`` (the next offsets to read); retries coordinator moves until
        ``timeout_ms``. Raises :class:`CommitFailedError` when the group rebalanced away."""
        deadline = self._clock() + timeout_ms / 1000.0
        while True:
            if not self._may_commit():
                raise CommitFailedError(
                    ErrorCode.REBALANCE_IN_PROGRESS,
                    "the group is rebalancing; the partitions may be reassigned: poll() again",
                )
            coordinator = self.ensure_coordinator(deadline)
            body = self.coordinator.commit_body(offsets)
            if not self._wait_until_coordinator_ready(coordinator, deadline):
                code = ErrorCode.COORDINATOR_NOT_AVAILABLE
            else:
                remaining_ms = (deadline - self._clock()) * 1000.0
                try:
                    response = self._client.request(
                        coordinator, ApiKey.OFFSET_COMMIT, body, max(1.0, remaining_ms)
                    )
                    code = _first_error(response)
                except KafkaTimeoutError:
                    raise
                except KafkaError as e:  # the connection broke: find the coordinator again
                    code = ErrorCode.COORDINATOR_NOT_AVAILABLE
                    logger.debug("commit failed on the connection: %s", e)
            if code == ErrorCode.NO_ERROR:
                return
            self.coordinator.on_commit_error(code, self._now_ms())
            if code in _MEMBERSHIP_ERRORS or code == ErrorCode.REBALANCE_IN_PROGRESS:
                raise CommitFailedError(code, "the group rebalanced: the commit was refused")
            if code not in _RETRY_COMMIT_ERRORS:
                raise KafkaError(code, "OffsetCommit")
            if self._clock() >= deadline:
                raise KafkaTimeoutError(f"commit did not succeed in {timeout_ms} ms ({code.name})")
            time.sleep(
                min(self._config.retry_backoff_ms / 1000.0, max(0.0, deadline - self._clock()))
            )

    def commit_async(
        self, offsets: Mapping[TopicPartition, int], callback: CommitCallback | None
    ) -> None:
        """Send an OffsetCommit without waiting; ``callback(offsets, error)`` runs inside a
        later poll()/commit()/close() on the application's thread."""
        # The callback gets a dict of its own, whatever mapping the caller passed.
        own: dict[TopicPartition, int] = dict(offsets)
        coordinator = self.coordinator.coordinator_id
        if not self._may_commit():
            self._complete(
                callback,
                own,
                CommitFailedError(ErrorCode.REBALANCE_IN_PROGRESS, "the group is rebalancing"),
            )
            return
        if coordinator is None or not self._client.is_ready(coordinator):
            self.drive(may_rejoin=False)  # starts the lookup / connection for the next try
            self._complete(
                callback,
                own,
                KafkaError(
                    ErrorCode.COORDINATOR_NOT_AVAILABLE, "no connection to the group coordinator"
                ),
            )
            return
        body = self.coordinator.commit_body(own)

        def on_response(response: OffsetCommitResponse | None, error: Exception | None) -> None:
            if error is None and response is not None:
                code = _first_error(response)
                if code == ErrorCode.NO_ERROR:
                    self._complete(callback, own, None)
                    return
                self.coordinator.on_commit_error(code, self._now_ms())
                error = (
                    CommitFailedError(code, "the group rebalanced: the commit was refused")
                    if code in _MEMBERSHIP_ERRORS or code == ErrorCode.REBALANCE_IN_PROGRESS
                    else KafkaError(code, "OffsetCommit")
                )
            self._complete(callback, own, error)

        try:
            self._client.send(coordinator, ApiKey.OFFSET_COMMIT, body, on_response)
        except KafkaError as e:
            self._complete(callback, own, e)

    def _complete(
        self,
        callback: CommitCallback | None,
        offsets: dict[TopicPartition, int],
        error: Exception | None,
    ) -> None:
        if error is not None:
            logger.debug("async commit of %d offsets failed: %s", len(offsets), error)
        if callback is not None:
            self._commit_completions.append((callback, offsets, error))

    def run_commit_callbacks(self) -> None:
        while self._commit_completions:
            callback, offsets, error = self._commit_completions.popleft()
            callback(offsets, error)

    def fetch_committed(
        self, partitions: Iterable[TopicPartition], timeout_ms: float
    ) -> dict[TopicPartition, int | None]:
        """The group's committed offsets of ``partitions`` (None where nothing is committed).

        A read_committed consumer asks for stable offsets only (KIP-447 ``require_stable``):
        while a transaction that commits offsets of a partition is still completing, the
        coordinator answers UNSTABLE_OFFSET_COMMIT and this retries, rather than returning
        the older offset. Without it a member resuming right after its own (or a previous
        owner's) transactional commit would process the last transaction's input again,
        breaking exactly-once consume-transform-produce."""
        wanted = sorted(set(partitions))
        if not wanted:
            return {}
        deadline = self._clock() + timeout_ms / 1000.0
        by_topic: dict[str, list[int]] = {}
        for tp in wanted:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        body = OffsetFetchRequest(
            group_id=self.coordinator.settings.group_id,
            topics=[
                OffsetFetchRequestTopic(name=t, partition_indexes=p) for t, p in by_topic.items()
            ],
            require_stable=self._config.isolation_level == "read_committed",
        )
        unavailable = OffsetFetchResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
        while True:
            coordinator = self.ensure_coordinator(deadline)
            response: OffsetFetchResponse
            if not self._wait_until_coordinator_ready(coordinator, deadline):
                response = unavailable
            else:
                remaining_ms = (deadline - self._clock()) * 1000.0
                try:
                    response = self._client.request(
                        coordinator, ApiKey.OFFSET_FETCH, body, max(1.0, remaining_ms)
                    )
                except KafkaTimeoutError:
                    raise
                except KafkaError:
                    response = unavailable
            code = error_code(response.error_code)
            out: dict[TopicPartition, int | None] = {}
            for topic in response.topics:
                for part in topic.partitions:
                    tp = TopicPartition(topic.name, part.partition_index)
                    if part.error_code and not code:
                        code = error_code(part.error_code)
                    offset = part.committed_offset
                    out[tp] = offset if offset >= 0 else None
            if code == ErrorCode.NO_ERROR:
                return {tp: out.get(tp) for tp in wanted}
            self.coordinator.on_commit_error(code, self._now_ms())
            if code not in _RETRY_COMMIT_ERRORS:
                raise KafkaError(code, "OffsetFetch")
            if self._clock() >= deadline:
                raise KafkaTimeoutError(f"OffsetFetch did not succeed in {timeout_ms} ms")
            time.sleep(
                min(self._config.retry_backoff_ms / 1000.0, max(0.0, deadline - self._clock()))
            )

    def refresh_committed_positions(self, timeout_ms: float) -> None:
        """Partitions without a position start at the committed offset; the others keep no
        position, so auto.offset.reset applies to them only after this succeeded."""
        missing = [
            tp
            for tp, st in self._subs.assignment.items()
            if st.position is None and st.reset_strategy is None
        ]
        if not missing:
            return
        for tp, offset in self.fetch_committed(missing, timeout_ms).items():
            st = self._subs.assignment.get(tp)
            if offset is not None and st is not None and st.position is None:
                self._subs.seek(tp, offset)
                self._fetcher.invalidate(tp)

    # -- leaving -------------------------------------------------------------------------

    def leave(self, timeout_ms: float) -> None:
        """Revoke (with the final commit) and send LeaveGroup; waits for its answer up to
        ``timeout_ms``."""
        if self._config.enable_auto_commit and self.coordinator.state == STABLE:
            offsets = self.consumed_offsets()
            if offsets:
                try:
                    self.commit_sync(offsets, timeout_ms)
                except KafkaError as e:
                    logger.warning("final commit failed: %s", e)
        outputs = self.coordinator.leave()
        self._dispatch(outputs)
        for event in list(self._events):
            if isinstance(event, PartitionsRevoked):
                self.listener.on_partitions_revoked(set(event.partitions))
        self._events.clear()
        self._drop_assignment()
        self._flush_unsent()
        deadline = self._clock() + timeout_ms / 1000.0
        while self.coordinator.pending(ApiKey.LEAVE_GROUP) and self._clock() < deadline:
            self._client.poll(min(HEARTBEAT_TICK_S, max(0.0, deadline - self._clock())))
            self._flush_unsent()
        self.run_commit_callbacks()


class HeartbeatThread(threading.Thread):
    """Heartbeats (and the max.poll.interval.ms check) while the application is busy between
    polls. Stops when :meth:`stop` is called; never holds the lock longer than one tick of
    socket work."""

    def __init__(self, group: GroupClient, client: NetworkClient, lock: threading.RLock) -> None:
        super().__init__(
            name=f"kraftlog-heartbeat-{group.coordinator.settings.group_id}", daemon=True
        )
        self._group = group
        self._client = client
        self._lock = lock
        self._stopped = threading.Event()

    def run(self) -> None:
        while not self._stopped.wait(HEARTBEAT_TICK_S):
            if not self._lock.acquire(timeout=HEARTBEAT_TICK_S):
                continue  # the application is inside the consumer: poll() heartbeats itself
            try:
                if self._stopped.is_set():
                    return
                self._group.drive(may_rejoin=False)
                self._client.poll(0)
            except Exception as e:  # the thread must outlive transient errors
                logger.warning("heartbeat thread: %s", e)
            finally:
                self._lock.release()

    def stop(self) -> None:
        self._stopped.set()


def _first_error(response: OffsetCommitResponse) -> ErrorCode:
    for topic in response.topics:
        for part in topic.partitions:
            if part.error_code:
                return error_code(part.error_code)
    return ErrorCode.NO_ERROR
