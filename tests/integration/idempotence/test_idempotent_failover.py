"""Idempotent producers across a leader kill -9: replication factor 3,
min.insync.replicas 2, acks=all. After the old leader is back in the ISR, every acknowledged
record is in the log exactly once, at the offset it was acknowledged with, in the order it
was sent, and the segment bytes of all replicas are identical up to the high watermark.

The retries that cross the failover are the point: batches the dead leader had appended and
replicated, but not acknowledged, are re-sent to the new leader, which must recognise them
from the producer state it built as a follower and answer their original offsets."""

from __future__ import annotations

import gc
import socket
import threading
import time
import types
import warnings

import pytest

from common.protocol.api_keys import ApiKey
from common.protocol.messages.init_producer_id import InitProducerIdRequest
from data_plane.storage import Record, build_batch
from deploy.local_cluster import LocalCluster
from tests.integration.replication.helpers import (
    DEADLINE_S,
    bytes_up_to,
    create_topic,
    leader_of,
    list_latest,
    port_of,
    read_partition,
    wait_for,
    wait_isr,
)
from tests.unit.broker.wire import WireClient

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:importlib.resources._legacy"),
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]

# Records each producer sends; the leader is killed once KILL_AFTER_ACKS are acknowledged,
# with the rest queued or in flight.
TOTAL = 3000
KILL_AFTER_ACKS = 300


