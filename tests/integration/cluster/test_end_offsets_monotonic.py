"""End offsets never move backwards across failovers (KIP-207): under an idempotent acks=all
producer, a poller asks every partition's leader for its latest offset (ListOffsets, what
Spark's planner and consumers' lag checks ask) while partition leaders are killed with
SIGKILL and restarted, several times. A new leader whose high watermark has not yet reached
the start of its epoch answers OFFSET_NOT_AVAILABLE instead of a lower end offset."""

from __future__ import annotations

import threading
import time

import pytest

from deploy.local_cluster import LocalCluster, wait_until
from tests.integration.clusters import ClusterFactory
from tests.integration.load import PARTITIONS, start_load

pytestmark = pytest.mark.integration

TOPIC = "ends"
FAILOVERS = 3
WAIT_S = 90.0
POLLER_MAX_S = 600.0


class EndPoller:
    """Polls ListOffsets(latest) of every partition; records every value it was answered and
    every decrease it saw."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.highest: dict[int, int] = {}
        self.decreases: list[str] = []
        self.answers = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        consumer = Consumer(
            {"bootstrap.servers": self.bootstrap, "group.id": "end-poller", "log_level": 0}
        )
        deadline = time.monotonic() + POLLER_MAX_S
        try:
            while not self.stop.is_set() and time.monotonic() < deadline:
                for p in range(PARTITIONS):
                    try:
                        _low, high = consumer.get_watermark_offsets(
                            TopicPartition(TOPIC, p), timeout=2.0, cached=False
                        )
                    except KafkaException:
                        continue  # no leader, or OFFSET_NOT_AVAILABLE: no answer is fine
                    self.answers += 1
                    before = self.highest.get(p, -1)
                    if high < before:
                        self.decreases.append(f"partition {p}: {before} -> {high}")
                    self.highest[p] = max(before, high)
                time.sleep(0.02)
        finally:
            consumer.close()


def leader_broker(cluster: LocalCluster) -> int:
    """The broker leading the most partitions of the topic."""
    with cluster.client(10.0) as client:
        from deploy.admin import fetch_image

        image = fetch_image(client, 10.0)
    topic = image.topic(TOPIC)
    assert topic is not None
    counts: dict[int, int] = {}
    for reg in topic.partitions.values():
        counts[reg.leader] = counts.get(reg.leader, 0) + 1
    return max(counts, key=lambda b: counts[b])


def test_end_offsets_never_move_backwards_through_failovers(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(controllers=1, brokers=3)
    bootstrap, load = start_load(cluster, TOPIC)
    poller = EndPoller(bootstrap)
    try:
        wait_until(lambda: len(load.acked) >= 200, WAIT_S, "the first acknowledged records")
        for _ in range(FAILOVERS):
            victim = leader_broker(cluster)
            cluster.kill(victim)
            before = len(load.acked)
            wait_until(lambda b=before: len(load.acked) >= b + 100, WAIT_S, "writes after a kill")
            cluster.start_node(victim)
            wait_until(
                lambda v=victim: (cluster.broker_status(v) or {}).get("fenced") is False,
                WAIT_S,
                "the killed broker back",
            )
            answers = poller.answers
            wait_until(lambda a=answers: poller.answers >= a + 30, WAIT_S, "end offsets polled")
    finally:
        poller.stop.set()
        poller.thread.join(POLLER_MAX_S)
        load.stop()
    assert poller.decreases == [], poller.decreases[:10]
    assert poller.answers > 0
    assert load.errors == [], load.errors[:5]
