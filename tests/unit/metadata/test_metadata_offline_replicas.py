"""A broker reports replicas whose log directory failed: the controller takes them out of their
ISRs and leadership, never elects them for those partitions while the broker keeps reporting
them, and forgets them when the broker registers again (a new process loads its disks anew)."""

from __future__ import annotations

from harness import Harness

from metadata.controller_config import ControllerConfig
from metadata.image import PartitionRegistration
from metadata.messages import OfflineReplica

SESSION_MS = ControllerConfig().broker_session_timeout_ms


def cluster(unclean: bool = False) -> Harness:
    h = Harness(ControllerConfig(auto_leader_rebalance_enable=False))
    h.add_brokers([1, 2, 3])
    for name in ("failed", "healthy"):
        h.create(
            name,
            -1,
            -1,
            replica_assignment={0: [1, 2, 3]},
            configs={
                "min.insync.replicas": "2",
                "unclean.leader.election.enable": str(unclean).lower(),
            },
        )
    return h


def part(h: Harness, name: str) -> PartitionRegistration:
    return h.image.partition(name, 0)


def report(h: Harness, bid: int, names: list[str], dirs: list[str]) -> None:
    replicas = [OfflineReplica(h.image.topic(n).topic_id, 0) for n in names]
    response = h.heartbeat(bid, offline_replicas=replicas, offline_log_dirs=dirs)
    assert response.error_code == 0


def test_offline_replicas_leave_isr_and_leadership_and_others_stay() -> None:
    h = cluster()
    assert part(h, "failed").leader == 1
    report(h, 1, ["failed"], ["/disk2"])
    failed, healthy = part(h, "failed"), part(h, "healthy")
    assert failed.leader == 2 and failed.isr == (2, 3) and failed.elr == ()
    assert healthy.leader == 1 and healthy.isr == (1, 2, 3)
    assert not h.image.brokers[1].fenced
    # Reported again with every heartbeat: nothing more to write.
    before = len(h.entries)
    report(h, 1, ["failed"], ["/disk2"])
    assert len(h.entries) == before


def test_an_offline_replica_is_never_elected_for_its_partition() -> None:
    # Unclean election would take any active replica; an offline one still may not lead.
    h = cluster(unclean=True)
    topic_id = h.image.topic("failed").topic_id
    report(h, 1, ["failed"], ["/disk2"])
    # 2 and 3 go away: broker 1 is the only active one, but its replica is offline.
    for gone in (2, 3):
        h.now += SESSION_MS
        report(h, 1, ["failed"], ["/disk2"])
        for other in (2, 3):
            if other != gone and not h.image.brokers[other].fenced:
                h.heartbeat(other)
        h.tick(h.now + 1)
    assert part(h, "failed").leader == -1
    assert part(h, "healthy").leader == 1
    assert h.c.sessions.offline_replicas() == {(topic_id, 0): frozenset({1})}
    # Broker 1 restarts with its disk repaired: a new registration forgets the report.
    h.now += SESSION_MS
    h.tick(h.now + 1)
    assert h.register(1, "after-repair").error_code == 0
    assert h.c.sessions.offline_replicas() == {}
