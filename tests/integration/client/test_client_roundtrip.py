from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from kraftlog_client import (
    Admin,
    Consumer,
    ConsumerRecord,
    KafkaError,
    NewTopic,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    Producer,
    ProducerInterceptor,
    ProducerRecord,
    RecordMetadata,
    TopicOperationError,
    TopicPartition,
)

pytestmark = pytest.mark.integration


def consume(
    bootstrap: str, topic: str, expected: int, timeout_s: float = 60.0, **props: object
) -> list[ConsumerRecord]:
    config = {"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"}
    config.update({k: str(v) for k, v in props.items()})
    out: list[ConsumerRecord] = []
    with Consumer(config) as consumer:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout_s
        while len(out) < expected and time.monotonic() < deadline:
            out.extend(consumer.poll(500))
    return out


@pytest.mark.parametrize("compression", ["none", "gzip", "zstd"])
def test_ten_thousand_records_with_keys_and_headers_round_trip(
    bootstrap: str, new_topic: Callable[..., str], compression: str
) -> None:
    topic = new_topic(partitions=3)
    sent = {}
    with Producer({"bootstrap.servers": bootstrap, "compression.type": compression}) as p:
        futures = []
        for i in range(10_000):
            key = None if i % 10 == 0 else b"key-%d" % (i % 97)
            value = b"value-%d-" % i + bytes(i % 200)
            headers = [("i", str(i).encode()), ("null", None)] if i % 3 == 0 else None
            futures.append((i, p.send(topic, value, key=key, headers=headers)))
            sent[i] = (key, value, tuple(headers or ()))
        p.flush(60)
        metadata = {i: f.get(0) for i, f in futures}
    records = consume(bootstrap, topic, 10_000)
    assert len(records) == 10_000
    by_position = {(r.partition, r.offset): r for r in records}
    for i, md in metadata.items():
        record = by_position[(md.partition, md.offset)]
        assert (record.key, record.value, record.headers) == sent[i]
        assert record.timestamp == md.timestamp and record.timestamp_type == 0
    # Keys land where murmur2 says; each partition's offsets are dense from 0.
    for p in range(3):
        offsets = sorted(r.offset for r in records if r.partition == p)
        assert offsets == list(range(len(offsets)))


def test_delivery_callbacks_and_interceptors(bootstrap: str, new_topic: Callable[..., str]) -> None:
    topic = new_topic()
    acks: list[tuple[RecordMetadata | None, Exception | None]] = []

    class Tag(ProducerInterceptor):
        def on_send(self, record: ProducerRecord) -> ProducerRecord:
            record.headers = [*(record.headers or ()), ("tagged", b"1")]
            return record

        def on_acknowledgement(
            self, metadata: RecordMetadata | None, error: Exception | None
        ) -> None:
            acks.append((metadata, error))

    delivered: list[tuple[Exception | None, RecordMetadata | None]] = []
    with Producer({"bootstrap.servers": bootstrap}, interceptors=[Tag()]) as p:
        for i in range(5):
            p.send(topic, b"%d" % i, on_delivery=lambda e, m: delivered.append((e, m)))
        p.flush(30)
    assert [m.offset for e, m in delivered if e is None and m] == [0, 1, 2, 3, 4]
    assert len(acks) == 5 and all(e is None for _m, e in acks)
    records = consume(bootstrap, topic, 5)
    assert all(r.headers == (("tagged", b"1"),) for r in records)


def test_acks_zero_and_acks_one(bootstrap: str, new_topic: Callable[..., str]) -> None:
    topic = new_topic()
    with Producer({"bootstrap.servers": bootstrap, "acks": "0"}) as p:
        futures = [p.send(topic, b"a%d" % i) for i in range(100)]
        p.flush(30)
        assert all(f.get(0).offset == -1 for f in futures)
    # acks=0 gives no point at which the records are known to be appended, and the next
    # producer uses another connection, so wait until all 100 are readable before it sends.
    assert [r.value for r in consume(bootstrap, topic, 100)] == [b"a%d" % i for i in range(100)]
    with Producer({"bootstrap.servers": bootstrap, "acks": "1"}) as p:
        assert p.send(topic, b"b").get(30).offset == 100
    assert len(consume(bootstrap, topic, 101)) == 101


def test_unknown_topic_times_out_after_max_block_ms(bootstrap: str) -> None:
    with (
        Producer({"bootstrap.servers": bootstrap, "max.block.ms": "500"}) as p,
        pytest.raises(KafkaError) as info,
    ):
        p.send("no-such-topic", b"v")
    assert "max.block.ms" in str(info.value)


def test_assign_seek_position_and_offset_reset(
    bootstrap: str, new_topic: Callable[..., str]
) -> None:
    topic = new_topic()
    tp = TopicPartition(topic, 0)
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": "0"}) as p:
        for i in range(50):
            p.send(topic, b"%d" % i)
        p.flush(30)
    with Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "latest"}) as c:
        c.assign([tp])
        assert c.position(tp) == 50
        assert c.beginning_offsets([tp]) == {tp: 0} and c.end_offsets([tp]) == {tp: 50}
        c.seek(tp, 20)
        got: list[ConsumerRecord] = []
        deadline = time.monotonic() + 30
        while len(got) < 30 and time.monotonic() < deadline:
            got.extend(c.poll(500, max_records=7))
        assert [r.offset for r in got] == list(range(20, 50))
        assert [r.value for r in got[:2]] == [b"20", b"21"] and c.position(tp) == 50
        c.seek_to_beginning([tp])
        assert c.position(tp) == 0
        c.seek(tp, 10_000)  # out of range: auto.offset.reset=latest moves to the end
        deadline = time.monotonic() + 30
        while c.poll(200) == [] and c.position(tp) != 50 and time.monotonic() < deadline:
            pass
        assert c.position(tp) == 50
    with Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "none"}) as c:
        c.assign([tp])
        c.seek(tp, 10_000)
        with pytest.raises(OffsetOutOfRangeError):
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                c.poll(200)


def test_admin_topics_offsets_and_cluster(bootstrap: str, admin: Admin) -> None:
    cluster = admin.describe_cluster()
    assert len(cluster.brokers) == 1 and cluster.cluster_id
    admin.create_topics([NewTopic("client-admin-topic", 4, 1, {"retention.ms": "3600000"})])
    admin.wait_for_leaders(["client-admin-topic"])
    info = admin.describe_topics(["client-admin-topic"])["client-admin-topic"]
    assert [p.partition for p in info.partitions] == [0, 1, 2, 3]
    assert "client-admin-topic" in admin.list_topics()
    assert admin.describe_configs("client-admin-topic").get("retention.ms") == "3600000"
    with pytest.raises(TopicOperationError) as dup:
        admin.create_topics([NewTopic("client-admin-topic", 1, 1)])
    assert dup.value.errors["client-admin-topic"].code.name == "TOPIC_ALREADY_EXISTS"
    offsets = admin.list_offsets({TopicPartition("client-admin-topic", 0): "latest"})
    assert offsets[TopicPartition("client-admin-topic", 0)].offset == 0
    admin.delete_topics(["client-admin-topic"])
    deadline = time.monotonic() + 30
    while "client-admin-topic" in admin.list_topics() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "client-admin-topic" not in admin.list_topics()


def test_no_position_with_reset_none_is_a_clear_error(
    bootstrap: str, new_topic: Callable[..., str]
) -> None:
    topic = new_topic()
    with Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "none"}) as c:
        c.assign([TopicPartition(topic, 0)])
        with pytest.raises(NoOffsetForPartitionError, match="seek"):
            c.poll(100)
