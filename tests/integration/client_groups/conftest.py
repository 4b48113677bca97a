"""One LocalCluster (1 controller + 1 broker) with quick group settings, shared by the
client-group tests of this folder and always torn down; tests use their own topics and groups."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

import pytest

from deploy.local_cluster import LocalCluster
from kraftlog_client import Admin, NewTopic, Producer
from tests.integration.clusters import FAST_OVERRIDES, running_cluster

GROUP_OVERRIDES = {
    **FAST_OVERRIDES,
    # One broker: the offsets topic cannot have 3 replicas; few partitions start quickly.
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    # KIP-848 members: quick expiry of a killed member, frequent heartbeats.
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.heartbeat.interval.ms": "500",
}
# Consumer settings of the tests: quick failure detection, frequent heartbeats.
MEMBER = {
    "auto.offset.reset": "earliest",
    "session.timeout.ms": "6000",
    "heartbeat.interval.ms": "300",
}

_ids = itertools.count()


@pytest.fixture(scope="package")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("groups-cluster"), overrides=GROUP_OVERRIDES) as c:
        yield c


@pytest.fixture(scope="package")
def bootstrap(cluster: LocalCluster) -> str:
    return ",".join(cluster.bootstrap_servers())


@pytest.fixture
def admin(bootstrap: str) -> Iterator[Admin]:
    a = Admin({"bootstrap.servers": bootstrap})
    yield a
    a.close()


@pytest.fixture
def new_topic(admin: Admin) -> Callable[..., str]:
    def make(partitions: int) -> str:
        name = f"groups-test-{next(_ids)}"
        admin.create_topics([NewTopic(name, partitions, 1)])
        admin.wait_for_leaders([name], timeout_ms=30_000)
        return name

    return make


@pytest.fixture
def group_id() -> str:
    return f"group-{next(_ids)}"


@pytest.fixture
def produce(bootstrap: str) -> Iterator[Callable[..., list[bytes]]]:
    producer = Producer({"bootstrap.servers": bootstrap})

    def send(topic: str, count: int, partitions: int, start: int = 0) -> list[bytes]:
        values = [b"v%d" % i for i in range(start, start + count)]
        for i, v in enumerate(values):
            producer.send(topic, value=v, partition=(start + i) % partitions)
        producer.flush(30)
        return values

    yield send
    producer.close()
