"""Consume-transform-produce workers: members of one consumer group reading an input topic
with read_committed and writing, for each input record, one output record to the same
partition number of the output topic, in a transaction that also commits the group's offsets
(``send_offsets_to_transaction``). Two client stacks: the native client and confluent-kafka
(librdkafka), side by side in the same group.

An output value is ``<input value>|<transaction id>``: unique per attempt, so the checker can
tell which transaction wrote it and which input it came from; exactly-once means that each
committed input below the group's committed offset has exactly one committed output.

Every poll is recorded (isolation read_committed, group members' ``assign`` events with
unknown positions) and every transaction is a ``txn`` operation with ``reads``, ``writes``,
``group`` and ``offsets`` (format: :mod:`chaos.history`). After any transaction that did
not commit, the worker closes its consumer and producer and starts both again: the new
member resumes from the group's committed offsets (Kafka's rule: after an abort, rewind to
the last commit) and the new producer fences the old one.

Thread-safety: each worker owns its clients; the history writer and stats are thread-safe.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from typing import Any

from chaos.history import READ_COMMITTED, HistoryWriter, transform_output
from chaos.workload.consumer import (
    POLL_TIMEOUT_MS,
    consumer_config,
    record_assignment,
    records_of,
)
from chaos.workload.stats import OpStats
from chaos.workload.txn_producer import (
    CLIENT_ERRORS,
    ERROR_BACKOFF_S,
    TXN_CALL_TIMEOUT_S,
    TXN_TIMEOUT_MS,
    TransactionRecorder,
    describe,
    txn_producer_config,
)
from chaos.workload.worker import WorkloadThread
from kraftlog_client import Consumer, Producer, TopicPartition

TRANSFORM_CLIENTS = ("native", "confluent")
# Input records per transaction at most (one poll's worth).
MAX_RECORDS_PER_TXN = 100
# Group timeouts of the members: a dead member's partitions move within seconds.
SESSION_TIMEOUT_MS = 10_000
HEARTBEAT_INTERVAL_MS = 1000
# A member whose loop is stuck (a transaction call retrying through a fault) leaves the
# group after this long, so its partitions move to a member that can make progress.
MAX_POLL_INTERVAL_MS = 15_000
# librdkafka logs connection failures (expected under faults) at level 3 to stderr, where
# they would bury the runner's output; syslog level 2 keeps only critical ones.
LIBRDKAFKA_LOG_LEVEL = 2

Record = list[Any]  # [topic, partition, offset, value]


class TransformClients(ABC):
    """One member's consumer and transactional producer, behind the calls the loop needs.
    A subclass builds both clients (``_consumer``, ``_producer``) and calls :meth:`_start`;
    the calls both stacks spell the same way live here."""

    errors: tuple[type[BaseException], ...] = CLIENT_ERRORS
    _consumer: Any
    _producer: Any

    def _start(self, topic: str) -> None:
        """Subscribe and initialize transactions; on failure close both and raise."""
        try:
            self._consumer.subscribe([topic])
            self._producer.init_transactions(TXN_CALL_TIMEOUT_S)
        except BaseException:
            self.close()
            raise

    @abstractmethod
    def poll(self) -> list[Record]: ...

    def assignment(self) -> list[tuple[str, int]]:
        return sorted((tp.topic, tp.partition) for tp in self._consumer.assignment())

    @abstractmethod
    def send(self, topic: str, partition: int, value: str) -> None: ...

    def begin(self) -> None:
        self._producer.begin_transaction()

    @abstractmethod
    def send_offsets(self, offsets: dict[tuple[str, int], int]) -> None: ...

    @property
    def producer(self) -> Any:
        """The producer: ``commit_transaction(timeout)`` / ``abort_transaction(timeout)``."""
        return self._producer

    @abstractmethod
    def _release_producer(self) -> None:
        """Let go of the producer without waiting (nothing ends its transaction)."""

    def close(self) -> None:
        try:
            self._release_producer()
        finally:
            self._consumer.close()


class NativeTransformClients(TransformClients):
    def __init__(self, bootstrap: str, process: str, group: str, txn_id: str, topic: str):
        self._consumer = Consumer(
            consumer_config(
                bootstrap,
                process,
                **{
                    "group.id": group,
                    "isolation.level": READ_COMMITTED,
                    "enable.auto.commit": False,
                    "max.poll.records": MAX_RECORDS_PER_TXN,
                    "session.timeout.ms": SESSION_TIMEOUT_MS,
                    "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
                    "max.poll.interval.ms": MAX_POLL_INTERVAL_MS,
                },
            )
        )
        self._producer = Producer(txn_producer_config(bootstrap, txn_id, process))
        self._start(topic)

    def poll(self) -> list[Record]:
        return records_of(self._consumer.poll(POLL_TIMEOUT_MS))

    def send(self, topic: str, partition: int, value: str) -> None:
        self._producer.send(topic, value.encode(), partition=partition)

    def send_offsets(self, offsets: dict[tuple[str, int], int]) -> None:
        self._producer.send_offsets_to_transaction(
            {TopicPartition(t, p): o for (t, p), o in offsets.items()},
            self._consumer.group_metadata(),
            TXN_CALL_TIMEOUT_S,
        )

    def _release_producer(self) -> None:
        self._producer.close(0)


class ConfluentTransformClients(TransformClients):
    """The same member on confluent-kafka (librdkafka), the client most deployments use."""

    def __init__(self, bootstrap: str, process: str, group: str, txn_id: str, topic: str):
        import confluent_kafka

        self._ck = confluent_kafka
        self.errors = (*CLIENT_ERRORS, confluent_kafka.KafkaException)
        self._consumer = confluent_kafka.Consumer(
            {
                "bootstrap.servers": bootstrap,
                "client.id": process,
                "group.id": group,
                "isolation.level": READ_COMMITTED,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": SESSION_TIMEOUT_MS,
                "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
                "max.poll.interval.ms": MAX_POLL_INTERVAL_MS,
                "socket.timeout.ms": 5000,
                "log_level": LIBRDKAFKA_LOG_LEVEL,
            }
        )
        self._producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": bootstrap,
                "client.id": process,
                "transactional.id": txn_id,
                "transaction.timeout.ms": TXN_TIMEOUT_MS,
                "linger.ms": 5,
                "socket.timeout.ms": 5000,
                "log_level": LIBRDKAFKA_LOG_LEVEL,
                # librdkafka: a record may not outlive its transaction.
                "message.timeout.ms": TXN_TIMEOUT_MS,
            }
        )
        self._start(topic)

    def poll(self) -> list[Record]:
        out: list[Record] = []
        for m in self._consumer.consume(MAX_RECORDS_PER_TXN, POLL_TIMEOUT_MS / 1000):
            if m.error() is not None:
                # Partition EOF and transient errors are not records; fatal ones raise.
                if m.error().fatal():
                    raise self._ck.KafkaException(m.error())
                continue
            value = m.value()
            out.append([m.topic(), m.partition(), m.offset(), value.decode() if value else None])
        return out

    def send(self, topic: str, partition: int, value: str) -> None:
        # A failed delivery fails commit_transaction (librdkafka), which the recorder sees.
        self._producer.produce(topic, value.encode(), partition=partition)
        self._producer.poll(0)

    def send_offsets(self, offsets: dict[tuple[str, int], int]) -> None:
        tps = [self._ck.TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        self._producer.send_offsets_to_transaction(
            tps, self._consumer.consumer_group_metadata(), TXN_CALL_TIMEOUT_S
        )

    def _release_producer(self) -> None:
        self._producer.flush(0)  # librdkafka has no close: the object goes with its owner


def _close(clients: TransformClients) -> None:
    """Close both clients; a client in a fatal state may raise on the way out (librdkafka's
    flush after a fatal transactional error), which changes nothing: it is discarded."""
    try:
        clients.close()
    except clients.errors:
        pass


class TransformWorker(WorkloadThread):
    def __init__(
        self,
        process: str,
        *,
        client: str,
        run_id: str,
        group: str,
        bootstrap: str,
        input_topic: str,
        output_topic: str,
        history: HistoryWriter,
        stats: OpStats,
        stop: threading.Event,
    ) -> None:
        super().__init__(process)
        if client not in TRANSFORM_CLIENTS:
            raise ValueError(f"transform client {client!r}; expected one of {TRANSFORM_CLIENTS}")
        self.process = process
        self._client = client
        self._run_id = run_id
        self._group = group
        self._servers = bootstrap
        self._input = input_topic
        self._output = output_topic
        self._history = history
        self._stats = stats
        self._halt = stop
        self._recorder = TransactionRecorder(process, history, stats)
        self._txns = 0

    def _open(self) -> TransformClients | None:
        cls = NativeTransformClients if self._client == "native" else ConfluentTransformClients
        txn_id = f"{self._run_id}-{self.process}"
        while not self._halt.is_set():
            try:
                return cls(self._servers, self.process, self._group, txn_id, self._input)
            except Exception:  # both stacks' errors: retried until stopped
                self._stats.add("transform-open-retry")
                self._halt.wait(ERROR_BACKOFF_S)
        return None

    def _run(self) -> None:
        clients = self._open()
        seen: list[tuple[str, int]] | None = None
        try:
            while clients is not None and not self._halt.is_set():
                index = self._history.invoke(self.process, "poll", {"isolation": READ_COMMITTED})
                try:
                    records = clients.poll()
                    assignment = clients.assignment()
                except clients.errors as e:
                    self._history.info(index, {"error": describe(e)})
                    self._stats.add("poll-info")
                    clients = self._reopen(clients)
                    continue
                if assignment != seen:
                    record_assignment(self._history, self.process, self._group, assignment)
                    seen = assignment
                self._history.ok(index, {"records": records})
                self._stats.add("read", len(records))
                if records and not self._transform(clients, records):
                    clients = self._reopen(clients)
                    seen = None
        finally:
            if clients is not None:
                _close(clients)

    def _reopen(self, clients: TransformClients) -> TransformClients | None:
        _close(clients)
        self._halt.wait(ERROR_BACKOFF_S)
        return self._open()

    def _transform(self, clients: TransformClients, records: list[Record]) -> bool:
        """One transaction over ``records``; True when it committed."""
        txn_id = f"{self._run_id}-{self.process}-{self._txns}"
        self._txns += 1
        offsets: dict[tuple[str, int], int] = {}
        for topic, partition, offset, _value in records:
            offsets[(topic, partition)] = max(offsets.get((topic, partition), 0), offset + 1)
        writes = [
            [self._output, partition, transform_output(str(value), txn_id)]
            for _topic, partition, _offset, value in records
        ]
        value = {
            "id": txn_id,
            "intent": "commit",
            "writes": writes,
            "reads": records,
            "group": self._group,
            "offsets": [[t, p, o] for (t, p), o in sorted(offsets.items())],
        }

        def body() -> None:
            clients.begin()
            for topic, partition, out in writes:
                clients.send(topic, partition, out)
            clients.send_offsets(offsets)

        outcome = self._recorder.run(clients.producer, value, body, errors=clients.errors)
        return outcome == "ok"
