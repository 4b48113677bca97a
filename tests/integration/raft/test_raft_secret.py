"""Wrong cluster secret and garbage on the Raft port: clean rejection, nothing crashes (gap (b))."""

from __future__ import annotations

import os
import pickle
import socket
import struct
import time
import zlib

import pytest
from raft_cluster import RaftCluster

pytestmark = pytest.mark.integration


def closed_by_peer(sock: socket.socket, timeout_s: float) -> bool:
    """True once the voter closed the connection (EOF or reset) within ``timeout_s``."""
    sock.settimeout(0.2)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if sock.recv(65536) == b"":
                return True
        except TimeoutError:
            continue
        except ConnectionResetError:
            return True
    return False


class Boom:
    """Unpickling this would create a file: proof that a frame was unpickled."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_garbage_and_unauthenticated_frames_are_rejected(raft_cluster, tmp_path) -> None:
    cluster: RaftCluster = raft_cluster()
    leader_id = cluster.wait_for_leader()
    target_port = cluster.raft_ports[leader_id]
    canary = tmp_path / "unpickled"
    # An unencrypted pysyncobj frame (what a voter without a secret would accept and unpickle).
    evil = zlib.compress(pickle.dumps(Boom(str(canary)), protocol=2), 3)
    frames = [
        os.urandom(4096),
        struct.pack("i", len(evil)) + evil,
        struct.pack("i", 2**31 - 1) + b"x" * 1024,  # a 2 GiB frame announced
        struct.pack("i", -5) + b"garbage",
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + b"\0" * 64,
    ]
    for frame in frames:
        with socket.create_connection(("127.0.0.1", target_port), timeout=5) as s:
            s.sendall(frame)
            assert closed_by_peer(s, timeout_s=5.0), f"voter kept a connection after {frame[:16]!r}"
    assert not canary.exists(), "a frame from a peer without the secret was unpickled"
    for v in cluster.voters.values():
        assert v.running, f"voter {v.node_id} died"
    leader = cluster.voters[cluster.wait_for_leader()]
    assert leader.request("append", records=[b"still-fine".hex()], timeout_s=10.0)["ok"]


def test_voter_with_wrong_secret_cannot_join_or_disturb(raft_cluster) -> None:
    # A long election timeout: the check below that no election happens must not trip over a
    # scheduling stall on a loaded machine.
    cluster: RaftCluster = raft_cluster(election_ms=1000)
    cluster.wait_for_leader()
    intruder = cluster.voters[3]
    intruder.kill()
    good = [cluster.voters[1], cluster.voters[2]]
    leader = cluster.voters[cluster.wait_for_leader(among=[1, 2])]
    epoch = leader.request("info")["epoch"]

    secret_pos = intruder.args.index("--secret") + 1
    intruder.args[secret_pos] = "not-the-secret"
    intruder.start()
    before = leader.request("info")["committed"]
    for i in range(20):
        assert leader.request("append", records=[f"r{i}".encode().hex()], timeout_s=10.0)["ok"]
    time.sleep(3 * cluster.election_ms / 1000)  # room for the intruder's election attempts
    info = intruder.request("info")
    assert intruder.running
    assert not info["is_leader"] and info["committed"] < before + 20
    assert all(v.request("info")["epoch"] == epoch for v in good), "the intruder forced elections"
    status = leader.request("status")
    intruder_row = next(r for r in status["voters"] if r["node_id"] == 3)
    # The leader still remembers what voter 3 acknowledged before it was replaced.
    assert intruder_row["lag_records"] is None or intruder_row["lag_records"] >= 20

    # With the right secret it joins and catches up.
    intruder.kill()
    intruder.args[secret_pos] = "test-secret"
    intruder.start()
    top = leader.request("append", records=[b"last".hex()], timeout_s=10.0)["last"]
    assert intruder.request("wait", offset=top, timeout_s=15.0)["ok"]
