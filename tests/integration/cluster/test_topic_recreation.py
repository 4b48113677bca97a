"""A topic deleted and re-created under the same name while a confluent-kafka consumer reads it
(librdkafka fetches by topic id, Fetch v13+) and followers replicate it: the consumer never
gets an old record after the new topic's first (its fetches with the old id are answered
UNKNOWN_TOPIC_ID until it learns the new one), it reads every new record once (its position,
past the new log's end, resets to the earliest offset), and every replica's log is the new
topic's (its partition.metadata names the new id)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from data_plane.storage.partition_metadata import PARTITION_METADATA_FILE, PartitionMetadataFile
from deploy.local_cluster import LocalCluster, wait_until
from metadata.messages import NewTopic
from tests.integration.clusters import ClusterFactory

pytestmark = pytest.mark.integration

TOPIC = "reborn"
RECORDS = 200
NEW_RECORDS = 100
WAIT_S = 90.0
CONSUMER_MAX_S = 240.0


def produce(bootstrap: str, prefix: str, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    errors: list[object] = []
    for i in range(count):
        producer.produce(
            TOPIC,
            value=f"{prefix}-{i:04d}".encode(),
            on_delivery=lambda e, _m: e and errors.append(e),
        )
    assert producer.flush(WAIT_S) == 0
    assert errors == []


class Reader:
    """A confluent-kafka consumer on partition 0 from the beginning, collecting values."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.values: list[str] = []
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": "reborn-reader",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )
        consumer.assign([TopicPartition(TOPIC, 0, 0)])
        deadline = time.monotonic() + CONSUMER_MAX_S
        try:
            while not self.stop.is_set() and time.monotonic() < deadline:
                msg = consumer.poll(0.2)
                if msg is None:
                    continue
                if msg.error() is None:
                    self.values.append(msg.value().decode())
                else:
                    self.errors.append(str(msg.error()))
        finally:
            consumer.close()


def stored_topic_ids(cluster: LocalCluster) -> dict[int, object]:
    out = {}
    for broker_id in cluster.broker_ids:
        path = Path(cluster.node(broker_id).data_dir) / f"{TOPIC}-0" / PARTITION_METADATA_FILE
        out[broker_id] = PartitionMetadataFile(str(path.parent)).read() if path.exists() else None
    return out


def test_a_recreated_topic_is_never_confused_with_the_old_one(
    cluster_factory: ClusterFactory,
) -> None:
    cluster = cluster_factory(controllers=1, brokers=3)
    bootstrap = ",".join(cluster.bootstrap_servers())
    with cluster.client(30.0) as admin:
        (created,) = admin.create_topics([NewTopic(TOPIC, 1, 3)])
        assert created.error_code == 0, created
        produce(bootstrap, "old", RECORDS)
        reader = Reader(bootstrap)
        try:
            wait_until(lambda: len(reader.values) >= RECORDS, WAIT_S, "the old records read")
            (deleted,) = admin.delete_topics([TOPIC])
            assert deleted.error_code == 0, deleted
            wait_until(
                lambda: all(v is None for v in stored_topic_ids(cluster).values()),
                WAIT_S,
                "every replica's old log gone",
            )
            (again,) = admin.create_topics([NewTopic(TOPIC, 1, 3)])
            assert again.error_code == 0, again
            assert again.topic_id != created.topic_id
            # Fewer than before: the consumer's position (the old log end) is past the new
            # log's end, so it resets to the earliest offset and reads them all.
            produce(bootstrap, "new", NEW_RECORDS)
            wait_until(
                lambda: sum(v.startswith("new-") for v in reader.values) >= NEW_RECORDS,
                WAIT_S,
                "the new records read",
            )
        finally:
            reader.stop.set()
            reader.thread.join(CONSUMER_MAX_S)
    values = reader.values
    first_new = next(i for i, v in enumerate(values) if v.startswith("new-"))
    assert all(v.startswith("old-") for v in values[:first_new])
    after = values[first_new:]
    assert all(v.startswith("new-") for v in after), "an old record after the new topic's first"
    assert sorted(after) == [f"new-{i:04d}" for i in range(NEW_RECORDS)]
    assert reader.errors == [], reader.errors[:5]
    assert set(stored_topic_ids(cluster).values()) == {again.topic_id}
