"""An isolated or paused active controller cannot commit and steps down (pysyncobj gap (a))."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

import pytest
from raft_cluster import RaftCluster

pytestmark = pytest.mark.integration

ELECTION_MS = 500


def append_in_thread(voter, records: list[str], **fields: Any) -> tuple[threading.Thread, list]:
    box: list[Any] = []

    def run() -> None:
        try:
            box.append(voter.request("append", records=records, io_timeout_s=30.0, **fields))
        except OSError as e:
            box.append({"ok": False, "error": repr(e)})

    t = threading.Thread(target=run)
    t.start()
    return t, box


def poll(predicate, timeout_s: float, interval_s: float = 0.05):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval_s)
    return None


def test_isolated_leader_steps_down_within_two_election_timeouts(raft_cluster) -> None:
    cluster: RaftCluster = raft_cluster(election_ms=ELECTION_MS)
    leader_id = cluster.wait_for_leader()
    leader = cluster.voters[leader_id]
    assert leader.request("append", records=[b"before".hex()])["ok"]
    committed_before = leader.request("info")["committed"]
    followers = [v for i, v in cluster.voters.items() if i != leader_id]

    # Freeze both followers: the leader is cut off from every other voter.
    isolated_at = time.monotonic()
    for f in followers:
        f.signal(signal.SIGSTOP)
    t, box = append_in_thread(leader, [b"while-isolated".hex()], timeout_s=3.0)

    def stepped_down():
        info = leader.request("info")
        downs = [e for e in info["events"] if not e[0]]
        return downs[-1][2] if downs and not info["is_leader"] else None

    stepped_down_at = poll(stepped_down, timeout_s=10.0)
    assert stepped_down_at is not None, "the isolated leader never stepped down"
    took_s = stepped_down_at - isolated_at
    print(f"isolated leader stepped down after {took_s * 1000:.0f} ms")
    assert took_s < 2 * ELECTION_MS / 1000 + 0.5, f"stepped down only after {took_s:.2f} s"

    t.join(30)
    assert box and not box[0]["ok"], f"an isolated leader acknowledged a write: {box}"
    assert box[0]["error"] in ("AppendTimeoutError", "NotLeaderError"), box
    assert leader.request("info")["committed"] == committed_before
    # Still isolated and no longer leader: appends are refused outright.
    r = leader.request("append", records=[b"refused".hex()])
    assert not r["ok"] and r["error"] == "NotLeaderError", r

    for f in followers:
        f.signal(signal.SIGCONT)
    new_leader = cluster.voters[cluster.wait_for_leader()]
    assert new_leader.request("append", records=[b"after-heal".hex()], timeout_s=10.0)["ok"]


def test_paused_leader_is_replaced_and_cannot_commit_with_its_old_epoch(raft_cluster) -> None:
    cluster: RaftCluster = raft_cluster(election_ms=ELECTION_MS)
    old_id = cluster.wait_for_leader()
    old = cluster.voters[old_id]
    old_epoch = old.request("info")["epoch"]
    assert old.request("append", records=[b"e1".hex()], expected_epoch=old_epoch)["ok"]

    old.signal(signal.SIGSTOP)
    others = [i for i in cluster.voters if i != old_id]
    new_id = cluster.wait_for_leader(among=others)
    new = cluster.voters[new_id]
    new_epoch = new.request("info")["epoch"]
    assert new_epoch > old_epoch
    r = new.request("append", records=[b"e2".hex()], expected_epoch=new_epoch)
    assert r["ok"] and r["epoch"] == new_epoch
    # A stale epoch is refused by the new leader too.
    r = new.request("append", records=[b"stale".hex()], expected_epoch=old_epoch)
    assert r["error"] == "StaleEpochError"

    # The request reaches the paused old leader; it runs the moment the process resumes.
    marker = b"from-deposed-leader".hex()
    t, box = append_in_thread(old, [marker], expected_epoch=old_epoch, timeout_s=3.0)
    time.sleep(0.2)
    old.signal(signal.SIGCONT)
    t.join(30)
    assert box and not box[0]["ok"], f"the deposed leader acknowledged a write: {box}"
    assert box[0]["error"] in ("StaleEpochError", "NotLeaderError", "AppendTimeoutError"), box

    def follows_new_leader():
        info = old.request("info")
        return info if info["leader_id"] == new_id and not info["is_leader"] else None

    info = poll(follows_new_leader, timeout_s=10.0)
    assert info is not None, "the old leader did not become a follower of the new one"
    assert info["epoch"] >= new_epoch
    assert any(not is_leader and epoch == old_epoch for is_leader, epoch, _ in info["events"])

    # Its log converges to the new leader's and never holds the deposed leader's batch.
    top = new.request("append", records=[b"e3".hex()])["last"]
    assert old.request("wait", offset=top, timeout_s=10.0)["ok"]
    old_log, new_log = old.read_all(), new.read_all()
    assert old_log == new_log
    assert (marker, False) not in old_log.values()
    assert old.request("info")["leader_info"] == f"voter-{new_id}".encode().hex()
