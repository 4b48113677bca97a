"""The producer's RecordAccumulator: one open batch per partition, bounded memory.

``send()`` appends records (already partitioned) to the newest batch of their partition's
deque (:meth:`RecordAccumulator.append`), or, for a plain record (no key, no headers) going
where the previous one went, straight to that batch while it is open
(:meth:`RecordAccumulator.append_value`, the per-record hot path). A batch closes for
appends when the next record would push it past ``batch.size`` (a record larger than that
gets a batch of its own). The sender thread drains batches that are
*sendable* — full, older than ``linger.ms``, or everything during a flush/close or while
``send()`` is blocked on memory — grouped by leader broker and bounded by
``max.request.size`` per request.

Memory: each batch reserves ``max(batch.size, its first record)`` bytes of ``buffer.memory``
when created and gives them back when it completes (acknowledged, failed or expired). When the
reservation does not fit, ``send()`` blocks until memory is freed or ``max.block.ms`` passes,
then raises :class:`KafkaTimeoutError` (back-pressure, as in Kafka's BufferPool).

Invariants: a partition's batches leave the deque in order; a batch is in exactly one of {its
deque, in flight, completed}; ``used_bytes`` is the sum of reservations of incomplete batches.

Thread-safety: every method takes the accumulator's lock; ``send()`` callers and the sender
thread share it. Blocking waits use a Condition on that lock and are bounded.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence

from common.record_batch import (
    HEADER_SIZE,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
)
from common.topic_partition import TopicPartition
from kraftlog_client.config import ProducerConfig
from kraftlog_client.errors import ClientClosedError, KafkaTimeoutError, RecordTooLargeError
from kraftlog_client.futures import FutureRecordMetadata, ProduceRequestResult
from kraftlog_client.record_encoder import VARINTS, RecordBatchBuilder, encode_record
from kraftlog_client.record_types import Header

Clock = Callable[[], float]  # seconds, monotonic
# (partition, its head batch) -> may the head be drained now (the idempotent producer's guard)
DrainGuard = Callable[[TopicPartition, "ProducerBatch"], bool]


class ProducerBatch(RecordBatchBuilder):
    """An open or in-flight batch of one partition, with its shared delivery result."""

    __slots__ = (
        "attempts",
        "base_sequence",
        "built",
        "closed",
        "created_ms",
        "last_attempt_ms",
        "producer_epoch",
        "producer_id",
        "reserved_bytes",
        "result",
        "tp",
        "transactional",
    )

    def __init__(self, tp: TopicPartition, created_ms: float) -> None:
        super().__init__()
        self.tp = tp
        self.result = ProduceRequestResult(tp.topic, tp.partition)
        self.created_ms = created_ms
        self.last_attempt_ms = created_ms
        self.attempts = 0
        self.closed = False
        self.reserved_bytes = 0
        self.built: bytearray | None = None  # encoded once, reused by retries
        # Set once, on the first drain of an idempotent producer's batch; never changed.
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = NO_PRODUCER_EPOCH
        self.base_sequence = NO_SEQUENCE
        self.transactional = False

    def wire_bytes(self, compression: int) -> bytearray:
        if self.built is None:
            self.built = self.build(
                compression,
                producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                base_sequence=self.base_sequence,
                is_transactional=self.transactional,
            )
        return self.built


class RecordAccumulator:
    def __init__(self, config: ProducerConfig, clock: Clock = time.monotonic) -> None:
        self._batch_size = config.batch_size
        self._batch_room = config.batch_size - HEADER_SIZE  # record bytes that fit a batch
        self._linger_ms = config.linger_ms
        self._retry_backoff_ms = config.retry_backoff_ms
        self._buffer_memory = config.buffer_memory
        self._max_request_size = config.max_request_size
        self._clock = clock
        self._lock = threading.Lock()
        self._freed = threading.Condition(self._lock)
        self._deques: dict[TopicPartition, deque[ProducerBatch]] = {}
        self._incomplete: set[ProducerBatch] = set()
        self._used_bytes = 0
        self._memory_waiters = 0
        self._flushes_in_progress = 0
        self._closed = False
        self._close_error: Exception | None = None

    # -- send() side ---------------------------------------------------------------------

    def append_value(
        self, batch: ProducerBatch, timestamp_ms: int, value: bytes
    ) -> FutureRecordMetadata | None:
        """Append a record without key and headers to ``batch``, the open batch its caller
        remembered from :meth:`append`; None when that batch stopped taking appends (full,
        drained, expired, or the accumulator closed) or the record does not fit it: then call
        :meth:`append`. Sets ``batch.closed`` when the record filled it (wake the sender).

        This is the producer's per-record hot path (a null-key send() to the sticky
        partition): no partition lookup, no deque, one lock, one encode, and the delivery
        future made after the lock is released.
        """
        value_size = len(value)
        lock = self._lock
        lock.acquire()
        try:
            if batch.closed or self._closed:
                return None
            count = batch.count
            delta = timestamp_ms - batch.base_timestamp
            if not (value_size < 60000 and 0 <= delta < 65536 and count < 65536):
                return None
            # encode_record's bytes for this shape, without its call and branches
            ts_field = VARINTS[delta]
            od_field = VARINTS[count]
            vl_field = VARINTS[value_size]
            encoded = b"".join(
                (
                    VARINTS[3 + len(ts_field) + len(od_field) + len(vl_field) + value_size],
                    b"\x00",
                    ts_field,
                    od_field,
                    b"\x01",
                    vl_field,
                    value,
                    b"\x00",
                )
            )
            records = batch.records
            size = len(records) + len(encoded)
            room = self._batch_room
            if size > room:
                return None
            records += encoded
            batch.count = count + 1
            if timestamp_ms > batch.max_timestamp:
                batch.max_timestamp = timestamp_ms
            if size >= room:
                batch.closed = True
        finally:
            lock.release()
        return FutureRecordMetadata((batch.result, count, timestamp_ms, -1, value_size))

    def append(
        self,
        tp: TopicPartition,
        timestamp_ms: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[Header] | None,
        max_block_ms: float,
    ) -> tuple[FutureRecordMetadata, bool, bool, ProducerBatch]:
        """Append one record; return (future, wake the sender, a full batch was closed, the
        batch it went to: the open batch of ``tp`` unless it closed, for :meth:`append_value`).

        Raises :class:`RecordTooLargeError` for a record that can never fit and
        :class:`KafkaTimeoutError` when memory stays exhausted for ``max_block_ms``.
        """
        key_size = -1 if key is None else len(key)
        value_size = -1 if value is None else len(value)
        with self._lock:
            if self._closed:
                raise self._close_error or ClientClosedError("the producer is closed")
            dq = self._deques.get(tp)
            if dq is None:
                dq = self._deques[tp] = deque()
            if dq:
                last = dq[-1]
                if not last.closed:
                    # Hot path, inlined on purpose (RecordBatchBuilder.encode/append_encoded
                    # do the same): one encode, one bytearray append.
                    count = last.count
                    delta = timestamp_ms - last.base_timestamp
                    if (
                        key is None
                        and not headers
                        and value is not None
                        and value_size < 60000
                        and 0 <= delta < 65536
                        and count < 65536
                    ):
                        # The commonest record (no key, no headers): encode_record's bytes
                        # without its call and branches.
                        ts_field = VARINTS[delta]
                        od_field = VARINTS[count]
                        vl_field = VARINTS[value_size]
                        encoded = b"".join(
                            (
                                VARINTS[
                                    3 + len(ts_field) + len(od_field) + len(vl_field) + value_size
                                ],
                                b"\x00",
                                ts_field,
                                od_field,
                                b"\x01",
                                vl_field,
                                value,
                                b"\x00",
                            )
                        )
                    else:
                        encoded = encode_record(count, delta, key, value, headers)
                    records = last.records
                    if len(records) + len(encoded) <= self._batch_room:
                        records += encoded
                        last.count = count + 1
                        if timestamp_ms > last.max_timestamp:
                            last.max_timestamp = timestamp_ms
                        full = len(records) >= self._batch_room
                        if full:
                            last.closed = True
                        return (
                            FutureRecordMetadata(
                                (last.result, count, timestamp_ms, key_size, value_size)
                            ),
                            full,
                            full,
                            last,
                        )
                    last.closed = True
                    rolled = True
                else:
                    rolled = False
            else:
                rolled = False
            batch = ProducerBatch(tp, self._clock() * 1000.0)
            encoded = batch.encode(timestamp_ms, key, value, headers)
            size = HEADER_SIZE + len(encoded)
            if size > self._max_request_size or size > self._buffer_memory:
                raise RecordTooLargeError(
                    f"a record of {size} bytes (batch header included) exceeds "
                    f"max.request.size {self._max_request_size} or buffer.memory "
                    f"{self._buffer_memory}"
                )
            reserve = max(size, self._batch_size)
            self._reserve(reserve, max_block_ms)
            batch.reserved_bytes = reserve
            rel = batch.append_encoded(timestamp_ms, encoded)
            if size >= self._batch_size:
                batch.closed = True
            dq.append(batch)
            self._incomplete.add(batch)
            future = FutureRecordMetadata((batch.result, rel, timestamp_ms, key_size, value_size))
            return future, True, rolled, batch

    def _reserve(self, size: int, max_block_ms: float) -> None:
        """Take ``size`` bytes of buffer.memory, waiting for completed batches; lock held."""
        if self._used_bytes + size <= self._buffer_memory:
            self._used_bytes += size
            return
        deadline = self._clock() + max_block_ms / 1000.0
        self._memory_waiters += 1
        try:
            while self._used_bytes + size > self._buffer_memory:
                if self._closed:
                    raise ClientClosedError("the producer was closed while send() waited")
                remaining = deadline - self._clock()
                if remaining <= 0:
                    raise KafkaTimeoutError(
                        f"buffer.memory ({self._buffer_memory} bytes) stayed full for "
                        f"max.block.ms ({max_block_ms:.0f} ms)"
                    )
                self._freed.wait(remaining)
            self._used_bytes += size
        finally:
            self._memory_waiters -= 1

    # -- sender side ---------------------------------------------------------------------

    def drain(
        self,
        now_ms: float,
        leader_for: Callable[[TopicPartition], int | None],
        node_ready: Callable[[int], bool],
        may_drain: DrainGuard | None = None,
    ) -> tuple[dict[int, list[ProducerBatch]], float, set[str]]:
        """Take the sendable batches whose leader is known and ready (and that ``may_drain``
        allows, when given).

        Returns (batches by leader node id, ms until the next batch may become sendable,
        topics whose partitions have no known leader).
        """
        out: dict[int, list[ProducerBatch]] = {}
        request_bytes: dict[int, int] = {}
        next_check_ms = float(self._linger_ms) if self._linger_ms > 0 else 1000.0
        unknown: set[str] = set()
        with self._lock:
            drain_all = self._closed or self._flushes_in_progress > 0 or self._memory_waiters > 0
            for tp, dq in self._deques.items():
                # Only the head batch of a partition can go: one batch per partition per
                # request (the broker takes one records field per partition), in order.
                if not dq:
                    continue
                first = dq[0]
                wait_ms = self._wait_before_send_ms(first, len(dq), now_ms, drain_all)
                if wait_ms > 0:
                    next_check_ms = min(next_check_ms, wait_ms)
                    continue
                if may_drain is not None and not may_drain(tp, first):
                    continue
                leader = leader_for(tp)
                if leader is None:
                    unknown.add(tp.topic)
                    continue
                if not node_ready(leader):
                    continue
                size = first.size_bytes
                used = request_bytes.get(leader, 0)
                if used and used + size > self._max_request_size:
                    continue
                dq.popleft()
                first.closed = True
                request_bytes[leader] = used + size
                out.setdefault(leader, []).append(first)
        return out, max(next_check_ms, 0.0), unknown

    def _wait_before_send_ms(
        self, head: ProducerBatch, queued: int, now_ms: float, drain_all: bool
    ) -> float:
        """How long the head batch of a partition must still wait (<= 0: sendable now)."""
        if head.attempts:
            return head.last_attempt_ms + self._retry_backoff_ms - now_ms
        if drain_all or head.closed or queued > 1:
            return 0.0
        return head.created_ms + self._linger_ms - now_ms

    def reenqueue(self, batch: ProducerBatch, now_ms: float) -> None:
        """Put a failed batch back at the head of its partition for a retry after backoff.

        A numbered batch (idempotent producer) goes behind the queued retries with lower
        sequences, so retries leave in sequence order whatever order their answers came in.
        """
        with self._lock:
            batch.attempts += 1
            batch.last_attempt_ms = now_ms
            dq = self._deques.setdefault(batch.tp, deque())
            seq = batch.base_sequence
            index = 0
            if seq != NO_SEQUENCE:
                for queued in dq:
                    if queued.base_sequence == NO_SEQUENCE or queued.base_sequence > seq:
                        break
                    index += 1
            dq.insert(index, batch)

    def expire(self, now_ms: float, delivery_timeout_ms: int) -> list[ProducerBatch]:
        """Remove and return queued batches older than delivery.timeout.ms."""
        expired: list[ProducerBatch] = []
        with self._lock:
            for dq in self._deques.values():
                while dq and now_ms - dq[0].created_ms >= delivery_timeout_ms:
                    batch = dq.popleft()
                    batch.closed = True
                    expired.append(batch)
        return expired

    def complete(
        self,
        batch: ProducerBatch,
        base_offset: int,
        log_append_time_ms: int,
        error: Exception | None,
    ) -> None:
        """Finish ``batch`` (runs its callbacks on this thread) and free its memory.

        Its record bytes are released too: the producer may keep a reference to a finished
        batch (the last open batch it appended to) until its next send() to that partition.
        """
        batch.result.complete(base_offset, log_append_time_ms, error)
        with self._lock:
            batch.closed = True
            batch.records = bytearray()
            batch.built = None
            if batch in self._incomplete:
                self._incomplete.discard(batch)
                self._used_bytes -= batch.reserved_bytes
                self._freed.notify_all()

    def abort_undrained(self, error: Exception) -> None:
        """Fail every queued batch never sent (an aborted transaction's records); retries of
        sent batches stay queued."""
        with self._lock:
            batches: list[ProducerBatch] = []
            for dq in self._deques.values():
                keep = [b for b in dq if b.base_sequence != NO_SEQUENCE]
                batches.extend(b for b in dq if b.base_sequence == NO_SEQUENCE)
                dq.clear()
                dq.extend(keep)
            for batch in batches:
                batch.closed = True
        for batch in batches:
            self.complete(batch, -1, -1, error)

    def abort_queued(self, error: Exception) -> None:
        """Fail every batch still queued (forced close)."""
        with self._lock:
            batches = [b for dq in self._deques.values() for b in dq]
            for dq in self._deques.values():
                dq.clear()
            for batch in batches:
                batch.closed = True
        for batch in batches:
            self.complete(batch, -1, -1, error)

    # -- flush and close -----------------------------------------------------------------

    def begin_flush(self) -> list[ProducerBatch]:
        """Make every queued batch sendable now; return the batches to wait for."""
        with self._lock:
            self._flushes_in_progress += 1
            return list(self._incomplete)

    def end_flush(self) -> None:
        with self._lock:
            self._flushes_in_progress -= 1

    def close(self, error: Exception | None = None) -> None:
        """No more appends (``send()`` raises ``error``, or :class:`ClientClosedError`);
        queued batches become sendable at once."""
        with self._lock:
            self._closed = True
            if error is not None and self._close_error is None:
                self._close_error = error
            self._freed.notify_all()

    @property
    def used_bytes(self) -> int:
        with self._lock:
            return self._used_bytes

    def has_incomplete(self) -> bool:
        with self._lock:
            return bool(self._incomplete)

    def has_queued(self) -> bool:
        with self._lock:
            return any(self._deques.values())
