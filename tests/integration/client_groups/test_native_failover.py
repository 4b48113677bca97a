"""Coordinator failover seen from the native consumer (on demand: KRAFTLOG_SLOW=1, it starts
its own 3-broker cluster): the broker coordinating the group is killed with SIGKILL; the
member finds the new coordinator (rejoining if its session expired during the failover),
reads everything, its commits succeed there, and no offset committed before the kill is
lost."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy.local_cluster import LocalCluster
from kraftlog_client import (
    Admin,
    CommitFailedError,
    Consumer,
    KafkaError,
    NewTopic,
    Producer,
    TopicPartition,
)
from tests.integration.client_groups.conftest import MEMBER
from tests.integration.clusters import FAST_OVERRIDES, running_cluster

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("KRAFTLOG_SLOW") != "1",
        reason="starts a 3-broker cluster (~20 s); set KRAFTLOG_SLOW=1",
    ),
]

DEADLINE_S = 90.0
TOPIC, PARTITIONS = "failover", 3


@pytest.fixture
def three_brokers(tmp_path: Path) -> Iterator[LocalCluster]:
    overrides = {
        **FAST_OVERRIDES,
        "offsets.topic.replication.factor": "3",
        "offsets.topic.num.partitions": "3",
        "group.initial.rebalance.delay.ms": "0",
        "group.min.session.timeout.ms": "1000",
        "replica.lag.time.max.ms": "2000",
    }
    with running_cluster(tmp_path / "cluster", brokers=3, overrides=overrides) as c:
        yield c


def test_native_member_survives_coordinator_kill(three_brokers: LocalCluster) -> None:
    bootstrap = ",".join(three_brokers.bootstrap_servers())
    parts = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])
        admin.wait_for_leaders([TOPIC])
        with Producer({"bootstrap.servers": bootstrap}) as producer:
            for i in range(300):
                producer.send(TOPIC, value=b"%d" % i, partition=i % PARTITIONS)
            producer.flush(30)
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "native-failover",
                **MEMBER,
                "enable.auto.commit": "false",
                "max.poll.records": "50",
            }
        )
        try:
            consumer.subscribe([TOPIC])
            seen: list = []
            deadline = time.monotonic() + DEADLINE_S
            while len(seen) < 150:
                assert time.monotonic() < deadline
                seen += consumer.poll(100)
            consumer.commit()
            before = consumer.committed(parts)
            assert sum(v or 0 for v in before.values()) >= 150
            coordinator = admin.describe_groups(["native-failover"])["native-failover"].coordinator
            three_brokers.kill(coordinator)
            # The member carries on with the new coordinator: reads the rest (again from the
            # commits if its session expired meanwhile) and its commits succeed there.
            while True:
                assert time.monotonic() < deadline, consumer.assignment()
                seen += consumer.poll(100)
                try:
                    consumer.commit(timeout_ms=5000)
                except (CommitFailedError, KafkaError):
                    continue  # rebalancing, or the new coordinator still loading the group
                now = consumer.committed(parts)
                # Every offset committed before the kill survived (never behind it).
                assert all((now[tp] or 0) >= (before[tp] or 0) for tp in parts), (before, now)
                if now == {tp: 100 for tp in parts}:
                    break
            assert {r.value for r in seen} == {b"%d" % i for i in range(300)}
            assert consumer.assignment() == set(parts)
        finally:
            consumer.close()