class Acks:
    """Delivery outcomes, filled from the clients' callback threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.offsets: dict[bytes, int] = {}
        self.errors: list[tuple[bytes, object]] = []

    def ok(self, value: bytes, offset: int) -> None:
        with self.lock:
            if value in self.offsets:
                self.errors.append((value, f"acknowledged twice: {offset}"))
            self.offsets[value] = offset

    def fail(self, value: bytes, error: object) -> None:
        with self.lock:
            self.errors.append((value, error))

    def count(self) -> int:
        with self.lock:
            return len(self.offsets)


def values(prefix: bytes) -> list[bytes]:
    return [prefix + b"-%06d" % i for i in range(TOTAL)]


class KillLeaderAfterAcks(threading.Thread):
    """Kills (SIGKILL) ``broker`` as soon as ``n`` records are acknowledged, while the
    producer streams: requests are in flight, some appended and replicated but not yet
    acknowledged, so their retries must be recognised by the new leader."""

    def __init__(self, cluster: LocalCluster, broker: int, acks: Acks, n: int) -> None:
        super().__init__(daemon=True)
        self.cluster, self.broker, self.acks, self.n = cluster, broker, acks, n
        self.killed = threading.Event()

    def run(self) -> None:
        deadline = time.monotonic() + DEADLINE_S
        while self.acks.count() < self.n and time.monotonic() < deadline:
            time.sleep(0.002)
        self.cluster.kill(self.broker)
        self.killed.set()

    def finish(self) -> None:
        self.join(DEADLINE_S)
        assert self.killed.is_set(), "the leader was not killed"


def check_exactly_once_in_order(
    cluster: LocalCluster, topic: str, old_leader: int, sent: list[bytes], acks: Acks
) -> None:
    assert not acks.errors, acks.errors[:3]
    assert len(acks.offsets) == len(sent)
    leader_of(cluster, topic, exclude=(old_leader,))
    cluster.start_node(old_leader)
    wait_isr(cluster, topic, set(cluster.broker_ids))
    leader = leader_of(cluster, topic)["leader_id"]
    hw = list_latest(cluster, leader, topic)
    log = read_partition(cluster.bootstrap_servers(), topic, hw)
    got = [v for _, v in log]
    assert len(got) == hw
    assert len(set(got)) == len(got), "duplicates in the log"
    assert got == sent, "the log is not exactly the sent records in order"
    at = dict(log)
    for value, offset in acks.offsets.items():
        assert at.get(offset) == value, (offset, value, at.get(offset))

    def identical() -> bool:
        copies = {b: bytes_up_to(cluster, b, topic, hw) for b in cluster.broker_ids}
        return len(set(copies.values())) == 1 and len(next(iter(copies.values()))) > 0

    wait_for(identical, f"identical replicas of {topic}-0 up to offset {hw}")


def close_kafka_python_failed_connect_sockets() -> None:
    """kafka-python 3.0 leaks the socket of a failed connect (kafka/net/inet.py sock_connect
    raises without closing it; a kept traceback holds its frame). Connects to the killed
    broker fail, so close those sockets here instead of failing at interpreter exit on their
    ResourceWarning (warnings are errors in these tests)."""
    gc.collect()
    for obj in gc.get_objects():
        if isinstance(obj, socket.socket) and obj.fileno() >= 0:
            frames = [r for r in gc.get_referrers(obj) if isinstance(r, types.FrameType)]
            if any(f.f_code.co_filename.endswith("kafka/net/inet.py") for f in frames):
                obj.close()


def test_confluent_idempotent_producer_survives_leader_kill(cluster: LocalCluster) -> None:
    from confluent_kafka import Producer

    topic = "idem-confluent"
    old_leader = create_topic(cluster, topic, min_isr=2)
    sent = values(b"c")
    acks = Acks()
    producer = Producer(
        {
            "bootstrap.servers": ",".join(cluster.bootstrap_servers()),
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 2,
            "batch.num.messages": 50,
            "max.in.flight.requests.per.connection": 5,
            "retry.backoff.ms": 100,
            "message.timeout.ms": 120_000,
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )

    def cb(err, msg) -> None:
        if err is None:
            acks.ok(msg.value(), msg.offset())
        else:
            acks.fail(msg.value(), err)

    killer = KillLeaderAfterAcks(cluster, old_leader, acks, KILL_AFTER_ACKS)
    killer.start()
    for v in sent:
        producer.produce(topic, v, partition=0, on_delivery=cb)
        producer.poll(0)
    left = producer.flush(DEADLINE_S * 2)
    killer.finish()
    assert left == 0, f"{left} records undelivered"
    check_exactly_once_in_order(cluster, topic, old_leader, sent, acks)


def test_kafka_python_idempotent_producer_survives_leader_kill(cluster: LocalCluster) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from kafka import KafkaProducer

    topic = "idem-kafka-python"
    old_leader = create_topic(cluster, topic, min_isr=2)
    sent = values(b"k")
    acks = Acks()
    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap_servers(),
        enable_idempotence=True,
        acks="all",
        linger_ms=2,
        batch_size=1024,
        max_in_flight_requests_per_connection=5,
        retry_backoff_ms=100,
        request_timeout_ms=5000,
        delivery_timeout_ms=120_000,
        metadata_max_age_ms=1000,
    )
    futures = []
    killer = KillLeaderAfterAcks(cluster, old_leader, acks, KILL_AFTER_ACKS)
    killer.start()
    try:
        for v in sent:
            f = producer.send(topic, value=v, partition=0)
            f.add_callback(lambda md, v=v: acks.ok(v, md.offset))
            f.add_errback(lambda e, v=v: acks.fail(v, e))
            futures.append(f)
        producer.flush(timeout=DEADLINE_S * 2)
        killer.finish()
    finally:
        producer.close(timeout=10)
        del producer, futures
        close_kafka_python_failed_connect_sockets()
    check_exactly_once_in_order(cluster, topic, old_leader, sent, acks)


def produce_idempotent(
    cluster: LocalCluster, broker: int, topic: str, pid: int, epoch: int, seq: int, n: int
) -> dict:
    """One Produce v7 (acks=all) of a batch of ``n`` records with sequences from ``seq``."""
    batch = build_batch(
        [Record(None, b"s%d" % (seq + i), 1000) for i in range(n)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
    )
    client = WireClient(port_of(cluster, broker), cluster.host_of(broker))
    try:
        body = {
            "transactional_id": None,
            "acks": -1,
            "timeout_ms": 20_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
        }
        return client.call(ApiKey.PRODUCE, 7, body)["responses"][0]["partition_responses"][0]
    finally:
        client.close()


def test_new_leader_answers_a_retry_with_the_original_offset(cluster: LocalCluster) -> None:
    """Deterministic failover: the retry of a batch the old leader acknowledged reaches the
    new leader, which knows it from replication; then the error codes of the rules."""
    topic = "idem-wire"
    old_leader = create_topic(cluster, topic, min_isr=2)
    client = WireClient(port_of(cluster, old_leader), cluster.host_of(old_leader))
    try:
        init = client.call(
            ApiKey.INIT_PRODUCER_ID,
            1,
            InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000),
        )
        assert init.error_code == 0 and init.producer_id >= 0, init
        assert init.producer_epoch == 0
    finally:
        client.close()
    pid = init.producer_id
    firsts = []
    for seq in range(0, 30, 10):
        r = produce_idempotent(cluster, old_leader, topic, pid, 0, seq, 10)
        assert r["error_code"] == 0, r
        firsts.append(r["base_offset"])
    assert firsts == [0, 10, 20]
    again = produce_idempotent(cluster, old_leader, topic, pid, 0, 10, 10)
    assert (again["error_code"], again["base_offset"]) == (0, 10)
    cluster.kill(old_leader)
    new_leader = leader_of(cluster, topic, exclude=(old_leader,))["leader_id"]
    # Retries of each of the batches: the original offsets, nothing appended.
    for seq, first in zip(range(0, 30, 10), firsts, strict=True):

        def accepted(seq: int = seq) -> dict | None:
            r = produce_idempotent(cluster, new_leader, topic, pid, 0, seq, 10)
            return r if r["error_code"] == 0 else None

        r = wait_for(accepted, "the new leader to accept produces")
        assert r["base_offset"] == first, (seq, r)
    gap = produce_idempotent(cluster, new_leader, topic, pid, 0, 40, 10)
    assert gap["error_code"] == 45  # OUT_OF_ORDER_SEQUENCE_NUMBER
    assert produce_idempotent(cluster, new_leader, topic, pid, 0, 30, 10)["base_offset"] == 30
    assert produce_idempotent(cluster, new_leader, topic, pid, 1, 0, 5)["base_offset"] == 40
    stale = produce_idempotent(cluster, new_leader, topic, pid, 0, 40, 10)
    assert stale["error_code"] == 47  # INVALID_PRODUCER_EPOCH
    unknown = produce_idempotent(cluster, new_leader, topic, pid + 1, 0, 7, 1)
    assert unknown["error_code"] == 59  # UNKNOWN_PRODUCER_ID
    assert list_latest(cluster, new_leader, topic) == 45
    cluster.start_node(old_leader)
    wait_isr(cluster, topic, set(cluster.broker_ids))
