"""Cross-client compatibility: records written by kafka-python / confluent-kafka are read
byte-identically by the native client and vice versa; a key lands on the same partition from
every client (murmur2: Java's default partitioner, librdkafka's murmur2_random)."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable

import pytest

from kraftlog_client import Consumer, ConsumerRecord, Producer, TopicPartition

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import kafka
    from kafka import TopicPartition as KafkaTopicPartition

import confluent_kafka

pytestmark = pytest.mark.integration

Row = tuple[int, int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...], int]


def _records(n: int) -> list[tuple[bytes | None, bytes | None, list[tuple[str, bytes]], int]]:
    base_ts = 1_700_000_000_000
    out = []
    for i in range(n):
        key = None if i % 7 == 0 else b"key-%d" % (i % 13)
        value = b"\x00\xff binary %d " % i + bytes(range(i % 256))
        headers = [("h", b"%d" % i), ("bin", b"\x00\x01")] if i % 2 else []
        out.append((key, value, headers, base_ts + i))
    return out


def _native_read(bootstrap: str, topic: str, partitions: int, n: int) -> list[Row]:
    got: list[ConsumerRecord] = []
    with Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"}) as c:
        c.assign([TopicPartition(topic, p) for p in range(partitions)])
        deadline = time.monotonic() + 60
        while len(got) < n and time.monotonic() < deadline:
            got.extend(c.poll(500))
    return sorted((r.partition, r.offset, r.key, r.value, r.headers, r.timestamp) for r in got)


def _kafka_python_read(bootstrap: str, topic: str, partitions: int, n: int) -> list[Row]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        consumer = kafka.KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=None,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        try:
            consumer.assign([KafkaTopicPartition(topic, p) for p in range(partitions)])
            rows: list[Row] = []
            deadline = time.monotonic() + 60
            while len(rows) < n and time.monotonic() < deadline:
                for batch in consumer.poll(timeout_ms=500).values():
                    for r in batch:
                        rows.append(
                            (
                                r.partition,
                                r.offset,
                                r.key,
                                r.value,
                                tuple((k, v) for k, v in r.headers),
                                r.timestamp,
                            )
                        )
        finally:
            consumer.close()
    return sorted(rows)


def _confluent_write(
    bootstrap: str,
    topic: str,
    records: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes]], int]],
    compression: str,
) -> None:
    """Produce ``records`` with librdkafka (Java's partitioner) and wait for every ack."""
    producer = confluent_kafka.Producer({
        "bootstrap.servers": bootstrap, "partitioner": "murmur2_random",
        "compression.type": compression, "linger.ms": 5,
    })  # fmt: skip
    for key, value, headers, ts in records:
        producer.produce(topic, value=value, key=key, headers=headers, timestamp=ts)
    assert producer.flush(60) == 0


def _confluent_read(bootstrap: str, topic: str, partitions: int, n: int) -> list[Row]:
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "compat-unused",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
        }
    )
    try:
        consumer.assign(
            [
                confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
                for p in range(partitions)
            ]
        )
        rows: list[Row] = []
        deadline = time.monotonic() + 60
        while len(rows) < n and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=1000, timeout=0.5):
                if m.error():
                    continue
                rows.append(
                    (
                        m.partition(),
                        m.offset(),
                        m.key(),
                        m.value(),
                        tuple(m.headers() or ()),
                        m.timestamp()[1],
                    )
                )
    finally:
        consumer.close()
    return sorted(rows)


def test_kafka_python_writes_native_reads(bootstrap: str, new_topic: Callable[..., str]) -> None:
    topic = new_topic(partitions=3)
    records = _records(500)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        producer = kafka.KafkaProducer(
            bootstrap_servers=bootstrap,
            compression_type="gzip",
            enable_idempotence=False,
        )
        try:
            for key, value, headers, ts in records:
                producer.send(topic, value=value, key=key, headers=headers, timestamp_ms=ts)
            producer.flush(60)
        finally:
            producer.close(10)
    native = _native_read(bootstrap, topic, 3, 500)
    theirs = _kafka_python_read(bootstrap, topic, 3, 500)
    assert len(native) == 500 and native == theirs


