"""The producer's I/O thread: drains ready batches into Produce requests, one per broker.

Each loop iteration: refresh metadata if due; expire queued batches older than
``delivery.timeout.ms``; drain sendable batches grouped by leader; send one Produce request per
broker (up to ``max.in.flight.requests.per.connection`` pipelined); poll the sockets, which
runs the response handlers. A partition error that is retriable puts the batch back at the head
of its partition after ``retry.backoff.ms`` (routing errors also trigger a metadata refresh),
until ``retries`` or ``delivery.timeout.ms`` run out; other errors fail the batch.

Idempotent producers (the default, see :mod:`kraftlog_client.idempotence`) first get a
producer id with InitProducerId from any broker (retried on retriable errors), number each
batch per partition when it is first drained and keep that number for its retries; the broker
answers a retried duplicate with the original offset. Retries of a partition go one at a time
in sequence order before any new batch of it; OUT_OF_ORDER_SEQUENCE_NUMBER or
UNKNOWN_PRODUCER_ID with an earlier batch unresolved is retried, without one the batch fails
and the producer resets (new producer id, sequences from 0); INVALID_PRODUCER_EPOCH stops the
producer (pending records fail, ``send()`` raises). Without idempotence a retry after a lost
response can duplicate a batch, and with more than one request in flight a retried batch can
land after a later one, as in Kafka.

Thread-safety: the thread owns the :class:`NetworkClient`; ``send()`` threads talk to it only
through the accumulator, the metadata Condition (topics of interest, waiting for a new
metadata version) and :meth:`NetworkClient.wakeup`.
"""

from __future__ import annotations

import struct
import threading
import time
from collections.abc import Callable
from typing import Any

