"""Coordinator failover: 3 brokers, ``__consumer_offsets`` with replication factor 3. The
broker coordinating a group is killed with SIGKILL; the new leader of the group's partition
loads it, the live member carries on (heartbeats, fetches and commits go to the new
coordinator), every committed offset survives, and a new member resumes from them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from data_plane.coordinator import partition_for
from deploy.local_cluster import LocalCluster
from tests.integration.clusters import FAST_OVERRIDES, running_cluster
from tests.integration.groups.helpers import (
    GROUP_OVERRIDES,
    close_leaked_client_sockets,
    leader_of,
    wait_for,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

TOPIC, GROUP, PARTITIONS = "orders", "failover-group", 3
OFFSETS_PARTITIONS = int(GROUP_OVERRIDES["offsets.topic.num.partitions"])


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    overrides = {**FAST_OVERRIDES, **GROUP_OVERRIDES, "replica.lag.time.max.ms": "2000"}
    try:
        with running_cluster(tmp_path / "cluster", brokers=3, overrides=overrides) as c:
            yield c
    finally:
        close_leaked_client_sockets()


def _committed(bootstrap: str) -> dict[int, int] | None:
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError

    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
    except KafkaError:
        return None
    try:
        offsets = admin.list_group_offsets(GROUP).get(GROUP, {})
    except KafkaError:
        return None
    finally:
        admin.close()
    return {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == TOPIC}


def _describe(bootstrap: str) -> dict[str, Any] | None:
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError

    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
        try:
            d: dict[str, Any] = admin.describe_groups([GROUP])[GROUP]
            return d
        finally:
            admin.close()
    except KafkaError:
        return None


def _produce(bootstrap: str, values: list[str]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=20)
    try:
        for i, v in enumerate(values):
            producer.send(TOPIC, value=v.encode(), partition=i % PARTITIONS)
        producer.flush(60)
    finally:
        producer.close()


def _consumer(bootstrap: str) -> Any:
    from kafka import KafkaConsumer

    return KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=GROUP,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=10_000,
        heartbeat_interval_ms=1000,
    )


def _poll_until(consumer: Any, want: set[str], what: str) -> list[tuple[int, int, str]]:
    got: list[tuple[int, int, str]] = []

    def step() -> bool:
        for records in consumer.poll(timeout_ms=300).values():
            got.extend((r.partition, r.offset, r.value.decode()) for r in records)
        return want <= {v for _, _, v in got}

    wait_for(step, what)
    return got


def _commit(consumer: Any) -> bool:
    from kafka.errors import KafkaError

    try:
        consumer.commit()
        return True
    except KafkaError:
        return False


def test_group_survives_coordinator_kill(cluster: LocalCluster) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    bootstrap = ",".join(cluster.bootstrap_servers())
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])
    finally:
        admin.close()
    first = [f"first-{i}" for i in range(150)]
    _produce(bootstrap, first)

    consumer = _consumer(bootstrap)
    try:
        consumer.subscribe([TOPIC])
        _poll_until(consumer, set(first), "the first records")
        wait_for(lambda: _commit(consumer), "a commit")
        before = _committed(bootstrap)
        assert before == {p: 50 for p in range(PARTITIONS)}

        offsets_partition = partition_for(GROUP, OFFSETS_PARTITIONS)
        old = leader_of(bootstrap, "__consumer_offsets", offsets_partition)
        assert old is not None
        cluster.kill(old)
        live = ",".join(
            a
            for n, a in zip(cluster.broker_ids, cluster.bootstrap_servers(), strict=True)
            if n != old
        )
        new = wait_for(
            lambda: (
                (leader := leader_of(live, "__consumer_offsets", offsets_partition)) != old
                and leader
            ),
            "a new coordinator",
        )
        assert new != old
        # The new coordinator loaded the offsets committed through the old one.
        assert wait_for(lambda: _committed(live), "committed offsets from the new one") == before

        # The member (never restarted) keeps consuming and committing through the new one.
        second = [f"second-{i}" for i in range(90)]
        _produce(live, second)
        got = _poll_until(consumer, set(second), "records after the failover")
        assert {v for _, _, v in got} >= set(second)
        wait_for(lambda: _commit(consumer), "a commit to the new coordinator")
        assert wait_for(lambda: _committed(live), "offsets") == {p: 80 for p in range(PARTITIONS)}
        described = wait_for(lambda: _describe(live), "describe on the new coordinator")
        assert described["group_state"] == "Stable"
        assert len(described["members"]) == 1
    finally:
        consumer.close()

    # A new member resumes from the committed offsets: nothing before them is read again.
    third = [f"third-{i}" for i in range(30)]
    _produce(live, third)
    consumer = _consumer(live)
    try:
        consumer.subscribe([TOPIC])
        got = _poll_until(consumer, set(third), "records after a restart")
        assert sorted(v for _, _, v in got) == sorted(third)
    finally:
        consumer.close()
