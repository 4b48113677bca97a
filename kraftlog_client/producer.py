"""The native Kafka producer.

    producer = Producer({"bootstrap.servers": "127.0.0.1:9092", "linger.ms": 5})
    future = producer.send("events", b"value", key=b"user-1", headers=[("h", b"v")])
    metadata = future.get(timeout=10)           # RecordMetadata(topic, partition, offset, ...)
    producer.send("events", b"v", on_delivery=lambda err, md: ...)
    producer.flush(timeout=10)
    producer.close(timeout=10)

``send()`` is synchronous and cheap: it partitions the record (murmur2 of the key, sticky for
null keys), encodes it into the open batch of its partition and returns a future; a background
:class:`Sender` thread ships batches. ``send()`` blocks only while the topic's metadata is
unknown or ``buffer.memory`` is full, each bounded by ``max.block.ms`` (then
:class:`KafkaTimeoutError`). Delivery callbacks and interceptors' ``on_acknowledgement`` run on
the sender thread: keep them short.

Idempotence is on by default (``enable.idempotence`` unset with ``acks=all``): retries never
duplicate or reorder a partition's records (see :mod:`kraftlog_client.idempotence`).

With ``transactional.id`` the producer is transactional (:mod:`kraftlog_client.
transaction_manager`)::

    producer.init_transactions()
    producer.begin_transaction()
    producer.send("out", b"v")
    producer.send_offsets_to_transaction({TopicPartition("in", 0): 42}, consumer.group_metadata())
    producer.commit_transaction()          # or abort_transaction()

Two-phase commit (Kafka's KIP-939): ``prepared = producer.prepare_transaction()`` flushes the
transaction and leaves it open on the coordinator; ``producer.close()`` then does not end it,
and another process decides it with ``Admin.complete_transaction(prepared, commit)``.

A failed batch makes the transaction abortable (commit raises, abort and go on); being fenced
by a newer instance is fatal (close the producer).

Thread-safety: one producer may be shared by many threads (send, flush, close).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from common.error_codes import ErrorCode
from common.topic_partition import TopicPartition
from kraftlog_client.accumulator import ProducerBatch, RecordAccumulator
from kraftlog_client.config import ProducerConfig, client_config
from kraftlog_client.errors import (
    ClientClosedError,
    KafkaError,
    KafkaTimeoutError,
)
from kraftlog_client.futures import DeliveryCallback, FutureRecordMetadata
from kraftlog_client.network_client import NetworkClient
from kraftlog_client.partitioner import DefaultPartitioner, partition_for_key
from kraftlog_client.record_types import Header, ProducerRecord, RecordMetadata
from kraftlog_client.sender import Sender
from kraftlog_client.transaction_manager import (
    ConsumerGroupMetadata,
    PreparedTxnState,
    TransactionalResult,
    TransactionManager,
)

# Topic errors that waiting will not fix.
_FATAL_TOPIC_ERRORS = frozenset(
    {ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.TOPIC_AUTHORIZATION_FAILED}
)
_BYTES_TYPES = (bytes, bytearray, memoryview)
_time_ns = time.time_ns
# Timestamps are int64 in the batch header; keep deltas inside one batch representable too.
_MAX_TIMESTAMP_MS = 1 << 62
_yield_gil = time.sleep
# How often prepare_transaction looks whether the transaction's last requests finished.
_PREPARE_POLL_S = 0.005


class ProducerInterceptor:
    """Hooks around ``send()``: ``on_send`` may return a modified record (it runs on the
    caller's thread before partitioning); ``on_acknowledgement`` runs on the sender thread for
    every record, with its metadata or error. Exceptions raised by interceptors propagate."""

    def on_send(self, record: ProducerRecord) -> ProducerRecord:
        return record

    def on_acknowledgement(self, metadata: RecordMetadata | None, error: Exception | None) -> None:
        return None

    def close(self) -> None:
        return None


class Producer:
    def __init__(
        self,
        config: Mapping[str, Any] | ProducerConfig | None = None,
        *,
        interceptors: Sequence[ProducerInterceptor] = (),
        **kwargs: Any,
    ) -> None:
        if isinstance(config, ProducerConfig):
            if kwargs:
                raise TypeError("pass either a ProducerConfig or properties, not both")
            self.config = config
        else:
            self.config = client_config(ProducerConfig, config, **kwargs)
        c = self.config
        self._interceptors = tuple(interceptors)
        self._partitioner = DefaultPartitioner()
        self._sticky = self._partitioner.sticky
        self._accumulator = RecordAccumulator(c)
        self._client = NetworkClient(c, max_in_flight=c.max_in_flight_requests_per_connection)
        self._metadata = self._client.metadata
        self._metadata_cond = threading.Condition()
        self._sender = Sender(c, self._accumulator, self._client, self._metadata_cond)
        self._tp_cache: dict[str, list[TopicPartition]] = {}
        self._tp_cache_version = -1
        # The batch the last plain record of a topic's sticky partition (key: the topic) or of
        # an explicit partition (key: its TopicPartition) went to; send() appends the next one
        # there through RecordAccumulator.append_value while it stays open. At most one entry
        # per key ever sent to; a finished batch keeps no record bytes (accumulator.complete).
        # Keyed by topic, or by (topic, partition) as a plain tuple or a TopicPartition: the
        # two hash and compare alike, and send() looks up without building a TopicPartition.
        self._open_batches: dict[str | tuple[str, int], ProducerBatch] = {}
        self._max_block_ms = c.max_block_ms
        self._close_lock = threading.Lock()
        self._closed = False
        self._txn = self._sender.transactions
        self._sender.start()

    # -- sending -------------------------------------------------------------------------

    # send() is the per-record path and stays one function. Splitting the part after the
    # open-batch fast path into helpers (four calls a record, enough for a McCabe complexity
    # of 15) cost 7% more CPU per keyed send and 17% per send with a partition and a
    # timestamp (thread CPU time, interleaved A/B against one broker); null-key sends,
    # which take the fast path, were unchanged.
    def send(  # noqa: C901 - per-record path kept inline: helpers cost 7-17% CPU a send
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        headers: Sequence[Header] | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        on_delivery: DeliveryCallback | None = None,
    ) -> FutureRecordMetadata:
        """Queue one record; returns its delivery future. ``on_delivery(error, metadata)``
        runs once the record is acknowledged or failed (on the sender thread).

        Raises (before queuing): :class:`ClientClosedError`, :class:`KafkaTimeoutError`
        (metadata or buffer memory unavailable for max.block.ms), :class:`KafkaError`
        (unknown partition, invalid topic), :class:`RecordTooLargeError`, :class:`TypeError`.
        """
        if (
            key is None
            and headers is None
            and timestamp_ms is None
            and type(value) is bytes
            and not self._interceptors
        ):
            # The commonest record (a value, maybe a partition, maybe a callback): straight
            # into the batch the previous such record of its partition went to, while that
            # batch is open. Everything send() checks below was checked for that batch's
            # first record, and a batch never outlives a change of its partition.
            batch = self._open_batches.get(topic if partition is None else (topic, partition))
            if batch is not None:
                if self._txn is not None:
                    self._txn.maybe_add_partition(batch.tp)
                future = self._accumulator.append_value(batch, _time_ns() // 1_000_000, value)
                if future is not None:
                    if batch.closed:  # this record filled it
                        self._sender.wakeup()
                        _yield_gil(0)
                    if on_delivery is not None:
                        future.add_done_callback(on_delivery)
                    return future
        interceptors = self._interceptors
        if interceptors:
            record = ProducerRecord(topic, value, key, headers, partition, timestamp_ms)
            for interceptor in interceptors:
                record = interceptor.on_send(record)
            topic, value, key = record.topic, record.value, record.key
            headers, partition, timestamp_ms = record.headers, record.partition, record.timestamp_ms
        # The append is inlined here on purpose: send() is the producer's hot path.
        try:
            if self._closed:
                raise ClientClosedError("send() after close()")
            if type(value) is not bytes and value is not None:
                value = _check_bytes("value", value)
            if type(key) is not bytes and key is not None:
                key = _check_bytes("key", key)
            if headers:
                headers = _check_headers(headers)
            if self._tp_cache_version != self._metadata.version:
                # Partition counts may have grown: rebuild the cache on any metadata change.
                self._tp_cache.clear()
                self._tp_cache_version = self._metadata.version
            tps = self._tp_cache.get(topic)
            if tps is None:
                num_partitions = self._wait_on_metadata(topic)
                tps = [TopicPartition(topic, i) for i in range(num_partitions)]
                self._tp_cache[topic] = tps
            else:
                num_partitions = len(tps)
            sticky = partition is None and key is None
            if sticky:
                partition = self._sticky.get(topic)
                if partition is None or partition >= num_partitions:
                    partition = self._partitioner.partition(topic, None, num_partitions)
            elif partition is None:
                # key is not None here (sticky covers a None key), which mypy cannot follow
                # through the sticky flag.
                partition = partition_for_key(key, num_partitions)  # type: ignore[arg-type]
            elif not 0 <= partition < num_partitions:
                raise KafkaError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    f"partition {partition} of {topic} does not exist "
                    f"({num_partitions} partitions)",
                )
            if timestamp_ms is None:
                timestamp_ms = _time_ns() // 1_000_000
            elif type(timestamp_ms) is not int or not 0 <= timestamp_ms < _MAX_TIMESTAMP_MS:
                raise ValueError(f"timestamp_ms must be an int >= 0, got {timestamp_ms!r}")
            tp = tps[partition]
            if self._txn is not None:
                self._txn.maybe_add_partition(tp)
            future, wake, rolled, batch = self._accumulator.append(
                tp, timestamp_ms, key, value, headers, self._max_block_ms
            )
        except Exception as e:
            for interceptor in interceptors:
                interceptor.on_acknowledgement(None, e)
            raise
        if rolled and sticky:
            self._partitioner.on_new_batch(topic, num_partitions, partition)
        if sticky:
            if self._sticky.get(topic) == partition:
                self._open_batches[topic] = batch
            else:  # the next record goes to the new sticky partition: no batch there yet
                self._open_batches.pop(topic, None)
        else:
            self._open_batches[tp] = batch
        if wake:
            self._sender.wakeup()
            # Let the sender thread take the GIL now: a busy send() loop would otherwise keep
            # it for the whole switch interval (5 ms), stalling drains and responses.
            _yield_gil(0)
        if interceptors:
            future.add_done_callback(self._acknowledge)
        if on_delivery is not None:
            future.add_done_callback(on_delivery)
        return future

    def _wait_on_metadata(self, topic: str) -> int:
        """Partition count of ``topic``, fetching metadata for up to max.block.ms."""
        count = self._metadata.partition_count(topic)
        if count is not None:
            return count
        deadline = time.monotonic() + self._max_block_ms / 1000.0
        with self._metadata_cond:
            self._metadata.add_interest([topic])
            while True:
                count = self._metadata.partition_count(topic)
                if count is not None:
                    return count
                code = self._metadata.topic_errors.get(topic, 0)
                if code in _FATAL_TOPIC_ERRORS:
                    raise KafkaError(code, f"topic {topic!r}")
                if not self._sender.is_alive():
                    raise ClientClosedError(
                        f"the producer's sender stopped: {self._sender.fatal_error!r}"
                    )
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise KafkaTimeoutError(
                        f"topic {topic!r} not present in metadata after max.block.ms "
                        f"({self._max_block_ms} ms); last error {ErrorCode(code).name}"
                    )
                self._metadata.request_update()
                self._sender.wakeup()
                self._metadata_cond.wait(min(remaining, 0.1))

    def _acknowledge(self, error: Exception | None, metadata: RecordMetadata | None) -> None:
        for interceptor in self._interceptors:
            interceptor.on_acknowledgement(metadata, error)

    def partitions_for(self, topic: str) -> list[int]:
        """The partition ids of ``topic`` (waits for metadata up to max.block.ms)."""
        return list(range(self._wait_on_metadata(topic)))

    # -- transactions --------------------------------------------------------------------

    def _transactions(self) -> TransactionManager:
        if self._txn is None:
            raise KafkaError(
                ErrorCode.INVALID_TXN_STATE, "not a transactional producer (no transactional.id)"
            )
        return self._txn

    def _wait(self, result: TransactionalResult, timeout: float | None) -> None:
        self._sender.wakeup()
        result.wait(self._max_block_ms / 1000.0 if timeout is None else timeout)

    def init_transactions(self, timeout: float | None = None) -> None:
        """Get the transactional id's producer id and epoch from its coordinator, fencing
        older instances and aborting what they left open (waits up to ``timeout`` seconds,
        default max.block.ms)."""
        self._wait(self._transactions().init_transactions(), timeout)

    def begin_transaction(self) -> None:
        self._transactions().begin_transaction()

    def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, int],
        group_metadata: ConsumerGroupMetadata | str,
        timeout: float | None = None,
    ) -> None:
        """Commit a consumer group's ``offsets`` (the next offset to read, per partition) in
        this transaction: they count only if it commits."""
        group = (
            ConsumerGroupMetadata(group_metadata)
            if isinstance(group_metadata, str)
            else group_metadata
        )
        self._wait(self._transactions().send_offsets_to_transaction(dict(offsets), group), timeout)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush, then commit; raises if a record of the transaction failed (abort then)."""
        txn = self._transactions()
        self.flush(timeout)
        self._wait(txn.begin_commit(), timeout)

    def prepare_transaction(self, timeout: float | None = None) -> PreparedTxnState:
        """First phase of a two-phase commit: flush every record of the open transaction
        (all acknowledged, so every partition was added with AddPartitionsToTxn) and return
        the state that ends it, leaving the transaction open on the coordinator (no EndTxn).

        Afterwards the producer can only be closed: close() sends nothing that ends the
        transaction, and send / commit / abort / begin raise INVALID_TXN_STATE. The
        transaction stays open until EndTxn names the returned state
        (:meth:`Admin.complete_transaction`), the coordinator aborts it after
        transaction.timeout.ms, or an ``init_transactions`` of the same transactional id
        fences and aborts it. Raises (transaction still open, abort it) if a record failed;
        :class:`KafkaTimeoutError` if the flush takes longer than ``timeout`` seconds
        (default max.block.ms)."""
        txn = self._transactions()
        limit_s = self._max_block_ms / 1000.0 if timeout is None else timeout
        deadline = time.monotonic() + limit_s
        self.flush(limit_s)
        # Every batch is answered; a request the sender still has queued or in flight (an
        # offset commit not waited for) is given the rest of the timeout to finish.
        while not txn.idle() and time.monotonic() < deadline:
            self._sender.wakeup()
            time.sleep(_PREPARE_POLL_S)
        return txn.prepare()

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort: records not sent yet fail with an error, those sent are dropped for
        read_committed readers."""
        txn = self._transactions()
        result = txn.begin_abort()
        self._accumulator.abort_undrained(
            KafkaError(ErrorCode.INVALID_TXN_STATE, "the transaction was aborted")
        )
        self._wait(result, timeout)

    # -- flush and close -----------------------------------------------------------------

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now and wait for every outcome; raises
        :class:`KafkaTimeoutError` if ``timeout`` seconds pass first (records stay queued)."""
        batches = self._accumulator.begin_flush()
        try:
            self._sender.wakeup()
            deadline = None if timeout is None else time.monotonic() + timeout
            for batch in batches:
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                if not batch.result.wait(remaining):
                    raise KafkaTimeoutError(f"flush did not complete within {timeout} s")
        finally:
            self._accumulator.end_flush()

    def close(self, timeout: float | None = None) -> None:
        """Stop accepting records, deliver what is queued (up to ``timeout`` seconds; None =
        wait as long as delivery.timeout.ms allows), then fail what is left and stop."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._accumulator.close()
        self._sender.initiate_close()
        limit = self.config.delivery_timeout_ms / 1000.0 + 1.0
        self._sender.join(limit if timeout is None else max(0.0, timeout))
        if self._sender.is_alive():
            self._sender.force_close()
            self._sender.join(limit)
        for interceptor in self._interceptors:
            interceptor.close()

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _check_bytes(name: str, data: Any) -> bytes:
    if isinstance(data, _BYTES_TYPES):
        return bytes(data)
    raise TypeError(f"{name} must be bytes or None, got {type(data).__name__}")


def _check_headers(headers: Sequence[Header]) -> tuple[Header, ...]:
    out = []
    for item in headers:
        if not isinstance(item, tuple) or len(item) != 2 or not isinstance(item[0], str):
            raise TypeError(f"a header is a (str, bytes | None) pair, got {item!r}")
        h_value = item[1]
        if h_value is not None and type(h_value) is not bytes:
            h_value = _check_bytes("header value", h_value)
        out.append((item[0], h_value))
    return tuple(out)
