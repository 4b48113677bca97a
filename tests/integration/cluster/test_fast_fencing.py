"""A killed broker is fenced when its session stream breaks, not after the session timeout; a
stopped (SIGSTOP) broker keeps its session until the timeout. Real processes: 1 controller and
3 brokers with ``broker.session.timeout.ms`` at 60 s, so that anything fenced within the
waits below was fenced by its broken stream."""

from __future__ import annotations

import time

import pytest

from deploy.admin import fetch_image
from deploy.local_cluster import LocalCluster, wait_until
from kraftlog_client import Consumer, Producer
from metadata.image import MetadataImage
from metadata.messages import NewTopic
from tests.integration.clusters import ClusterFactory

pytestmark = pytest.mark.integration

SESSION_TIMEOUT_MS = 60_000
# Far below the session timeout, generous for a loaded machine.
FENCE_WAIT_S = 30.0
# How long a paused broker is watched for a fence that must not come.
PAUSE_WATCH_S = 6.0


@pytest.fixture
def cluster(cluster_factory: ClusterFactory) -> LocalCluster:
    return cluster_factory(
        controllers=1,
        brokers=3,
        **{"broker.session.timeout.ms": str(SESSION_TIMEOUT_MS), "replica.lag.time.max.ms": "5000"},
    )


def image(cluster: LocalCluster) -> MetadataImage:
    with cluster.client(10) as client:
        return fetch_image(client)


def create(cluster: LocalCluster, name: str) -> int:
    with cluster.client(15) as client:
        (result,) = client.create_topics(
            [NewTopic(name, 1, 3, configs={"min.insync.replicas": "2"})]
        )
    assert result.error_code == 0, result

    def led() -> int | None:
        p = image(cluster).partition(name, 0)
        return p.leader if p is not None and p.leader >= 0 and len(p.isr) == 3 else None

    leader = wait_until(led, 30, f"{name}-0 to have a leader and a full ISR")
    assert isinstance(leader, int)
    return leader


def produce(cluster: LocalCluster, topic: str, values: list[bytes]) -> None:
    p = Producer({"bootstrap.servers": ",".join(cluster.bootstrap_servers()), "acks": "all"})
    try:
        futures = [p.send(topic, v, partition=0) for v in values]
        for f in futures:
            f.get(60)
    finally:
        p.close(10)


def consume_all(cluster: LocalCluster, topic: str, n: int) -> list[bytes]:
    bootstrap = ",".join(cluster.bootstrap_servers())
    c = Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"})
    got: list[bytes] = []
    try:
        c.assign([(topic, 0)])
        deadline = time.monotonic() + 60
        while len(got) < n and time.monotonic() < deadline:
            got.extend(r.value for r in c.poll(1000))
    finally:
        c.close()
    return got


def test_a_killed_leader_is_fenced_at_once_and_no_acknowledged_write_is_lost(
    cluster: LocalCluster,
) -> None:
    topic = "killed"
    leader = create(cluster, topic)
    before = [f"before-{i}".encode() for i in range(100)]
    produce(cluster, topic, before)
    cluster.kill(leader)

    def moved() -> bool:
        img = image(cluster)
        p = img.partition(topic, 0)
        return img.brokers[leader].fenced and p is not None and p.leader not in (-1, leader)

    wait_until(moved, FENCE_WAIT_S, f"broker {leader} to be fenced and lose {topic}-0")
    p = image(cluster).partition(topic, 0)
    assert p is not None and leader not in p.isr
    after = [f"after-{i}".encode() for i in range(100)]
    produce(cluster, topic, after)
    assert consume_all(cluster, topic, 200) == before + after

    # It comes back with a new registration and rejoins the ISR.
    cluster.start_node(leader)

    def rejoined() -> bool:
        img = image(cluster)
        q = img.partition(topic, 0)
        return not img.brokers[leader].fenced and q is not None and leader in q.isr

    wait_until(rejoined, 60, f"broker {leader} to rejoin the ISR of {topic}-0")


def test_a_paused_leader_keeps_its_session_until_the_timeout(cluster: LocalCluster) -> None:
    topic = "paused"
    leader = create(cluster, topic)
    epoch = image(cluster).partition(topic, 0).leader_epoch  # type: ignore[union-attr]
    cluster.pause(leader)
    try:
        watch_until = time.monotonic() + PAUSE_WATCH_S
        while time.monotonic() < watch_until:
            img = image(cluster)
            p = img.partition(topic, 0)
            assert not img.brokers[leader].fenced, "a paused broker was fenced before its timeout"
            assert p is not None and (p.leader, p.leader_epoch) == (leader, epoch)
            time.sleep(0.5)
    finally:
        cluster.resume(leader)
    produce(cluster, topic, [b"after the pause"])
    p = image(cluster).partition(topic, 0)
    assert p is not None and p.leader == leader and not image(cluster).brokers[leader].fenced
