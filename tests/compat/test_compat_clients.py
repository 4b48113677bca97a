"""Real Kafka clients against a real kraftlog cluster.

Each of kafka-python, confluent-kafka, kcat and the native client produces 10,000 records
(keys, headers; half gzip, half zstd) to a topic of its own; every client then reads every
topic, and all readers must return the same records byte for byte (partition, offset, key,
value, headers). The same key must land on the same partition whichever client produced it.
"""

from __future__ import annotations

from collections import Counter

import pytest

from deploy.local_cluster import LocalCluster
from tests.compat import clients
from tests.compat.clients import Msg, Rec

pytestmark = [
    pytest.mark.integration,
    # kafka-python 3.0 loads its schemas with a deprecated importlib.resources call.
    pytest.mark.filterwarnings("ignore::DeprecationWarning:importlib.resources._legacy"),
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]

RECORDS_PER_PRODUCER = 10_000
PARTITIONS = 3
PRODUCERS = ("kafka_python", "confluent", "kcat", "native")


def _create_topics(bootstrap: str, names: list[str]) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(n, PARTITIONS, 1) for n in names])
    finally:
        admin.close()


@pytest.fixture(scope="module")
def produced(compat_cluster: LocalCluster, bootstrap: str, kcat: str) -> dict[str, list[Msg]]:
    topics = {name: f"compat-{name.replace('_', '-')}" for name in PRODUCERS}
    _create_topics(bootstrap, list(topics.values()))
    sent: dict[str, list[Msg]] = {}
    half = RECORDS_PER_PRODUCER // 2
    for name, topic in topics.items():
        msgs = clients.make_messages(name, RECORDS_PER_PRODUCER)
        for compression, chunk in (("gzip", msgs[:half]), ("zstd", msgs[half:])):
            if name == "kcat":
                clients.produce_kcat(kcat, bootstrap, topic, chunk, compression)
            else:
                getattr(clients, f"produce_{name}")(bootstrap, topic, chunk, compression)
        sent[topic] = msgs
    return sent


def _read(reader: str, kcat: str, bootstrap: str, topic: str) -> list[Rec]:
    if reader == "kcat":
        return clients.consume_kcat(kcat, bootstrap, topic)
    return getattr(clients, f"consume_{reader}")(bootstrap, topic, PARTITIONS, RECORDS_PER_PRODUCER)


def _check_against_sent(records: list[Rec], sent: list[Msg]) -> None:
    assert len(records) == len(sent)
    got = Counter((r.key, r.value, r.headers) for r in records)
    want = Counter((m.key, m.value, m.headers) for m in sent)
    assert got == want
    for p in range(PARTITIONS):
        offsets = [r.offset for r in records if r.partition == p]
        assert offsets == list(range(len(offsets)))  # dense, from 0


@pytest.mark.parametrize("producer", PRODUCERS)
def test_every_client_reads_every_client_byte_identically(
    produced: dict[str, list[Msg]], bootstrap: str, kcat: str, producer: str
) -> None:
    topic = f"compat-{producer.replace('_', '-')}"
    reads = {reader: _read(reader, kcat, bootstrap, topic) for reader in PRODUCERS}
    _check_against_sent(reads["kafka_python"], produced[topic])
    for reader, records in reads.items():
        assert records == reads["kafka_python"], f"{reader} read {topic} differently"


def test_same_key_same_partition_from_every_client(
    produced: dict[str, list[Msg]], bootstrap: str
) -> None:
    placements = {}
    for topic in produced:
        records = clients.consume_confluent(bootstrap, topic, PARTITIONS, RECORDS_PER_PRODUCER)
        by_key: dict[bytes | None, set[int]] = {}
        for r in records:
            by_key.setdefault(r.key, set()).add(r.partition)
        assert all(len(ps) == 1 for ps in by_key.values()), f"{topic}: a key on two partitions"
        placements[topic] = {k: next(iter(ps)) for k, ps in by_key.items()}
    first = next(iter(placements.values()))
    assert len(set(first.values())) == PARTITIONS  # 100 keys spread over every partition
    for topic, placement in placements.items():
        assert placement == first, f"{topic}: keys placed differently"
