"""Replication benchmark: acks=all over 3 replicas (prints, never asserts).

    .venv/bin/python bench/replication.py            # full run (about 4-5 minutes)
    .venv/bin/python bench/replication.py --quick    # a short run (about 1-2 minutes)

Starts its own LocalCluster in a temporary directory (1 controller + 3 brokers, each its own
process; removed at the end): topics with replication factor 3 and min.insync.replicas 2, the
native client with acks=all (idempotent when the client supports enable.idempotence=true; the
header line says which). Figures:

1. Produce throughput, records/s and MB/s of values, 100 B and 1 KiB values, one topic of 3
   partitions (one leader per broker), linger.ms=5, batch.size=256 KiB; confluent-kafka
   (librdkafka, idempotent) beside it for 100 B, to tell client cost from broker cost.
2. Produce latency at fixed rates (5,000 and 20,000 records/s of 100 B, one partition):
   from the moment each record was due (a paced sender: no coordinated omission) to its
   acks=all acknowledgement; p50 / p99 / max, after a 1 s warm-up at the same rate (the first
   appends to a brand-new partition stall for up to ~0.5 s at 20,000 records/s).
3. Leader failover at the default ``broker.session.timeout.ms``: kill -9 of the partition's
   leader while a producer sends a record every 5 ms; unavailability = time from the kill to
   the first acks=all acknowledgement of a record sent after it. The killed broker is restarted
   and the ISR is full again before the next trial.

Targets (2-core machine): >= 150,000 records/s of 100 B; p99 <= 20 ms at 20,000 records/s;
failover median <= 1 s (the controller fences a killed broker when its session stream breaks,
without waiting for the session timeout).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import confluent_kafka

from bench.report import percentile, row
from deploy.admin import fetch_image
from deploy.local_cluster import LocalCluster
from kraftlog_client import Producer
from metadata.controller_config import ControllerConfig
from metadata.messages import NewTopic

SESSION_TIMEOUT_MS = ControllerConfig().broker_session_timeout_ms  # the default, not overridden
FAILOVER_TARGET_MS = 1000
OVERRIDES = {
    "replica.lag.time.max.ms": "5000",
    # The bench rebalances by itself between failover trials; no periodic moves meanwhile.
    "auto.leader.rebalance.enable": "false",
}
BATCH_BYTES = 256 * 1024
READY_TIMEOUT_S = 90.0
ISR_TIMEOUT_S = 60.0
# Failover probe: one record every PROBE_INTERVAL_S; give up on a trial after this long.
PROBE_INTERVAL_S = 0.005
FAILOVER_GIVE_UP_S = 60.0
TOPIC_CONFIGS = {"min.insync.replicas": "2"}


def create_topic(cluster: LocalCluster, name: str, partitions: int) -> None:
    with cluster.client(30.0) as admin:
        (res,) = admin.create_topics([NewTopic(name, partitions, 3, configs=TOPIC_CONFIGS)])
        if res.error_code:
            raise RuntimeError(f"create {name}: {res.error_code} {res.error_message}")
    wait_full_isr(cluster, name)


def wait_full_isr(cluster: LocalCluster, name: str, timeout_s: float = ISR_TIMEOUT_S) -> None:
    """Until every partition of ``name`` has a leader and all 3 replicas in its ISR."""
    deadline = time.monotonic() + timeout_s
    with cluster.client(10.0) as admin:
        while True:
            t = fetch_image(admin).topic(name)
            if t is not None and all(
                p.leader >= 0 and len(p.isr) == len(p.replicas) for p in t.partitions.values()
            ):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name}: ISR not full after {timeout_s:.0f} s")
            time.sleep(0.2)


def leader_of(cluster: LocalCluster, name: str) -> int:
    with cluster.client(10.0) as admin:
        p = fetch_image(admin).partition(name, 0)
    if p is None or p.leader < 0:
        raise RuntimeError(f"{name}-0 has no leader")
    return p.leader


def native_config(bootstrap: str, **extra: Any) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "acks": "all", **extra}


def idempotence_supported(bootstrap: str) -> bool:
    """True if the native client accepts enable.idempotence=true (it refuses it before the
    idempotent producer exists)."""
    try:
        p = Producer(native_config(bootstrap, **{"enable.idempotence": "true"}))
    except Exception:  # the client's config error; only the yes/no matters here
        return False
    p.close(5)
    return True


# -- 1. throughput ---------------------------------------------------------------------------


def native_throughput(cfg: dict[str, Any], topic: str, n: int, size: int) -> float:
    value = os.urandom(size)
    p = Producer({**cfg, "linger.ms": 5, "batch.size": BATCH_BYTES})
    try:
        p.partitions_for(topic)
        send = p.send
        start = time.perf_counter()
        for _ in range(n):
            send(topic, value)
        p.flush(300)
        return time.perf_counter() - start
    finally:
        p.close(30)


def confluent_throughput(bootstrap: str, topic: str, n: int, size: int) -> float:
    value = os.urandom(size)
    p = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "batch.size": BATCH_BYTES,
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    p.list_topics(topic, timeout=30)
    produce, poll = p.produce, p.poll
    start = time.perf_counter()
    for i in range(n):
        while True:
            try:
                produce(topic, value)
                break
            except BufferError:
                poll(0.01)
        if i % 10_000 == 0:
            poll(0)
    left = p.flush(300)
    elapsed = time.perf_counter() - start
    if left:
        raise RuntimeError(f"confluent-kafka: {left} records undelivered")
    return elapsed


# -- 2. latency at a fixed rate --------------------------------------------------------------


def paced_latency(
    cfg: dict[str, Any], topic: str, rate: int, seconds: float, warmup_s: float
) -> list[float]:
    """Send ``rate`` records/s for ``warmup_s + seconds``; per record due after the warm-up,
    acknowledgement time minus the time it was due (a late sender counts against the latency).
    The warm-up covers the first appends to a new partition and the producer's connections."""
    value = os.urandom(100)
    latencies: list[float] = []
    errors: list[object] = []
    p = Producer({**cfg, "linger.ms": 1})
    try:
        p.partitions_for(topic)
        total = int(rate * (warmup_s + seconds))
        first_measured = int(rate * warmup_s)
        start = time.perf_counter()
        i = 0
        while i < total:
            now = time.perf_counter()
            due_count = min(total, int((now - start) * rate) + 1)
            while i < due_count:
                due = start + i / rate

                def done(err: object, _md: object, due: float = due, i: int = i) -> None:
                    if err is not None:
                        errors.append(err)
                    elif i >= first_measured:
                        latencies.append(time.perf_counter() - due)

                p.send(topic, value, partition=0, on_delivery=done)
                i += 1
            time.sleep(0.0005)
        p.flush(60)
    finally:
        p.close(30)
    if errors:
        print(f"    ({len(errors)} records failed: {errors[0]})")
    return latencies


