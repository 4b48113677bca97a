"""Benchmark of the metadata plane on a real local cluster (3 controllers + 3 brokers).

    .venv/bin/python bench/metadata.py [--trials 10] [--partitions 10000] [-o key=value ...]

Measures, printing figures (never asserting):

1. metadata append latency and throughput through the active controller: sequential
   CreateTopics of 1-partition topics (one round trip = one committed metadata append), then
   the same from ``--threads`` concurrent clients;
2. controller failover, ``--trials`` times: kill -9 of the active controller until the next
   committed write (a CreateTopics retried with short timeouts), split into "a surviving voter
   sees a new Raft leader" and "the write commits"; the killed voter is restarted and the
   quorum settles before the next trial;
3. ``--partitions`` partitions with replication factor 3 (``--topics`` topics, one request):
   time until the controller acknowledges, until every broker's metadata image holds them, and
   until every broker has created its partition logs; then the resident memory of every process.

Targets: failover median <= 1.5 s, max <= 3 s; 10,000 partitions created and visible
everywhere in <= 30 s. Results are also written to bench/results/metadata.json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from deploy.local_cluster import ClusterError, LocalCluster, wait_until
from metadata.client import ControllerError
from metadata.messages import NewTopic

RESULTS = Path(__file__).resolve().parent / "results" / "metadata.json"
WRITE_ATTEMPT_TIMEOUT_S = 0.3
LOG_CREATION_WAIT_S = 300.0
FAILOVER_GIVE_UP_S = 30.0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _s(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f} s"


def open_fds(pid: int | None) -> int | None:
    try:
        return len(os.listdir(f"/proc/{pid}/fd")) if pid is not None else None
    except OSError:
        return None


def rss_mib(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def bench_appends(
    cluster: LocalCluster, count: int, threads: int, seconds: float
) -> dict[str, Any]:
    latencies = []
    with cluster.client(15) as client:
        for i in range(count):
            t0 = time.perf_counter()
            (r,) = client.create_topics([NewTopic(f"seq-{i}", 1, 3)])
            latencies.append(time.perf_counter() - t0)
            if r.error_code:
                raise RuntimeError(f"create failed: {r}")
    done = [0] * threads
    stop = threading.Event()

    def worker(idx: int) -> None:
        with cluster.client(15) as client:
            n = 0
            while not stop.is_set():
                (r,) = client.create_topics([NewTopic(f"par-{idx}-{n}", 1, 3)])
                if r.error_code == 0:
                    done[idx] += 1
                n += 1

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    t0 = time.perf_counter()
    for w in workers:
        w.start()
    time.sleep(seconds)
    stop.set()
    for w in workers:
        w.join(30)
    elapsed = time.perf_counter() - t0
    return {
        "sequential_appends": count,
        "sequential_ops_per_s": count / sum(latencies),
        "latency_p50_ms": pct(latencies, 0.5) * 1000,
        "latency_p99_ms": pct(latencies, 0.99) * 1000,
        "latency_max_ms": max(latencies) * 1000,
        "concurrent_threads": threads,
        "concurrent_ops_per_s": sum(done) / elapsed,
    }


def settle(cluster: LocalCluster, timeout_s: float = 60.0) -> None:
    """Every voter connected with zero lag, seen by the active controller."""

    def ok() -> bool:
        with cluster.client(2) as client:
            client.describe_cluster()
            status = client.quorum_status()
        return all(v["connected"] and v["lag_records"] == 0 for v in status["voters"])

    wait_until(ok, timeout_s, "the quorum to settle", interval_s=0.1)


def one_failover(cluster: LocalCluster, trial: int) -> dict[str, float | None]:
    old = cluster.active_controller_id()
    survivors = [i for i in cluster.controller_ids if i != old]
    seen_leader: list[float] = []
    seen_epoch_bump: list[float] = []
    election_rounds: list[int] = []  # Raft terms the failover consumed (1 = no split vote)
    stop = threading.Event()
    with cluster.client(2, controllers=survivors) as client:
        epoch_before = client.quorum_status(address=cluster.controller_address(survivors[0]))[
            "epoch"
        ]

    def watch(t_kill: float) -> None:
        # A surviving voter's view: its term moves when some voter starts an election; its
        # leader is known once the new leader's leader-change entry reached it.
        with cluster.client(0.2, controllers=survivors) as client:
            while not stop.is_set():
                try:
                    status = client.quorum_status(address=cluster.controller_address(survivors[0]))
                except ControllerError:
                    continue
                now = time.monotonic() - t_kill
                if not seen_epoch_bump and status["epoch"] > epoch_before:
                    seen_epoch_bump.append(now)
                if status["leader_id"] not in (None, old):
                    seen_leader.append(now)
                    election_rounds.append(status["epoch"] - epoch_before)
                    return
                time.sleep(0.01)

    with cluster.client(WRITE_ATTEMPT_TIMEOUT_S, controllers=survivors) as client:
        t_kill = time.monotonic()
        cluster.kill(old, signal.SIGKILL)
        watcher = threading.Thread(target=watch, args=(t_kill,))
        watcher.start()
        write_s = None
        attempt = 0
        while time.monotonic() - t_kill < FAILOVER_GIVE_UP_S:
            attempt += 1
            try:
                (r,) = client.create_topics(
                    [NewTopic(f"failover-{trial}-{attempt}", 1, 2)],
                    timeout_s=WRITE_ATTEMPT_TIMEOUT_S,
                )
            except ControllerError:
                continue
            if r.error_code == 0:
                write_s = time.monotonic() - t_kill
                break
        stop.set()
        watcher.join(5)
    cluster.start_node(old)
    settle(cluster)
    time.sleep(1.0)  # let the restarted voter's election timer settle before the next kill
    return {
        "election_started_s": seen_epoch_bump[0] if seen_epoch_bump else None,
        "new_leader_s": seen_leader[0] if seen_leader else None,
        "write_s": write_s,
        "election_rounds": election_rounds[0] if election_rounds else None,
    }


def bench_failover(cluster: LocalCluster, trials: int) -> dict[str, Any]:
    settle(cluster)
    rows = [one_failover(cluster, t) for t in range(trials)]
    writes = [r["write_s"] for r in rows if r["write_s"] is not None]
    leaders = [r["new_leader_s"] for r in rows if r["new_leader_s"] is not None]
    elections = [r["election_started_s"] for r in rows if r["election_started_s"] is not None]
    return {
        "trials": rows,
        "write_median_s": statistics.median(writes) if writes else None,
        "write_max_s": max(writes) if writes else None,
        "new_leader_median_s": statistics.median(leaders) if leaders else None,
        "election_started_median_s": statistics.median(elections) if elections else None,
        "failed_trials": sum(1 for r in rows if r["write_s"] is None),
    }


def bench_partitions(cluster: LocalCluster, partitions: int, topics: int) -> dict[str, Any]:
    per_topic = partitions // topics
    base = {
        b: (cluster.broker_status(b) or {}).get("partitions_count", 0) for b in cluster.broker_ids
    }
    base_logs = {
        b: (cluster.broker_status(b) or {}).get("local_logs", 0) for b in cluster.broker_ids
    }
    new = [NewTopic(f"bulk-{i}", per_topic, 3) for i in range(topics)]
    t0 = time.monotonic()
    with cluster.client(120) as client:
        results = client.create_topics(new, timeout_s=120)
    t_ack = time.monotonic() - t0
    errors = [r for r in results if r.error_code]
    if errors:
        raise RuntimeError(f"bulk create failed: {errors[:3]}")
    total = per_topic * topics

    def visible() -> bool:
        return all(
            (cluster.broker_status(b) or {}).get("partitions_count", 0) >= base[b] + total
            for b in cluster.broker_ids
        )

    wait_until(visible, 300, "every broker to see the partitions", interval_s=0.05)
    t_visible = time.monotonic() - t0
    print(f"  {total} partitions visible on every broker after {t_visible:.2f} s", flush=True)
    base_errors = {b: (cluster.broker_status(b) or {}).get("apply_errors", 0) for b in base}

    def settled() -> bool:
        # RF 3 on 3 brokers: every broker hosts every partition. A partition whose log could
        # not be created (apply_errors) is settled too: it is reported, not waited for.
        for b in cluster.broker_ids:
            st = cluster.broker_status(b) or {}
            done = st.get("local_logs", 0) - base_logs[b]
            failed = st.get("apply_errors", 0) - base_errors[b]
            if done + failed < total:
                return False
        return True

    t_logs: float | None = None
    try:
        wait_until(settled, LOG_CREATION_WAIT_S, "every broker to create its logs", interval_s=0.2)
        t_logs = time.monotonic() - t0
    except ClusterError as e:
        print(f"  {e}", flush=True)
    per_broker = {}
    for b in cluster.broker_ids:
        st = cluster.broker_status(b) or {}
        per_broker[str(b)] = {
            "logs_created": st.get("local_logs", 0) - base_logs[b],
            "log_creation_errors": st.get("apply_errors", 0) - base_errors[b],
            "open_fds": open_fds(cluster.pid(b)),
        }
    time.sleep(2.0)  # let the last status writes and log maintenance rounds pass
    memory = {str(i): rss_mib(cluster.pid(i)) for i in cluster.node_ids}
    return {
        "partitions": total,
        "topics": topics,
        "ack_s": t_ack,
        "visible_on_all_brokers_s": t_visible,
        "logs_settled_on_all_brokers_s": t_logs,
        "brokers": per_broker,
        "rss_mib_after": memory,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=300)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--concurrent-seconds", type=float, default=10.0)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--dir", help="cluster directory (default: a new temporary one)")
    parser.add_argument("-o", "--override", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument(
        "--skip", action="append", default=[], choices=("appends", "failover", "partitions")
    )
    args = parser.parse_args()
    overrides = dict(item.split("=", 1) for item in args.override)
    tmp = tempfile.TemporaryDirectory(prefix="kraftlog-bench-")
    directory = args.dir or str(Path(tmp.name) / "cluster")
    cluster = LocalCluster.create(directory, controllers=3, brokers=3, overrides=overrides)
    out: dict[str, Any] = {"overrides": overrides}
    try:
        t0 = time.monotonic()
        cluster.start()
        cluster.wait_ready(120)
        out["cluster_ready_s"] = time.monotonic() - t0
        print(f"cluster ready in {out['cluster_ready_s']:.1f} s ({directory})", flush=True)
        if "appends" not in args.skip:
            a = out["appends"] = bench_appends(
                cluster, args.appends, args.threads, args.concurrent_seconds
            )
            print(
                f"appends: sequential {a['sequential_ops_per_s']:.0f}/s, latency p50 "
                f"{a['latency_p50_ms']:.1f} ms p99 {a['latency_p99_ms']:.1f} ms max "
                f"{a['latency_max_ms']:.1f} ms; {a['concurrent_threads']} threads "
                f"{a['concurrent_ops_per_s']:.0f}/s",
                flush=True,
            )
        if "failover" not in args.skip:
            f = out["failover"] = bench_failover(cluster, args.trials)
            for i, row in enumerate(f["trials"]):
                print(
                    f"  failover trial {i}: election started {_s(row['election_started_s'])}, "
                    f"new leader seen {_s(row['new_leader_s'])}, write {_s(row['write_s'])}, "
                    f"terms used {row['election_rounds']}"
                )
            print(
                f"failover: median {f['write_median_s']:.2f} s, max {f['write_max_s']:.2f} s "
                f"(election started: median {_s(f['election_started_median_s'])}, new Raft "
                f"leader seen: median {_s(f['new_leader_median_s'])}); "
                f"failed trials {f['failed_trials']} (target median <= 1.5 s, max <= 3 s)",
                flush=True,
            )
        if "partitions" not in args.skip:
            p = out["partitions"] = bench_partitions(cluster, args.partitions, args.topics)
            print(
                f"{p['partitions']} partitions RF 3 in {p['topics']} topics: acknowledged "
                f"{p['ack_s']:.2f} s, visible on every broker "
                f"{p['visible_on_all_brokers_s']:.2f} s, "
                f"logs settled everywhere {_s(p['logs_settled_on_all_brokers_s'])} "
                "(target <= 30 s)",
                flush=True,
            )
            for b, row in p["brokers"].items():
                print(
                    f"  broker {b}: {row['logs_created']} logs created, "
                    f"{row['log_creation_errors']} failed, {row['open_fds']} open fds"
                )
            for node_id, mib in p["rss_mib_after"].items():
                print(f"  node {node_id}: RSS {mib:.0f} MiB" if mib else f"  node {node_id}: gone")
    finally:
        cluster.close()
        tmp.cleanup()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(f"results in {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
