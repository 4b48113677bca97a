"""Transactions with unmodified clients against 3 real brokers (RF 3, min.insync.replicas 2):
confluent-kafka (librdkafka) and kafka-python transactional producers, consume-transform-
produce with send_offsets_to_transaction, zombie fencing, coordinator failover, and
read_committed / read_uncommitted consumers."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as CTopicPartition

from common.protocol.api_keys import ApiKey
from common.protocol.messages.find_coordinator import FindCoordinatorRequest
from deploy.local_cluster import LocalCluster
from metadata.messages import NewTopic
from tests.integration.replication.helpers import DEADLINE_S, port_of, wait_for
from tests.unit.broker.wire import WireClient

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

PARTITIONS = 3
# librdkafka calls that wait on the coordinator; generous for a loaded 2-core machine.
CALL_TIMEOUT_S = 60.0


def make_topic(cluster: LocalCluster, partitions: int = PARTITIONS) -> str:
    name = f"txn-{uuid.uuid4().hex[:8]}"
    with cluster.client(10.0) as admin:
        (res,) = admin.create_topics(
            [NewTopic(name, partitions, 3, configs={"min.insync.replicas": "2"})]
        )
        assert res.error_code == 0, res
    return name


def bootstrap(cluster: LocalCluster) -> str:
    return ",".join(cluster.bootstrap_servers())


def txn_producer(cluster: LocalCluster, txn_id: str, **extra: object) -> Producer:
    conf = {
        "bootstrap.servers": bootstrap(cluster),
        "transactional.id": txn_id,
        "transaction.timeout.ms": 60_000,
        "enable.idempotence": True,
        **extra,
    }
    p = Producer(conf)
    p.init_transactions(CALL_TIMEOUT_S)
    return p


def read_all(
    cluster: LocalCluster, topic: str, isolation: str, expected: int, partitions: int = PARTITIONS
) -> list[bytes]:
    """Every value of ``topic`` a consumer with ``isolation`` reads, once it has ``expected``
    of them and nothing more arrives for a while (bounded by the deadline)."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap(cluster),
            "group.id": f"reader-{uuid.uuid4().hex[:6]}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        c.assign([CTopicPartition(topic, p, 0) for p in range(partitions)])
        got: list[bytes] = []
        deadline = time.monotonic() + DEADLINE_S
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                if len(got) >= expected and time.monotonic() - quiet_since > 2.0:
                    break
                continue
            if m.error():
                if m.error().code() != KafkaError._PARTITION_EOF:
                    raise AssertionError(f"consumer error: {m.error()}")
                continue
            got.append(m.value())
            quiet_since = time.monotonic()
        return got
    finally:
        c.close()


def test_committed_and_aborted_transactions(cluster: LocalCluster) -> None:
    topic = make_topic(cluster)
    p = txn_producer(cluster, f"tx-{uuid.uuid4().hex[:6]}")
    p.begin_transaction()
    for i in range(30):
        p.produce(topic, value=b"committed-%d" % i, partition=i % PARTITIONS)
    p.commit_transaction(CALL_TIMEOUT_S)
    p.begin_transaction()
    for i in range(30):
        p.produce(topic, value=b"aborted-%d" % i, partition=i % PARTITIONS)
    p.flush(CALL_TIMEOUT_S)
    p.abort_transaction(CALL_TIMEOUT_S)
    p.begin_transaction()
    for i in range(30, 40):
        p.produce(topic, value=b"committed-%d" % i, partition=i % PARTITIONS)
    p.commit_transaction(CALL_TIMEOUT_S)

    committed = read_all(cluster, topic, "read_committed", 40)
    assert sorted(committed) == sorted(b"committed-%d" % i for i in range(40))
    uncommitted = read_all(cluster, topic, "read_uncommitted", 70)
    assert len(uncommitted) == 70
    assert sum(v.startswith(b"aborted") for v in uncommitted) == 30


def test_consume_transform_produce_is_exactly_once(cluster: LocalCluster) -> None:
    source, sink = make_topic(cluster), make_topic(cluster)
    total = 200
    plain = Producer({"bootstrap.servers": bootstrap(cluster), "acks": "all"})
    for i in range(total):
        plain.produce(source, value=b"%d" % i, partition=i % PARTITIONS)
    assert plain.flush(CALL_TIMEOUT_S) == 0
    group = f"ctp-{uuid.uuid4().hex[:6]}"
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap(cluster),
            "group.id": group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    producer = txn_producer(cluster, f"ctp-{uuid.uuid4().hex[:6]}")
    consumer.subscribe([source])
    done = 0
    rounds = 0
    deadline = time.monotonic() + DEADLINE_S * 2
    try:
        while done < total and time.monotonic() < deadline:
            msgs = consumer.consume(25, 1.0)
            msgs = [m for m in msgs if m.error() is None]
            if not msgs:
                continue
            rounds += 1
            producer.begin_transaction()
            for m in msgs:
                producer.produce(sink, value=b"out-" + m.value(), partition=m.partition())
            offsets = [CTopicPartition(m.topic(), m.partition(), m.offset() + 1) for m in msgs]
            producer.send_offsets_to_transaction(
                offsets, consumer.consumer_group_metadata(), CALL_TIMEOUT_S
            )
            if rounds % 3 == 0:
                # An aborted round: its output never shows and its input is read again.
                producer.abort_transaction(CALL_TIMEOUT_S)
                firsts: dict[int, int] = {}
                for m in msgs:
                    firsts.setdefault(m.partition(), m.offset())
                for partition, offset in firsts.items():
                    consumer.seek(CTopicPartition(source, partition, offset))
                continue
            producer.commit_transaction(CALL_TIMEOUT_S)
            done += len(msgs)
    finally:
        consumer.close()
    assert done == total
    out = read_all(cluster, sink, "read_committed", total)
    assert sorted(out) == sorted(b"out-%d" % i for i in range(total))
    # The group's committed offsets cover the whole input.
    checker = Consumer({"bootstrap.servers": bootstrap(cluster), "group.id": group})
    try:
        committed = checker.committed(
            [CTopicPartition(source, p) for p in range(PARTITIONS)], CALL_TIMEOUT_S
        )
    finally:
        checker.close()
    assert sum(tp.offset for tp in committed) == total


