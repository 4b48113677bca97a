"""Online scaling: start a fourth broker and move a partition onto it while an
idempotent acks=all producer runs. The move completes (the new replica joins the ISR, the
leader, which is being removed, hands over, the old replica's files are deleted), and the log
holds every acknowledged record exactly once, in order, at its acknowledged offset, identical
on every replica. Then preferred-leader election puts the new broker (first in the target) in
charge. Driven through the `kraftlog topics` command, as an operator would."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from deploy.local_cluster import LocalCluster
from tests.integration.replication.helpers import (
    DEADLINE_S,
    bytes_up_to,
    create_topic,
    list_latest,
    partition_md,
    read_partition,
    wait_for,
)

pytestmark = [pytest.mark.integration]

TOPIC = "moving"
TOTAL = 4000
# Records acknowledged before the fourth broker starts, and before the reassignment is issued.
ACKED_BEFORE_MOVE = 300
# Pause between produce calls: spreads the records over the whole move.
SEND_INTERVAL_S = 0.002
# The producer holds before this record until the move is issued, so that most records are
# still to be sent when it starts however long the new broker took to come up.
HOLD_AT = TOTAL // 4


def kraftlog(cluster: LocalCluster, *args: str) -> Any:
    """Run `kraftlog ARGS --dir D --json`; the parsed JSON output (exit status 0 required)."""
    proc = subprocess.run(
        [sys.executable, "-m", "deploy.cli", *args, "--dir", str(cluster.directory), "--json"],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S * 3,
    )
    assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return json.loads(proc.stdout)


class Producer:
    """An idempotent acks=all confluent-kafka producer sending TOTAL values on a thread."""

    def __init__(self, cluster: LocalCluster) -> None:
        from confluent_kafka import Producer as Confluent

        self.values = [b"v-%06d" % i for i in range(TOTAL)]
        self.lock = threading.Lock()
        self.offsets: dict[bytes, int] = {}
        self.errors: list[tuple[bytes, object]] = []
        self.left = -1
        self.stop = threading.Event()
        self.moving = threading.Event()
        self.producer = Confluent(
            {
                "bootstrap.servers": ",".join(cluster.bootstrap_servers()),
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 2,
                "max.in.flight.requests.per.connection": 5,
                "retry.backoff.ms": 100,
                "message.timeout.ms": 120_000,
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )
        self.thread = threading.Thread(target=self._run, name="producer", daemon=True)

    def _cb(self, err: object, msg: Any) -> None:
        with self.lock:
            if err is not None:
                self.errors.append((msg.value(), err))
            elif msg.value() in self.offsets:
                self.errors.append((msg.value(), "acknowledged twice"))
            else:
                self.offsets[msg.value()] = msg.offset()

    def _run(self) -> None:
        for i, v in enumerate(self.values):
            if i == HOLD_AT:
                self.moving.wait(DEADLINE_S * 3)
            if self.stop.is_set():
                break
            self.producer.produce(TOPIC, v, partition=0, on_delivery=self._cb)
            self.producer.poll(0)
            time.sleep(SEND_INTERVAL_S)
        self.left = self.producer.flush(DEADLINE_S * 2)

    def acked(self) -> int:
        with self.lock:
            return len(self.offsets)


def test_move_a_partition_onto_a_new_broker_under_load(cluster: LocalCluster) -> None:
    old_leader = create_topic(cluster, TOPIC, min_isr=2)
    producer = Producer(cluster)
    producer.thread.start()
    try:
        wait_for(lambda: producer.acked() >= ACKED_BEFORE_MOVE, "acknowledgements before the move")
        new_broker = cluster.add_broker()
        cluster.start_node(new_broker)
        wait_for(lambda: _unfenced(cluster, new_broker), f"broker {new_broker} unfenced")
        followers = [b for b in cluster.broker_ids if b not in (old_leader, new_broker)]
        target = [new_broker, *followers]  # the current leader is moved away
        replicas = ",".join(map(str, target))
        # The move starts while the producer still has most of its records to send.
        assert producer.acked() < TOTAL // 2 and producer.thread.is_alive()
        producer.moving.set()
        started = kraftlog(
            cluster, "topics", "reassign", TOPIC, "--partition", "0", "--replicas", replicas
        )
        assert started["target_replicas"] == target
        # While it moves, --list shows it (unless it is already done on a fast machine).
        listed = kraftlog(cluster, "topics", "reassign", "--list", TOPIC)
        for row in listed:
            assert row["replicas"][: len(target)] == target
            assert row["removing_replicas"] == [old_leader]
        done = kraftlog(
            cluster,
            "topics",
            "reassign",
            TOPIC,
            "--partition",
            "0",
            "--replicas",
            replicas,
            "--wait",
            "--wait-timeout",
            str(DEADLINE_S),
        )
        assert done["completed"] is True
        assert kraftlog(cluster, "topics", "reassign", "--list") == []
    finally:
        producer.moving.set()
        producer.thread.join(DEADLINE_S * 3)
        producer.stop.set()
    assert not producer.thread.is_alive()
    assert producer.left == 0, f"{producer.left} records undelivered"
    assert not producer.errors, producer.errors[:3]
    assert producer.acked() == TOTAL

    (topic,) = kraftlog(cluster, "topics", "describe", TOPIC)
    desc = topic["partitions"][0]
    assert desc["replicas"] == target
    assert desc["adding_replicas"] == [] and desc["removing_replicas"] == []
    assert set(desc["isr"]) == set(target)
    assert desc["leader"] in target and desc["leader"] != old_leader

    # Every acknowledged record exactly once, in send order, at its acknowledged offset.
    leader = desc["leader"]
    hw = list_latest(cluster, leader, TOPIC)
    log = read_partition(
        [f"{cluster.host_of(leader)}:{cluster.node(leader).broker_port}"], TOPIC, hw
    )
    got = [v for _, v in log]
    assert len(got) == hw == TOTAL
    assert got == producer.values
    at = dict(log)
    for value, offset in producer.offsets.items():
        assert at[offset] == value

    # The new replica holds the same bytes; the removed one's files are gone.
    def identical() -> bool:
        copies = {b: bytes_up_to(cluster, b, TOPIC, hw) for b in target}
        return len(set(copies.values())) == 1 and len(copies[new_broker]) > 0

    wait_for(identical, f"identical replicas of {TOPIC}-0 on {target}")
    old_dir = Path(cluster.node(old_leader).data_dir) / f"{TOPIC}-0"
    wait_for(lambda: not old_dir.exists(), f"{old_dir} deleted")

    # Preferred-leader election: the new broker, first in the target, leads.
    kraftlog(cluster, "topics", "elect-leaders", TOPIC)
    wait_for(
        lambda: all(
            (p := partition_md(cluster, b, TOPIC)) is not None and p["leader_id"] == new_broker
            for b in target
        ),
        f"broker {new_broker} leading {TOPIC}-0 after preferred election",
    )


def _unfenced(cluster: LocalCluster, broker_id: int) -> bool:
    with cluster.client(5.0) as admin:
        desc = admin.describe_cluster()
    return any(b.broker_id == broker_id and not b.fenced for b in desc.brokers)


def test_reassignment_onto_an_unknown_broker_is_refused(cluster: LocalCluster) -> None:
    create_topic(cluster, "refused", min_isr=2)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "deploy.cli",
            "topics",
            "reassign",
            "refused",
            "--partition",
            "0",
            "--replicas",
            "101,102,199",
            "--dir",
            str(cluster.directory),
        ],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    assert proc.returncode == 1
    assert "INVALID_REPLICA_ASSIGNMENT" in proc.stderr + proc.stdout
    with cluster.client(5.0) as admin:
        assert admin.list_partition_reassignments() == []
