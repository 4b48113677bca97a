"""ReplicaFetcherManager shutdown: cancelled fetcher tasks are awaited, never left pending when
the broker's event loop closes (asyncio reports "Task was destroyed but it is pending")."""

from __future__ import annotations

import asyncio
import socket

from common.topic_partition import TopicPartition
from data_plane.replication.replica_fetcher import ReplicaFetcherConfig, ReplicaFetcherManager


def test_close_then_wait_closed_finishes_every_fetcher_task() -> None:
    # A listener that accepts but never answers: each fetcher is parked mid-request.
    silent = socket.create_server(("127.0.0.1", 0))
    port = silent.getsockname()[1]

    async def scenario() -> list[asyncio.Task[None]]:
        config = ReplicaFetcherConfig(2, "PLAINTEXT", fetch_backoff_ms=50)
        manager = ReplicaFetcherManager(
            config, lambda _tp: None, lambda _i, _n: ("127.0.0.1", port)
        )
        manager.add_partition(TopicPartition("t", 0), 1, 0)
        manager.add_partition(TopicPartition("t", 1), 3, 0)
        await asyncio.sleep(0.05)
        # One fetcher retired by a partition move, the other by close().
        manager.remove_partition(TopicPartition("t", 1))
        tasks = [t for t in asyncio.all_tasks() if t.get_name().startswith("replica-fetcher-")]
        assert len(tasks) == 2
        manager.close()
        await asyncio.wait_for(manager.wait_closed(), 5)
        # Checked before asyncio.run's own cleanup would cancel leftovers for us.
        assert len(tasks) == 2
        return tasks

    try:
        tasks = asyncio.run(scenario())
    finally:
        silent.close()
    assert len(tasks) == 2
