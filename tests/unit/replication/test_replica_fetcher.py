"""ReplicaFetcherManager against a real in-process leader over a socket: one fetcher for many
partitions, truncation of a divergent tail by leader epoch, then byte-identical replicas;
fetching by topic id (a re-created topic is never copied under the old id) and by name."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

from common.protocol.api_keys import ApiKey
from common.protocol.topic_id_versions import ZERO_ID
from common.topic_partition import TopicPartition
from data_plane.broker.partition import Partition
from data_plane.replication.replica_fetcher import (
    ReplicaFetcher,
    ReplicaFetcherConfig,
    ReplicaFetcherManager,
)
from data_plane.storage import Log, LogConfig, Record, build_batch
from metadata.image import PartitionRegistration
from tests.unit.broker.harness import BROKER_ID, BrokerHarness
from tests.unit.broker.test_server_wire import presult, produce_body
from tests.unit.broker.wire import WireClient

FOLLOWER_ID = 2
PARTITIONS = 3
DEADLINE_S = 20.0


def records(start: int, n: int) -> bytes:
    return build_batch([Record(None, b"r%d" % i, 1000 + i) for i in range(start, start + n)])


def follower_partitions(tmp_path: Path, logs: list[Log]) -> dict[TopicPartition, Partition]:
    """Partitions t-0..t-(PARTITIONS - 1) on FOLLOWER_ID, following BROKER_ID in epoch 0 (their
    logs are appended to ``logs`` for the caller to close)."""
    followers: dict[TopicPartition, Partition] = {}
    for p in range(PARTITIONS):
        d = tmp_path / "follower"
        log = Log(str(d / f"t-{p}"), LogConfig(log_dirs=(str(d),)), topic="t", partition=p)
        logs.append(log)
        part = Partition("t", p, FOLLOWER_ID, log)
        part.apply_registration(
            PartitionRegistration((BROKER_ID, FOLLOWER_ID), (BROKER_ID,), BROKER_ID, 0, 0), 1
        )
        followers[TopicPartition("t", p)] = part
    return followers


def following(
    followers: dict[TopicPartition, Partition], port: int, topic_id: bytes = ZERO_ID
) -> ReplicaFetcherManager:
    """A fetcher manager on the running loop with every follower partition following the
    leader on ``port``, by ``topic_id`` (all zero: by name)."""
    config = ReplicaFetcherConfig(
        FOLLOWER_ID, "PLAINTEXT", fetch_wait_max_ms=100, fetch_backoff_ms=50
    )
    manager = ReplicaFetcherManager(config, followers.get, lambda _id, _name: ("127.0.0.1", port))
    for tp in followers:
        manager.add_partition(tp, BROKER_ID, 0, topic_id)
    return manager


def leader_topic_id(leader: BrokerHarness) -> bytes:
    assert leader.apis is not None
    topic = leader.apis.replica_manager.image.topic("t")
    assert topic is not None
    return topic.topic_id.bytes


@contextlib.contextmanager
def leader_and_follower_logs(tmp_path: Path) -> Iterator[tuple[BrokerHarness, list[Log]]]:
    """An in-process leader, and the list the follower logs go to; both closed at the end."""
    leader = BrokerHarness(tmp_path / "leader", event_loop="asyncio")
    logs: list[Log] = []
    try:
        yield leader, logs
    finally:
        for log in logs:
            log.close()
        leader.close()


@contextlib.asynccontextmanager
async def running(manager: ReplicaFetcherManager) -> AsyncIterator[ReplicaFetcherManager]:
    try:
        yield manager
    finally:
        manager.close()
        await manager.wait_closed()


def produce_to_every_partition(port: int, start: int = 0, n: int = 3) -> None:
    client = WireClient(port)
    try:
        for p in range(PARTITIONS):
            r = client.call(ApiKey.PRODUCE, 7, produce_body("t", p, records(start, n)))
            assert presult(r)["error_code"] == 0
    finally:
        client.close()


async def eventually(done: Callable[[], bool], what: Callable[[], object]) -> None:
    """Wait until ``done()``, at most DEADLINE_S; the failure shows ``what()``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while not done():
        assert loop.time() < deadline, what()
        await asyncio.sleep(0.02)