from common.compression import Compression
from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.codec import Body
from common.protocol.messages.find_coordinator import FindCoordinatorResponse
from common.protocol.messages.init_producer_id import (
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from common.topic_partition import TopicPartition
from kraftlog_client.accumulator import ProducerBatch, RecordAccumulator
from kraftlog_client.config import ProducerConfig
from kraftlog_client.errors import ClientClosedError, KafkaError, KafkaTimeoutError
from kraftlog_client.idempotence import IdempotenceManager, Outcome
from kraftlog_client.metadata import REFRESH_ERRORS
from kraftlog_client.network_client import NetworkClient
from kraftlog_client.transaction_manager import TransactionManager, TxnState

Clock = Callable[[], float]
_MAX_POLL_S = 0.1  # upper bound on one idle wait, so shutdown and expiry are noticed
# Upper bound on one wait while a transactional request waits for its backoff or coordinator.
_TXN_POLL_S = 0.01
# Expiry scans every queued batch under the accumulator lock that send() needs; delivery
# timeouts are minutes long, so scanning ten times a second is precise enough.
_EXPIRY_CHECK_INTERVAL_MS = 100.0
# Kafka's transaction.timeout.ms default; InitProducerId carries it even without transactions.
TRANSACTION_TIMEOUT_MS = 60000
_CODECS = {c.label: c for c in Compression}


class Sender(threading.Thread):
    def __init__(
        self,
        config: ProducerConfig,
        accumulator: RecordAccumulator,
        client: NetworkClient,
        metadata_cond: threading.Condition,
        clock: Clock = time.monotonic,
    ) -> None:
        super().__init__(name=f"kraftlog-producer-{config.client_id}", daemon=True)
        self._config = config
        self._acc = accumulator
        self._client = client
        self._metadata_cond = metadata_cond
        self._clock = clock
        self._acks = config.acks_value
        self._codec = _CODECS[config.compression_type]
        self._running = True
        self._force_close = False
        self._next_expiry_check_ms = 0.0
        self._stopped = False  # set once the loop has ended: nothing is re-enqueued after it
        self.fatal_error: BaseException | None = None
        self.idempotence: IdempotenceManager | None = (
            IdempotenceManager() if config.idempotent else None
        )
        # A transactional producer's transaction state (None otherwise); its InitProducerId
        # gives the idempotence manager its producer id and epoch.
        self.transactions: TransactionManager | None = None
        if config.transactional_id is not None and self.idempotence is not None:
            idem = self.idempotence
            self.transactions = TransactionManager(
                config.transactional_id,
                config.transaction_timeout_ms,
                config.retry_backoff_ms,
                clock,
            )
            self.transactions.on_producer_id(idem.set_producer_id)
        self._init_pid_in_flight = False
        self._init_pid_not_before_s = 0.0
        self._producer_fatal: Exception | None = None

    def run(self) -> None:
        try:
            while self._running:
                self.run_once()
            # Graceful close: send what is queued and wait for the answers.
            while not self._force_close and self._acc.has_incomplete():
                self.run_once()
        except BaseException as e:
            self.fatal_error = e
        finally:
            # After a fatal error too: refuse new records, fail queued and in-flight ones, so
            # no future waits for a sender that is gone.
            error = ClientClosedError(
                "the producer was closed"
                if self.fatal_error is None
                else f"the producer's sender failed: {self.fatal_error!r}"
            )
            self._acc.close(error if self.fatal_error is not None else None)
            self._stopped = True
            self._client.close()  # fails in-flight requests; _retry_or_fail no longer retries
            self._acc.abort_queued(error)
            with self._metadata_cond:
                self._metadata_cond.notify_all()

    def initiate_close(self) -> None:
        self._running = False
        self._client.wakeup()

    def force_close(self) -> None:
        self._running = False
        self._force_close = True
        self._client.wakeup()

    def wakeup(self) -> None:
        self._client.wakeup()

    # -- one iteration -------------------------------------------------------------------

    def run_once(self) -> None:
        if self._producer_fatal is not None:
            raise self._producer_fatal
        client = self._client
        if client.auth_error is not None:
            # A broker refused our credentials: fatal, so every queued batch fails now with it
            # instead of waiting out delivery.timeout.ms against brokers that will refuse again.
            raise client.auth_error
        metadata = client.metadata
        with self._metadata_cond:
            metadata_wait_ms = client.maybe_update_metadata()
        now_ms = self._clock() * 1000.0
        self._maybe_expire(now_ms)
        drained, next_ms, unknown = self._drain(now_ms)
        if unknown:
            with self._metadata_cond:
                metadata.add_interest(unknown)
                metadata.request_update()
        for node_id, batches in drained.items():
            self._send_produce(node_id, batches)
        timeout_s = 0.0 if drained else min(next_ms, metadata_wait_ms) / 1000.0
        txn = self.transactions
        if txn is not None:
            self._transaction_round(txn)
            if txn.has_work():
                timeout_s = min(timeout_s, _TXN_POLL_S)
        version = metadata.version
        client.poll(min(timeout_s, _MAX_POLL_S))
        if metadata.version != version:
            with self._metadata_cond:
                self._metadata_cond.notify_all()

    def _maybe_expire(self, now_ms: float) -> None:
        """Fail the queued batches older than delivery.timeout.ms, at most once per
        expiry check interval."""
        if now_ms < self._next_expiry_check_ms:
            return
        self._next_expiry_check_ms = now_ms + _EXPIRY_CHECK_INTERVAL_MS
        for batch in self._acc.expire(now_ms, self._config.delivery_timeout_ms):
            self._fail(batch, KafkaTimeoutError(self._expiry_message(batch, now_ms)))

    def _drain(self, now_ms: float) -> tuple[dict[int, list[ProducerBatch]], float, set[str]]:
        """The accumulator's sendable batches by leader, the delay until the next one is
        ready, and the topics with no known leader. An idempotent producer drains only
        what its sequence rules allow and numbers each drained batch."""
        client = self._client
        metadata = client.metadata
        idem = self.idempotence
        if idem is None:
            return self._acc.drain(now_ms, metadata.leader_for, client.is_ready)
        txn = self.transactions
        guard = idem.may_drain
        if txn is not None:
            guard = self._transactional_guard
        elif idem.needs_producer_id():
            self._maybe_init_producer_id()
        drained, next_ms, unknown = self._acc.drain(
            now_ms, metadata.leader_for, client.is_ready, guard
        )
        for batches in drained.values():
            for batch in batches:
                idem.on_send(batch)
                batch.transactional = txn is not None
        return drained, next_ms, unknown

    # -- transactions ----------------------------------------------------------------------

    def _transaction_round(self, txn: TransactionManager) -> None:
        """Fail undrained records of a transaction that can only abort; send the
        transaction manager's next request."""
        if txn.state is TxnState.ABORTABLE_ERROR and self._acc.has_incomplete():
            # As Kafka's sender: the transaction can only abort now, so records queued
            # and never sent fail at once (flush returns) rather than wait for an epoch.
            self._acc.abort_undrained(
                txn.last_error or KafkaError(ErrorCode.INVALID_TXN_STATE, "abortable")
            )
        self._maybe_send_txn_request(txn)

    def _transactional_guard(self, tp: TopicPartition, head: ProducerBatch) -> bool:
        txn, idem = self.transactions, self.idempotence
        assert txn is not None and idem is not None
        return txn.may_drain(tp) and idem.may_drain(tp, head)

    def _maybe_send_txn_request(self, txn: TransactionManager) -> None:
        """Send the transaction manager's next request (finding its coordinator first)."""
        now_s = self._clock()
        req = txn.next_request(now_s, self._acc.has_incomplete())
        if req is None:
            return
        client = self._client
        node = txn.coordinator_for(req)
        if node is None:
            target = client.any_ready_node()
            if target is None:
                txn.release(req)
                return

            def on_found(response: FindCoordinatorResponse | None, error: Exception | None) -> None:
                code = response.error_code if response is not None else -1
                if error is None and code == 0 and response is not None:
                    txn.set_coordinator(req, response.node_id)
                    txn.release(req)
                else:
                    txn.request_sent_failed(
                        req, error or KafkaError(code, "FindCoordinator"), self._clock()
                    )

            try:
                client.send(
                    target, ApiKey.FIND_COORDINATOR, txn.find_coordinator_body(req), on_found
                )
            except KafkaError as e:
                txn.request_sent_failed(req, e, now_s)
            return
        if not client.is_ready(node):
            txn.release(req)  # is_ready() started connecting; the next round sends
            return

        def on_response(response: Body | None, error: Exception | None) -> None:
            if error is not None or response is None:
                txn.request_sent_failed(req, error or KafkaError(-1, "no response"), self._clock())
            else:
                txn.handle_response(req, response)
            if txn.state is TxnState.FATAL_ERROR and self._producer_fatal is None:
                self._producer_fatal = txn.last_error
                client.wakeup()

        try:
            client.send(node, req.api_key, req.body, on_response)
        except KafkaError as e:
            if e.code == ErrorCode.UNSUPPORTED_VERSION:
                # The coordinator does not speak this API: no transaction can ever complete.
                txn.fatal(e)
                self._producer_fatal = e
                client.wakeup()
                return
            txn.request_sent_failed(req, e, now_s)

    # -- producer id -----------------------------------------------------------------------

    def _maybe_init_producer_id(self) -> None:
        """Send InitProducerId to the least loaded ready broker, one at a time."""
        if self._init_pid_in_flight or self._clock() < self._init_pid_not_before_s:
            return
        node_id = self._client.any_ready_node()
        if node_id is None:
            return  # connections are being opened; the next iteration tries again
        body = InitProducerIdRequest(
            transactional_id=None, transaction_timeout_ms=TRANSACTION_TIMEOUT_MS
        )
        self._init_pid_in_flight = True
        try:
            self._client.send(node_id, ApiKey.INIT_PRODUCER_ID, body, self._on_init_producer_id)
        except KafkaError as e:
            self._on_init_producer_id(None, e)

    def _on_init_producer_id(
        self, response: InitProducerIdResponse | None, error: Exception | None
    ) -> None:
        self._init_pid_in_flight = False
        idem = self.idempotence
        if idem is None:
            return
        if error is None and response is not None:
            code = response.error_code
            if code == 0:
                idem.set_producer_id(response.producer_id, response.producer_epoch)
                return
            error = KafkaError(code, "InitProducerId")
        retriable = isinstance(error, KafkaError) and error.retriable
        if retriable or not isinstance(error, KafkaError):
            # Connection errors and retriable codes (COORDINATOR_LOAD_IN_PROGRESS...).
            self._init_pid_not_before_s = self._clock() + self._config.retry_backoff_ms / 1000.0
            return
        # UNSUPPORTED_VERSION, TRANSACTIONAL_ID_AUTHORIZATION_FAILED...: no producer id ever.
        self._producer_fatal = KafkaError(
            error.code, f"the idempotent producer cannot get a producer id: {error}"
        )
        self._client.wakeup()

    def _expiry_message(self, batch: ProducerBatch, now_ms: float) -> str:
        return (
            f"{batch.count} record(s) for {batch.tp.topic}-{batch.tp.partition} expired: "
            f"{now_ms - batch.created_ms:.0f} ms since the batch was created "
            f"(delivery.timeout.ms {self._config.delivery_timeout_ms})"
        )

    def _send_produce(self, node_id: int, batches: list[ProducerBatch]) -> None:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        sendable: list[ProducerBatch] = []
        for batch in batches:
            try:
                records = batch.wire_bytes(self._codec)
            except (ValueError, OverflowError, struct.error) as e:
                # A batch that cannot be encoded fails alone; the sender keeps running.
                self._complete(
                    batch, -1, -1, KafkaError(ErrorCode.INVALID_RECORD, f"cannot encode: {e}")
                )
                continue
            sendable.append(batch)
            by_topic.setdefault(batch.tp.topic, []).append(
                {"index": batch.tp.partition, "records": records}
            )
        if not sendable:
            return
        batches = sendable
        body = {
            "transactional_id": (
                self.transactions.transactional_id if self.transactions is not None else None
            ),
            "acks": self._acks,
            "timeout_ms": self._config.request_timeout_ms,
            "topic_data": [
                {"name": topic, "partition_data": parts} for topic, parts in by_topic.items()
            ],
        }

        def on_response(response: dict[str, Any] | None, error: Exception | None) -> None:
            self._handle_response(batches, response, error)

        try:
            self._client.send(
                node_id, ApiKey.PRODUCE, body, on_response, expect_response=self._acks != 0
            )
        except KafkaError as e:
            self._handle_response(batches, None, e)

    def _handle_response(
        self,
        batches: list[ProducerBatch],
        response: dict[str, Any] | None,
        error: Exception | None,
    ) -> None:
        now_ms = self._clock() * 1000.0
        if error is not None or response is None:
            failure = error or KafkaError(-1, "no response")
            for batch in batches:
                self._retry_or_fail(batch, failure, now_ms)
            return
        if self._acks == 0:
            for batch in batches:
                self._complete(batch, -1, -1, None)
            return
        results: dict[tuple[str, int], dict[str, Any]] = {}
        for topic in response.get("responses", []):
            for part in topic.get("partition_responses", []):
                results[(topic["name"], part["index"])] = part
        for batch in batches:
            part = results.get((batch.tp.topic, batch.tp.partition))
            if part is None:
                self._retry_or_fail(
                    batch, KafkaError(-1, "the Produce response omitted the partition"), now_ms
                )
                continue
            code = part.get("error_code", 0)
            if code == 0:
                # An idempotent duplicate is answered with the original offset: the same path.
                self._complete(batch, part["base_offset"], part.get("log_append_time_ms", -1), None)
            else:
                self._retry_or_fail(
                    batch, KafkaError(code, part.get("error_message") or ""), now_ms
                )

    def _retry_or_fail(self, batch: ProducerBatch, error: Exception, now_ms: float) -> None:
        retriable = isinstance(error, KafkaError) and error.retriable
        idem = self.idempotence
        if idem is not None and isinstance(error, KafkaError):
            outcome = idem.classify(batch, error.code, retriable)
            if outcome is Outcome.FATAL:
                self._producer_fatal = error
                if self.transactions is not None:
                    self.transactions.fatal(error)
                self._complete(batch, -1, -1, error)
                self._client.wakeup()
                return
            if outcome is Outcome.RESET:
                idem.request_reset()
                if self.transactions is not None:
                    self.transactions.batch_failed(error)
                self._complete(batch, -1, -1, error)
                return
            retriable = outcome is Outcome.RETRY
        if isinstance(error, KafkaError) and error.code in REFRESH_ERRORS:
            with self._metadata_cond:
                self._client.metadata.request_update()
        within_timeout = now_ms - batch.created_ms < self._config.delivery_timeout_ms
        if (
            retriable
            and batch.attempts < self._config.retries
            and within_timeout
            and (self._running or not self._force_close)
            and not self._stopped
            and self._producer_fatal is None
        ):
            if idem is not None:
                idem.on_retry(batch)
            self._acc.reenqueue(batch, now_ms)
            return
        if self.transactions is not None:
            self.transactions.batch_failed(error)
        self._complete(batch, -1, -1, error)

    def _complete(
        self,
        batch: ProducerBatch,
        base_offset: int,
        log_append_time_ms: int,
        error: Exception | None,
    ) -> None:
        """Complete an answered (in-flight) batch."""
        if self.idempotence is not None:
            self.idempotence.on_done(batch, was_in_flight=True)
        self._acc.complete(batch, base_offset, log_append_time_ms, error)

    def _fail(self, batch: ProducerBatch, error: Exception) -> None:
        """Fail a batch that is not in flight (expired, or could not be encoded)."""
        if self.transactions is not None:
            self.transactions.batch_failed(error)
        if self.idempotence is not None:
            self.idempotence.on_done(batch, was_in_flight=False)
        self._acc.complete(batch, -1, -1, error)
