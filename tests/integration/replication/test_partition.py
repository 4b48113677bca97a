"""A leader cut off from the controller quorum cannot complete an acks=all write (real network
partition: a LocalCluster placed in chaos.netns namespaces, iptables DROP between two nodes)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from chaos.netns import NetnsTopology, netns_placement
from common.error_codes import ErrorCode
from deploy.local_cluster import LocalCluster
from tests.integration.replication.helpers import FAST_OVERRIDES, bytes_up_to, wait_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:importlib.resources._legacy"),
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("iptables"),
        reason="network namespaces need root, iproute2 and iptables (make system-deps)",
    ),
]


@pytest.fixture
def netns_cluster(tmp_path: Path):
    cluster = LocalCluster.create(
        tmp_path / "cluster",
        controllers=1,
        brokers=3,
        overrides=FAST_OVERRIDES,
        placement=netns_placement(f"kl{os.getpid() % 1_000_000}"),
    )
    try:
        cluster.start()
        cluster.wait_ready(90)
        yield cluster
    finally:
        cluster.close()  # kills the nodes and deletes the namespaces with their rules


def topology(cluster: LocalCluster) -> NetnsTopology:
    placement = cluster.placement
    assert isinstance(placement, NetnsTopology)
    return placement


def step(cluster: LocalCluster, name: str, *args: Any) -> Any:
    """Run one helper inside the cluster's hub namespace (tests/.../netns_steps.py)."""
    argv = [sys.executable, "-m", "tests.integration.replication.netns_steps"]
    done = topology(cluster).run([*argv, str(cluster.directory), name, json.dumps(args)], 120.0)
    if done.returncode != 0:
        raise AssertionError(f"step {name}{args} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_leader_cut_off_from_the_controller_cannot_complete_acks_all(
    netns_cluster: LocalCluster,
) -> None:
    cluster = netns_cluster
    topic = "cut"
    leader = step(cluster, "create_topic", topic, 2)
    followers = [b for b in cluster.broker_ids if b != leader]
    r = step(cluster, "produce_raw", leader, topic, [f"a{i}" for i in range(10)], -1, 10_000)
    assert r["error_code"] == 0, r

    (controller,) = cluster.controller_ids
    topology(cluster).block(leader, controller)
    # The controller fences the silent leader and elects a follower; both followers follow it.
    new_leader = step(cluster, "wait_leader_seen", topic, followers, [leader])
    # The old leader never learns it (no metadata), still appends, but cannot commit: its
    # followers fetch from the new leader, and it cannot shrink the ISR without the quorum.
    r = step(cluster, "produce_raw", leader, topic, ["stale"], -1, 3000)
    assert r["error_code"] == ErrorCode.REQUEST_TIMED_OUT, r
    r = step(cluster, "produce_raw", new_leader, topic, [f"b{i}" for i in range(10)], -1, 10_000)
    assert r["error_code"] == 0 and r["base_offset"] == 10, r

    topology(cluster).heal_all()
    step(cluster, "wait_isr", topic, cluster.broker_ids)
    assert step(cluster, "list_latest", new_leader, topic) == 20

    def converged() -> bool:
        copies = {bytes_up_to(cluster, b, topic, 20) for b in cluster.broker_ids}
        return len(copies) == 1

    wait_for(converged, "the replicas to converge")
    assert "truncated 1 uncommitted offsets" in cluster.log_tail(leader, 400)