def test_native_writes_kafka_python_and_confluent_read(
    bootstrap: str, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(partitions=3)
    records = _records(500)
    with Producer({"bootstrap.servers": bootstrap, "compression.type": "zstd"}) as p:
        for key, value, headers, ts in records:
            p.send(topic, value, key=key, headers=headers, timestamp_ms=ts)
        p.flush(60)
    native = _native_read(bootstrap, topic, 3, 500)
    assert len(native) == 500
    assert sorted((r[3], r[4], r[5]) for r in native) == sorted(
        (v, tuple(h), ts) for _k, v, h, ts in records
    )
    assert _kafka_python_read(bootstrap, topic, 3, 500) == native
    assert _confluent_read(bootstrap, topic, 3, 500) == native


def test_confluent_writes_native_reads(bootstrap: str, new_topic: Callable[..., str]) -> None:
    topic = new_topic(partitions=3)
    _confluent_write(bootstrap, topic, _records(500), "zstd")
    native = _native_read(bootstrap, topic, 3, 500)
    assert len(native) == 500
    assert native == _confluent_read(bootstrap, topic, 3, 500)


def test_same_key_same_partition_from_every_client(
    bootstrap: str, new_topic: Callable[..., str]
) -> None:
    partitions = 6
    keys = [b"user-%d" % i for i in range(60)] + [b"", b"\x00", "ключ".encode()]
    placements: dict[str, dict[bytes, int]] = {}

    topic = new_topic(partitions=partitions)
    with Producer({"bootstrap.servers": bootstrap}) as p:
        futures = {k: p.send(topic, b"native", key=k) for k in keys}
        p.flush(60)
        placements["native"] = {k: f.get(0).partition for k, f in futures.items()}

    topic = new_topic(partitions=partitions)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kp = kafka.KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=False)
        try:
            kfutures = {k: kp.send(topic, value=b"kafka-python", key=k) for k in keys}
            kp.flush(60)
            placements["kafka-python"] = {k: f.get(10).partition for k, f in kfutures.items()}
        finally:
            kp.close(10)

    topic = new_topic(partitions=partitions)
    cp = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    seen: dict[bytes, int] = {}

    def report(err: object, msg: confluent_kafka.Message) -> None:
        if err is None:
            seen[msg.key()] = msg.partition()

    for k in keys:
        cp.produce(topic, value=b"confluent", key=k, on_delivery=report)
    assert cp.flush(60) == 0
    placements["confluent"] = seen

    assert placements["native"] == placements["kafka-python"] == placements["confluent"]
    assert len(set(placements["native"].values())) > 1


@pytest.mark.parametrize("codec", ["lz4", "snappy"])
def test_lz4_and_snappy_between_native_and_confluent(
    bootstrap: str, new_topic: Callable[..., str], codec: str
) -> None:
    """librdkafka's lz4 frames and snappy blocks are stored and read back by the native client,
    and the native client's (snappy with the Java client's xerial framing) by librdkafka."""
    records = _records(300)
    from_confluent = new_topic(partitions=3)
    _confluent_write(bootstrap, from_confluent, records, codec)
    native = _native_read(bootstrap, from_confluent, 3, 300)
    assert len(native) == 300
    assert native == _confluent_read(bootstrap, from_confluent, 3, 300)

    from_native = new_topic(partitions=3)
    with Producer({"bootstrap.servers": bootstrap, "compression.type": codec}) as p:
        for key, value, headers, ts in records:
            p.send(from_native, value, key=key, headers=headers, timestamp_ms=ts)
        p.flush(60)
    read_back = _confluent_read(bootstrap, from_native, 3, 300)
    assert sorted((r[3], r[4], r[5]) for r in read_back) == sorted(
        (v, tuple(h), ts) for _k, v, h, ts in records
    )
