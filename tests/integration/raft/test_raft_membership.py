"""Dynamic controller quorum on real voter processes: a controller joins as an observer and
becomes a voter, a dead voter is replaced, the leader removes itself by handing over, a removed
voter keeps following as an observer; with appends in flight, nothing acknowledged is lost and
the voter set survives restarts."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from raft_cluster import RaftCluster

pytestmark = pytest.mark.integration

WAIT_S = 60.0
WRITER_MAX_APPENDS = 5000
WRITER_MAX_S = 120.0


def wait_until(cond: Callable[[], Any], what: str, timeout_s: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            value = cond()
        except (OSError, KeyError):
            value = None
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


class Writer:
    """Appends numbered records through whichever voter leads, until stopped; remembers the
    ones acknowledged."""

    def __init__(self, cluster: RaftCluster) -> None:
        self.cluster = cluster
        self.acked: set[str] = set()
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        deadline = time.monotonic() + WRITER_MAX_S
        for n in range(WRITER_MAX_APPENDS):
            if self._stop.is_set() or time.monotonic() > deadline:
                return
            record = f"w{n:06d}".encode().hex()
            r = self.cluster.leader_request("append", records=[record], timeout_s=15.0)
            if r["ok"]:
                self.acked.add(record)
            else:
                self.failures += 1
            time.sleep(0.01)

    def count(self) -> int:
        return len(self.acked)

    @contextmanager
    def running(self) -> Iterator[Writer]:
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join(WRITER_MAX_S)


def voter_ids(status: dict[str, Any]) -> set[int]:
    return {v["node_id"] for v in status["voters"]}


def leader_status(cluster: RaftCluster) -> dict[str, Any]:
    return cluster.voters[cluster.wait_for_leader()].request("status")


def add_voter(cluster: RaftCluster, node_id: int) -> dict[str, Any]:
    address = f"127.0.0.1:{cluster.raft_ports[node_id]}"
    return cluster.leader_request(
        "add_voter",
        node_id=node_id,
        address=address,
        retry_reasons=("not_caught_up", "change_pending"),
        timeout_s=WAIT_S,
    )


def assert_holds(cluster: RaftCluster, node_id: int, acked: set[str]) -> None:
    records = {
        record for record, control in cluster.voters[node_id].read_all().values() if not control
    }
    missing = acked - records
    assert not missing, f"voter {node_id} lacks {len(missing)} acknowledged records"


@pytest.mark.parametrize("max_tail_records", [10000, 40], ids=["journal", "dump"])
def test_a_controller_joins_as_an_observer_then_becomes_a_voter(
    raft_cluster: Callable[..., RaftCluster], max_tail_records: int
) -> None:
    # With 40 the leader has compacted its journal into a dump well before node 4 starts, so
    # node 4 catches up from the dump (and the voter set it holds).
    cluster = raft_cluster(size=3, max_tail_records=max_tail_records)
    cluster.wait_for_leader()
    with Writer(cluster).running() as writer:
        wait_until(lambda: writer.count() >= 200, "first appends")
        joining = cluster.add_process(4)
        wait_until(
            lambda: any(
                o["node_id"] == 4 and o["lag_records"] is not None
                for o in leader_status(cluster)["observers"]
            ),
            "node 4 listed with its lag as an observer by the leader",
        )
        assert joining.request("status")["is_voter"] is False
        answer = add_voter(cluster, 4)
        assert answer["ok"], answer
        assert set(answer["voters"]) == {"1", "2", "3", "4"}
        wait_until(lambda: joining.request("status")["is_voter"], "node 4 running as a voter")
        wait_until(lambda: voter_ids(leader_status(cluster)) == {1, 2, 3, 4}, "four voters")
        before = writer.count()
        wait_until(lambda: writer.count() >= before + 20, "appends after the change")
    assert writer.count() > 0
    wait_until(lambda: joining.request("info")["committed"] >= 0, "node 4 applied")
    leader = cluster.wait_for_leader()
    committed = cluster.voters[leader].request("info")["committed"]
    wait_until(
        lambda: joining.request("wait", offset=committed, timeout_s=1.0)["ok"], "node 4 caught up"
    )
    assert_holds(cluster, 4, writer.acked)
    # A second add of the same voter is refused as a duplicate.
    again = add_voter(cluster, 4)
    assert not again["ok"] and again["reason"] == "duplicate_voter"


def test_a_dead_controller_is_replaced_and_the_voter_set_survives_restarts(
    raft_cluster: Callable[..., RaftCluster],
) -> None:
    cluster = raft_cluster(size=3)
    leader = cluster.wait_for_leader()
    victim = next(i for i in (1, 2, 3) if i != leader)
    with Writer(cluster).running() as writer:
        wait_until(lambda: writer.count() >= 20, "first appends")
        cluster.voters[victim].kill()
        cluster.add_process(4)
        assert add_voter(cluster, 4)["ok"]
        removed = cluster.leader_request(
            "remove_voter", node_id=victim, retry_reasons=("change_pending",), timeout_s=WAIT_S
        )
        assert removed["ok"], removed
        assert {int(i) for i in removed["voters"]} == {1, 2, 3, 4} - {victim}
        before = writer.count()
        wait_until(lambda: writer.count() >= before + 20, "appends after the replacement")
        # With the dead voter gone, two of the three voters are a majority again: kill the
        # leader and a new one is elected among the rest.
        old_leader = cluster.wait_for_leader()
        cluster.voters[old_leader].kill()
        survivors = [i for i in (1, 2, 3, 4) if i not in (victim, old_leader)]
        cluster.wait_for_leader(timeout_s=WAIT_S, among=survivors)
        before = writer.count()
        wait_until(lambda: writer.count() >= before + 20, "appends after the leader died")
        cluster.voters[old_leader].start()
    remaining = {1, 2, 3, 4} - {victim}
    wait_until(lambda: voter_ids(leader_status(cluster)) == remaining, "the new voter set")
    for node_id in sorted(remaining):
        cluster.voters[node_id].stop()
        cluster.voters[node_id].start()
        assert voter_ids(cluster.voters[node_id].request("status")) == remaining
    leader = cluster.wait_for_leader(timeout_s=WAIT_S)
    committed = cluster.voters[leader].request("info")["committed"]
    for node_id in sorted(remaining):
        node = cluster.voters[node_id]
        wait_until(lambda n=node: n.request("wait", offset=committed, timeout_s=1.0)["ok"], "sync")
        assert_holds(cluster, node_id, writer.acked)


def test_the_leader_hands_over_before_it_is_removed_and_then_observes(
    raft_cluster: Callable[..., RaftCluster],
) -> None:
    cluster = raft_cluster(size=3)
    leader = cluster.wait_for_leader()
    # Asked on the leader itself: it hands leadership over and says so.
    first = cluster.voters[leader].request("remove_voter", node_id=leader)
    assert not first["ok"] and first["error"] == "NotLeaderError"
    answer = cluster.leader_request(
        "remove_voter", node_id=leader, retry_reasons=("change_pending",), timeout_s=WAIT_S
    )
    assert answer["ok"], answer
    removed = cluster.voters[leader]
    wait_until(lambda: not removed.request("status")["is_voter"], "the removed voter observes")
    new_leader = cluster.wait_for_leader(among=[i for i in (1, 2, 3) if i != leader])
    assert cluster.voters[new_leader].request("append", records=[b"after".hex()])["ok"]
    committed = cluster.voters[new_leader].request("info")["committed"]
    # It still follows the log as an observer, and never stands for election.
    wait_until(lambda: removed.request("info")["committed"] >= committed, "the observer follows")
    assert removed.request("info")["is_leader"] is False
    # The last voters cannot all go: removing down to one is allowed, to zero is not.
    other = next(i for i in (1, 2, 3) if i not in (leader, new_leader))
    assert cluster.leader_request(
        "remove_voter", node_id=other, retry_reasons=("change_pending",), timeout_s=WAIT_S
    )["ok"]
    last = cluster.leader_request("remove_voter", node_id=new_leader, timeout_s=WAIT_S)
    assert not last["ok"] and last["reason"] == "last_voter"
    assert cluster.voters[new_leader].request("append", records=[b"alone".hex()])["ok"]


def test_a_paused_voter_stays_a_voter_after_it_resumes(
    raft_cluster: Callable[..., RaftCluster],
) -> None:
    """The silence of a stopped process is its own: on resume it does not take itself for a
    removed voter (it would observe for a while instead of voting)."""
    cluster = raft_cluster(size=3)
    leader = cluster.wait_for_leader()
    follower = next(i for i in (1, 2, 3) if i != leader)
    paused = cluster.voters[follower]
    paused.signal(signal.SIGSTOP)
    time.sleep(cluster.election_ms / 1000 * 12)  # past the probe threshold of 10 timeouts
    paused.signal(signal.SIGCONT)
    assert cluster.leader_request("append", records=[b"after".hex()])["ok"]
    committed = cluster.voters[cluster.wait_for_leader()].request("info")["committed"]
    wait_until(lambda: paused.request("info")["committed"] >= committed, "the voter caught up")
    assert paused.request("status")["is_voter"]
    assert "observing to learn" not in paused.log_path.read_text()