async def every_partition_refused(fetcher: ReplicaFetcher, rounds: int) -> None:
    """Wait for ``rounds`` answered rounds with every partition delayed at least once (each
    refused partition sits out its retry delay)."""
    await eventually(
        lambda: (
            fetcher.fetches >= rounds
            and all(s.delayed_until_s != 0 for s in fetcher.partitions.values())
        ),
        lambda: fetcher.fetches,
    )


def log_ends(logs: list[Log]) -> list[int]:
    return [lg.log_end_offset for lg in logs]


def assert_replicas_identical(leader: BrokerHarness, logs: list[Log]) -> None:
    for p, log in enumerate(logs):
        mine = log.read(0, 1 << 20).read_bytes()
        theirs = leader.log_manager.get_log("t", p).read(0, 1 << 20).read_bytes()
        assert mine == theirs


def test_fetcher_replicates_many_partitions_and_truncates_divergence(tmp_path: Path) -> None:
    with leader_and_follower_logs(tmp_path) as (leader, logs):
        leader.set_topics({"t": PARTITIONS})
        produce_to_every_partition(leader.port)
        followers = follower_partitions(tmp_path, logs)
        # Partition 0 once led in epoch 0 itself and kept two records the leader never got.
        diverged = logs[0]
        diverged.append(bytearray(records(0, 3)), 0)
        diverged.append(bytearray(records(100, 2)), 0)
        assert diverged.log_end_offset == 5

        async def replicate() -> None:
            async with running(following(followers, leader.port, leader_topic_id(leader))) as m:
                assert m.fetcher_count() == 1
                await eventually(
                    lambda: all(lg.log_end_offset == 3 and lg.high_watermark == 3 for lg in logs),
                    lambda: [repr(lg) for lg in logs],
                )

        asyncio.run(replicate())
        assert diverged.log_end_offset == 3
        assert_replicas_identical(leader, logs)
        for log in logs:
            assert log.leader_epoch_cache.entries()[0] == (0, 0)


def test_fetcher_keeps_an_incremental_session_and_recovers_when_the_leader_loses_it(
    tmp_path: Path,
) -> None:
    """After the first full fetch the fetcher fetches incrementally (only partitions that
    moved are listed); when the leader drops the session (a restart, an eviction) the fetcher
    gets FETCH_SESSION_ID_NOT_FOUND, fetches in full again and replication goes on. The
    partitions are followed without a topic id, so this is the by-name Fetch."""
    with leader_and_follower_logs(tmp_path) as (leader, logs):
        leader.set_topics({"t": PARTITIONS})
        client = WireClient(leader.port)

        def produce(p: int, start: int, n: int) -> None:
            r = client.call(ApiKey.PRODUCE, 7, produce_body("t", p, records(start, n)))
            assert presult(r)["error_code"] == 0

        followers = follower_partitions(tmp_path, logs)
        sessions = leader.apis.fetch_sessions

        async def until(ends: list[int], also: Callable[[], bool] = lambda: True) -> None:
            await eventually(
                lambda: log_ends(logs) == ends and also(), lambda: [repr(lg) for lg in logs]
            )

        async def replicate() -> None:
            async with running(following(followers, leader.port)) as manager:
                (fetcher,) = manager._fetchers.values()
                handler = fetcher._session
                await until([0] * PARTITIONS)
                produce(1, 0, 4)
                await until([0, 4, 0], lambda: handler.incremental_fetches > 0)
                first_id = handler.session_id
                assert first_id != 0 and sessions.session_ids() == [first_id]
                session = sessions.get(first_id)
                assert session is not None and len(session.partitions) == PARTITIONS
                assert handler.full_fetches == 1
                # The leader loses the session (as after a restart).
                leader.thread.loop.call_soon_threadsafe(sessions.remove, first_id)
                await asyncio.sleep(0.3)  # a long poll or two: the error and a full fetch
                produce(2, 0, 5)
                produce(0, 0, 2)
                await until([2, 4, 5])
                assert handler.full_fetches == 2
                assert handler.session_id not in (0, first_id)

        asyncio.run(replicate())
        client.close()
        assert_replicas_identical(leader, logs)


