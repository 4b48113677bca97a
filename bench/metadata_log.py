"""Metadata log benchmark: append throughput and commit latency with 3 voters in 3 processes.

    .venv/bin/python bench/metadata_log.py [--appends 2000] [--record-bytes 100]

Starts three voters (tests/integration/raft/voter_proc.py) on 127.0.0.1, each with its own
journal directory, waits for a leader, then has the leader's own process run appends back to
back (so the figures contain no benchmark-client round trip): batch size 1 and 100, one
appender thread, and batch size 1 with 8 concurrent appenders. Latency = append() call to
return, i.e. replicated to a majority, fsynced there and applied on the leader. Also prints
how many fdatasyncs the leader's journal did per append (group commit) and the cost of one
4 KiB write + fdatasync in the same directory. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "integration" / "raft"))
from raft_cluster import RaftCluster


def fdatasync_cost_ms(directory: Path, samples: int = 200) -> tuple[float, float]:
    path = directory / "fsync-probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    times = []
    try:
        for _ in range(samples):
            t0 = time.perf_counter()
            os.write(fd, b"x" * 4096)
            os.fdatasync(fd)
            times.append(time.perf_counter() - t0)
    finally:
        os.close(fd)
        path.unlink()
    times.sort()
    return 1000 * times[len(times) // 2], 1000 * times[(len(times) * 99) // 100]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--appends", type=int, default=2000)
    p.add_argument("--record-bytes", type=int, default=100)
    p.add_argument("--election-ms", type=int, default=1000)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="kraftlog-bench-raft-") as tmp:
        base = Path(tmp)
        p50, p99 = fdatasync_cost_ms(base)
        print(f"4 KiB write+fdatasync here: p50 {p50:.3f} ms, p99 {p99:.3f} ms")
        cluster = RaftCluster(base, election_ms=args.election_ms, append_ms=50)
        cluster.start()
        try:
            leader = cluster.voters[cluster.wait_for_leader()]
            leader.request("bench", count=200, batch=1, size=args.record_bytes)  # warm-up
            runs = [
                ("batch=1, 1 appender", args.appends, 1, 1),
                ("batch=100, 1 appender", max(1, args.appends // 10), 100, 1),
                ("batch=1, 8 appenders", args.appends * 2, 1, 8),
            ]
            print(
                f"3 voters, 3 processes, {args.record_bytes}-byte records, "
                f"election timeout {args.election_ms} ms"
            )
            print(
                f"{'run':<24}{'appends':>8}{'records/s':>12}{'appends/s':>11}"
                f"{'p50 ms':>9}{'p99 ms':>9}{'mean ms':>9}{'syncs/append':>14}"
            )
            for name, count, batch, threads in runs:
                r = leader.request(
                    "bench",
                    io_timeout_s=600,
                    count=count,
                    batch=batch,
                    size=args.record_bytes,
                    threads=threads,
                )
                print(
                    f"{name:<24}{r['appends']:>8}{r['records'] / r['elapsed_s']:>12.0f}"
                    f"{r['appends'] / r['elapsed_s']:>11.0f}{r['p50_ms']:>9.2f}"
                    f"{r['p99_ms']:>9.2f}{r['mean_ms']:>9.2f}"
                    f"{r['syncs'] / max(1, r['appends']):>14.2f}"
                )
            st = leader.request("status")
            lags = [v["lag_records"] for v in st["voters"]]
            print(f"committed offset {st['committed']}, voter lags {lags}")
        finally:
            cluster.close()


if __name__ == "__main__":
    main()
