"""A broker's KafkaApis in process, forwarding to a real controller on an in-memory quorum:
the set-up of the handler tests whose APIs the broker forwards (ACLs, quotas, reassignments)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from data_plane.broker.apis import KafkaApis, Request
from data_plane.broker.config import BrokerConfig
from data_plane.broker.replica_manager import ReplicaManager
from data_plane.storage import LogConfig, LogManager
from metadata.client import ControllerClient
from metadata.controller_config import ControllerConfig
from metadata.service import ControllerServer
from metadata.snapshot import build_snapshot
from tests.unit.metadata.memlog import InMemoryQuorum

ACTIVE_TIMEOUT_S = 10.0
REQUEST_TIMEOUT_MS = 10_000


@contextmanager
def active_controller() -> Iterator[ControllerServer]:
    """Controller 1, the elected leader of a one-voter in-memory quorum, once it is active."""
    quorum = InMemoryQuorum(build_snapshot, 100_000)
    server = ControllerServer(
        1, quorum.voter(1), ControllerConfig(broker_session_timeout_ms=60_000), "127.0.0.1", 0
    )
    server.start()
    quorum.elect(1)
    try:
        deadline = time.monotonic() + ACTIVE_TIMEOUT_S
        while not server.is_active:
            assert time.monotonic() < deadline, "controller never became active"
            time.sleep(0.01)
        yield server
    finally:
        server.stop()


@contextmanager
def forwarding_apis(controller: ControllerServer, tmp_path: Path) -> Iterator[KafkaApis]:
    """Broker 1's KafkaApis with its logs under ``tmp_path``; ``apis.controller`` is its
    client of ``controller``. Closed on exit."""
    log_manager = LogManager(LogConfig(log_dirs=(str(tmp_path / "logs"),)))
    client = ControllerClient(controller.address, timeout_s=REQUEST_TIMEOUT_MS / 1000)
    config = BrokerConfig(request_timeout_ms=REQUEST_TIMEOUT_MS)
    apis = KafkaApis(
        1, "c", config, ReplicaManager(1, log_manager), client, lambda: time.monotonic_ns() // 10**6
    )
    try:
        yield apis
    finally:
        apis.close()
        client.close()
        log_manager.close()


def run_following(
    apis: KafkaApis, controller: ControllerServer, module: Any, request: Request
) -> Any:
    """``module.handle(apis, request)`` run to its answer while the broker's image follows the
    controller's (as the metadata publisher would), so a handler that waits for its change to
    show in the image sees it."""

    async def follow(done: asyncio.Event) -> None:
        while not done.is_set():
            apis.replica_manager.apply_image(controller.controller.image)
            await asyncio.sleep(0.005)

    async def run() -> Any:
        done = asyncio.Event()
        follower = asyncio.create_task(follow(done))
        try:
            result = module.handle(apis, request)
            return await result if asyncio.iscoroutine(result) else result
        finally:
            done.set()
            await follower

    return asyncio.run(run())
