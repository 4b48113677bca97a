"""Log compaction in a running broker, read with a real client (confluent-kafka, librdkafka):
after cleaning a fresh reader sees the latest value of each key at its original offset,
tombstoned keys disappear after delete.retention.ms, and a reader going over the log again
and again while the cleaner rewrites it never errs nor misses a latest value."""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

import pytest

from deploy.local_cluster import LocalCluster

from .conftest import live_segments

pytestmark = pytest.mark.integration

DEADLINE_S = 90.0
HISTORY_KEYS = [b"k%02d" % i for i in range(20)]
TOMBSTONED = HISTORY_KEYS[:5]
DELETE_RETENTION_MS = 6000

Rec = tuple[int, bytes | None, bytes | None]


class Written:
    """Offsets the broker acknowledged, with what was written there."""

    def __init__(self) -> None:
        self.at: dict[int, tuple[bytes | None, bytes | None]] = {}
        self.errors: list[str] = []
        self._lock = threading.Lock()

    def callback(self, err, msg) -> None:  # confluent-kafka delivery report
        with self._lock:
            if err is not None:
                self.errors.append(str(err))
            else:
                self.at[msg.offset()] = (msg.key(), msg.value())


def producer(bootstrap: str):
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "log_level": 2})


def read_pass(consumer, topic: str, end_offset: int) -> list[Rec]:
    """Every record from the beginning until the reader's position reaches ``end_offset``."""
    from confluent_kafka import OFFSET_BEGINNING, KafkaError, TopicPartition

    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    out: list[Rec] = []
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                if msg.offset() >= end_offset:
                    return out
                continue
            raise AssertionError(f"consumer error: {msg.error()}")
        out.append((msg.offset(), msg.key(), msg.value()))
        if msg.offset() + 1 >= end_offset:
            return out
    raise AssertionError(f"a pass over {topic} did not reach offset {end_offset}")


def new_consumer(bootstrap: str):
    from confluent_kafka import Consumer

    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "compaction-reader",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "fetch.wait.max.ms": 50,
            "log_level": 2,
        }
    )


def read_with_kafka_python(bootstrap: str, topic: str, end_offset: int) -> list[Rec]:
    """Every record from the beginning up to ``end_offset`` (exclusive), with kafka-python."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import kafka

        consumer = kafka.KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=None,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        try:
            consumer.assign([kafka.TopicPartition(topic, 0)])
            out: list[Rec] = []
            deadline = time.monotonic() + DEADLINE_S
            while time.monotonic() < deadline:
                for records in consumer.poll(timeout_ms=200).values():
                    out.extend((r.offset, r.key, r.value) for r in records)
                if consumer.position(kafka.TopicPartition(topic, 0)) >= end_offset:
                    return [r for r in out if r[0] < end_offset]
        finally:
            consumer.close()
    raise AssertionError(f"kafka-python did not reach offset {end_offset} of {topic}")


def read_with_native_client(bootstrap: str, topic: str, end_offset: int) -> list[Rec]:
    """The same with kraftlog's native consumer."""
    from kraftlog_client import Consumer, TopicPartition

    out: list[Rec] = []
    with Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"}) as c:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            out.extend((r.offset, r.key, r.value) for r in c.poll(200))
            if c.position(tp) >= end_offset:
                return [r for r in out if r[0] < end_offset]
    raise AssertionError(f"the native consumer did not reach offset {end_offset} of {topic}")


def high_watermark(consumer, topic: str) -> int:
    from confluent_kafka import TopicPartition

    return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]


def check_pass(records: list[Rec], written: Written, latest: dict[bytes, int]) -> None:
    """A pass is sound: offsets increase, each record is what was written at its offset,
    the latest record of every history key is there, and a tombstoned key read with an
    older value is then read with its tombstone."""
    offsets = [o for o, _k, _v in records]
    assert offsets == sorted(set(offsets))
    for offset, key, value in records:
        assert written.at[offset] == (key, value), offset
    seen = {o for o, _k, _v in records}
    for key, offset in latest.items():
        if key not in TOMBSTONED:
            assert offset in seen, (key, offset)
    for key in TOMBSTONED:
        mine = [(o, v) for o, k, v in records if k == key]
        if any(v is not None for _o, v in mine):
            assert mine[-1] == (latest[key], None), (key, mine)


