"""Produce and consume the same records with each client: kafka-python, confluent-kafka
(librdkafka), kcat (Debian's, librdkafka underneath) and kraftlog's native client.

Every reader returns the records as ``Rec(partition, offset, key, value, headers)`` sorted by
(partition, offset), so two readers' lists compare byte for byte. librdkafka clients are set to
the murmur2 partitioner (Java's and kafka-python's default) so a key maps to the same partition
from every client; librdkafka's own default (consistent_random, CRC32) would not.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Sequence
from typing import NamedTuple

DEADLINE_S = 90.0
KCAT_TIMEOUT_S = 90.0


class Rec(NamedTuple):
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


class Msg(NamedTuple):
    key: bytes
    value: bytes
    headers: tuple[tuple[str, bytes], ...]


def make_messages(source: str, count: int) -> list[Msg]:
    """Text-safe keys/values (kcat reads them from lines), 100 distinct keys."""
    return [
        Msg(
            b"key-%03d" % (i % 100),
            (f"{source}-value-{i:06d}-" + "x" * (i % 37)).encode(),
            (("src", source.encode()), ("run", b"compat")),
        )
        for i in range(count)
    ]


# --- producers ------------------------------------------------------------------------------


def produce_kafka_python(bootstrap: str, topic: str, msgs: Sequence[Msg], compression: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        compression_type=compression,
        acks="all",
        enable_idempotence=False,
        linger_ms=5,
    )
    try:
        futures = [
            producer.send(topic, key=m.key, value=m.value, headers=list(m.headers)) for m in msgs
        ]
        producer.flush(timeout=DEADLINE_S)
        for f in futures:
            f.get(timeout=DEADLINE_S)
    finally:
        producer.close(timeout=10)


def produce_confluent(bootstrap: str, topic: str, msgs: Sequence[Msg], compression: str) -> None:
    from confluent_kafka import Producer

    errors: list[object] = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": compression,
            "acks": "all",
            "partitioner": "murmur2_random",
            "linger.ms": 5,
        }
    )

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            errors.append(err)

    for m in msgs:
        while True:
            try:
                producer.produce(
                    topic,
                    key=m.key,
                    value=m.value,
                    headers=list(m.headers),
                    on_delivery=on_delivery,
                )
                break
            except BufferError:
                producer.poll(0.05)
    left = producer.flush(DEADLINE_S)
    if left or errors:
        raise AssertionError(f"confluent-kafka: {left} undelivered, errors {errors[:3]}")


def produce_kcat(
    kcat: str, bootstrap: str, topic: str, msgs: Sequence[Msg], compression: str
) -> None:
    lines = b"".join(m.key + b"\t" + m.value + b"\n" for m in msgs)
    headers = [arg for k, v in msgs[0].headers for arg in ("-H", f"{k}={v.decode()}")]
    subprocess.run(
        [
            kcat,
            "-P",
            "-b",
            bootstrap,
            "-t",
            topic,
            "-K",
            "\t",
            "-z",
            compression,
            *headers,
            "-X",
            "partitioner=murmur2_random",
            "-X",
            "acks=all",
        ],
        input=lines,
        check=True,
        timeout=KCAT_TIMEOUT_S,
        capture_output=True,
    )


def produce_native(bootstrap: str, topic: str, msgs: Sequence[Msg], compression: str) -> None:
    from kraftlog_client import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": compression})
    try:
        futures = [
            producer.send(topic, value=m.value, key=m.key, headers=list(m.headers)) for m in msgs
        ]
        producer.flush(DEADLINE_S)
        for f in futures:
            f.get(DEADLINE_S)
    finally:
        producer.close(10)


# --- consumers ------------------------------------------------------------------------------


def _headers(pairs: object) -> tuple[tuple[str, bytes | None], ...]:
    return tuple((k, v) for k, v in (pairs or ()))  # type: ignore[attr-defined]


def consume_kafka_python(bootstrap: str, topic: str, partitions: int, count: int) -> list[Rec]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    out: list[Rec] = []
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        deadline = time.monotonic() + DEADLINE_S
        while len(out) < count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                out.extend(
                    Rec(r.partition, r.offset, r.key, r.value, _headers(r.headers)) for r in records
                )
    finally:
        consumer.close()
    return sorted(out)


def consume_confluent(bootstrap: str, topic: str, partitions: int, count: int) -> list[Rec]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            # librdkafka's consumer requires a group id; nothing here uses the group (assign,
            # no commits), so no coordinator is needed.
            "group.id": "compat-unused",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
        }
    )
    out: list[Rec] = []
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + DEADLINE_S
        while len(out) < count and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=1000, timeout=0.5):
                if m.error() is not None:
                    continue  # partition EOF events and the like
                out.append(
                    Rec(m.partition(), m.offset(), m.key(), m.value(), _headers(m.headers()))
                )
    finally:
        consumer.close()
    return sorted(out)


def consume_kcat(kcat: str, bootstrap: str, topic: str) -> list[Rec]:
    done = subprocess.run(
        [kcat, "-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", "-J", "-q"],
        check=True,
        timeout=KCAT_TIMEOUT_S,
        capture_output=True,
    )
    out = []
    for line in done.stdout.splitlines():
        if not line.strip():
            continue
        j = json.loads(line)
        flat = j.get("headers") or []
        headers = tuple(
            (flat[i], None if flat[i + 1] is None else flat[i + 1].encode())
            for i in range(0, len(flat), 2)
        )
        key = None if j["key"] is None else j["key"].encode()
        value = None if j["payload"] is None else j["payload"].encode()
        out.append(Rec(j["partition"], j["offset"], key, value, headers))
    return sorted(out)


def consume_native(bootstrap: str, topic: str, partitions: int, count: int) -> list[Rec]:
    from kraftlog_client import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"})
    out: list[Rec] = []
    try:
        consumer.assign([(topic, p) for p in range(partitions)])
        deadline = time.monotonic() + DEADLINE_S
        while len(out) < count and time.monotonic() < deadline:
            for r in consumer.poll(timeout_ms=500):
                out.append(Rec(r.partition, r.offset, r.key, r.value, _headers(r.headers)))
    finally:
        consumer.close()
    return sorted(out)
