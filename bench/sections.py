"""The kraftlog sections of ``make bench`` (bench/suite.py runs each in its own process).

Every section function takes ``quick`` (smaller counts) and a scratch directory, starts what
it needs (a LocalCluster in that directory, closed on return, also on failure) and returns a
JSON-ready dict of figures. They reuse the single-purpose benchmarks' functions (storage,
produce_consume, replication, metadata) so a figure means the same here and there.

End-to-end latency (:func:`e2e_latency`): a paced producer in this process writes each
record's due time (CLOCK_MONOTONIC ns, one clock for every process of the machine) into the
first 8 bytes of its 100 B value; a consumer in a spawned process takes ``now - due`` when the
record reaches it. A late producer counts against the latency (no coordinated omission).
The producer uses acks=all, idempotence and linger.ms=1 (E2E_LINGER_MS says why).
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import struct
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import anchors, produce_consume, replication, storage
from bench import metadata as metadata_bench
from bench.report import latency_summary, now_ns, rate, send_paced
from deploy.local_cluster import ClusterError, LocalCluster, wait_until
from kraftlog_client import Consumer, Producer, TopicPartition
from metadata.messages import NewTopic

MIB = 1024 * 1024
READY_TIMEOUT_S = 120.0
LATENCY_RATES = (5_000, 20_000, 50_000)
E2E_RECORD_BYTES = 100
E2E_CONSUMER_READY_TIMEOUT_S = 60.0
E2E_DRAIN_TIMEOUT_S = 30.0
# linger.ms of the paced producer. With 0 every burst of due records (a few, every fraction
# of a millisecond) is its own Produce request, and each request costs the three brokers
# their per-request work again (append, two follower fetch rounds, the consumer's fetch):
# an A/B at 20,000 records/s (load 7) measured p99 58 and 113 ms with 1 ms against 82 and
# 1,690 ms with 0. 1 ms adds at most 1 ms and keeps requests near 1,000/s.
E2E_LINGER_MS = 1
_DUE = struct.Struct(">q")


@contextmanager
def local_cluster(
    directory: str, controllers: int, brokers: int, overrides: dict[str, str] | None = None
) -> Iterator[LocalCluster]:
    cluster = LocalCluster.create(
        os.path.join(directory, "cluster"),
        controllers=controllers,
        brokers=brokers,
        overrides=overrides or {},
    )
    try:
        cluster.start()
        cluster.wait_ready(READY_TIMEOUT_S)
        yield cluster
    finally:
        cluster.close()


# -- storage ---------------------------------------------------------------------------------


def section_storage(directory: str, quick: bool) -> dict[str, Any]:
    total = (128 if quick else 512) * MIB
    mb_s, _batches_s, raw_mb_s = storage.bench_append(directory, 1 * MIB, total, fsync=False)
    reads = storage.bench_read(
        directory, (128 if quick else 256) * MIB, (512 if quick else 2048) * MIB
    )
    return {
        "append_1mib_batches_mb_s": mb_s,
        "append_raw_write_mb_s": raw_mb_s,
        "sendfile_read_mb_s": reads["sendfile"][0],
        "sendfile_cpu_s_per_gb": reads["sendfile"][1],
        "read_sendall_mb_s": reads["read+sendall"][0],
        "read_sendall_cpu_s_per_gb": reads["read+sendall"][1],
    }


# -- produce / consume -----------------------------------------------------------------------


def _create(cluster: LocalCluster, name: str, partitions: int, rf: int) -> None:
    if rf == 3:
        replication.create_topic(cluster, name, partitions)
        return
    with cluster.client(30.0) as admin:
        (res,) = admin.create_topics([NewTopic(name, partitions, rf)])
        if res.error_code:
            raise RuntimeError(f"create {name}: {res.error_code} {res.error_message}")
    wait_until(lambda: _has_leaders(cluster, name), 60, f"leaders of {name}", interval_s=0.1)


def _has_leaders(cluster: LocalCluster, name: str) -> bool:
    from deploy.admin import fetch_image

    with cluster.client(10.0) as admin:
        t = fetch_image(admin).topic(name)
    return t is not None and all(p.leader >= 0 for p in t.partitions.values())


def produce_consume_rows(cluster: LocalCluster, rf: int, quick: bool) -> dict[str, Any]:
    """Native producer (acks=all, linger 5 ms, 256 KiB batches, idempotent) then one consumer
    reading the topic from the start, for 100 B and 1 KiB; 3 partitions with RF 3 (one leader
    per broker), 1 partition with RF 1."""
    bootstrap = ",".join(cluster.bootstrap_servers())
    partitions = 3 if rf == 3 else 1
    scale = 0.25 if quick else 1.0
    out: dict[str, Any] = {}
    for size, n in ((100, int(1_000_000 * scale)), (1024, int(200_000 * scale))):
        topic = f"pc-rf{rf}-{size}"
        _create(cluster, topic, partitions, rf)
        cfg = replication.native_config(bootstrap, **{"enable.idempotence": "true"})
        seconds = replication.native_throughput(cfg, topic, n, size)
        out[f"produce_{size}"] = rate(n, seconds, size)
        seconds, got = produce_consume.native_consume(bootstrap, topic, partitions, n)
        out[f"consume_{size}"] = rate(got, seconds, size)
    return out


def _e2e_consumer(
    bootstrap: str, topic: str, expected: int, warm_until_ns: int, deadline_s: float, conn: Any
) -> None:
    """Spawned process: read ``topic``-0 from its end; send back the latencies (s) of records
    due at or after ``warm_until_ns``."""
    c = Consumer(
        {"bootstrap.servers": bootstrap, "auto.offset.reset": "latest", "max.poll.records": 10_000}
    )
    latencies: list[float] = []
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.position(tp)
        conn.send("ready")
        unpack = _DUE.unpack_from
        seen = 0
        end = time.monotonic() + deadline_s
        while seen < expected and time.monotonic() < end:
            records = c.poll(100)
            now = now_ns()
            for r in records:
                due = unpack(r.value)[0]
                seen += 1
                if due >= warm_until_ns:
                    latencies.append((now - due) / 1e9)
    finally:
        c.close()
        conn.send(latencies)
        conn.close()


def e2e_latency(
    bootstrap: str,
    topic: str,
    rate_per_s: int,
    seconds: float,
    warmup_s: float = 1.0,
    linger_ms: int = E2E_LINGER_MS,
) -> list[float]:
    """Due -> consumed latencies (s) at ``rate_per_s`` 100 B records/s, acks=all producer."""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    total = int(rate_per_s * (warmup_s + seconds))
    start_ns = now_ns() + int(3e9)  # the consumer's start-up lands before the first due
    warm_until_ns = start_ns + int(warmup_s * 1e9)
    proc = ctx.Process(
        target=_e2e_consumer,
        args=(
            bootstrap,
            topic,
            total,
            warm_until_ns,
            warmup_s + seconds + E2E_DRAIN_TIMEOUT_S,
            child,
        ),
    )
    proc.start()
    try:
        if not parent.poll(E2E_CONSUMER_READY_TIMEOUT_S) or parent.recv() != "ready":
            raise RuntimeError("e2e consumer did not start")
        p = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "linger.ms": linger_ms,
                "enable.idempotence": "true",
            }
        )
        try:
            p.partitions_for(topic)
            pad = os.urandom(E2E_RECORD_BYTES - _DUE.size)
            send, pack = p.send, _DUE.pack
            send_paced(
                lambda _i, due: send(topic, pack(due) + pad, partition=0),
                rate_per_s,
                start_ns,
                total,
            )
            p.flush(60)
        finally:
            p.close(30)
        if not parent.poll(seconds + E2E_DRAIN_TIMEOUT_S + 30):
            raise RuntimeError("e2e consumer sent no result")
        return parent.recv()
    finally:
        proc.join(10)
        if proc.is_alive():
            proc.kill()
            proc.join()


def latency_rows(cluster: LocalCluster, quick: bool) -> dict[str, Any]:
    """End-to-end latency at each of LATENCY_RATES, each after an ``os.sync()``.

    Why the sync: the throughput rows before leave about 1 GB of dirty page cache behind
    (RF 3 on one disk). While the kernel writes it back, ext4's journal commits wait for that
    data and the appends of the latency run wait for the commits: p50 / p99 at 20,000
    records/s measured 5.6-7.7 / 13.5-15.7 ms against 2.7-2.8 / 4.8-5.3 ms with the sync, same
    cluster and code. That is the disk's backlog of the previous test, not this one; the
    seconds each sync took are recorded (``writeback_s``), and so is the host's speed just
    before each rate (:func:`bench.anchors.host_speed`): the latency follows it."""
    bootstrap = ",".join(cluster.bootstrap_servers())
    seconds = 3.0 if quick else 8.0
    out: dict[str, Any] = {}
    for r in LATENCY_RATES:
        topic = f"e2e-{r}"
        _create(cluster, topic, 1, 3)
        began = time.monotonic()
        os.sync()
        writeback_s = time.monotonic() - began
        host = anchors.host_speed()
        lat = e2e_latency(bootstrap, topic, r, seconds)
        out[str(r)] = {
            **latency_summary(lat, r, seconds),
            "writeback_s": round(writeback_s, 2),
            **host,
        }
    return out


REPLICATED_OVERRIDES = dict(replication.OVERRIDES)


def section_single_broker(directory: str, quick: bool) -> dict[str, Any]:
    with local_cluster(directory, 1, 1) as cluster:
        return produce_consume_rows(cluster, 1, quick)


def section_replicated(directory: str, quick: bool) -> dict[str, Any]:
    """RF 3, acks=all, min.insync.replicas 2: throughput, e2e latency, leader failover."""
    with local_cluster(directory, 1, 3, REPLICATED_OVERRIDES) as cluster:
        out = produce_consume_rows(cluster, 3, quick)
        out["e2e_latency"] = latency_rows(cluster, quick)
        bootstrap = ",".join(cluster.bootstrap_servers())
        cfg = replication.native_config(bootstrap, **{"enable.idempotence": "true"})
        _create(cluster, "failover", 1, 3)
        trials = [
            replication.failover_trial(cluster, cfg, "failover") for _ in range(2 if quick else 3)
        ]
        valid = [t for t in trials if t == t]
        out["leader_failover"] = {
            "trials_s": trials,
            "median_s": statistics.median(valid) if valid else None,
            "broker_session_timeout_ms": replication.SESSION_TIMEOUT_MS,
        }
        return out


def section_controller_failover(directory: str, quick: bool) -> dict[str, Any]:
    """3 controllers; 2 brokers because each probe write creates a topic of 2 replicas."""
    with local_cluster(directory, 3, 2) as cluster:
        return metadata_bench.bench_failover(cluster, 2 if quick else 5)


RESTART_RECOVERY_TIMEOUT_S = 120.0


def section_partitions(directory: str, quick: bool) -> dict[str, Any]:
    """10,000 partitions (RF 3 over 3 brokers): creation, RSS, and one broker restarted twice:
    after a clean shutdown, then after kill -9 (``restart_*`` and ``restart_after_kill_*``:
    seconds from the process start to its logs loaded and to the cluster ready again, every
    ISR full; targets 5 s and 15 s).

    The restart waits are bounded (RESTART_RECOVERY_TIMEOUT_S each) so that a slow recovery
    is recorded as such, with the figures before it, rather than lost to the section's cap."""
    partitions = 10_000  # the scale the broker is sized for, in quick runs too (about 2 minutes)
    with local_cluster(directory, 1, 3) as cluster:
        out = metadata_bench.bench_partitions(cluster, partitions, 10)
        broker = cluster.broker_ids[-1]
        before = (cluster.broker_status(broker) or {}).get("local_logs", 0)

        def recovered() -> bool:
            st = cluster.broker_status(broker) or {}
            return st.get("local_logs", 0) >= before

        for prefix, stop in (
            ("restart", lambda: cluster.stop_node(broker)),
            ("restart_after_kill", lambda: cluster.kill(broker)),
        ):
            t_stop = time.monotonic()
            stop()
            out[f"{prefix}_stop_s"] = time.monotonic() - t_stop
            t0 = time.monotonic()
            cluster.start_node(broker)
            try:
                wait_until(
                    recovered,
                    RESTART_RECOVERY_TIMEOUT_S,
                    "the restarted broker's logs",
                    interval_s=0.05,
                )
                out[f"{prefix}_logs_loaded_s"] = time.monotonic() - t0
                cluster.wait_ready(RESTART_RECOVERY_TIMEOUT_S)
                out[f"{prefix}_ready_s"] = time.monotonic() - t0
            except ClusterError as e:
                out[f"{prefix}_error"] = str(e).splitlines()[0][:300]
                break
        out["rss_mib_after_restart"] = metadata_bench.rss_mib(cluster.pid(broker))
        return out


SECTIONS = {
    "storage": section_storage,
    "single_broker": section_single_broker,
    "replicated": section_replicated,
    "controller_failover": section_controller_failover,
    "partitions": section_partitions,
}
