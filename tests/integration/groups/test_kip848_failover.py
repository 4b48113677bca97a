"""A KIP-848 group across a coordinator failover: 3 brokers, ``__consumer_offsets`` RF 3, two
confluent-kafka members with ``group.protocol=consumer``. The broker coordinating the group is
killed with SIGKILL; the new coordinator loads the group's records (member epochs,
assignments, target), the members keep every partition they held (no revocation, no new
assignment) and keep consuming, and the group is described with the same members."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import confluent_kafka
import pytest

from data_plane.coordinator import partition_for
from deploy.local_cluster import LocalCluster
from kraftlog_client import Admin
from metadata.messages import NewTopic
from tests.integration.clusters import FAST_OVERRIDES, running_cluster
from tests.integration.groups.helpers import GROUP_OVERRIDES, leader_of, wait_for

pytestmark = pytest.mark.integration

TOPIC, GROUP, PARTITIONS = "kip848-failover", "kip848-failover-group", 6
OFFSETS_PARTITIONS = int(GROUP_OVERRIDES["offsets.topic.num.partitions"])
OVERRIDES = {
    **FAST_OVERRIDES,
    **GROUP_OVERRIDES,
    "replica.lag.time.max.ms": "2000",
    "group.consumer.heartbeat.interval.ms": "500",
    # Long enough that a member is never expired while it looks for the new coordinator.
    "group.consumer.session.timeout.ms": "30000",
}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path / "cluster", brokers=3, overrides=OVERRIDES) as c:
        yield c


class Member:
    """A consumer polled by its own thread, recording its rebalance events and records."""

    def __init__(self, bootstrap: str, name: str) -> None:
        self.events: list[tuple[float, str, set[int]]] = []
        self.records: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._c = confluent_kafka.Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": GROUP,
                "group.protocol": "consumer",
                "client.id": name,
                "auto.offset.reset": "earliest",
            }
        )
        self._c.subscribe([TOPIC], on_assign=self._on("assign"), on_revoke=self._on("revoke"))
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _on(self, kind: str):  # type: ignore[no-untyped-def]
        def record(_c: object, parts: list[confluent_kafka.TopicPartition]) -> None:
            self.events.append((time.time(), kind, {p.partition for p in parts}))

        return record

    def _run(self) -> None:
        deadline = time.monotonic() + 300
        while not self._stop.is_set() and time.monotonic() < deadline:
            for m in self._c.consume(100, 0.1):
                if m.error() is None:
                    self.records.append((time.time(), m.partition()))

    def owned(self) -> set[int]:
        held: set[int] = set()
        for _, kind, parts in list(self.events):
            held = held | parts if kind == "assign" else held - parts
        return held

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self._c.close()


def test_members_keep_their_partitions_across_a_coordinator_kill(cluster: LocalCluster) -> None:
    bootstrap = ",".join(cluster.bootstrap_servers())
    with cluster.client(30.0) as admin:
        (res,) = admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])
        assert res.error_code == 0
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap})
    stop = threading.Event()

    def feed() -> None:
        deadline = time.monotonic() + 240
        while not stop.is_set() and time.monotonic() < deadline:
            for p in range(PARTITIONS):
                producer.produce(TOPIC, b"x", partition=p)
            producer.poll(0)
            time.sleep(0.1)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    members = [Member(bootstrap, f"m{i}") for i in range(2)]
    try:
        wait_for(
            lambda: (
                sorted(p for m in members for p in m.owned()) == list(range(PARTITIONS))
                and all(len(m.owned()) == PARTITIONS // 2 for m in members)
            ),
            "two members sharing the partitions",
        )
        before = [m.owned() for m in members]
        old = leader_of(bootstrap, "__consumer_offsets", partition_for(GROUP, OFFSETS_PARTITIONS))
        assert old is not None
        killed_at = time.time()
        cluster.kill(old)
        live = ",".join(
            a
            for n, a in zip(cluster.broker_ids, cluster.bootstrap_servers(), strict=True)
            if n != old
        )
        offsets_partition = partition_for(GROUP, OFFSETS_PARTITIONS)
        wait_for(
            lambda: leader_of(live, "__consumer_offsets", offsets_partition) not in (None, old),
            "a new coordinator",
        )

        def consumed_everywhere_since(t: float) -> bool:
            return all({p for ts, p in m.records if ts > t} == m.owned() for m in members)

        # Both keep consuming all of their partitions through and after the failover.
        wait_for(
            lambda: consumed_everywhere_since(time.time() - 1.0) and time.time() > killed_at + 5,
            "both members consuming after the failover",
        )
        described = wait_for(lambda: _described(live), "the group described by the new coordinator")
        assert described.group_type == "consumer" and len(described.members) == 2
        assert described.state == "Stable"
        for m, held in zip(members, before, strict=True):
            # Nothing was revoked or newly assigned: the new coordinator knew the group.
            assert not [e for e in m.events if e[0] >= killed_at], m.events
            assert m.owned() == held
    finally:
        stop.set()
        feeder.join(10)
        for m in members:
            m.close()


def _described(bootstrap: str):  # type: ignore[no-untyped-def]
    admin = Admin({"bootstrap.servers": bootstrap})
    try:
        d = admin.describe_groups([GROUP])[GROUP]
        return d if d.members else None
    except Exception:
        return None
    finally:
        admin.close()
