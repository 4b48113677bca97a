"""An isolated or paused active controller cannot commit and steps down."""

from __future__ import annotations

import signal

import pytest

from deploy.local_cluster import LocalCluster, wait_until
from metadata.client import ControllerError
from metadata.messages import NewTopic

pytestmark = pytest.mark.integration


def leader_seen_by(cluster: LocalCluster, voter: int) -> int | None:
    with cluster.client(2) as client:
        status = client.quorum_status(address=cluster.controller_address(voter))
    return status["leader_id"]


def test_isolated_active_controller_cannot_commit_and_steps_down(cluster: LocalCluster) -> None:
    leader = cluster.active_controller_id()
    followers = [i for i in cluster.controller_ids if i != leader]
    # Freezing both followers cuts the leader off from every majority.
    for f in followers:
        cluster.kill(f, signal.SIGSTOP)
    try:
        with cluster.client(3, controllers=[leader]) as client, pytest.raises(ControllerError):
            client.create_topics([NewTopic("isolated", 1, 1)], timeout_s=3)
        # controller.quorum.election.timeout.ms (500 ms here) without a majority: it steps down.
        wait_until(
            lambda: leader_seen_by(cluster, leader) != leader,
            15,
            "the isolated leader to step down",
        )
    finally:
        for f in followers:
            cluster.kill(f, signal.SIGCONT)
    wait_until(lambda: cluster.active_controller_id(), 30, "an active controller after healing")
    with cluster.client(15) as client:
        (result,) = client.create_topics([NewTopic("healed", 1, 3)])
    assert result.error_code == 0, result


def test_paused_active_controller_is_replaced_and_steps_down_on_resume(
    cluster: LocalCluster,
) -> None:
    old = cluster.active_controller_id()
    others = [i for i in cluster.controller_ids if i != old]
    cluster.kill(old, signal.SIGSTOP)
    try:
        with cluster.client(15, controllers=others) as client:
            (result,) = client.create_topics([NewTopic("while-paused", 1, 3)])
        assert result.error_code == 0, result

        def new_leader() -> int | None:
            leader = leader_seen_by(cluster, others[0])
            return leader if leader not in (None, old) else None

        new = wait_until(new_leader, 15, "a new leader")
    finally:
        cluster.kill(old, signal.SIGCONT)
    # Back from the pause, the old leader learns the newer epoch and follows.
    wait_until(lambda: leader_seen_by(cluster, old) == new, 15, f"voter {old} to follow {new}")
    with cluster.client(5, controllers=[old]) as client:
        # It redirects to the active controller rather than acting itself.
        assert client.describe_cluster().controller_id == new
