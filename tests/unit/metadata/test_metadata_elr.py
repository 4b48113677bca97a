"""Eligible leader replicas and unclean-shutdown recovery (metadata.election, KIP-966).

The scenario of chaos seeds 2 and 5 (docs/chaos.md): replication factor 3, min.insync.replicas
2, every broker killed one after another; the last ISR member then comes back first after
losing the unflushed tail of its log. Electing it alone (as the controller did) lost
acknowledged records that the second-to-last member still held.
"""

from __future__ import annotations

from harness import Harness

from metadata.controller_config import ControllerConfig
from metadata.features import SUPPORTED
from metadata.image import MetadataImage, PartitionRegistration
from metadata.messages import (
    AlterPartitionItem,
    AlterPartitionRequest,
    AlterPartitionTopic,
    Endpoint,
    RegisterBrokerRequest,
    ReplicaLogEnd,
)

SESSION_MS = ControllerConfig().broker_session_timeout_ms


def cluster(min_isr: int = 2, **configs: str) -> Harness:
    h = Harness(ControllerConfig(auto_leader_rebalance_enable=False))
    h.add_brokers([1, 2, 3])
    h.create(
        "t",
        -1,
        -1,
        replica_assignment={0: [1, 2, 3]},
        configs={"min.insync.replicas": str(min_isr), **configs},
    )
    return h


def part(h: Harness) -> PartitionRegistration:
    return h.image.partition("t", 0)


def fence_one_by_one(h: Harness, order: list[int]) -> None:
    """Let each broker's session run out in turn while the rest keep heartbeating."""
    alive = {1, 2, 3}
    for bid in order:
        alive.discard(bid)
        h.now += SESSION_MS
        for other in sorted(alive):
            h.heartbeat(other)
        h.tick(h.now + 1)
        assert h.image.brokers[bid].fenced


def restart(h: Harness, bid: int, clean: bool, incarnation: str) -> None:
    req = RegisterBrokerRequest(
        bid,
        incarnation,
        [Endpoint("PLAINTEXT", "127.0.0.1", 9000 + bid)],
        None,
        "c1",
        clean_shutdown=clean,
        min_metadata_version=SUPPORTED.min_level,
        max_metadata_version=SUPPORTED.max_level,
    )
    assert h.commit(h.c.register_broker(req, h.now)).error_code == 0
    assert h.image.brokers[bid].clean_shutdown is clean


def report(h: Harness, bid: int, last_epoch: int, log_end_offset: int) -> None:
    topic_id = h.image.topic("t").topic_id
    h.heartbeat(bid, replica_log_ends=[ReplicaLogEnd(topic_id, 0, last_epoch, log_end_offset)])


def test_fencing_below_min_isr_fills_the_elr() -> None:
    h = cluster()
    fence_one_by_one(h, [1])
    p = part(h)
    assert (p.isr, p.elr) == ((2, 3), ())  # still at the minimum: 1 may fall behind, no ELR
    fence_one_by_one(h, [2])
    p = part(h)
    assert (p.leader, p.isr, p.elr) == (3, (3,), (2,))
    fence_one_by_one(h, [3])
    p = part(h)
    assert (p.leader, p.isr, p.elr) == (-1, (3,), (2,))


def test_unclean_last_isr_member_waits_for_the_elr_and_the_longest_log_leads() -> None:
    h = cluster()
    fence_one_by_one(h, [1, 2, 3])
    restart(h, 3, clean=False, incarnation="3b")
    h.heartbeat(3)
    assert not h.image.brokers[3].fenced
    assert part(h).leader == -1  # 3 may have lost its unflushed tail; 2 is a candidate too
    report(h, 3, 5, 90)
    assert part(h).leader == -1  # 2 has not reported
    restart(h, 2, clean=False, incarnation="2b")
    h.heartbeat(2)
    assert part(h).leader == -1
    report(h, 2, 5, 100)
    p = part(h)
    # 2 holds the longer log; 3 (short, unclean) must catch up before it counts again.
    assert (p.leader, p.isr, p.elr) == (2, (2,), ())


def test_later_epoch_beats_longer_log() -> None:
    h = cluster()
    fence_one_by_one(h, [1, 2, 3])
    for bid in (2, 3):
        restart(h, bid, clean=False, incarnation=f"{bid}b")
        h.heartbeat(bid)
    report(h, 2, 4, 500)
    report(h, 3, 5, 90)
    assert part(h).leader == 3


def test_clean_candidate_leads_at_once_and_inactive_candidates_stay_eligible() -> None:
    h = cluster()
    fence_one_by_one(h, [1, 2, 3])
    restart(h, 3, clean=True, incarnation="3b")
    h.heartbeat(3)
    p = part(h)
    assert (p.leader, p.isr, p.elr) == (3, (3,), (2,))
    # The ISR is still below the minimum: the HW stays (broker side), so 2 stays eligible.


