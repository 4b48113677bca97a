"""One metadata-log voter in its own process, driven by tests and bench/metadata_log.py.

Usage::

    python voter_proc.py --node-id 1 --voters 1@127.0.0.1:p1,... --dir D --secret S
                         [--election-ms 500] [--append-ms 50] [--max-tail-records 10000]
                         [--raft-address host:port]  (a controller joining as an observer)

Starts a ``MetadataLog``, then serves a control socket on 127.0.0.1 (ephemeral port) and
prints ``READY <port>`` on stdout. Each control connection carries one JSON request line and
gets one JSON response line; requests run on their own threads, so a blocked append does not
block ``status``. Operations: append, read, status, info, wait, snapshot, add_voter,
remove_voter, bench. Records travel as hex strings. SIGTERM closes the log cleanly; tests
also SIGKILL/SIGSTOP the process.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import socketserver
import statistics
import struct
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from raft.api import (
    LogEntry,
    MembershipChangeError,
    MetadataLogError,
    NotLeaderError,
    Snapshot,
    SnapshotRequired,
    VoterStatus,
)
from raft.config import RaftConfig
from raft.metadata_log import MetadataLog

MAX_REQUEST_BYTES = 64 * 1024 * 1024


_FOLDED = struct.Struct("<qq?I")


def keep_all_builder(previous: Snapshot | None, entries: Sequence[LogEntry]) -> bytes:
    """Deterministic builder that keeps every folded entry, so tests can check folded offsets:
    the previous data followed by (offset i64, epoch i64, is_control bool, length u32, record)
    per entry."""
    parts = [previous.data if previous else b""]
    for e in entries:
        parts.append(_FOLDED.pack(e.offset, e.epoch, e.is_control, len(e.record)) + e.record)
    return b"".join(parts)


def decode_keep_all(data: bytes) -> list[LogEntry]:
    out = []
    pos = 0
    while pos < len(data):
        offset, epoch, control, length = _FOLDED.unpack_from(data, pos)
        pos += _FOLDED.size
        out.append(LogEntry(offset, epoch, data[pos : pos + length], control))
        pos += length
    return out


def entry_json(e: LogEntry) -> list[Any]:
    return [e.offset, e.epoch, e.record.hex(), e.is_control]


def _replica_json(v: VoterStatus) -> dict[str, Any]:
    return {
        "node_id": v.node_id,
        "address": v.address,
        "connected": v.connected,
        "is_leader": v.is_leader,
        "match_offset": v.match_offset,
        "lag_records": v.lag_records,
    }


class Voter:
    def __init__(self, log: MetadataLog) -> None:
        self.log = log
        self.events: list[list[Any]] = []
        self.events_lock = threading.Lock()
        log.add_leadership_listener(self._on_leadership)

    def _on_leadership(self, is_leader: bool, epoch: int) -> None:
        with self.events_lock:
            self.events.append([is_leader, epoch, time.monotonic()])

    def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        op = req.get("op")
        log = self.log
        try:
            if op == "append":
                r = log.append(
                    [bytes.fromhex(h) for h in req["records"]],
                    expected_epoch=req.get("expected_epoch"),
                    timeout_s=float(req.get("timeout_s", 5.0)),
                )
                return {"ok": True, "base": r.base_offset, "last": r.last_offset, "epoch": r.epoch}
            if op == "read":
                entries = log.read(int(req["from"]), int(req.get("max", 1000)))
                return {"ok": True, "entries": [entry_json(e) for e in entries]}
            if op == "snapshot":
                snap = log.latest_snapshot()
                if snap is None:
                    return {"ok": True, "snapshot": None}
                folded = [entry_json(e) for e in decode_keep_all(snap.data)]
                return {"ok": True, "snapshot": [snap.last_offset, snap.epoch], "entries": folded}
            if op == "wait":
                return {"ok": log.wait_for_offset(int(req["offset"]), float(req["timeout_s"]))}
            if op == "info":
                info = log.leader_info()
                with self.events_lock:
                    events = list(self.events)
                return {
                    "ok": True,
                    "node_id": log.node_id,
                    "is_leader": log.is_leader,
                    "leader_id": log.leader_id,
                    "epoch": log.epoch,
                    "committed": log.committed_offset,
                    "leader_info": None if info is None else info.hex(),
                    "events": events,
                    "now": time.monotonic(),
                }
            if op == "status":
                st = log.status()
                return {
                    "ok": True,
                    "leader_id": st.leader_id,
                    "epoch": st.epoch,
                    "committed": st.committed_offset,
                    "is_voter": log.is_voter,
                    "voters": [_replica_json(v) for v in st.voters],
                    "observers": [_replica_json(v) for v in st.observers],
                }
            if op == "add_voter":
                voters = log.add_voter(
                    int(req["node_id"]), str(req["address"]), float(req.get("timeout_s", 10.0))
                )
                return {"ok": True, "voters": {str(i): a for i, a in voters.items()}}
            if op == "remove_voter":
                voters = log.remove_voter(int(req["node_id"]), float(req.get("timeout_s", 10.0)))
                return {"ok": True, "voters": {str(i): a for i, a in voters.items()}}
            if op == "bench":
                return self._bench(
                    int(req["count"]),
                    int(req["batch"]),
                    int(req["size"]),
                    int(req.get("threads", 1)),
                )
            return {"ok": False, "error": "BadRequest", "message": f"unknown op {op!r}"}
        except NotLeaderError as e:
            return {"ok": False, "error": "NotLeaderError", "leader_id": e.leader_id}
        except MembershipChangeError as e:
            return {"ok": False, "error": "MembershipChangeError", "reason": e.reason,
                    "message": str(e)}  # fmt: skip
        except (MetadataLogError, SnapshotRequired) as e:
            return {"ok": False, "error": type(e).__name__, "message": str(e)}

    def _bench(self, count: int, batch: int, size: int, threads: int) -> dict[str, Any]:
        record = b"m" * size
        latencies: list[float] = []
        lock = threading.Lock()
        per_thread = count // threads

        def worker() -> None:
            mine = []
            for _ in range(per_thread):
                t0 = time.perf_counter()
                self.log.append([record] * batch)
                mine.append(time.perf_counter() - t0)
            with lock:
                latencies.extend(mine)

        workers = [threading.Thread(target=worker) for _ in range(threads)]
        syncs_before = self.log.journal_sync_count
        start = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        elapsed = time.perf_counter() - start
        latencies.sort()
        n = len(latencies)
        return {
            "ok": True,
            "appends": n,
            "records": n * batch,
            "elapsed_s": elapsed,
            "p50_ms": 1000 * latencies[n // 2],
            "p99_ms": 1000 * latencies[min(n - 1, (n * 99) // 100)],
            "mean_ms": 1000 * statistics.fmean(latencies),
            "syncs": self.log.journal_sync_count - syncs_before,
        }


def serve(voter: Voter) -> socketserver.ThreadingTCPServer:
    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            line = self.rfile.readline(MAX_REQUEST_BYTES)
            try:
                response = voter.handle(json.loads(line))
            except Exception as e:  # a broken request must not kill the voter
                response = {"ok": False, "error": type(e).__name__, "message": str(e)}
            self.wfile.write(json.dumps(response).encode() + b"\n")

    socketserver.ThreadingTCPServer.daemon_threads = True
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--node-id", type=int, required=True)
    p.add_argument("--voters", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--secret", required=True)
    p.add_argument("--election-ms", type=int, default=500)
    p.add_argument("--append-ms", type=int, default=50)
    p.add_argument("--max-tail-records", type=int, default=10000)
    p.add_argument("--raft-address", default="", help="own Raft address when not in --voters")
    args = p.parse_args(argv)
    logging.basicConfig(
        level=os.environ.get("KRAFTLOG_VOTER_LOG_LEVEL", "WARNING"),
        stream=sys.stderr,
        format="%(asctime)s voter %(process)d %(levelname)s %(name)s: %(message)s",
    )
    config = RaftConfig(
        node_id=args.node_id,
        quorum_voters=args.voters,
        metadata_log_dir=args.dir,
        quorum_secret=args.secret,
        election_timeout_ms=args.election_ms,
        append_interval_ms=args.append_ms,
        max_tail_records=args.max_tail_records,
        raft_address=args.raft_address,
    )
    log = MetadataLog(config, keep_all_builder)
    log.set_leader_info(f"voter-{args.node_id}".encode())
    voter = Voter(log)
    log.start()
    server = serve(voter)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"READY {server.server_address[1]}", flush=True)
    while not stop.wait(0.5):
        pass
    server.shutdown()
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
