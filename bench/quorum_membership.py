"""Dynamic quorum benchmark: time to add a controller to a quorum holding many metadata records.

    .venv/bin/python bench/quorum_membership.py [--records 100000] [--record-bytes 100]
                                               [--batch 5] [--max-tail-records 10000]

Starts three voters (tests/integration/raft/voter_proc.py) on 127.0.0.1, has the leader append
``--records`` records of ``--record-bytes`` bytes in batches of ``--batch`` (one Raft entry
each: 20,000 entries by default, so the journal has been compacted into a dump), then starts a
fourth node
outside the voter set and times:

- catch-up: from starting its process until the leader lists it as an observer with lag 0
  (it receives the snapshot and the tail);
- add: the ``add_voter`` call on the leader (the membership entry commits);
- voter: from starting its process until it runs as a voter.

Then removes it again and times that. With the default ``--max-tail-records`` most of the log
is a snapshot by then, which is what a new controller of a long-lived cluster receives.

Last, a host replacement under load: a client appends one record at a time through whichever
voter leads while a follower is killed, a new node joins, is added, and the dead voter is
removed; then the leader is killed. Prints the longest time between two acknowledged appends
in each phase (a stall) and how many appends failed. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "integration" / "raft"))
from raft_cluster import RaftCluster

WAIT_S = 600.0


def wait_for(what: str, cond: Any) -> float:
    start = time.monotonic()
    deadline = start + WAIT_S
    while time.monotonic() < deadline:
        try:
            if cond():
                return time.monotonic() - start
        except OSError:
            pass
        time.sleep(0.02)
    raise TimeoutError(what)


def dump_note(cluster: RaftCluster) -> str:
    dumps = sorted(cluster.base_dir.glob("voter*/raft-dump.bin"))
    if not dumps:
        return "none yet (catches up from the journal)"
    return f"leader-side dumps of {max(d.stat().st_size for d in dumps) / 1e6:.1f} MB"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=100_000)
    p.add_argument("--record-bytes", type=int, default=100)
    p.add_argument("--batch", type=int, default=5, help="records per append (Raft entry)")
    p.add_argument("--max-tail-records", type=int, default=10_000)
    p.add_argument("--election-ms", type=int, default=1000)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="kraftlog-bench-quorum-") as tmp:
        cluster = RaftCluster(
            Path(tmp),
            election_ms=args.election_ms,
            append_ms=50,
            max_tail_records=args.max_tail_records,
        )
        cluster.start()
        try:
            leader = cluster.voters[cluster.wait_for_leader()]
            t0 = time.monotonic()
            result = leader.request(
                "bench",
                count=max(1, args.records // args.batch),
                batch=args.batch,
                size=args.record_bytes,
                io_timeout_s=WAIT_S,
            )
            fill_s = time.monotonic() - t0
            committed = leader.request("info")["committed"]
            print(
                f"quorum of 3 holds {committed + 1} records ({result['records']} appended in "
                f"{result['appends']} Raft entries in {fill_s:.1f} s), tail bound "
                f"{args.max_tail_records}; the new node's dump: {dump_note(cluster)}"
            )
            started = time.monotonic()
            joining = cluster.add_process(4)

            def caught_up() -> bool:
                status = leader.request("status")
                return any(o["node_id"] == 4 and o["lag_records"] == 0 for o in status["observers"])

            wait_for("observer caught up", caught_up)
            catch_up_s = time.monotonic() - started
            address = f"127.0.0.1:{cluster.raft_ports[4]}"
            t_add = time.monotonic()
            answer = leader.request("add_voter", node_id=4, address=address, timeout_s=30.0)
            add_s = time.monotonic() - t_add
            if not answer["ok"]:
                raise SystemExit(f"add_voter failed: {answer}")
            wait_for("node 4 a voter", lambda: joining.request("status")["is_voter"])
            voter_s = time.monotonic() - started
            t_rem = time.monotonic()
            removed = leader.request("remove_voter", node_id=4, timeout_s=30.0)
            remove_s = time.monotonic() - t_rem
            print(f"catch-up as observer (process start to lag 0): {catch_up_s:.2f} s")
            print(f"add_voter call (membership entry committed):    {add_s * 1000:.1f} ms")
            print(f"process start to running as a voter:          {voter_s:.2f} s")
            print(
                f"remove_voter call:                             {remove_s * 1000:.1f} ms "
                f"({'ok' if removed['ok'] else removed})"
            )
            replace_under_load(cluster)
        finally:
            cluster.close()


class Appender:
    """Appends one record at a time through the leader; records when each was acknowledged."""

    def __init__(self, cluster: RaftCluster) -> None:
        self.cluster = cluster
        self.acks: list[float] = []
        self.failures = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        deadline = time.monotonic() + WAIT_S
        n = 0
        while not self.stop.is_set() and time.monotonic() < deadline:
            n += 1
            answer = self.cluster.leader_request("append", records=[f"r{n}".encode().hex()])
            if answer["ok"]:
                self.acks.append(time.monotonic())
            else:
                self.failures += 1

    def longest_gap_s(self, start: float, end: float) -> float:
        times = [start, *(t for t in self.acks if start <= t <= end), end]
        return max(b - a for a, b in itertools.pairwise(times))


def replace_under_load(cluster: RaftCluster) -> None:
    leader_id = cluster.wait_for_leader()
    dead = next(i for i in (1, 2, 3) if i != leader_id)
    appender = Appender(cluster)
    try:
        time.sleep(1.0)
        phases = []
        t = time.monotonic()
        cluster.voters[dead].kill()
        joining = cluster.add_process(5)
        address = f"127.0.0.1:{cluster.raft_ports[5]}"
        added = cluster.leader_request(
            "add_voter", node_id=5, address=address, retry_reasons=("not_caught_up",)
        )
        wait_for("node 5 a voter", lambda: joining.request("status")["is_voter"])
        phases.append(("kill a follower, add a new voter", t, time.monotonic(), added["ok"]))
        t = time.monotonic()
        removed = cluster.leader_request("remove_voter", node_id=dead)
        phases.append(("remove the dead voter", t, time.monotonic(), removed["ok"]))
        time.sleep(1.0)
        t = time.monotonic()
        cluster.voters[cluster.wait_for_leader()].kill()
        before = len(appender.acks)
        wait_for("appends after failover", lambda: len(appender.acks) >= before + 20)
        phases.append(("kill the new quorum's leader", t, time.monotonic(), True))
    finally:
        appender.stop.set()
        appender.thread.join(WAIT_S)
    print(f"host replacement under load ({len(appender.acks)} appends acknowledged, "
          f"{appender.failures} failed):")  # fmt: skip
    for name, start, end, ok in phases:
        print(
            f"  {name:<34} {end - start:6.2f} s, longest stall "
            f"{appender.longest_gap_s(start, end) * 1000:7.1f} ms{'' if ok else ' (FAILED)'}"
        )


if __name__ == "__main__":
    main()
