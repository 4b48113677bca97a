"""aiokafka (asyncio, its own protocol implementation) against a real kraftlog broker: an
idempotent acks=all producer, a consumer group that commits and resumes from its commits, and
transactions (a committed transaction read by a read_committed consumer, an aborted one never).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from deploy.local_cluster import LocalCluster
from metadata.messages import NewTopic
from tests.integration.clusters import FAST_OVERRIDES, running_cluster

aiokafka = pytest.importorskip("aiokafka")

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

RECORDS = 300
PARTITIONS = 3
DEADLINE_S = 60.0
# One broker: the internal topics get one replica.
SINGLE_BROKER = {
    **FAST_OVERRIDES,
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    path = tmp_path_factory.mktemp("aiokafka") / "cluster"
    with running_cluster(path, overrides=SINGLE_BROKER) as c:
        yield c


def create_topic(cluster: LocalCluster, name: str) -> str:
    with cluster.client(30.0) as admin:
        (result,) = admin.create_topics([NewTopic(name, PARTITIONS, 1)])
        assert result.error_code == 0, result
    return ",".join(cluster.bootstrap_servers())


async def consume(
    bootstrap: str, topic: str, group: str, want: int, isolation: str = "read_uncommitted"
) -> list[bytes]:
    """Values read by a group member until ``want`` arrived (or the deadline), committed."""
    consumer = aiokafka.AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        isolation_level=isolation,
    )
    await consumer.start()
    values: list[bytes] = []
    try:
        deadline = asyncio.get_running_loop().time() + DEADLINE_S
        while len(values) < want and asyncio.get_running_loop().time() < deadline:
            batches = await consumer.getmany(timeout_ms=500)
            for records in batches.values():
                values.extend(r.value for r in records)
        await consumer.commit()
    finally:
        await consumer.stop()
    return values


def test_idempotent_producer_and_a_group_that_resumes_from_its_commits(
    cluster: LocalCluster,
) -> None:
    bootstrap = create_topic(cluster, "aio")

    async def run() -> tuple[list[bytes], list[bytes]]:
        producer = aiokafka.AIOKafkaProducer(
            bootstrap_servers=bootstrap, acks="all", enable_idempotence=True
        )
        await producer.start()
        try:
            sends = [
                await producer.send("aio", f"v{i:04d}".encode(), key=f"k{i % 10}".encode())
                for i in range(RECORDS)
            ]
            await asyncio.gather(*sends)
        finally:
            await producer.stop()
        first = await consume(bootstrap, "aio", "aio-group", RECORDS)
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
        await producer.start()
        try:
            await producer.send_and_wait("aio", b"after-commit")
        finally:
            await producer.stop()
        second = await consume(bootstrap, "aio", "aio-group", 1)
        return first, second

    first, second = asyncio.run(run())
    assert sorted(first) == [f"v{i:04d}".encode() for i in range(RECORDS)]
    assert second == [b"after-commit"]  # the group resumed after its committed offsets


def test_transactions_committed_and_aborted(cluster: LocalCluster) -> None:
    bootstrap = create_topic(cluster, "aio-txn")

    async def run() -> tuple[list[bytes], list[bytes]]:
        producer = aiokafka.AIOKafkaProducer(
            bootstrap_servers=bootstrap, transactional_id="aio-tx", acks="all"
        )
        await producer.start()
        try:
            async with producer.transaction():
                for i in range(10):
                    await producer.send("aio-txn", f"committed-{i}".encode())
            await producer.begin_transaction()
            for i in range(10):
                await producer.send("aio-txn", f"aborted-{i}".encode())
            await producer.abort_transaction()
            async with producer.transaction():
                await producer.send("aio-txn", b"last")
        finally:
            await producer.stop()
        committed = await consume(bootstrap, "aio-txn", "rc", 11, "read_committed")
        everything = await consume(bootstrap, "aio-txn", "ru", 21, "read_uncommitted")
        return committed, everything

    committed, everything = asyncio.run(run())
    assert sorted(committed) == sorted([f"committed-{i}".encode() for i in range(10)] + [b"last"])
    assert sum(v.startswith(b"aborted-") for v in everything) == 10
