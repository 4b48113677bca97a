"""BrokerMetadataManager against ControllerServers on the in-memory metadata log stand-in."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest
from memlog import InMemoryQuorum

from common.topic_partition import TopicPartition
from metadata.broker_manager import BrokerMetadataManager
from metadata.client import ControllerClient
from metadata.controller_config import ControllerConfig
from metadata.delta import MetadataDelta
from metadata.image import MetadataImage
from metadata.messages import NewTopic
from metadata.service import ControllerServer
from metadata.snapshot import build_snapshot

CONFIG = ControllerConfig(
    broker_session_timeout_ms=1500,
    broker_heartbeat_interval_ms=100,
    auto_leader_rebalance_enable=False,
)
WAIT_S = 20.0


def wait_until(predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


class Recorder:
    """Collects on_change calls: (image offset, local changes) per call, and the thread."""

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.calls: list[tuple[int, object]] = []
        self.threads: set[str] = set()
        self.lock = threading.Lock()

    def __call__(self, image: MetadataImage, delta: MetadataDelta) -> None:
        with self.lock:
            self.calls.append((image.offset, delta.local_changes(self.broker_id)))
            self.threads.add(threading.current_thread().name)


Env = tuple[InMemoryQuorum, ControllerServer, list[BrokerMetadataManager]]


@pytest.fixture
def env() -> Iterator[Env]:
    quorum = InMemoryQuorum(build_snapshot, max_tail_records=40)
    server = ControllerServer(1, quorum.voter(1), CONFIG, "127.0.0.1", 0, cluster_id="c1")
    server.start()
    quorum.elect(1)
    managers: list[BrokerMetadataManager] = []
    try:
        yield quorum, server, managers
    finally:
        for mgr in managers:
            mgr.stop()
        server.stop()


def start_broker(
    server: ControllerServer, managers: list, broker_id: int, incarnation: str = "a"
) -> tuple[BrokerMetadataManager, Recorder, ControllerClient]:
    client = ControllerClient(server.address, timeout_s=5.0)
    rec = Recorder(broker_id)
    mgr = BrokerMetadataManager(
        broker_id,
        client,
        {"PLAINTEXT": ("127.0.0.1", 9000 + broker_id)},
        None,
        "c1",
        incarnation,
        rec,
        fetch_max_wait_ms=200,
    )
    managers.append(mgr)
    mgr.start()
    return mgr, rec, client


def test_brokers_register_follow_metadata_and_learn_their_replicas(env: Env) -> None:
    quorum, server, managers = env
    brokers = [start_broker(server, managers, b) for b in (1, 2, 3)]
    for mgr, _, _ in brokers:
        assert mgr.wait_until_unfenced(WAIT_S)
        assert mgr.broker_epoch >= 0
    admin = ControllerClient(server.address, timeout_s=10.0)
    try:
        res = admin.create_topics([NewTopic("t", 30, 3)])  # > 40 records: snapshot path too
        assert res[0].error_code == 0
        target = quorum.committed_offset
        for mgr, _, _ in brokers:
            assert mgr.wait_for_offset(target, WAIT_S)
        images = [mgr.image for mgr, _, _ in brokers]
        assert images[0].topics_by_name == images[1].topics_by_name == images[2].topics_by_name
        assert images[0].topics_by_name == server.controller.image.topics_by_name
        for mgr, rec, _ in brokers:
            led = set()
            followed = set()
            with rec.lock:
                for _, changes in rec.calls:
                    led |= set(changes.leaders)
                    followed |= set(changes.followers)
                assert len(rec.threads) == 1
                offsets = [o for o, _ in rec.calls]
            assert offsets == sorted(offsets)
            expected_led = {
                TopicPartition("t", pid)
                for pid, p in mgr.image.topic("t").partitions.items()
                if p.leader == mgr.broker_id
            }
            assert led == expected_led and len(led) == 10
            assert len(followed) == 20
    finally:
        admin.close()


def test_controlled_shutdown_and_fencing_of_a_silent_broker(env: Env) -> None:
    _, server, managers = env
    brokers = {b: start_broker(server, managers, b) for b in (1, 2, 3)}
    for mgr, _, _ in brokers.values():
        assert mgr.wait_until_unfenced(WAIT_S)
    admin = ControllerClient(server.address, timeout_s=10.0)
    try:
        assert admin.create_topics([NewTopic("t", 6, 3)])[0].error_code == 0
        mgr1 = brokers[1][0]
        assert mgr1.controlled_shutdown(WAIT_S)
        image = server.controller.image
        assert image.brokers[1].fenced
        assert all(p.leader != 1 and 1 not in p.isr for _, _, p in image.iter_partitions())
        mgr1.stop()
        # Broker 2 goes silent (killed): fenced after the session timeout, leadership moves.
        brokers[2][0].stop()
        wait_until(lambda: server.controller.image.brokers[2].fenced, "broker 2 fenced")
        image = server.controller.image
        for _, _, p in image.iter_partitions():
            assert p.leader == 3
            assert p.isr == (3,)
        # Restarted: a new epoch, unfenced once caught up.
        old_epoch = image.brokers[2].epoch
        mgr2b, _, _ = start_broker(server, managers, 2, incarnation="b")
        assert mgr2b.wait_until_unfenced(WAIT_S)
        assert mgr2b.broker_epoch > old_epoch
        assert server.controller.image.brokers[2].epoch == mgr2b.broker_epoch
    finally:
        admin.close()
