"""Load for cluster operation tests: an idempotent acks=all producer and a one-member
consumer group (confluent-kafka) in threads, recording what was acknowledged and consumed, and
an audit of every record value in a topic."""

from __future__ import annotations

import threading
import time
import uuid

import confluent_kafka

from deploy.local_cluster import LocalCluster
from metadata.messages import NewTopic

PARTITIONS = 3
RATE_PER_S = 400
DEADLINE_S = 120.0


class Load:
    """A producer and a one-member consumer group running in threads; what each saw."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.acked: set[bytes] = set()
        self.consumed: list[bytes] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._produced = threading.Event()
        common = {"bootstrap.servers": bootstrap, "error_cb": self._client_error, "log_level": 0}
        self._producer = confluent_kafka.Producer(
            {**common, "enable.idempotence": True, "acks": "all", "linger.ms": 5}
        )
        self._consumer = confluent_kafka.Consumer(
            {
                **common,
                "group.id": f"load-{uuid.uuid4().hex[:6]}",
                "auto.offset.reset": "earliest",
            }
        )
        self._threads = [
            threading.Thread(target=self._produce, daemon=True),
            threading.Thread(target=self._consume, daemon=True),
        ]

    def _client_error(self, err: confluent_kafka.KafkaError) -> None:
        # Brokers going away are reported here as information; only fatal errors reach the
        # application's calls.
        if err.fatal():
            with self._lock:
                self.errors.append(f"fatal: {err}")

    def _delivered(self, err: confluent_kafka.KafkaError | None, msg: confluent_kafka.Message):
        with self._lock:
            if err is not None:
                self.errors.append(f"delivery: {err}")
            else:
                self.acked.add(msg.value())

    def _produce(self) -> None:
        try:
            i = 0
            start = time.monotonic()
            while not self._stop.is_set():
                # Read the clock once: two reads could make the wait negative.
                wait = start + i / RATE_PER_S - time.monotonic()
                if wait > 0:
                    time.sleep(min(0.01, wait))
                    continue
                self._producer.produce(self.topic, b"v-%07d" % i, on_delivery=self._delivered)
                self._producer.poll(0)
                i += 1
            self._producer.flush(DEADLINE_S)
        except Exception as e:  # reported as an error of the run, not a hang of the consumer
            with self._lock:
                self.errors.append(f"producer thread: {e!r}")
        finally:
            self._produced.set()

    def _consume(self) -> None:
        self._consumer.subscribe([self.topic])
        # Until the producer has flushed (every ack is in) and everything acked was read.
        while not self._produced.is_set() or self.missing():
            m = self._consumer.poll(0.5)
            if m is None:
                if self._produced.is_set() and time.monotonic() > self._drain_deadline:
                    return
                continue
            if m.error() is not None:
                with self._lock:
                    self.errors.append(f"consume: {m.error()}")
                continue
            with self._lock:
                self.consumed.append(m.value())

    def missing(self) -> set[bytes]:
        with self._lock:
            return self.acked - set(self.consumed)

    def start(self) -> None:
        self._drain_deadline = float("inf")
        for t in self._threads:
            t.start()

    def stop(self) -> None:
        self._drain_deadline = time.monotonic() + DEADLINE_S
        self._stop.set()
        for t in self._threads:
            t.join(DEADLINE_S + 30)
        self._consumer.close()


def log_values(bootstrap: str, topic: str) -> list[bytes]:
    """Every record value in the topic, read from the beginning (read_uncommitted)."""
    c = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"audit-{uuid.uuid4().hex[:6]}",
         "enable.auto.commit": False, "log_level": 0}
    )  # fmt: skip
    try:
        parts = [
            confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
            for p in range(PARTITIONS)
        ]
        ends = [c.get_watermark_offsets(tp, timeout=30)[1] for tp in parts]
        c.assign(parts)
        values: list[bytes] = []
        positions = [0] * PARTITIONS
        deadline = time.monotonic() + DEADLINE_S
        while positions != ends and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is not None and m.error() is None:
                values.append(m.value())
                positions[m.partition()] = m.offset() + 1
        return values
    finally:
        c.close()


def start_load(cluster: LocalCluster, topic: str) -> tuple[str, Load]:
    """Create ``topic`` (PARTITIONS partitions, 3 replicas, min.insync.replicas 2) and start a
    Load on it; returns the bootstrap servers and the running Load."""
    with cluster.client(30.0) as admin:
        (created,) = admin.create_topics(
            [NewTopic(topic, PARTITIONS, 3, configs={"min.insync.replicas": "2"})]
        )
        assert created.error_code == 0, created
    bootstrap = ",".join(cluster.bootstrap_servers())
    load = Load(bootstrap, topic)
    load.start()
    return bootstrap, load
