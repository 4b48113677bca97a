"""A leader cut off from the controller quorum cannot complete an acks=all write, and keeps its
session until ``broker.session.timeout.ms`` (real network partition: a LocalCluster placed in
chaos.netns namespaces, iptables DROP between two nodes)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from collections.abc import Iterator
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


# Long enough that a partitioned broker watched for WATCH_S after the cut (plus the time a
# step takes to start on a loaded machine) cannot have reached it.
SLOW_SESSION_TIMEOUT_MS = 15_000
WATCH_S = 4.0


@contextlib.contextmanager
def running_netns_cluster(path: Path, overrides: dict[str, str]) -> Iterator[LocalCluster]:
    cluster = LocalCluster.create(
        path,
        controllers=1,
        brokers=3,
        overrides=overrides,
        placement=netns_placement(f"kl{os.getpid() % 1_000_000}"),
    )
    try:
        cluster.start()
        cluster.wait_ready(90)
        yield cluster
    finally:
        cluster.close()  # kills the nodes and deletes the namespaces with their rules


@pytest.fixture
def netns_cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with running_netns_cluster(tmp_path / "cluster", FAST_OVERRIDES) as cluster:
        yield cluster


@pytest.fixture
def slow_session_netns_cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    overrides = {**FAST_OVERRIDES, "broker.session.timeout.ms": str(SLOW_SESSION_TIMEOUT_MS)}
    with running_netns_cluster(tmp_path / "cluster", overrides) as cluster:
        yield cluster


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


def test_a_leader_cut_off_from_the_controller_keeps_its_session_until_the_timeout(
    slow_session_netns_cluster: LocalCluster,
) -> None:
    """Nothing tells the controller that a partitioned broker's process is gone (its session
    stream goes silent, it does not break): the broker is fenced only by the session timeout."""
    cluster = slow_session_netns_cluster
    topic = "silent"
    leader = step(cluster, "create_topic", topic, 2)
    followers = [b for b in cluster.broker_ids if b != leader]
    (controller,) = cluster.controller_ids
    topology(cluster).block(leader, controller)
    seen = step(cluster, "watch_session", topic, leader, WATCH_S)
    assert seen == {"fenced": False, "leaders": [leader]}, seen
    # The timeout still fences it, and a follower takes over.
    step(cluster, "wait_leader_seen", topic, followers, [leader])
    topology(cluster).heal_all()
    step(cluster, "wait_isr", topic, cluster.broker_ids)
