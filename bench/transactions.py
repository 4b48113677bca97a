"""Transactions on 3 brokers (RF 3, min.insync.replicas 2, acks=all), one run, printed:

- confluent-kafka (librdkafka) produce of 100 B records: idempotent, then transactional
  committing every 100 ms, then every 1,000 records (records/s and the share of idempotent);
- read_committed end-to-end latency at 20,000 records/s offered with a commit every 100 ms
  (produce time in the value, consumed time at a reader in another process; p50 / p99 /
  p99.9; the producer lingers for the commit interval; after one untimed transaction that
  connects the producer);
- a consume-transform-produce loop (read_committed consumer, transactional producer,
  send_offsets_to_transaction per batch of up to 500 records): records/s.

    .venv/bin/python -m bench.transactions [--quick]

Part of ``make bench`` (bench.suite runs it as the "transactions" section).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import statistics
import struct
import tempfile
import time
import uuid
from typing import Any

import confluent_kafka

from deploy.local_cluster import LocalCluster
from metadata.messages import NewTopic

PARTITIONS = 6
READY_TIMEOUT_S = 60.0
CALL_TIMEOUT_S = 60.0
VALUE_BYTES = 100
LATENCY_RATE = 20_000
COMMIT_INTERVAL_S = 0.1
COMMIT_EVERY_RECORDS = 1_000
CTP_BATCH = 500
_TS = struct.Struct(">d")


def create_topic(cluster: LocalCluster) -> str:
    name = f"bench-txn-{uuid.uuid4().hex[:6]}"
    with cluster.client(30.0) as admin:
        (res,) = admin.create_topics(
            [NewTopic(name, PARTITIONS, 3, configs={"min.insync.replicas": "2"})]
        )
        if res.error_code:
            raise RuntimeError(f"create {name}: {res.error_message}")
    return name


def producer(bootstrap: str, **extra: object) -> confluent_kafka.Producer:
    conf = {
        "bootstrap.servers": bootstrap,
        "linger.ms": 5,
        "acks": "all",
        "enable.idempotence": True,
        "batch.size": 256 * 1024,
        "queue.buffering.max.messages": 1_000_000,
        **extra,
    }
    return confluent_kafka.Producer(conf)


def _produce(p: confluent_kafka.Producer, topic: str, value: bytes) -> None:
    while True:
        try:
            p.produce(topic, value)
            return
        except BufferError:
            p.poll(0.005)


def idempotent_rate(bootstrap: str, topic: str, n: int) -> float:
    p = producer(bootstrap)
    p.list_topics(topic, timeout=30)
    value = os.urandom(VALUE_BYTES)
    start = time.perf_counter()
    for _ in range(n):
        _produce(p, topic, value)
    p.flush(300)
    return n / (time.perf_counter() - start)


def transactional_rate(
    bootstrap: str, topic: str, n: int, *, every_s: float | None, every_records: int | None
) -> float:
    p = producer(bootstrap, **{"transactional.id": f"bench-{uuid.uuid4().hex[:6]}"})
    p.init_transactions(CALL_TIMEOUT_S)
    value = os.urandom(VALUE_BYTES)
    start = time.perf_counter()
    p.begin_transaction()
    last_commit = start
    in_txn = 0
    for _ in range(n):
        _produce(p, topic, value)
        in_txn += 1
        now = time.perf_counter()
        if (every_records is not None and in_txn >= every_records) or (
            every_s is not None and now - last_commit >= every_s
        ):
            p.commit_transaction(CALL_TIMEOUT_S)
            p.begin_transaction()
            last_commit, in_txn = now, 0
    p.commit_transaction(CALL_TIMEOUT_S)
    return n / (time.perf_counter() - start)


def _latency_reader(
    bootstrap: str, topic: str, total: int, seconds: float, ready: Any, out: Any
) -> None:
    """The read_committed consumer of the latency phase, in a process of its own so that it
    does not share the producer's interpreter lock: latencies (s) of the first ``total``
    timed records, sent back through ``out``. Warm-up records (timestamp 0) are skipped."""
    latencies: list[float] = []
    c = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-lat-{uuid.uuid4().hex[:6]}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 5,
        }
    )
    try:
        c.assign(
            [
                confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
                for p in range(PARTITIONS)
            ]
        )
        c.poll(0.5)
        ready.set()
        deadline = time.monotonic() + seconds + 90
        while len(latencies) < total and time.monotonic() < deadline:
            # Small batches and a short wait: consume() holds records until it has
            # num_messages or the timeout passes, which would add to every latency.
            for m in c.consume(num_messages=100, timeout=0.002):
                if m.error() is None and m.value() is not None:
                    sent = _TS.unpack_from(m.value())[0]
                    if sent:
                        latencies.append(time.time() - sent)
    finally:
        c.close()
        out.send(latencies)


def read_committed_latency(bootstrap: str, topic: str, seconds: float) -> list[float]:
    """Latencies (s) of records produced at LATENCY_RATE, committed every 100 ms, read by a
    read_committed consumer in another process. One untimed transaction over every partition
    first connects the producer to each leader and registers it with the coordinator (the
    first commit of a new producer pays for that, not the steady state measured here)."""
    total = int(LATENCY_RATE * seconds)
    ctx = multiprocessing.get_context("spawn")  # librdkafka threads do not survive fork
    ready = ctx.Event()
    receive, send = ctx.Pipe(duplex=False)
    reader = ctx.Process(
        target=_latency_reader, args=(bootstrap, topic, total, seconds, ready, send), daemon=True
    )
    reader.start()
    ready.wait(60)
    # The producer lingers for the commit interval, as Kafka Streams' exactly-once producers
    # do (linger.ms 100): a read_committed reader cannot see a record before its commit, and
    # commit_transaction() sends what lingers at once, so lingering adds nothing to the
    # latency measured here; it sends each partition's records of a transaction as one batch
    # instead of one per millisecond.
    p = producer(
        bootstrap,
        **{
            "transactional.id": f"bench-lat-{uuid.uuid4().hex[:6]}",
            "linger.ms": int(COMMIT_INTERVAL_S * 1000),
        },
    )
    p.init_transactions(CALL_TIMEOUT_S)
    pad = b"x" * (VALUE_BYTES - _TS.size)
    p.begin_transaction()
    for partition in range(PARTITIONS):
        p.produce(topic, _TS.pack(0.0) + pad, partition=partition)
    p.commit_transaction(CALL_TIMEOUT_S)
    p.begin_transaction()
    start = time.perf_counter()
    last_commit = start
    for i in range(total):
        due = start + i / LATENCY_RATE
        while (now := time.perf_counter()) < due:
            time.sleep(min(due - now, 0.001))
        _produce(p, topic, _TS.pack(time.time()) + pad)
        if now - last_commit >= COMMIT_INTERVAL_S:
            # The interval runs from one commit's start to the next: a commit every 100 ms,
            # however long each takes.
            last_commit = now
            p.commit_transaction(CALL_TIMEOUT_S)
            p.begin_transaction()
    p.commit_transaction(CALL_TIMEOUT_S)
    latencies: list[float] = receive.recv() if receive.poll(seconds + 120) else []
    reader.join(30)
    return latencies


def consume_transform_produce(bootstrap: str, source: str, sink: str, n: int) -> float:
    group = f"bench-ctp-{uuid.uuid4().hex[:6]}"
    c = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    p = producer(bootstrap, **{"transactional.id": f"bench-ctp-{uuid.uuid4().hex[:6]}"})
    p.init_transactions(CALL_TIMEOUT_S)
    c.subscribe([source])
    done = 0
    start = None
    deadline = time.monotonic() + 300
    try:
        while done < n and time.monotonic() < deadline:
            msgs = [m for m in c.consume(CTP_BATCH, 1.0) if m.error() is None]
            if not msgs:
                continue
            if start is None:
                start = time.perf_counter()
            p.begin_transaction()
            for m in msgs:
                _produce(p, sink, m.value())
            positions = {}
            for m in msgs:
                positions[(m.topic(), m.partition())] = m.offset() + 1
            p.send_offsets_to_transaction(
                [confluent_kafka.TopicPartition(t, q, o) for (t, q), o in positions.items()],
                c.consumer_group_metadata(),
                CALL_TIMEOUT_S,
            )
            p.commit_transaction(CALL_TIMEOUT_S)
            done += len(msgs)
    finally:
        c.close()
    return done / (time.perf_counter() - (start or time.perf_counter()))


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] * 1000.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n = 100_000 if args.quick else 300_000
    seconds = 5.0 if args.quick else 15.0
    workdir = tempfile.mkdtemp(prefix="kraftlog-bench-txn-")
    cluster = LocalCluster.create(workdir, controllers=1, brokers=3)
    try:
        cluster.start()
        cluster.wait_ready(READY_TIMEOUT_S)
        bootstrap = ",".join(cluster.bootstrap_servers())
        print(
            f"kraftlog transactions benchmark: 3 brokers RF 3, {os.cpu_count()} cores, "
            f"confluent-kafka {confluent_kafka.__version__} "
            f"(librdkafka {confluent_kafka.libversion()[0]}), {VALUE_BYTES} B records",
            flush=True,
        )
        # A first run warms the cluster (connections, segments, page cache); not reported.
        idempotent_rate(bootstrap, create_topic(cluster), n // 3)
        idem = idempotent_rate(bootstrap, create_topic(cluster), n)
        print(f"  idempotent produce:                         {idem:>10,.0f} records/s", flush=True)
        for label, kwargs in (
            (
                f"commit every {COMMIT_INTERVAL_S * 1000:.0f} ms",
                {"every_s": COMMIT_INTERVAL_S, "every_records": None},
            ),
            (
                f"commit every {COMMIT_EVERY_RECORDS:,} records",
                {"every_s": None, "every_records": COMMIT_EVERY_RECORDS},
            ),
        ):
            rate = transactional_rate(bootstrap, create_topic(cluster), n, **kwargs)
            print(
                f"  transactional produce, {label:<22} {rate:>10,.0f} records/s "
                f"({rate / idem:.0%} of idempotent)",
                flush=True,
            )
        lat = read_committed_latency(bootstrap, create_topic(cluster), seconds)
        if lat:
            print(
                f"  read_committed e2e at {LATENCY_RATE:,} records/s, "
                f"{COMMIT_INTERVAL_S * 1000:.0f} ms commits: p50 {pct(lat, 0.5):.1f} ms, "
                f"p99 {pct(lat, 0.99):.1f} ms, p99.9 {pct(lat, 0.999):.1f} ms, "
                f"mean {statistics.fmean(lat) * 1000:.1f} ms ({len(lat):,} records)",
                flush=True,
            )
        source, sink = create_topic(cluster), create_topic(cluster)
        ctp_n = n // 3
        plain = producer(bootstrap)
        value = os.urandom(VALUE_BYTES)
        for _ in range(ctp_n):
            _produce(plain, source, value)
        plain.flush(300)
        ctp = consume_transform_produce(bootstrap, source, sink, ctp_n)
        print(f"  consume-transform-produce (read_committed): {ctp:>10,.0f} records/s", flush=True)
    finally:
        cluster.close()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
