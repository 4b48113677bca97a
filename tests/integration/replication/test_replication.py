"""ISR replication across real broker processes: failover without losing an
acknowledged write, ISR shrink and expand, divergent-leader truncation, acks=1 loss."""

from __future__ import annotations

import threading
import time

import pytest

from deploy.local_cluster import LocalCluster
from kraftlog_client import Producer
from tests.integration.replication.conftest import ClusterFactory
from tests.integration.replication.helpers import (
    bytes_up_to,
    checkpoint_text,
    create_topic,
    leader_of,
    list_latest,
    produce_raw,
    read_partition,
    wait_for,
    wait_isr,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:importlib.resources._legacy"),
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]


def assert_replicas_identical(cluster: LocalCluster, topic: str, high_watermark: int) -> None:
    """The segment bytes of every broker are identical up to the high watermark."""

    def same() -> bool:
        copies = {b: bytes_up_to(cluster, b, topic, high_watermark) for b in cluster.broker_ids}
        return len(set(copies.values())) == 1 and len(next(iter(copies.values()))) > 0

    wait_for(same, f"identical replicas of {topic}-0 up to offset {high_watermark}")


def test_kill_leader_mid_stream_keeps_every_acknowledged_write(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster()
    topic = "failover"
    old_leader = create_topic(cluster, topic)
    acked: list[tuple[bytes, int]] = []
    failed: list[tuple[bytes, Exception]] = []
    lock = threading.Lock()

    def on_delivery(value: bytes):
        def cb(error, metadata) -> None:
            with lock:
                if error is None:
                    acked.append((value, metadata.offset))
                else:
                    failed.append((value, error))

        return cb

    total = 4000
    producer = Producer(
        {
            "bootstrap.servers": ",".join(cluster.bootstrap_servers()),
            "acks": "all",
            "linger.ms": 2,
            "batch.size": 4096,
            "request.timeout.ms": 5000,
            "retry.backoff.ms": 100,
        }
    )
    try:
        for i in range(total):
            value = b"v%06d" % i
            producer.send(topic, value, partition=0, on_delivery=on_delivery(value))
            if i == total // 4:
                wait_for(lambda: len(acked) >= 200, "the first acknowledgements")
                cluster.kill(old_leader)  # kill -9 with requests in flight
        producer.flush(120)
    finally:
        producer.close(10)
    assert not failed, failed[:3]
    assert len(acked) == total
    new_leader = leader_of(cluster, topic, exclude=(old_leader,))["leader_id"]
    assert new_leader != old_leader

    # The old leader comes back as a follower, truncates what it alone had, and rejoins.
    cluster.start_node(old_leader)
    wait_isr(cluster, topic, set(cluster.broker_ids))
    hw = list_latest(cluster, new_leader, topic)
    log = dict(read_partition(cluster.bootstrap_servers(), topic, hw))
    assert len(log) == hw
    for value, offset in acked:
        assert log.get(offset) == value, (offset, value, log.get(offset))
    by_value = {}
    for offset, value in sorted(log.items()):
        by_value.setdefault(value, offset)
    firsts = [by_value[v] for v, _ in acked]
    assert firsts == sorted(firsts), "acknowledged values out of order"
    assert_replicas_identical(cluster, topic, hw)


def test_paused_follower_leaves_the_isr_and_rejoins(make_cluster: ClusterFactory) -> None:
    # A long session timeout: the ISR shrink below is the leader's, not the controller fencing
    # the paused broker.
    cluster = make_cluster(
        **{"broker.session.timeout.ms": "15000", "replica.lag.time.max.ms": "1500"}
    )
    topic = "pause"
    leader = create_topic(cluster, topic)
    follower = next(b for b in cluster.broker_ids if b != leader)
    others = set(cluster.broker_ids) - {follower}
    assert (
        produce_raw(cluster, leader, topic, [b"a%d" % i for i in range(100)], -1)["error_code"] == 0
    )
    cluster.pause(follower)
    try:
        # acks=all waits for the paused follower until the leader drops it from the ISR.
        r = produce_raw(cluster, leader, topic, [b"b%d" % i for i in range(100)], -1)
        assert r["error_code"] == 0 and r["base_offset"] == 100, r
        wait_isr(cluster, topic, others, timeout_s=10)
        r = produce_raw(cluster, leader, topic, [b"c%d" % i for i in range(100)], -1)
        assert r["error_code"] == 0 and r["base_offset"] == 200, r
    finally:
        cluster.resume(follower)
    wait_isr(cluster, topic, set(cluster.broker_ids))
    assert list_latest(cluster, leader, topic) == 300
    assert_replicas_identical(cluster, topic, 300)


def test_acks1_write_lost_on_failover_and_divergent_leader_truncates(
    make_cluster: ClusterFactory,
) -> None:
    """acks=1 can lose acknowledged writes: the leader acknowledges records its followers do
    not have yet; when it dies, a follower from the ISR becomes leader without them. The old
    leader returns as a follower, truncates its extra records and converges."""
    # The session timeout is long enough that the paused followers are never fenced (on a
    # loaded machine a pause can take a while), so a clean election from the ISR follows.
    cluster = make_cluster(
        **{
            "replica.lag.time.max.ms": "30000",
            "broker.session.timeout.ms": "6000",
            "replica.fetch.wait.max.ms": "200",
        }
    )
    topic = "diverge"
    leader = create_topic(cluster, topic)
    followers = [b for b in cluster.broker_ids if b != leader]
    r = produce_raw(cluster, leader, topic, [b"committed-%d" % i for i in range(100)], -1)
    assert r["error_code"] == 0, r
    # Followers paused (still in the ISR: far below replica.lag.time.max.ms and the session
    # timeout): the leader alone gets the next, acks=1, records.
    for f in followers:
        cluster.pause(f)
    try:
        # A follower fetch parked at the leader would carry the next append into the paused
        # follower's socket buffer (it would then have the records after all): let the leader
        # answer the parked fetches first (replica.fetch.wait.max.ms = 200 ms).
        time.sleep(1.0)
        r = produce_raw(cluster, leader, topic, [b"lost-%d" % i for i in range(50)], 1)
        assert r["error_code"] == 0 and r["base_offset"] == 100, r
        cluster.kill(leader)
    finally:
        for f in followers:
            cluster.resume(f)
    new_leader = leader_of(cluster, topic, exclude=(leader,))["leader_id"]
    wait_for(lambda: list_latest(cluster, new_leader, topic) == 100, "the new leader's HW")
    values = [v for _, v in read_partition(cluster.bootstrap_servers(), topic, 100)]
    assert values == [b"committed-%d" % i for i in range(100)]
    r = produce_raw(cluster, new_leader, topic, [b"new-%d" % i for i in range(20)], -1)
    assert r["error_code"] == 0 and r["base_offset"] == 100, r

    cluster.start_node(leader)
    wait_isr(cluster, topic, set(cluster.broker_ids))
    assert list_latest(cluster, new_leader, topic) == 120
    assert_replicas_identical(cluster, topic, 120)
    values = [v for _, v in read_partition(cluster.bootstrap_servers(), topic, 120)]
    assert values[100:] == [b"new-%d" % i for i in range(20)]
    assert "truncated 50 uncommitted offsets" in cluster.log_tail(leader, 400)


def test_unclean_election_loses_committed_offsets_and_logs_how_many(
    make_cluster: ClusterFactory,
) -> None:
    """With unclean.leader.election.enable, an out-of-sync replica may become leader; the old
    leader truncates committed records when it returns and logs how many it lost."""
    cluster = make_cluster(
        brokers=2,
        **{
            "broker.session.timeout.ms": "6000",
            "replica.lag.time.max.ms": "1500",
            "replica.high.watermark.checkpoint.interval.ms": "100",
        },
    )
    topic = "unclean"
    leader = create_topic(
        cluster, topic, 1, replication_factor=2, extra={"unclean.leader.election.enable": "true"}
    )
    (follower,) = [b for b in cluster.broker_ids if b != leader]
    assert (
        produce_raw(cluster, leader, topic, [b"a%d" % i for i in range(100)], -1)["error_code"] == 0
    )
    cluster.pause(follower)
    try:
        wait_isr(cluster, topic, {leader})  # the leader dropped the follower
        r = produce_raw(cluster, leader, topic, [b"b%d" % i for i in range(50)], -1)
        assert r["error_code"] == 0 and r["base_offset"] == 100, r  # committed: ISR = {leader}
        wait_for(lambda: list_latest(cluster, leader, topic) == 150, "HW 150")
        wait_for(lambda: f"{topic} 0 150" in checkpoint_text(cluster, leader), "the HW checkpoint")
        cluster.kill(leader)
    finally:
        cluster.resume(follower)
    # No ISR member is alive: the controller elects the out-of-sync follower (unclean).
    assert leader_of(cluster, topic, exclude=(leader,))["leader_id"] == follower
    cluster.start_node(leader)
    wait_isr(cluster, topic, {leader, follower})
    assert list_latest(cluster, follower, topic) == 100
    assert_replicas_identical(cluster, topic, 100)
    wait_for(
        lambda: "50 committed offsets lost" in cluster.log_tail(leader, 400),
        "the data-loss warning",
    )
