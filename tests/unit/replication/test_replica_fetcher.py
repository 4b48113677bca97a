"""ReplicaFetcherManager against a real in-process leader over a socket: one fetcher for many
partitions, truncation of a divergent tail by leader epoch, then byte-identical replicas."""

from __future__ import annotations

import asyncio
from pathlib import Path

from data_plane.broker.partition import Partition
from data_plane.protocol.api_keys import ApiKey
from data_plane.replication.replica_fetcher import ReplicaFetcherConfig, ReplicaFetcherManager
from data_plane.storage import Log, LogConfig, Record, build_batch
from metadata.image import PartitionRegistration, TopicPartition
from tests.unit.broker.harness import BROKER_ID, BrokerHarness
from tests.unit.broker.test_server_wire import presult, produce_body
from tests.unit.broker.wire import WireClient

FOLLOWER_ID = 2
PARTITIONS = 3
DEADLINE_S = 20.0


def records(start: int, n: int) -> bytes:
    return build_batch([Record(None, b"r%d" % i, 1000 + i) for i in range(start, start + n)])


def test_fetcher_replicates_many_partitions_and_truncates_divergence(tmp_path: Path) -> None:
    leader = BrokerHarness(tmp_path / "leader", event_loop="asyncio")
    logs: list[Log] = []
    try:
        leader.set_topics({"t": PARTITIONS})
        client = WireClient(leader.port)
        try:
            for p in range(PARTITIONS):
                r = client.call(ApiKey.PRODUCE, 7, produce_body("t", p, records(0, 3)))
                assert presult(r)["error_code"] == 0
        finally:
            client.close()
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
        # Partition 0 once led in epoch 0 itself and kept two records the leader never got.
        diverged = logs[0]
        diverged.append(bytearray(records(0, 3)), 0)
        diverged.append(bytearray(records(100, 2)), 0)
        assert diverged.log_end_offset == 5

        async def replicate() -> ReplicaFetcherManager:
            config = ReplicaFetcherConfig(
                FOLLOWER_ID, "PLAINTEXT", fetch_wait_max_ms=100, fetch_backoff_ms=50
            )
            manager = ReplicaFetcherManager(
                config, followers.get, lambda _id, _name: ("127.0.0.1", leader.port)
            )
            for tp in followers:
                manager.add_partition(tp, BROKER_ID, 0)
            assert manager.fetcher_count() == 1
            loop = asyncio.get_running_loop()
            deadline = loop.time() + DEADLINE_S
            while any(lg.log_end_offset != 3 or lg.high_watermark != 3 for lg in logs):
                assert loop.time() < deadline, [repr(lg) for lg in logs]
                await asyncio.sleep(0.02)
            manager.close()
            return manager

        asyncio.run(replicate())
        assert diverged.log_end_offset == 3
        for p, log in enumerate(logs):
            mine = log.read(0, 1 << 20).read_bytes()
            theirs = leader.log_manager.get_log("t", p).read(0, 1 << 20).read_bytes()
            assert mine == theirs
            assert log.leader_epoch_cache.entries()[0] == (0, 0)
    finally:
        for log in logs:
            log.close()
        leader.close()
