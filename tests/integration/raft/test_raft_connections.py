"""Voter connections: a peer that accepts TCP but never answers (a paused process, or one behind
a partition that began after the handshake) is given up on and retried, not waited on forever."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from raft_cluster import VoterProcess, free_ports

pytestmark = pytest.mark.integration

ELECTION_MS = 300
# pysyncobj's connection timeout is 2 election timeouts; watch for several of them.
WATCH_S = 6 * 2 * ELECTION_MS / 1000
SILENT_PEERS = 2


def test_voter_retries_a_peer_that_never_completes_the_handshake(tmp_path: Path) -> None:
    # pysyncobj connects from the voter with the greater "host:port" string, so the real voter
    # gets the greatest address and the silent peers the others.
    addresses = sorted(f"127.0.0.1:{p}" for p in free_ports(SILENT_PEERS + 1))
    listeners: list[socket.socket] = []
    accepted: list[list[socket.socket]] = [[] for _ in range(SILENT_PEERS)]
    voter = None
    try:
        for address in addresses[:-1]:
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", int(address.rsplit(":", 1)[1])))
            s.listen(16)
            s.settimeout(0.1)
            listeners.append(s)
        voters = ",".join(f"{i + 1}@{a}" for i, a in enumerate(addresses))
        args = [
            "--node-id", str(len(addresses)), "--voters", voters, "--dir", str(tmp_path / "v"),
            "--secret", "test-secret", "--election-ms", str(ELECTION_MS),
        ]  # fmt: skip
        voter = VoterProcess(len(addresses), args, tmp_path / "voter.stderr")
        voter.start()
        deadline = time.monotonic() + WATCH_S
        while time.monotonic() < deadline:
            for i, s in enumerate(listeners):
                try:
                    conn, _ = s.accept()
                except TimeoutError:
                    continue
                accepted[i].append(conn)  # kept open and never answered
        counts = [len(a) for a in accepted]
        # Each attempt is abandoned after one connection timeout (2 election timeouts) and
        # retried; pysyncobj alone kept the first one forever (one connection per peer).
        assert all(c >= 3 for c in counts), counts
        assert voter.running and voter.request("info")["leader_id"] is None
    finally:
        if voter is not None:
            voter.kill()
        for s in listeners:
            s.close()
        for conns in accepted:
            for c in conns:
                c.close()
