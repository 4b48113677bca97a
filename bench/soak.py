"""Soak: a replicated cluster at half its measured capacity for many minutes, with retention
deleting segments all along (prints and plots; never asserts; on demand, not in the suite).

    .venv/bin/python -m bench.soak --minutes 30 [--rate N] [--plot docs/img/soak.png]

1 controller + 3 brokers, one topic of 3 partitions (RF 3, ``min.insync.replicas`` 2) with
8 MiB segments and 48 MiB of retention per partition, retention checked every 5 s: the
brokers roll and delete segments all through the run.

- Capacity: a first burst of 200,000 records of 100 B with the native producer (acks=all,
  idempotent); the soak offers half of it (or ``--rate``).
- A paced producer process writes each record's due time (CLOCK_MONOTONIC ns); a consumer
  process reads every partition and keeps, per 10 s window, the records received and their
  due -> received latency percentiles.
- Every 10 s the driver samples each node's resident memory (VmRSS) and open descriptors.

Verdicts printed at the end, against three bounds: resident memory of every process
after the warm-up (the first 5 minutes, or a third of a shorter run) grows at most 10 %;
open descriptors stay flat (at most +10 % or +20); the p99 of the last 5 minutes is within
2x of the first 5 after the warm-up.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import struct
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import replication
from bench.report import now_ns, percentile, send_paced
from bench.sections import local_cluster
from deploy.local_cluster import LocalCluster
from kraftlog_client import Consumer, Producer, TopicPartition
from metadata.messages import NewTopic

TOPIC = "soak"
PARTITIONS = 3
RECORD_BYTES = 100
WINDOW_S = 10.0
SAMPLE_S = 10.0
CAPACITY_RECORDS = 200_000
WARMUP_MAX_S = 300.0
COMPARE_MAX_S = 300.0
DRAIN_S = 60.0
TOPIC_CONFIGS = {
    "min.insync.replicas": "2",
    "segment.bytes": str(8 * 1024 * 1024),
    "retention.bytes": str(48 * 1024 * 1024),
}
OVERRIDES = {**replication.OVERRIDES, "log.retention.check.interval.ms": "5000"}
_DUE = struct.Struct(">q")


def _producer(bootstrap: str, rate: int, start_ns: int, seconds: float, conn: Any) -> None:
    """Spawned: offer ``rate`` records/s from ``start_ns`` for ``seconds``; send back how many
    were sent and how many failed."""
    failed = 0

    def done(err: object, _md: object) -> None:
        nonlocal failed
        if err is not None:
            failed += 1

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 1,
            "enable.idempotence": "true",
        }
    )
    sent = 0
    try:
        p.partitions_for(TOPIC)
        pad = os.urandom(RECORD_BYTES - _DUE.size)

        def send(_i: int, due: int) -> None:
            nonlocal sent
            p.send(TOPIC, _DUE.pack(due) + pad, on_delivery=done)
            sent += 1

        send_paced(send, rate, start_ns, int(rate * seconds))
        p.flush(120)
    finally:
        p.close(30)
        conn.send({"sent": sent, "failed": failed})


def _consumer(bootstrap: str, start_ns: int, seconds: float, conn: Any) -> None:
    """Spawned: read every partition from its end; per WINDOW_S window of receive time, the
    records received and the p50 / p99 / p99.9 of their latency (ms)."""
    c = Consumer(
        {"bootstrap.servers": bootstrap, "auto.offset.reset": "latest", "max.poll.records": 20_000}
    )
    windows: list[dict[str, float]] = []
    current: list[float] = []
    window_end = start_ns + int(WINDOW_S * 1e9)
    unpack = _DUE.unpack_from

    def close_window() -> None:
        windows.append(
            {
                "t_s": (window_end - start_ns) / 1e9,
                "records": len(current),
                "p50_ms": percentile(current, 0.5) * 1e3,
                "p99_ms": percentile(current, 0.99) * 1e3,
                "p999_ms": percentile(current, 0.999) * 1e3,
            }
        )
        current.clear()

    try:
        parts = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        c.assign(parts)
        for tp in parts:
            c.position(tp)
        conn.send("ready")
        end_ns = start_ns + int((seconds + DRAIN_S) * 1e9)
        while now_ns() < end_ns:
            records = c.poll(100)
            now = now_ns()
            while now >= window_end:
                close_window()
                window_end += int(WINDOW_S * 1e9)
            current.extend((now - unpack(r.value)[0]) / 1e9 for r in records)
            if now > start_ns + int(seconds * 1e9) and not records:
                break  # the producer is done and nothing is left
        if current:
            close_window()
    finally:
        c.close()
        conn.send(windows)


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def capacity(bootstrap: str) -> float:
    """Records/s of one burst of CAPACITY_RECORDS 100 B records (native producer, acks=all)."""
    cfg = replication.native_config(bootstrap, **{"enable.idempotence": "true"})
    seconds = replication.native_throughput(cfg, TOPIC, CAPACITY_RECORDS, RECORD_BYTES)
    return CAPACITY_RECORDS / seconds


def soak(cluster: LocalCluster, rate: int, minutes: float) -> dict[str, Any]:
    bootstrap = ",".join(cluster.bootstrap_servers())
    seconds = minutes * 60
    ctx = multiprocessing.get_context("spawn")
    p_parent, p_child = ctx.Pipe()
    c_parent, c_child = ctx.Pipe()
    start_ns = now_ns() + int(5e9)  # both processes start before the first due time
    consumer = ctx.Process(target=_consumer, args=(bootstrap, start_ns, seconds, c_child))
    producer = ctx.Process(target=_producer, args=(bootstrap, rate, start_ns, seconds, p_child))
    consumer.start()
    if not c_parent.poll(60) or c_parent.recv() != "ready":
        raise RuntimeError("the soak consumer did not start")
    producer.start()
    samples: list[dict[str, Any]] = []
    pids = {str(n): cluster.pid(n) for n in cluster.node_ids}
    next_sample = start_ns
    try:
        while now_ns() < start_ns + int(seconds * 1e9):
            if now_ns() >= next_sample:
                sample: dict[str, Any] = {"t_s": (now_ns() - start_ns) / 1e9}
                for name, pid in pids.items():
                    if pid is not None:
                        sample[f"rss_mib_{name}"] = _rss_mib(pid)
                        sample[f"fds_{name}"] = _fds(pid)
                samples.append(sample)
                next_sample += int(SAMPLE_S * 1e9)
            time.sleep(0.5)
        produced = p_parent.recv() if p_parent.poll(DRAIN_S + 180) else {}
        windows = c_parent.recv() if c_parent.poll(DRAIN_S + 120) else []
    finally:
        for proc in (producer, consumer):
            proc.join(30)
            if proc.is_alive():
                proc.kill()
                proc.join()
    return {
        "rate": rate,
        "minutes": minutes,
        "produced": produced,
        "windows": windows,
        "samples": samples,
        "nodes": sorted(pids),
    }


def verdicts(result: dict[str, Any]) -> dict[str, Any]:
    """The three bounds of the module docstring, from the samples and windows of one soak."""
    seconds = result["minutes"] * 60
    warmup = min(WARMUP_MAX_S, seconds / 3)
    span = min(COMPARE_MAX_S, (seconds - warmup) / 2)
    samples, windows = result["samples"], result["windows"]
    out: dict[str, Any] = {"warmup_s": warmup, "compare_s": span}
    after = [s for s in samples if s["t_s"] >= warmup]
    rss_growth: dict[str, float] = {}
    fds_growth: dict[str, tuple[int, int]] = {}
    for node in result["nodes"]:
        rss = [s[f"rss_mib_{node}"] for s in after if f"rss_mib_{node}" in s]
        fds = [s[f"fds_{node}"] for s in after if f"fds_{node}" in s]
        if rss:
            rss_growth[node] = max(rss) / rss[0] - 1
        if fds:
            fds_growth[node] = (fds[0], max(fds))
    out["rss_growth_after_warmup"] = rss_growth
    out["rss_ok"] = all(g <= 0.10 for g in rss_growth.values())
    out["fds_first_max"] = fds_growth
    out["fds_ok"] = all(m <= max(first * 1.1, first + 20) for first, m in fds_growth.values())
    first = [w["p99_ms"] for w in windows if warmup <= w["t_s"] - WINDOW_S < warmup + span]
    last = [w["p99_ms"] for w in windows if w["t_s"] > seconds - span and w["t_s"] <= seconds]
    if first and last:
        out["p99_first_ms"] = statistics.median(first)
        out["p99_last_ms"] = statistics.median(last)
        out["p99_ok"] = out["p99_last_ms"] <= 2 * out["p99_first_ms"]
    received = sum(w["records"] for w in windows)
    out["records_received"] = received
    out["records_sent"] = result["produced"].get("sent")
    out["send_failures"] = result["produced"].get("failed")
    return out


def plot(result: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(4, 1, figsize=(9, 11), sharex=True)
    w, s = result["windows"], result["samples"]
    minutes = [x["t_s"] / 60 for x in w]
    axes[0].plot(minutes, [x["records"] / WINDOW_S for x in w])
    axes[0].set_ylabel("records/s received")
    for key in ("p50_ms", "p99_ms", "p999_ms"):
        axes[1].plot(minutes, [x[key] for x in w], label=key.replace("_ms", ""))
    axes[1].set_ylabel("latency (ms)")
    axes[1].set_yscale("log")
    axes[1].legend()
    sm = [x["t_s"] / 60 for x in s]
    for node in result["nodes"]:
        axes[2].plot(sm, [x.get(f"rss_mib_{node}") for x in s], label=f"node {node}")
        axes[3].plot(sm, [x.get(f"fds_{node}") for x in s], label=f"node {node}")
    axes[2].set_ylabel("RSS (MiB)")
    axes[2].legend(fontsize="small")
    axes[3].set_ylabel("open fds")
    axes[3].set_xlabel("minutes")
    fig.suptitle(f"kraftlog soak: {result['rate']:,} records/s offered, RF 3, retention on")
    fig.tight_layout()
    fig.savefig(path, dpi=80)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument(
        "--rate", type=int, default=None, help="records/s (default: half of the measured capacity)"
    )
    parser.add_argument("--plot", default=None, help="write the plots to this PNG")
    parser.add_argument("--json", default=None, help="write the raw result to this file")
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="kraftlog-soak-")
    try:
        with local_cluster(workdir, 1, 3, OVERRIDES) as cluster:
            with cluster.client(60.0) as admin:
                (res,) = admin.create_topics(
                    [NewTopic(TOPIC, PARTITIONS, 3, configs=TOPIC_CONFIGS)]
                )
            if res.error_code:
                raise RuntimeError(f"create {TOPIC}: {res.error_message}")
            bootstrap = ",".join(cluster.bootstrap_servers())
            cap = capacity(bootstrap)
            rate = args.rate or int(cap / 2)
            print(
                f"capacity {cap:,.0f} records/s of {RECORD_BYTES} B; soaking at {rate:,}/s "
                f"for {args.minutes:g} min",
                flush=True,
            )
            result = soak(cluster, rate, args.minutes)
        result["capacity_per_s"] = cap
        v = verdicts(result)
        result["verdicts"] = v
        print(json.dumps(v, indent=2, default=str))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f)
        if args.plot:
            plot(result, args.plot)
            print(f"plots: {args.plot}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
