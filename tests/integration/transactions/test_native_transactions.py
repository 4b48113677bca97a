"""The native client's transactional producer and read_committed consumer against 3 real
brokers: commit and abort, consume-transform-produce with send_offsets_to_transaction, a
fenced zombie."""

from __future__ import annotations

import time
import uuid

import pytest

from deploy.cli import main
from deploy.local_cluster import LocalCluster
from kraftlog_client import Consumer, KafkaError, Producer, TopicPartition
from tests.integration.replication.helpers import DEADLINE_S
from tests.integration.transactions.reads import read_values
from tests.integration.transactions.test_transactions_clients import PARTITIONS, make_topic

pytestmark = [pytest.mark.integration]

CALL_TIMEOUT_S = 60.0


def native_producer(cluster: LocalCluster, txn_id: str) -> Producer:
    p = Producer(
        {"bootstrap.servers": ",".join(cluster.bootstrap_servers()), "transactional.id": txn_id}
    )
    p.init_transactions(CALL_TIMEOUT_S)
    return p


def native_read(cluster: LocalCluster, topic: str, isolation: str, expected: int) -> list[bytes]:
    bootstrap = ",".join(cluster.bootstrap_servers())
    return read_values(bootstrap, topic, PARTITIONS, isolation, expected)


def test_native_commit_and_abort(cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    topic = make_topic(cluster)
    p = native_producer(cluster, f"native-{uuid.uuid4().hex[:6]}")
    try:
        p.begin_transaction()
        for i in range(30):
            p.send(topic, b"committed-%d" % i, partition=i % PARTITIONS)
        p.commit_transaction(CALL_TIMEOUT_S)
        p.begin_transaction()
        for i in range(30):
            p.send(topic, b"aborted-%d" % i, partition=i % PARTITIONS)
        p.flush(CALL_TIMEOUT_S)
        p.abort_transaction(CALL_TIMEOUT_S)
        p.begin_transaction()
        p.send(topic, b"committed-last", partition=0)
        p.commit_transaction(CALL_TIMEOUT_S)
    finally:
        p.close()
    committed = native_read(cluster, topic, "read_committed", 31)
    assert sorted(committed) == sorted(
        [b"committed-%d" % i for i in range(30)] + [b"committed-last"]
    )
    uncommitted = native_read(cluster, topic, "read_uncommitted", 61)
    assert len(uncommitted) == 61
    # The console consumer reads the same way.
    bootstrap = ",".join(cluster.bootstrap_servers())
    for isolation, expected in (("read_committed", 31), ("read_uncommitted", 61)):
        code = main(
            [
                "consume",
                "--bootstrap-server",
                bootstrap,
                "--topic",
                topic,
                "--from-beginning",
                "--max-messages",
                str(expected),
                "--isolation-level",
                isolation,
            ]
        )
        out, err = capsys.readouterr()
        assert code == 0, err
        lines = out.splitlines()
        assert len(lines) == expected
        assert any(v.startswith("aborted") for v in lines) == (isolation == "read_uncommitted")


def test_native_consume_transform_produce(cluster: LocalCluster) -> None:
    source, sink = make_topic(cluster), make_topic(cluster)
    total = 120
    with Producer({"bootstrap.servers": ",".join(cluster.bootstrap_servers())}) as plain:
        for i in range(total):
            plain.send(source, b"%d" % i, partition=i % PARTITIONS)
        plain.flush(CALL_TIMEOUT_S)
    group = f"native-ctp-{uuid.uuid4().hex[:6]}"
    consumer = Consumer(
        {
            "bootstrap.servers": ",".join(cluster.bootstrap_servers()),
            "group.id": group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    producer = native_producer(cluster, f"native-ctp-{uuid.uuid4().hex[:6]}")
    consumer.subscribe([source])
    done = rounds = 0
    deadline = time.monotonic() + DEADLINE_S * 2
    try:
        while done < total and time.monotonic() < deadline:
            records = consumer.poll(500, max_records=20)
            if not records:
                continue
            rounds += 1
            producer.begin_transaction()
            for r in records:
                producer.send(sink, b"out-" + r.value, partition=r.partition)
            offsets: dict[TopicPartition, int] = {}
            for r in records:
                offsets[TopicPartition(r.topic, r.partition)] = r.offset + 1
            producer.send_offsets_to_transaction(offsets, consumer.group_metadata(), CALL_TIMEOUT_S)
            if rounds % 3 == 0:
                producer.abort_transaction(CALL_TIMEOUT_S)
                firsts: dict[TopicPartition, int] = {}
                for r in records:
                    firsts.setdefault(TopicPartition(r.topic, r.partition), r.offset)
                for tp, offset in firsts.items():
                    consumer.seek(tp, offset)
                continue
            producer.commit_transaction(CALL_TIMEOUT_S)
            done += len(records)
    finally:
        producer.close()
        consumer.close()
    assert done == total
    out = native_read(cluster, sink, "read_committed", total)
    assert sorted(out) == sorted(b"out-%d" % i for i in range(total))
    checker = Consumer(
        {"bootstrap.servers": ",".join(cluster.bootstrap_servers()), "group.id": group}
    )
    try:
        committed = checker.committed([TopicPartition(source, p) for p in range(PARTITIONS)])
    finally:
        checker.close()
    assert sum(v or 0 for v in committed.values()) == total


def test_native_zombie_is_fenced(cluster: LocalCluster) -> None:
    topic = make_topic(cluster)
    txn_id = f"native-zombie-{uuid.uuid4().hex[:6]}"
    zombie = native_producer(cluster, txn_id)
    fresh = None
    try:
        zombie.begin_transaction()
        for i in range(6):
            zombie.send(topic, b"zombie-%d" % i, partition=i % PARTITIONS)
        zombie.flush(CALL_TIMEOUT_S)
        fresh = native_producer(cluster, txn_id)
        fresh.begin_transaction()
        fresh.send(topic, b"fresh", partition=0)
        fresh.commit_transaction(CALL_TIMEOUT_S)
        with pytest.raises(KafkaError):
            zombie.send(topic, b"zombie-late", partition=1)
            zombie.commit_transaction(CALL_TIMEOUT_S)
    finally:
        zombie.close(5)
        if fresh is not None:
            fresh.close()
    assert native_read(cluster, topic, "read_committed", 1) == [b"fresh"]