# -- 3. failover -----------------------------------------------------------------------------


def failover_trial(cluster: LocalCluster, cfg: dict[str, Any], topic: str) -> float:
    """Seconds from kill -9 of the leader to the first acknowledged acks=all record sent after
    the kill; the killed broker is restarted and the ISR full again on return."""
    leader = leader_of(cluster, topic)
    p = Producer({**cfg, "linger.ms": 0, "request.timeout.ms": 2000, "retry.backoff.ms": 50})
    first_ack: list[float] = []
    lock = threading.Lock()
    try:
        p.send(topic, b"warm-up", partition=0).get(30)  # connected, metadata known
        cluster.kill(leader)
        killed_at = time.perf_counter()

        def done(err: object, _md: object) -> None:
            if err is None:
                with lock:
                    if not first_ack:
                        first_ack.append(time.perf_counter())

        deadline = killed_at + FAILOVER_GIVE_UP_S
        while time.perf_counter() < deadline:
            with lock:
                if first_ack:
                    break
            p.send(topic, b"probe", partition=0, on_delivery=done)
            time.sleep(PROBE_INTERVAL_S)
    finally:
        p.close(10)
    cluster.start_node(leader)
    wait_full_isr(cluster, topic)
    if not first_ack:
        return float("nan")
    return first_ack[0] - killed_at


