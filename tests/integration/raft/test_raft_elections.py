"""Elections: failover in one term over idle connections, no disruption by a paused or restarted
follower (pre-vote), and a voter whose term ran ahead still rejoins (stale-term answers)."""

from __future__ import annotations

import json
import signal
import time

import pytest
from raft_cluster import RaftCluster

pytestmark = pytest.mark.integration

# 1 s, kraftlog's default. At 500 ms a loaded 2-core CI machine sometimes delayed the one
# remaining follower's answers past the leader's fallback timeout (= election timeout) while the
# other follower was paused, so the leader stepped down on its own: that is check-quorum working,
# not the disruption these tests look for.
ELECTION_MS = 1000
# pysyncobj's connection timeout is 2 election timeouts; waiting longer than that makes the
# follower-to-follower connection idle for longer than it (the condition under which pysyncobj
# dropped the first RequestVote of every failover).
IDLE_S = 2.5 * 2 * ELECTION_MS / 1000
PAUSE_S = 3 * ELECTION_MS / 1000
FAILOVER_TRIALS = 2
REJOIN_TRIALS = 3
# Trials allowed for REJOIN_TRIALS undisturbed ones (see undisturbed_rejoins).
MAX_REJOIN_TRIALS = 6


def poll(predicate, timeout_s: float, interval_s: float = 0.05):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval_s)
    return None


def info(cluster: RaftCluster, node_id: int) -> dict:
    return cluster.voters[node_id].request("info")


def caught_up_with(cluster: RaftCluster, node_id: int, leader_id: int) -> bool:
    """The voter follows ``leader_id`` and holds everything the leader had committed."""
    want = info(cluster, leader_id)["committed"]
    mine = info(cluster, node_id)
    return mine["leader_id"] == leader_id and mine["committed"] >= want


def test_failover_after_idle_follower_connections_takes_one_term(raft_cluster) -> None:
    cluster: RaftCluster = raft_cluster(election_ms=ELECTION_MS)
    terms_used = []
    for trial in range(FAILOVER_TRIALS):
        old = cluster.wait_for_leader()
        assert cluster.voters[old].request("append", records=[f"t{trial}".encode().hex()])["ok"]
        time.sleep(IDLE_S)  # the precondition: no follower-to-follower traffic for IDLE_S
        epoch_before = info(cluster, old)["epoch"]
        cluster.voters[old].kill()
        survivors = [i for i in cluster.voters if i != old]
        new = cluster.wait_for_leader(timeout_s=20.0, among=survivors)
        terms_used.append(info(cluster, new)["epoch"] - epoch_before)
        cluster.voters[old].start()
        assert poll(lambda o=old, n=new: caught_up_with(cluster, o, n), 20.0)
    # Before the fix every failover needed 2 terms (the first RequestVote to the other
    # follower was dropped). A split vote can still cost a term now and then, so one of the
    # trials must have taken exactly one term.
    assert min(terms_used) == 1, terms_used


def undisturbed_rejoins(cluster: RaftCluster, disturb) -> int:
    """Run up to ``MAX_REJOIN_TRIALS`` trials of ``disturb(follower)`` (which takes a follower
    away and brings it back) until ``REJOIN_TRIALS`` of them left the leader and its epoch
    in place; returns how many did.

    Without pre-vote every trial deposes the leader (the returning follower's election timer
    has fired, so it starts an election at a higher term at once). With it, a trial can still
    see a new election when the 2-core CI machine delays the *other* follower's heartbeats past
    its leader lease, or the leader's past check-quorum: that is Raft working under load, not
    the disruption looked for, so a disturbed trial re-baselines and the next one runs.
    """
    undisturbed = 0
    for _trial in range(MAX_REJOIN_TRIALS):
        leader = cluster.wait_for_leader(timeout_s=20.0)
        epoch = info(cluster, leader)["epoch"]
        follower = next(i for i in cluster.voters if i != leader)
        disturb(leader, follower)
        assert poll(lambda f=follower, ld=leader: caught_up_with(cluster, f, ld), 20.0)
        now = info(cluster, leader)
        if now["is_leader"] and now["epoch"] == epoch and info(cluster, follower)["epoch"] == epoch:
            undisturbed += 1
            if undisturbed == REJOIN_TRIALS:
                break
    return undisturbed


def test_paused_follower_does_not_depose_the_leader(raft_cluster) -> None:
    cluster: RaftCluster = raft_cluster(election_ms=ELECTION_MS)
    appended = 0

    def pause(leader: int, follower: int) -> None:
        nonlocal appended
        # Paused for several election timeouts, the follower's election timer has fired when
        # it resumes: without pre-vote it would start an election at a higher term right away.
        cluster.voters[follower].signal(signal.SIGSTOP)
        try:
            time.sleep(PAUSE_S)
            appended += 1
            record = f"p{appended}".encode().hex()
            assert cluster.voters[leader].request("append", records=[record])["ok"]
        finally:
            cluster.voters[follower].signal(signal.SIGCONT)

    assert undisturbed_rejoins(cluster, pause) == REJOIN_TRIALS


def test_restarted_follower_does_not_depose_the_leader(raft_cluster) -> None:
    cluster: RaftCluster = raft_cluster(election_ms=ELECTION_MS)
    appended = 0

    def restart(leader: int, follower: int) -> None:
        nonlocal appended
        cluster.voters[follower].kill()
        appended += 1
        assert cluster.voters[leader].request("append", records=[f"r{appended}".encode().hex()])[
            "ok"
        ]
        cluster.voters[follower].start()
        assert poll(lambda: caught_up_with(cluster, follower, leader), 20.0)
        # A full randomised election timeout after the restart, the leader is still in place.
        time.sleep(2 * ELECTION_MS / 1000)

    assert undisturbed_rejoins(cluster, restart) == REJOIN_TRIALS


def test_voter_whose_term_ran_ahead_rejoins(raft_cluster) -> None:
    cluster: RaftCluster = raft_cluster(election_ms=ELECTION_MS)
    leader = cluster.wait_for_leader()
    epoch = info(cluster, leader)["epoch"]
    follower = next(i for i in cluster.voters if i != leader)
    cluster.voters[follower].stop()
    # As if it had run elections while cut off: its stored term is far ahead of the leader's.
    # It ignores AppendEntries of the older term and the others refuse its pre-votes while
    # their leader lives, so only its answer to the leader's AppendEntries brings it back.
    meta_path = cluster.base_dir / f"voter{follower}" / "raft-meta.json"
    meta = json.loads(meta_path.read_text())
    meta["current_term"] = epoch + 50
    meta["voted_for"] = None
    meta_path.write_text(json.dumps(meta))
    cluster.voters[follower].start()

    def rejoined() -> bool:
        new = cluster.wait_for_leader(timeout_s=20.0)
        r = cluster.voters[new].request("append", records=[b"after".hex()])
        return r["ok"] and poll(lambda: caught_up_with(cluster, follower, new), 5.0)

    assert poll(rejoined, 60.0, interval_s=0.2)
    assert info(cluster, follower)["epoch"] > epoch + 50
