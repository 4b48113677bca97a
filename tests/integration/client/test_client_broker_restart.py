"""The producer retries through a broker restart and the consumer resumes after it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from deploy.local_cluster import LocalCluster
from kraftlog_client import Consumer, ConsumerRecord, Producer, TopicPartition

pytestmark = pytest.mark.integration


def test_records_sent_across_a_broker_restart_are_all_delivered(
    cluster: LocalCluster, bootstrap: str, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(partitions=2)
    broker_id = cluster.broker_ids[0]
    restarted = threading.Event()

    def restart() -> None:
        cluster.restart(broker_id)
        restarted.set()

    with Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 2,
            "retry.backoff.ms": 50,
            "request.timeout.ms": 5000,
        }
    ) as p:
        futures = []
        restarter = threading.Thread(target=restart)
        for i in range(3000):
            futures.append(p.send(topic, b"%d" % i, key=b"%d" % (i % 50)))
            if i == 500:
                restarter.start()
            if i % 100 == 0:
                time.sleep(0.02)
        restarter.join(120)
        assert restarted.is_set()
        p.flush(120)
        metadata = [f.get(0) for f in futures]  # every record delivered, none failed
    assert all(md.offset >= 0 for md in metadata)

    got: list[ConsumerRecord] = []
    with Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"}) as c:
        c.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        deadline = time.monotonic() + 60
        ends = c.end_offsets([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        while len(got) < sum(ends.values()) and time.monotonic() < deadline:
            got.extend(c.poll(500))
    values = {r.value for r in got}
    # At least once (the producer is not idempotent): every value is there.
    assert values == {b"%d" % i for i in range(3000)}
    for md in metadata[:50]:
        assert any(r.partition == md.partition and r.offset == md.offset for r in got)