def test_zombie_is_fenced_and_its_writes_never_show(cluster: LocalCluster) -> None:
    topic = make_topic(cluster)
    txn_id = f"zombie-{uuid.uuid4().hex[:6]}"
    zombie = txn_producer(cluster, txn_id)
    zombie.begin_transaction()
    for i in range(10):
        zombie.produce(topic, value=b"zombie-%d" % i, partition=i % PARTITIONS)
    zombie.flush(CALL_TIMEOUT_S)
    # A new instance with the same transactional id fences the zombie and aborts its work.
    fresh = txn_producer(cluster, txn_id)
    fresh.begin_transaction()
    fresh.produce(topic, value=b"fresh", partition=0)
    fresh.commit_transaction(CALL_TIMEOUT_S)
    with pytest.raises(KafkaException) as info:
        zombie.produce(topic, value=b"zombie-late", partition=1)
        zombie.commit_transaction(CALL_TIMEOUT_S)
    assert info.value.args[0].fatal() or info.value.args[0].txn_requires_abort()
    assert read_all(cluster, topic, "read_committed", 1) == [b"fresh"]


def test_transaction_completes_after_its_coordinator_is_killed(cluster: LocalCluster) -> None:
    topic = make_topic(cluster)
    txn_id = f"failover-{uuid.uuid4().hex[:6]}"
    p = txn_producer(cluster, txn_id)
    p.begin_transaction()
    for i in range(60):
        p.produce(topic, value=b"v-%d" % i, partition=i % PARTITIONS)
    p.commit_transaction(CALL_TIMEOUT_S)
    coordinator = coordinator_of(cluster, txn_id)
    # The commit was acknowledged once PrepareCommit was replicated; kill the coordinator
    # at once, probably before all its markers were written: its successor finishes them.
    cluster.kill(coordinator)
    try:
        values = read_all(cluster, topic, "read_committed", 60)
        assert sorted(values) == sorted(b"v-%d" % i for i in range(60))
        p.begin_transaction()
        p.produce(topic, value=b"after", partition=0)
        p.commit_transaction(CALL_TIMEOUT_S)
        assert b"after" in read_all(cluster, topic, "read_committed", 61)
    finally:
        cluster.start_node(coordinator)
        cluster.wait_ready(DEADLINE_S)


def coordinator_of(cluster: LocalCluster, txn_id: str) -> int:
    broker = cluster.broker_ids[0]
    client = WireClient(port_of(cluster, broker), cluster.host_of(broker))
    try:
        body = wait_for(
            lambda: (
                r
                if (
                    r := client.call(ApiKey.FIND_COORDINATOR, 2, FindCoordinatorRequest(txn_id, 1))
                ).error_code
                == 0
                else None
            ),
            "the transaction coordinator",
        )
    finally:
        client.close()
    return int(body.node_id)


def test_kafka_python_transactional_producer(cluster: LocalCluster) -> None:
    from kafka import KafkaProducer

    topic = make_topic(cluster)
    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap_servers(),
        transactional_id=f"kp-{uuid.uuid4().hex[:6]}",
        enable_idempotence=True,
    )
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(20):
            producer.send(topic, value=b"kp-%d" % i, partition=i % PARTITIONS)
        producer.commit_transaction()
        producer.begin_transaction()
        for i in range(20):
            producer.send(topic, value=b"kp-aborted-%d" % i, partition=i % PARTITIONS)
        producer.flush()
        producer.abort_transaction()
    finally:
        producer.close()
    values = read_all(cluster, topic, "read_committed", 20)
    assert sorted(values) == sorted(b"kp-%d" % i for i in range(20))


def test_partition_leader_killed_mid_transaction(cluster: LocalCluster) -> None:
    """kill -9 of the leader of a partition the open transaction wrote to: librdkafka retries
    to the new leader (same producer id, epoch and sequences), the commit goes through, and a
    read_committed reader sees every record exactly once."""
    from tests.integration.replication.helpers import leader_of, wait_isr

    with cluster.client(10.0) as admin:
        topic = f"txn-kill-{uuid.uuid4().hex[:6]}"
        (res,) = admin.create_topics([NewTopic(topic, 1, 3, configs={"min.insync.replicas": "2"})])
        assert res.error_code == 0, res
    leader = leader_of(cluster, topic)["leader_id"]
    wait_isr(cluster, topic, set(cluster.broker_ids))
    p = txn_producer(cluster, f"kill-{uuid.uuid4().hex[:6]}")
    p.begin_transaction()
    for i in range(50):
        p.produce(topic, value=b"v-%d" % i, partition=0)
    p.flush(CALL_TIMEOUT_S)
    cluster.kill(leader)
    try:
        for i in range(50, 100):
            p.produce(topic, value=b"v-%d" % i, partition=0)
        p.commit_transaction(CALL_TIMEOUT_S)
        values = read_all(cluster, topic, "read_committed", 100, partitions=1)
        assert sorted(values) == sorted(b"v-%d" % i for i in range(100))
    finally:
        cluster.start_node(leader)
        cluster.wait_ready(DEADLINE_S)
