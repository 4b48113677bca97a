"""The controller service on a real 3-voter MetadataLog (pysyncobj) in one process, with
three broker metadata followers: topics appear identically everywhere, a silent broker is
fenced and loses leadership, a restarted broker gets a new epoch, and losing the active
controller moves the control plane to another voter."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from common.error_codes import ErrorCode
from deploy.ports import free_ports
from metadata.broker_manager import BrokerMetadataManager
from metadata.client import ControllerClient
from metadata.controller_config import ControllerConfig
from metadata.delta import MetadataDelta
from metadata.image import MetadataImage
from metadata.messages import NewTopic
from metadata.service import ControllerServer
from metadata.snapshot import build_snapshot
from raft.config import RaftConfig
from raft.metadata_log import MetadataLog

pytestmark = pytest.mark.integration

WAIT_S = 60.0
CONFIG = ControllerConfig(
    broker_session_timeout_ms=2000,
    broker_heartbeat_interval_ms=200,
    auto_leader_rebalance_enable=False,
)


def wait_until(predicate: Callable[[], object], what: str) -> object:
    deadline = time.monotonic() + WAIT_S
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


class Quorum:
    def __init__(self, root: Path, max_tail_records: int) -> None:
        raft_ports = free_ports(3)
        voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(raft_ports))
        self.logs: dict[int, MetadataLog] = {}
        self.servers: dict[int, ControllerServer] = {}
        self.stopped: set[int] = set()
        for node_id in (1, 2, 3):
            config = RaftConfig(
                node_id=node_id,
                quorum_voters=voters,
                metadata_log_dir=str(root / f"voter{node_id}"),
                quorum_secret="test-secret",
                election_timeout_ms=400,
                append_interval_ms=50,
                max_tail_records=max_tail_records,
            )
            (root / f"voter{node_id}").mkdir(parents=True)
            log = MetadataLog(config, build_snapshot)
            server = ControllerServer(node_id, log, CONFIG, "127.0.0.1", 0, cluster_id="c1")
            server.start()  # before the log starts: its address goes into leader-change records
            self.logs[node_id] = log
            self.servers[node_id] = server
        for log in self.logs.values():
            log.start()

    def bootstrap(self) -> str:
        return ",".join(s.address for s in self.servers.values())

    def active(self) -> int | None:
        ids = [i for i, s in self.servers.items() if s.is_active and i not in self.stopped]
        return ids[0] if len(ids) == 1 else None

    def stop_voter(self, node_id: int) -> None:
        if node_id in self.stopped:
            return
        self.stopped.add(node_id)
        self.servers[node_id].stop()
        self.logs[node_id].close()

    def close(self) -> None:
        for node_id in list(self.servers):
            self.stop_voter(node_id)


@pytest.fixture
def quorum(tmp_path: Path) -> Iterator[Quorum]:
    q = Quorum(tmp_path, max_tail_records=200)
    try:
        yield q
    finally:
        q.close()


@pytest.fixture
def brokers(quorum: Quorum) -> Iterator[dict[int, BrokerMetadataManager]]:
    managers: dict[int, BrokerMetadataManager] = {}

    def on_change(image: MetadataImage, delta: MetadataDelta) -> None:
        pass

    for bid in (1, 2, 3):
        mgr = BrokerMetadataManager(
            bid,
            ControllerClient(quorum.bootstrap(), timeout_s=5.0),
            {"PLAINTEXT": ("127.0.0.1", 19000 + bid)},
            None,
            "c1",
            f"first-{bid}",
            on_change,
            fetch_max_wait_ms=300,
        )
        managers[bid] = mgr
        mgr.start()
    try:
        yield managers  # the test may replace entries (restarts); all are stopped here
    finally:
        for mgr in managers.values():
            mgr.stop()


def test_topics_fencing_restart_and_failover(
    quorum: Quorum, brokers: dict[int, BrokerMetadataManager]
) -> None:
    first_active = wait_until(quorum.active, "an active controller")
    for mgr in brokers.values():
        assert mgr.wait_until_unfenced(WAIT_S)
    with ControllerClient(quorum.bootstrap(), timeout_s=30.0) as admin:
        # 1. A created topic appears identically in every broker's image (snapshots included:
        #    500 partitions > the 200-record tail).
        res = admin.create_topics([NewTopic("orders", 500, 3), NewTopic("bad!", 1, 1)])
        assert [r.error_code for r in res] == [0, ErrorCode.INVALID_TOPIC_EXCEPTION]
        assert admin.create_topics([NewTopic("rf", 1, 4)])[0].error_code == (
            ErrorCode.INVALID_REPLICATION_FACTOR
        )
        target = max(log.committed_offset for log in quorum.logs.values())
        for mgr in brokers.values():
            assert mgr.wait_for_offset(target, WAIT_S)
        encoded = {bid: mgr.image.topic("orders") for bid, mgr in brokers.items()}
        assert encoded[1] == encoded[2] == encoded[3]
        assert len(encoded[1].partitions) == 500
        status = admin.quorum_status()
        assert status["leader_id"] == first_active and len(status["voters"]) == 3

        # 2. Broker 2 is killed (stops without controlled shutdown): fenced after the session
        #    timeout, and leadership of its partitions moves to live ISR members.
        led_by_2 = [
            pid for pid, p in brokers[1].image.topic("orders").partitions.items() if p.leader == 2
        ]
        assert led_by_2
        old_epoch = brokers[2].broker_epoch
        brokers[2].stop()

        def fenced_everywhere() -> bool:
            return all(
                mgr.image.brokers[2].fenced
                and all(p.leader != 2 for _, _, p in mgr.image.iter_partitions())
                for bid, mgr in brokers.items()
                if bid != 2
            )

        wait_until(fenced_everywhere, "broker 2 fenced on every live broker")
        image = brokers[1].image
        for pid in led_by_2:
            p = image.topic("orders").partitions[pid]
            assert p.leader in (1, 3) and p.leader in p.isr and 2 not in p.isr
            assert p.leader == next(r for r in p.replicas if r != 2)

        # 3. On restart it registers with a new broker epoch.
        restarted = BrokerMetadataManager(
            2,
            ControllerClient(quorum.bootstrap(), timeout_s=5.0),
            {"PLAINTEXT": ("127.0.0.1", 19002)},
            None,
            "c1",
            "second-2",
            lambda image, delta: None,
            fetch_max_wait_ms=300,
        )
        brokers[2] = restarted
        restarted.start()
        assert restarted.wait_until_unfenced(WAIT_S)
        assert restarted.broker_epoch > old_epoch

        # 4. The active controller's voter goes away: another voter takes over, having replayed
        #    the log, and the client finds it.
        quorum.stop_voter(first_active)
        wait_until(
            lambda: any(s.is_active for i, s in quorum.servers.items() if i != first_active),
            "a new active controller",
        )
        res = admin.create_topics([NewTopic("orders", 1, 1), NewTopic("after", 2, 2)])
        assert [r.error_code for r in res] == [ErrorCode.TOPIC_ALREADY_EXISTS, 0]
        desc = admin.describe_cluster()
        assert desc.controller_id != first_active
        assert [b.broker_id for b in desc.brokers] == [1, 2, 3]