def test_clean_elr_member_leads_when_the_isr_member_is_unclean() -> None:
    h = cluster()
    fence_one_by_one(h, [1, 2, 3])
    restart(h, 3, clean=False, incarnation="3b")
    h.heartbeat(3)
    restart(h, 2, clean=True, incarnation="2b")
    h.heartbeat(2)
    p = part(h)
    assert (p.leader, p.isr, p.elr) == (2, (2,), ())


def test_single_candidate_leads_even_after_unclean_shutdown() -> None:
    h = cluster(min_isr=1)
    fence_one_by_one(h, [1, 2, 3])
    assert (part(h).isr, part(h).elr) == ((3,), ())
    restart(h, 3, clean=False, incarnation="3b")
    h.heartbeat(3)
    assert part(h).leader == 3  # no other replica can hold more


def test_unclean_election_enabled_does_not_wait_for_log_ends() -> None:
    h = cluster(**{"unclean.leader.election.enable": "true"})
    fence_one_by_one(h, [1, 2, 3])
    restart(h, 3, clean=False, incarnation="3b")
    h.heartbeat(3)
    assert part(h).leader == 3


def test_unclean_reregistration_joins_no_elr() -> None:
    h = cluster()
    fence_one_by_one(h, [1])
    # 2 restarts uncleanly; its session ran out but no tick has fenced it yet, so the new
    # registration takes the old one out of the ISR, below the minimum: its log may be
    # short, so it joins no ELR.
    h.now += SESSION_MS
    h.heartbeat(3)
    restart(h, 2, clean=False, incarnation="2b")
    p = part(h)
    assert (p.isr, p.elr) == ((3,), ())


def _expand(h: Harness, isr: list[int]) -> None:
    p = part(h)
    item = AlterPartitionItem(0, p.leader_epoch, isr, p.partition_epoch)
    epoch = h.image.brokers[p.leader].epoch
    req = AlterPartitionRequest(p.leader, epoch, [AlterPartitionTopic("t", [item])])
    assert h.commit(h.c.alter_partition(req)).partitions[0].error_code == 0


def test_isr_back_at_the_minimum_clears_the_elr() -> None:
    h = cluster()
    fence_one_by_one(h, [1, 2])
    assert (part(h).isr, part(h).elr) == ((3,), (2,))
    restart(h, 1, clean=False, incarnation="1b")
    h.heartbeat(1)
    _expand(h, [3, 1])
    assert (part(h).isr, part(h).elr) == ((3, 1), ())


def test_elr_member_rejoining_the_isr_leaves_the_elr() -> None:
    h = cluster(min_isr=3)
    fence_one_by_one(h, [1, 2])
    assert part(h).elr == (1, 2)
    restart(h, 2, clean=True, incarnation="2b")
    h.heartbeat(2)
    _expand(h, [3, 2])
    assert (part(h).isr, part(h).elr) == ((3, 2), (1,))


def test_snapshot_and_records_carry_elr_and_clean_shutdown() -> None:
    h = cluster()
    fence_one_by_one(h, [1, 2])
    restart(h, 1, clean=True, incarnation="1b")
    image = h.image
    again = MetadataImage.decode(image.encode())
    assert again.partition("t", 0).elr == (2,)
    assert again.brokers[1].clean_shutdown and not again.brokers[3].clean_shutdown
    assert again.encode() == image.encode()
    # Replaying the committed records from scratch gives the same image.
    fresh = Harness(ControllerConfig(auto_leader_rebalance_enable=False))
    fresh.c.replay(h.entries)
    assert fresh.image.encode() == image.encode()


def test_leader_shrink_below_the_minimum_fills_the_elr() -> None:
    h = cluster()
    leader = part(h).leader
    others = [b for b in (1, 2, 3) if b != leader]
    p = part(h)
    _shrink_to = [leader, others[0]]
    item = AlterPartitionItem(0, p.leader_epoch, _shrink_to, p.partition_epoch)
    req = AlterPartitionRequest(
        leader, h.image.brokers[leader].epoch, [AlterPartitionTopic("t", [item])]
    )
    assert h.commit(h.c.alter_partition(req)).partitions[0].error_code == 0
    assert part(h).elr == ()  # at the minimum: the dropped follower may fall behind
    p = part(h)
    item = AlterPartitionItem(0, p.leader_epoch, [leader], p.partition_epoch)
    req = AlterPartitionRequest(
        leader, h.image.brokers[leader].epoch, [AlterPartitionTopic("t", [item])]
    )
    assert h.commit(h.c.alter_partition(req)).partitions[0].error_code == 0
    assert (part(h).isr, part(h).elr) == ((leader,), (others[0],))