def wait_until(cond: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.2)


def write_history(p: Any, topic: str, written: Written) -> dict[bytes, int]:
    """Eight rounds of a value for every history key, then a tombstone for each of
    TOMBSTONED; returns the offset of each key's latest record."""
    for r in range(8):
        for key in HISTORY_KEYS:
            p.produce(topic, key=key, value=b"round-%d-" % r + b"x" * 60, callback=written.callback)
        p.flush(30)
    for key in TOMBSTONED:
        p.produce(topic, key=key, value=None, callback=written.callback)
    p.flush(30)
    latest = {}
    for offset in sorted(written.at):
        latest[written.at[offset][0]] = offset
    return latest


class Background:
    """A filler and a reader thread, from start() until stop(). Filler keys keep the log
    growing, so the history lies in closed segments and new dirty segments keep the cleaner
    busy; the reader passes over the whole log again and again while the cleaner rewrites
    it, keeping every pass and any error for the test thread."""

    def __init__(self, p: Any, bootstrap: str, topic: str, written: Written) -> None:
        self._producer = p
        self._bootstrap = bootstrap
        self._topic = topic
        self._written = written
        self._stop = threading.Event()
        self.reader_errors: list[BaseException] = []
        self.passes: list[list[Rec]] = []
        self._threads = [threading.Thread(target=self._fill), threading.Thread(target=self._read)]

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(60)

    def _fill(self) -> None:
        p = self._producer
        for i in range(100_000):
            if self._stop.is_set():
                return
            p.produce(
                self._topic,
                key=b"f%d" % (i % 10),
                value=b"y" * 100,
                callback=self._written.callback,
            )
            p.poll(0)
            time.sleep(0.02)

    def _read(self) -> None:
        consumer = new_consumer(self._bootstrap)
        try:
            for _ in range(10_000):
                if self._stop.is_set():
                    return
                self.passes.append(
                    read_pass(consumer, self._topic, high_watermark(consumer, self._topic))
                )
        except BaseException as e:  # reported to the test thread
            self.reader_errors.append(e)
        finally:
            consumer.close()


def history_offsets(records: list[Rec]) -> dict[bytes | None, list[int]]:
    """History key -> the offsets it was read at."""
    out: dict[bytes | None, list[int]] = {}
    for offset, key, _v in records:
        if key in HISTORY_KEYS:
            out.setdefault(key, []).append(offset)
    return out


def cleanings(cluster: LocalCluster, broker: int) -> int:
    status = cluster.broker_status(broker) or {}
    return int(status.get("log_cleaner", {}).get("cleanings_completed", 0))


def wait_for_compaction(
    cluster: LocalCluster, checker: Any, topic: str, written: Written, latest: dict[bytes, int]
) -> list[Rec]:
    """Wait until a fresh pass sees one record per history key, then none of the tombstoned
    keys; returns that last pass, checked."""

    def fresh_pass() -> list[Rec]:
        return read_pass(checker, topic, high_watermark(checker, topic))

    # Cleaned: a fresh reader sees exactly the latest record of each key, at its
    # original offset (tombstones too, until their horizon).
    wait_until(
        lambda: history_offsets(fresh_pass()) == {k: [latest[k]] for k in HISTORY_KEYS},
        "the history is compacted to one record per key",
    )
    assert len(live_segments(cluster, topic)) >= 2
    (broker,) = cluster.broker_ids
    wait_until(lambda: cleanings(cluster, broker) >= 1, "the broker's status counts the cleanings")
    # Tombstoned keys disappear once delete.retention.ms has passed.
    wait_until(
        lambda: history_offsets(fresh_pass()) == {k: [latest[k]] for k in HISTORY_KEYS[5:]},
        "the tombstones are removed",
    )
    final = fresh_pass()
    check_pass(final, written, latest)
    return final