# -- report ----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts, 3 failover trials")
    parser.add_argument("--trials", type=int, default=None, help="failover trials (default 10)")
    args = parser.parse_args()
    scale = 0.25 if args.quick else 1.0
    counts = {100: int(300_000 * scale), 1024: int(100_000 * scale)}
    latency_s = 2.0 if args.quick else 5.0
    warmup_s = 1.0
    trials = args.trials if args.trials is not None else (3 if args.quick else 10)

    workdir = tempfile.mkdtemp(prefix="kraftlog-bench-repl-")
    cluster = LocalCluster.create(
        os.path.join(workdir, "cluster"), controllers=1, brokers=3, overrides=OVERRIDES
    )
    began = time.monotonic()
    try:
        cluster.start()
        cluster.wait_ready(READY_TIMEOUT_S)
        bootstrap = ",".join(cluster.bootstrap_servers())
        idempotent = idempotence_supported(bootstrap)
        extra = {"enable.idempotence": "true"} if idempotent else {}
        cfg = native_config(bootstrap, **extra)
        print(
            f"kraftlog replication benchmark: 1 controller + 3 brokers on {os.cpu_count()} "
            f"cores, RF 3, min.insync.replicas 2, acks=all, native client "
            f"{'idempotent' if idempotent else 'NOT idempotent (enable.idempotence unsupported)'}"
            f", broker.session.timeout.ms={SESSION_TIMEOUT_MS}"
        )

        print("\n1. Produce throughput (3 partitions, one leader per broker)")
        for size, n in counts.items():
            topic = f"tp-{size}"
            create_topic(cluster, topic, 3)
            print(row(f"native, {size} B", n, size, native_throughput(cfg, topic, n, size)))
        topic = "tp-confluent"
        create_topic(cluster, topic, 3)
        n = counts[100]
        print(
            row(
                "confluent-kafka (idempotent), 100 B",
                n,
                100,
                confluent_throughput(bootstrap, topic, n, 100),
            )
        )

        print(
            f"\n2. Produce latency, 100 B, 1 partition, {latency_s:.0f} s per rate after "
            f"{warmup_s:.0f} s of warm-up (due -> acks=all acknowledgement)"
        )
        for rate in (5_000, 20_000):
            topic = f"lat-{rate}"
            create_topic(cluster, topic, 1)
            lat = paced_latency(cfg, topic, rate, latency_s, warmup_s)
            got = len(lat) / latency_s
            print(
                f"  {rate:>6,} rec/s (acked {got:>8,.0f}/s): p50 {percentile(lat, 0.5) * 1e3:6.2f}"
                f" ms  p99 {percentile(lat, 0.99) * 1e3:7.2f} ms"
                f"  max {max(lat, default=float('nan')) * 1e3:7.1f} ms"
            )

        print(
            f"\n3. Leader failover (kill -9 of the leader -> first acks=all ack), {trials} trials"
        )
        topic = "failover"
        create_topic(cluster, topic, 1)
        outcomes = []
        for i in range(trials):
            s = failover_trial(cluster, cfg, topic)
            outcomes.append(s)
            print(f"  trial {i + 1:>2}: {s * 1e3:7.0f} ms")
        valid = [x for x in outcomes if x == x]
        if valid:
            print(
                f"  median {statistics.median(valid) * 1e3:.0f} ms, min {min(valid) * 1e3:.0f}"
                f" ms, max {max(valid) * 1e3:.0f} ms; target median <= {FAILOVER_TARGET_MS} ms"
                f" (broker.session.timeout.ms {SESSION_TIMEOUT_MS}); {trials - len(valid)} trials"
                " gave up"
            )
        print(f"\n(total {time.monotonic() - began:.0f} s)")
    finally:
        cluster.close()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
