"""kill -9 of every voter in the middle of a stream of appends loses no acknowledged write."""

from __future__ import annotations

import signal
import threading
import time

import pytest
from raft_cluster import RaftCluster

pytestmark = pytest.mark.integration


def test_kill9_all_voters_mid_stream_loses_no_acknowledged_write(raft_cluster) -> None:
    # A small tail makes the voters fold snapshots, dump and compact their journals mid-stream.
    cluster: RaftCluster = raft_cluster(election_ms=500, max_tail_records=64)
    leader_id = cluster.wait_for_leader()
    acked: dict[int, str] = {}  # offset -> record (hex) acknowledged to the writer
    stop = threading.Event()

    def writer() -> None:
        leader = cluster.voters[leader_id]
        i = 0
        while not stop.is_set() and i < 100_000:
            records = [f"w{i}-{k}".encode().hex() for k in range(3)]
            i += 1
            try:
                r = leader.request("append", records=records, timeout_s=2.0, io_timeout_s=3.0)
            except OSError:
                return  # the leader was killed mid-request: that write's outcome is unknown
            if r["ok"]:
                for k, rec in enumerate(records):
                    acked[r["base"] + k] = rec

    t = threading.Thread(target=writer)
    t.start()
    deadline = time.monotonic() + 20
    while len(acked) < 600 and time.monotonic() < deadline and t.is_alive():
        time.sleep(0.05)
    # All voters die at (nearly) the same moment while appends are in flight.
    for v in cluster.voters.values():
        v.signal(signal.SIGKILL)
    for v in cluster.voters.values():
        v.kill()
    stop.set()
    t.join(10)
    assert len(acked) >= 600, "the writer made too little progress to test anything"

    for v in cluster.voters.values():
        v.start()
    new_leader = cluster.voters[cluster.wait_for_leader()]
    top = max(acked)
    for v in cluster.voters.values():
        assert v.request("wait", offset=top, timeout_s=15.0)["ok"], f"voter {v.node_id} behind"
        log = v.read_all()
        assert sorted(log) == list(range(len(log))), "offsets are not contiguous from 0"
        lost = [o for o, rec in acked.items() if log.get(o) != (rec, False)]
        assert not lost, f"voter {v.node_id} lost acknowledged offsets {lost[:10]}"
    # The new leader committed a leader-change (control) record after the old entries.
    info = new_leader.request("info")
    assert info["committed"] > top