def test_compacted_topic_keeps_latest_values_and_drops_tombstones_under_readers(
    cluster: LocalCluster, bootstrap: str, new_topic
) -> None:
    topic = new_topic(
        "compacted",
        **{
            "cleanup.policy": "compact",
            "segment.bytes": "2048",
            "min.cleanable.dirty.ratio": "0.01",
            "delete.retention.ms": str(DELETE_RETENTION_MS),
        },
    )
    written = Written()
    p = producer(bootstrap)
    latest = write_history(p, topic, written)
    background = Background(p, bootstrap, topic, written)
    background.start()
    checker = new_consumer(bootstrap)
    try:
        final = wait_for_compaction(cluster, checker, topic, written, latest)
        # kafka-python and kraftlog's own consumer read the same history from the cleaned
        # log: the latest value of each surviving key at its original offset.
        expected = sorted((o, k, v) for o, k, v in final if k in HISTORY_KEYS)
        end = max(o for o, _k, _v in expected) + 1
        for read in (read_with_kafka_python, read_with_native_client):
            got = read(bootstrap, topic, end)
            assert sorted((o, k, v) for o, k, v in got if k in HISTORY_KEYS) == expected, read
    finally:
        background.stop()
        checker.close()
        p.flush(30)
    assert not background.reader_errors, background.reader_errors
    assert not written.errors, written.errors[:5]
    assert len(background.passes) >= 3
    for records in background.passes:
        check_pass(records, written, latest)


def test_a_record_without_a_key_is_refused_by_a_compacted_topic(bootstrap: str, new_topic) -> None:
    compacted = new_topic("keyless", **{"cleanup.policy": "compact"})
    plain = new_topic("keyless-plain")
    p = producer(bootstrap)
    outcomes: dict[str, str | None] = {}

    def report(err, msg) -> None:
        outcomes[msg.topic()] = None if err is None else err.name()

    p.produce(compacted, value=b"no key", callback=report)
    p.produce(plain, value=b"no key", callback=report)
    assert p.flush(30) == 0
    assert outcomes == {compacted: "INVALID_RECORD", plain: None}


def test_compaction_drops_aborted_transactions_and_keeps_committed_values(
    bootstrap: str, new_topic
) -> None:
    """A compacted topic written by a transactional producer: later aborted transactions
    rewrite every key; the cleaner removes their records (an aborted value never supersedes a
    committed one), so a read_uncommitted reader too ends up seeing only committed values, and
    read_committed readers see the latest committed value of each key all along."""
    from confluent_kafka import Producer

    topic = new_topic(
        "compacted-txn",
        **{
            "cleanup.policy": "compact",
            "segment.bytes": "2048",
            "min.cleanable.dirty.ratio": "0.01",
        },
    )
    keys = [b"t%02d" % i for i in range(10)]
    p = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"compact-{topic}", "log_level": 2}
    )
    p.init_transactions(60)
    for r in range(4):
        p.begin_transaction()
        for key in keys:
            p.produce(topic, key=key, value=b"committed-%d-" % r + b"x" * 40)
        p.commit_transaction(60)
        p.begin_transaction()
        for key in keys:
            p.produce(topic, key=key, value=b"aborted-%d-" % r + b"x" * 40)
        p.flush(60)
        p.abort_transaction(60)
    # Plain filler rolls segments so the transactional history lies in closed ones.
    plain = producer(bootstrap)
    for i in range(40):  # one batch each (flushed): every few roll a 2 KB segment
        plain.produce(topic, key=b"f%d" % (i % 5), value=b"y" * 400)
        plain.flush(30)
    expected = {key: b"committed-3-" + b"x" * 40 for key in keys}

    def values(isolation: str) -> dict[bytes | None, bytes | None]:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

        c = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "compaction-txn-reader",
                "isolation.level": isolation,
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "log_level": 2,
            }
        )
        try:
            c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
            seen: dict[bytes | None, list[bytes | None]] = {}
            deadline = time.monotonic() + DEADLINE_S
            while time.monotonic() < deadline:
                msg = c.poll(0.2)
                if msg is None:
                    continue
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        break
                    raise AssertionError(msg.error())
                if msg.key() in keys:
                    seen.setdefault(msg.key(), []).append(msg.value())
            return {k: v[-1] for k, v in seen.items()}
        finally:
            c.close()

    assert values("read_committed") == expected
    wait_until(
        lambda: values("read_uncommitted") == expected,
        "the cleaner removed the aborted transactions' records",
    )
    assert values("read_committed") == expected