def test_fetcher_never_copies_a_recreated_topic_under_the_old_id(tmp_path: Path) -> None:
    """The leader deleted ``t`` and created it again (a new id, new records) while the
    follower still follows the old ``t``: every round is answered UNKNOWN_TOPIC_ID for the
    old id and nothing of the new topic reaches the follower's logs. Following the new id
    replicates it."""
    with leader_and_follower_logs(tmp_path) as (leader, logs):
        leader.set_topics({"t": PARTITIONS})
        old_id = leader_topic_id(leader)
        leader.set_topics({})
        leader.set_topics({"t": PARTITIONS})
        new_id = leader_topic_id(leader)
        assert new_id != old_id
        produce_to_every_partition(leader.port)
        followers = follower_partitions(tmp_path, logs)

        async def replicate() -> None:
            async with running(following(followers, leader.port, old_id)) as manager:
                (fetcher,) = manager._fetchers.values()
                await every_partition_refused(fetcher, 5)
                assert log_ends(logs) == [0] * PARTITIONS
                for tp in followers:
                    manager.add_partition(tp, BROKER_ID, 0, new_id)
                await eventually(
                    lambda: log_ends(logs) == [3] * PARTITIONS, lambda: [repr(lg) for lg in logs]
                )

        asyncio.run(replicate())
        assert_replicas_identical(leader, logs)


def test_fetcher_follows_a_topic_id_its_leader_learns_later(tmp_path: Path) -> None:
    """The follower's metadata is ahead: it follows a topic id its leader does not know yet
    (UNKNOWN_TOPIC_ID, and the leader keeps the partition out of the fetch session). Once
    the leader applies the topic, replication starts, without a reconnect or a session
    error to force a full fetch."""
    with leader_and_follower_logs(tmp_path) as (leader, logs):
        leader.set_topics({"other": 1})
        future_id = uuid.uuid4()
        followers = follower_partitions(tmp_path, logs)

        async def replicate() -> None:
            async with running(following(followers, leader.port, future_id.bytes)) as manager:
                (fetcher,) = manager._fetchers.values()
                await every_partition_refused(fetcher, 3)
                full_fetches = fetcher._session.full_fetches
                await asyncio.to_thread(
                    leader.set_topics, {"t": PARTITIONS}, topic_ids={"t": future_id}
                )
                produce_to_every_partition(leader.port)
                await eventually(
                    lambda: log_ends(logs) == [3] * PARTITIONS, lambda: [repr(lg) for lg in logs]
                )
                assert fetcher._session.full_fetches == full_fetches

        asyncio.run(replicate())


def test_a_partition_without_a_topic_id_makes_the_rounds_by_name(tmp_path: Path) -> None:
    """One partition followed without an id, the others by id: the fetcher fetches all of
    them by name (a session names topics one way) and every one replicates."""
    with leader_and_follower_logs(tmp_path) as (leader, logs):
        leader.set_topics({"t": PARTITIONS})
        produce_to_every_partition(leader.port)
        followers = follower_partitions(tmp_path, logs)

        async def replicate() -> None:
            manager = following(followers, leader.port, leader_topic_id(leader))
            manager.add_partition(TopicPartition("t", 0), BROKER_ID, 0, ZERO_ID)
            async with running(manager):
                (fetcher,) = manager._fetchers.values()
                await eventually(
                    lambda: log_ends(logs) == [3] * PARTITIONS, lambda: [repr(lg) for lg in logs]
                )
                assert fetcher._by_id is False

        asyncio.run(replicate())
