"""Retention in a running broker (log.retention.check.interval.ms = 500 ms here) with a real
client (confluent-kafka): time and size retention delete old segments while a producer and
a consumer run; DeleteRecords moves the log start offset and its segments go with the next
retention check."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from deploy.local_cluster import LocalCluster

from .conftest import live_segments

pytestmark = pytest.mark.integration

DEADLINE_S = 60.0
SEGMENT_BYTES = 4096
RETENTION_BYTES = 16384
PRODUCE_S = 5.0


def wait_until(cond: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.1)


def watermarks(consumer, topic: str) -> tuple[int, int]:
    from confluent_kafka import TopicPartition

    return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)


class Workload:
    """A producer writing to both topics for PRODUCE_S seconds (then flushing) and a consumer
    reading both from the beginning, each on a thread of its own, from start() until
    stop(). What was acknowledged and consumed, and every error, is kept for the test
    thread."""

    def __init__(self, bootstrap: str, topics: tuple[str, ...]) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

        self.topics = topics
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "linger.ms": 5,
                "batch.size": 2000,
                "log_level": 2,
            }
        )
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "retention-reader",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "fetch.wait.max.ms": 50,
                "log_level": 2,
            }
        )
        self.consumer.assign([TopicPartition(t, 0, OFFSET_BEGINNING) for t in topics])
        self._stop = threading.Event()
        self.produced = {t: 0 for t in topics}
        self.delivery_errors: list[str] = []
        self.consumed: dict[str, list[int]] = {t: [] for t in topics}
        self.consumer_errors: list[str] = []
        self.producing = threading.Thread(target=self._produce)
        self._threads = [self.producing, threading.Thread(target=self._consume)]

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(DEADLINE_S)
        self.consumer.close()

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.delivery_errors.append(str(err))
        else:
            self.produced[msg.topic()] += 1

    def _produce(self) -> None:
        deadline = time.monotonic() + PRODUCE_S
        i = 0
        while time.monotonic() < deadline and not self._stop.is_set():
            for t in self.topics:
                self.producer.produce(
                    t, key=b"%d" % i, value=b"v" * 200, callback=self._on_delivery
                )
            self.producer.poll(0)
            i += 1
            time.sleep(0.003)
        self.producer.flush(30)

    def _consume(self) -> None:
        from confluent_kafka import KafkaError

        for _ in range(1_000_000):
            if self._stop.is_set():
                return
            msg = self.consumer.poll(0.1)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() not in (
                    KafkaError._PARTITION_EOF,
                    KafkaError._AUTO_OFFSET_RESET,
                ):
                    self.consumer_errors.append(str(msg.error()))
                continue
            self.consumed[msg.topic()].append(msg.offset())


def within_retention_bytes(cluster: LocalCluster, topic: str) -> bool:
    """Whether the log is as small as retention.bytes lets it be (Kafka's rule: the oldest
    segment goes while the log without it is still at least retention.bytes, so what is
    left minus its oldest segment is below the limit; the closed segments alone may exceed
    it when the active one is small)."""
    sizes = [p.stat().st_size for p in live_segments(cluster, topic)]
    return sum(sizes) - sizes[0] < RETENTION_BYTES


def test_time_and_size_retention_under_a_producer_and_a_consumer(
    cluster: LocalCluster, bootstrap: str, new_topic
) -> None:
    from confluent_kafka import Consumer

    common = {"cleanup.policy": "delete", "segment.bytes": str(SEGMENT_BYTES)}
    timed = new_topic("timed", **common, **{"retention.ms": "1500"})
    sized = new_topic("sized", **common, **{"retention.bytes": str(RETENTION_BYTES)})
    topics = (timed, sized)
    workload = Workload(bootstrap, topics)
    workload.start()
    checker = Consumer({"bootstrap.servers": bootstrap, "group.id": "checker", "log_level": 2})
    try:
        # While producing: both logs lose their oldest segments, so their start moves up.
        wait_until(
            lambda: all(watermarks(checker, t)[0] > 0 for t in topics),
            "retention moves the log start offset of both topics",
        )
        assert workload.producing.is_alive(), "retention did not act while the producer ran"
        workload.producing.join(DEADLINE_S + PRODUCE_S)
        assert not workload.delivery_errors, workload.delivery_errors[:5]

        # Once the producer stopped: the size-retained log is within retention.bytes, the
        # time-retained one is down to its active segment.
        wait_until(
            lambda: within_retention_bytes(cluster, sized),
            "size retention keeps the log within retention.bytes",
        )
        wait_until(lambda: len(live_segments(cluster, timed)) == 1, "time retention")
        high = {t: watermarks(checker, t)[1] for t in topics}
        assert high == workload.produced
        consumed = workload.consumed
        wait_until(
            lambda: all(consumed[t] and consumed[t][-1] == high[t] - 1 for t in topics),
            "the consumer reaches the end",
        )
    finally:
        workload.stop()
        checker.close()
    assert not workload.consumer_errors, workload.consumer_errors[:5]
    for t in topics:
        offsets = workload.consumed[t]
        # Strictly increasing; a jump forward only where retention deleted unread records.
        assert offsets == sorted(set(offsets)), t
        assert len(offsets) > 100


def test_delete_records_moves_the_log_start_and_retention_removes_segments(
    cluster: LocalCluster, bootstrap: str, new_topic
) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient

    topic = new_topic("trimmed", **{"segment.bytes": str(SEGMENT_BYTES), "retention.ms": "-1"})
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "batch.size": 2000, "log_level": 2}
    )
    errors: list[str] = []
    for i in range(300):
        producer.produce(
            topic,
            key=b"%d" % i,
            value=b"v" * 100,
            callback=lambda err, _msg: errors.append(str(err)) if err else None,
        )
    assert producer.flush(30) == 0 and not errors, errors[:3]
    segments_before = live_segments(cluster, topic)
    assert len(segments_before) > 3
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})
    futures = admin.delete_records([TopicPartition(topic, 0, 150)], operation_timeout=10)
    (future,) = futures.values()
    assert future.result(timeout=30).low_watermark == 150
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "trimmed-reader",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "log_level": 2,
        }
    )
    try:
        assert watermarks(consumer, topic) == (150, 300)
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        first = None
        deadline = time.monotonic() + DEADLINE_S
        while first is None and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and not msg.error():
                first = msg.offset()
        assert first == 150
    finally:
        consumer.close()

    def below_start() -> list[str]:
        """Segments (not yet deleted) whose every offset is below 150."""
        names = [p.name for p in live_segments(cluster, topic)]
        bases = [int(n.split(".")[0]) for n in names]
        return [n for n, nxt in zip(names, bases[1:], strict=False) if nxt <= 150]

    wait_until(lambda: not below_start(), "retention deletes the segments below the start")
    assert len(live_segments(cluster, topic)) < len(segments_before)
