"""Random operation sequences against the controller; after every committed step the image must
satisfy the partition invariants, epochs must only grow, and a live ISR member must lead."""

from __future__ import annotations

import random

import pytest
from harness import Harness

from metadata.controller_config import ControllerConfig
from metadata.delta import MetadataDelta
from metadata.election import check_partition
from metadata.image import MetadataImage
from metadata.messages import (
    AlterPartitionItem,
    AlterPartitionRequest,
    AlterPartitionTopic,
    CreatePartitionsRequest,
    DeleteTopicsRequest,
    ElectLeadersRequest,
    NewPartitions,
)
from metadata.snapshot import build_snapshot, replay_entries
from raft.api import Snapshot

BROKERS = [1, 2, 3, 4]
SESSION_MS = 1000
STEPS = 250


def check(prev: MetadataImage, image: MetadataImage) -> None:
    active = {b.broker_id for b in image.brokers.values() if b.is_active}
    for t in image.topics_by_name.values():
        for pid, p in t.partitions.items():
            check_partition(p, f"{t.name}-{pid}")
            if p.leader != -1:
                assert p.leader in active or not (set(p.isr) & active), (t.name, pid, p)
            else:
                assert not (set(p.isr) & active), f"{t.name}-{pid} leaderless with live ISR {p}"
            old_topic = prev.topics_by_id.get(t.topic_id)
            old = old_topic.partitions.get(pid) if old_topic is not None else None
            if old is not None:
                assert p.leader_epoch >= old.leader_epoch
                assert p.partition_epoch >= old.partition_epoch
                if p.leader != old.leader:
                    assert p.leader_epoch > old.leader_epoch
    for bid, b in image.brokers.items():
        old_b = prev.brokers.get(bid)
        if old_b is not None:
            assert b.epoch >= old_b.epoch


@pytest.mark.parametrize("seed", range(25))
def test_random_operations_keep_invariants(seed: int) -> None:
    rng = random.Random(seed)
    h = Harness(
        ControllerConfig(
            broker_session_timeout_ms=SESSION_MS, leader_imbalance_check_interval_seconds=1
        ),
        seed=seed,
    )
    alive: dict[int, bool] = {}
    incarnation = dict.fromkeys(BROKERS, 0)
    topic_n = 0
    for _ in range(STEPS):
        prev = h.image
        op = rng.random()
        h.now += rng.randrange(0, 400)
        if op < 0.15:
            bid = rng.choice(BROKERS)
            incarnation[bid] += 1
            h.register(bid, f"{bid}-{incarnation[bid]}")
            alive[bid] = h.image.brokers.get(bid) is not None
        elif op < 0.45:
            for bid in [b for b, up in alive.items() if up]:
                if bid in h.image.brokers:
                    offset = h.image.offset - rng.choice([0, 0, 0, 5])
                    h.heartbeat(bid, offset=offset, want_shutdown=rng.random() < 0.03)
        elif op < 0.55:
            bid = rng.choice(BROKERS)
            alive[bid] = False  # crash: heartbeats stop
        elif op < 0.7:
            topic_n += 1
            h.create(f"t{topic_n}", rng.randrange(1, 6), rng.randrange(1, 4))
        elif op < 0.8 and h.image.topics_by_name:
            name = rng.choice(sorted(h.image.topics_by_name))
            t = h.image.topics_by_name[name]
            pid = rng.choice(sorted(t.partitions))
            p = t.partitions[pid]
            if p.leader != -1 and p.leader in h.image.brokers:
                isr = [r for r in p.replicas if r == p.leader or rng.random() < 0.6]
                item = AlterPartitionItem(pid, p.leader_epoch, isr, p.partition_epoch)
                req = AlterPartitionRequest(
                    p.leader,
                    h.image.brokers[p.leader].epoch,
                    [AlterPartitionTopic(name, [item], t.topic_id)],
                )
                h.commit(h.c.alter_partition(req))
        elif op < 0.85 and h.image.topics_by_name:
            name = rng.choice(sorted(h.image.topics_by_name))
            count = len(h.image.topics_by_name[name].partitions) + rng.randrange(-1, 3)
            h.commit(h.c.create_partitions(CreatePartitionsRequest([NewPartitions(name, count)])))
        elif op < 0.88 and h.image.topics_by_name:
            name = rng.choice(sorted(h.image.topics_by_name))
            h.commit(h.c.delete_topics(DeleteTopicsRequest([name])))
        elif op < 0.92:
            h.commit(h.c.elect_leaders(ElectLeadersRequest(rng.choice([0, 1]))))
        else:
            h.tick(h.now)
        check(prev, h.image)
    # Determinism: the whole log replayed at once, or folded into snapshots in random chunks,
    # gives the same image and the same bytes.
    once = MetadataDelta(MetadataImage())
    replay_entries(once, h.entries)
    assert once.apply() == h.image
    snapshot = None
    i = 0
    while i < len(h.entries):
        j = i + rng.randrange(1, 40)
        chunk = h.entries[i:j]
        snapshot = Snapshot(chunk[-1].offset, 1, build_snapshot(snapshot, chunk))
        i = j
    assert snapshot is not None and snapshot.data == h.image.encode()
