"""Produce/consume benchmark of the native client beside confluent-kafka (prints, never asserts).

    .venv/bin/python bench/produce_consume.py            # full run (about 3-4 minutes)
    .venv/bin/python bench/produce_consume.py --quick    # a short run
    .venv/bin/python -m bench.produce_consume --client-cpu --records 300000   # CPU only

Starts its own LocalCluster (1 controller + 1 broker, replication factor 1) in a temporary
directory and removes it at the end. Figures:

1. Produce and consume throughput (records/s, MB/s of values) for 100 B and 1 KiB values,
   topics of 1 and 6 partitions, native client and confluent-kafka (librdkafka). Producers use
   acks=all (= the leader with RF 1), linger.ms=5, no compression, null keys (sticky); each
   consumer reads the whole topic from the beginning. Both producers use batch.size=256 KiB
   (librdkafka's own default is about 1 MB; the native client's default of 16 KiB, Kafka's,
   costs more per record in Python: its figure is printed as a separate row).
2. Produce latency (send -> delivery callback) p50/p99 at a fixed rate, 100 B records.
3. Broker CPU seconds per GB fetched (from /proc/<pid>/stat) while a raw Fetch loop reads a
   topic over and over, with sendfile (default) and with kraftlog.fetch.zero.copy.enable=false
   (read into memory, then send), the broker restarted in between.
``--client-cpu`` runs only the native client's CPU per record: this process's CPU time
(``time.process_time``, every client thread, the cluster being other processes) around the
produce loop plus flush and around the consume loop, 100 B records, 1 and 3 partitions, the
suite's producer settings (acks=all, idempotent, linger.ms=5, batch.size=256 KiB). CPU per
record moves far less with the machine's load than records/s do.
Targets (2-core machine): >= 300,000 records/s of 100 B produced by the native client;
>= 600,000 records/s consumed; sendfile <= 1/3 of the broker CPU per GB of read-and-send.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import confluent_kafka

from bench.report import cpu_seconds, percentile, row
from common.protocol.api_keys import ApiKey
from deploy.local_cluster import LocalCluster
from kraftlog_client import Admin, Consumer, NewTopic, Producer, TopicPartition
from kraftlog_client.config import ConsumerConfig, client_config
from kraftlog_client.network_client import NetworkClient

GB = 1_000_000_000
_topic_seq = iter(range(1_000_000))


def new_topic(admin: Admin, partitions: int) -> str:
    name = f"bench-{next(_topic_seq)}-p{partitions}"
    admin.create_topics([NewTopic(name, partitions, 1)])
    admin.wait_for_leaders([name], timeout_ms=60_000)
    return name


# -- native client -------------------------------------------------------------------------


BATCH_BYTES = 256 * 1024


def native_produce(
    bootstrap: str, topic: str, n: int, size: int, batch_bytes: int = BATCH_BYTES
) -> float:
    value = os.urandom(size)
    p = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all", "batch.size": batch_bytes}
    )
    try:
        p.partitions_for(topic)  # metadata outside the timed part
        send = p.send
        start = time.perf_counter()
        for _ in range(n):
            send(topic, value)
        p.flush(300)
        return time.perf_counter() - start
    finally:
        p.close(30)


def native_consume(bootstrap: str, topic: str, partitions: int, n: int) -> tuple[float, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(topic, p) for p in range(partitions)])
        for p in range(partitions):
            c.position(TopicPartition(topic, p))
        count = 0
        nbytes = 0
        start = time.perf_counter()
        deadline = time.monotonic() + 300
        while count < n and time.monotonic() < deadline:
            records = c.poll(1000)
            count += len(records)
            for r in records:
                nbytes += len(r.value)
        return time.perf_counter() - start, count
    finally:
        c.close()


def native_latency(bootstrap: str, topic: str, rate: int, seconds: float) -> list[float]:
    value = os.urandom(100)
    latencies: list[float] = []
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"})
    try:
        p.partitions_for(topic)
        total = int(rate * seconds)
        start = time.perf_counter()
        for i in range(total):
            due = start + i / rate
            while (now := time.perf_counter()) < due:
                time.sleep(min(due - now, 0.001))
            sent = time.perf_counter()
            p.send(
                topic,
                value,
                on_delivery=lambda e, m, s=sent: latencies.append(time.perf_counter() - s),
            )
        p.flush(60)
    finally:
        p.close(30)
    return latencies


def client_cpu(bootstrap: str, admin: Admin, n: int) -> None:
    """Native client CPU µs per record (this process, all threads) for produce and consume."""
    value = os.urandom(100)
    for partitions in (1, 3):
        topic = new_topic(admin, partitions)
        p = Producer(
            {
                "bootstrap.servers": bootstrap,
                "linger.ms": 5,
                "acks": "all",
                "enable.idempotence": "true",
                "batch.size": BATCH_BYTES,
            }
        )
        try:
            p.partitions_for(topic)
            send = p.send
            cpu0, wall0 = time.process_time(), time.perf_counter()
            for _ in range(n):
                send(topic, value)
            p.flush(300)
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        finally:
            p.close(30)
        print(
            f"  produce 100 B, {partitions} partition(s): {cpu / n * 1e6:6.2f} µs CPU/record"
            f"  {n / wall:>10,.0f} records/s",
            flush=True,
        )
        cpu0 = time.process_time()
        seconds, got = native_consume(bootstrap, topic, partitions, n)
        cpu = time.process_time() - cpu0
        print(
            f"  consume 100 B, {partitions} partition(s): "
            f"{cpu / max(got, 1) * 1e6:6.2f} µs CPU/record  {got / seconds:>10,.0f} records/s",
            flush=True,
        )


# -- confluent-kafka -----------------------------------------------------------------------


def confluent_produce(bootstrap: str, topic: str, n: int, size: int) -> float:
    value = os.urandom(size)
    p = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "acks": "all",
            "batch.size": BATCH_BYTES,
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    p.list_topics(topic, timeout=30)
    produce = p.produce
    start = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                produce(topic, value)
                break
            except BufferError:
                p.poll(0.005)
    p.flush(300)
    return time.perf_counter() - start


def confluent_consume(bootstrap: str, topic: str, partitions: int, n: int) -> tuple[float, int]:
    c = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "bench-unused", "enable.auto.commit": False}
    )
    try:
        c.assign(
            [
                confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
                for p in range(partitions)
            ]
        )
        count = 0
        start = time.perf_counter()
        deadline = time.monotonic() + 300
        while count < n and time.monotonic() < deadline:
            for m in c.consume(num_messages=10_000, timeout=1.0):
                if m.error() is None:
                    count += 1
        return time.perf_counter() - start, count
    finally:
        c.close()


def confluent_latency(bootstrap: str, topic: str, rate: int, seconds: float) -> list[float]:
    value = os.urandom(100)
    latencies: list[float] = []
    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"})
    p.list_topics(topic, timeout=30)
    total = int(rate * seconds)
    start = time.perf_counter()
    for i in range(total):
        due = start + i / rate
        while (now := time.perf_counter()) < due:
            p.poll(0)
            time.sleep(min(due - now, 0.001))
        sent = time.perf_counter()
        p.produce(
            topic, value, on_delivery=lambda e, m, s=sent: latencies.append(time.perf_counter() - s)
        )
        p.poll(0)
    p.flush(60)
    return latencies


# -- broker CPU per GB fetched --------------------------------------------------------------


def raw_fetch_cpu(
    bootstrap: str, pid: int, topic: str, end_offset: int, total_bytes: int
) -> tuple[float, float, float]:
    """Fetch ``topic``-0 from 0 to ``end_offset`` repeatedly, without decoding, until
    ``total_bytes`` arrived; returns (GB fetched, broker CPU s per GB, seconds)."""
    config = client_config(
        ConsumerConfig, {"bootstrap.servers": bootstrap, "receive.buffer.bytes": 4 << 20}
    )
    client = NetworkClient(config, max_in_flight=1)
    try:
        client.fetch_metadata([topic], 30_000)
        leader = client.metadata.leader_for(TopicPartition(topic, 0))
        if leader is None:
            raise RuntimeError("no leader")
        got = 0
        offset = 0
        cpu0 = cpu_seconds(pid)
        start = time.perf_counter()
        while got < total_bytes:
            body = {
                "replica_id": -1,
                "max_wait_ms": 0,
                "min_bytes": 0,
                "max_bytes": 64 << 20,
                "isolation_level": 0,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [
                    {
                        "topic": topic,
                        "partitions": [
                            {
                                "partition": 0,
                                "current_leader_epoch": -1,
                                "fetch_offset": offset,
                                "log_start_offset": -1,
                                "partition_max_bytes": 8 << 20,
                            }
                        ],
                    }
                ],
                "forgotten_topics_data": [],
                "rack_id": "",
            }
            response = client.request(leader, ApiKey.FETCH, body, 30_000)
            part = response["responses"][0]["partitions"][0]
            records = part["records"] or b""
            got += len(records)
            # Jump by the batches that arrived whole; wrap to the start at the end.
            pos = 0
            n = len(records)
            while n - pos >= 12:
                base = int.from_bytes(records[pos : pos + 8], "big")
                size = int.from_bytes(records[pos + 8 : pos + 12], "big") + 12
                if pos + size > n:
                    break
                last_delta = int.from_bytes(records[pos + 23 : pos + 27], "big")
                offset = base + last_delta + 1
                pos += size
            if offset >= end_offset or not records:
                offset = 0
        elapsed = time.perf_counter() - start
        cpu = cpu_seconds(pid) - cpu0
        return got / GB, cpu / (got / GB), elapsed
    finally:
        client.close()


# -- driver --------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts (~1 minute)")
    parser.add_argument(
        "--client-cpu",
        action="store_true",
        help="only the native client's CPU per record (about 1 minute)",
    )
    parser.add_argument(
        "--records", type=int, default=300_000, help="records per workload with --client-cpu"
    )
    args = parser.parse_args()
    scale = 0.2 if args.quick else 1.0
    counts = {100: int(300_000 * scale), 1024: int(100_000 * scale)}
    fetch_bytes = int((1 if args.quick else 3) * GB)
    latency_rate, latency_s = 2000, (3.0 if args.quick else 8.0)

    tmp = tempfile.mkdtemp(prefix="kraftlog-bench-pc-")
    cluster = LocalCluster.create(
        os.path.join(tmp, "cluster"),
        controllers=1,
        brokers=1,
        overrides={"controller.quorum.election.timeout.ms": "500"},
    )
    try:
        cluster.start()
        cluster.wait_ready(60)
        bootstrap = ",".join(cluster.bootstrap_servers())
        broker_id = cluster.broker_ids[0]
        admin = Admin({"bootstrap.servers": bootstrap})
        print(
            f"cluster: 1 controller + 1 broker at {bootstrap}, RF 1; "
            f"{os.cpu_count()} CPUs; quick={args.quick}"
        )
        if args.client_cpu:
            print(
                f"\nNative client CPU per record ({args.records:,} records of 100 B; load "
                f"{os.getloadavg()[0]:.1f})"
            )
            client_cpu(bootstrap, admin, args.records)
            admin.close()
            return

        print(
            "\n1. Throughput (values only; null keys; acks=all; linger.ms=5; batch.size=256 KiB; "
            "no compression)"
        )
        clients: list[tuple[str, Callable[..., float], Callable[..., tuple[float, int]]]] = [
            ("native", native_produce, native_consume),
            ("confluent-kafka", confluent_produce, confluent_consume),
        ]
        for partitions in (1, 6):
            for size, n in counts.items():
                for name, produce, consume in clients:
                    topic = new_topic(admin, partitions)
                    seconds = produce(bootstrap, topic, n, size)
                    print(
                        row(
                            f"produce {name} {size} B, {partitions} partition(s)", n, size, seconds
                        ),
                        flush=True,
                    )
                    seconds, got = consume(bootstrap, topic, partitions, n)
                    print(
                        row(
                            f"consume {name} {size} B, {partitions} partition(s)",
                            got,
                            size,
                            seconds,
                        ),
                        flush=True,
                    )

        topic = new_topic(admin, 1)
        n = counts[100]
        seconds = native_produce(bootstrap, topic, n, 100, batch_bytes=16384)
        print(
            row("produce native 100 B, 1 partition, batch.size=16 KiB", n, 100, seconds), flush=True
        )

        print(
            f"\n2. Produce latency, 100 B at {latency_rate} records/s for {latency_s:.0f} s "
            "(send -> delivery report; linger.ms=0)"
        )
        for name, fn in (("native", native_latency), ("confluent-kafka", confluent_latency)):
            topic = new_topic(admin, 1)
            lat = fn(bootstrap, topic, latency_rate, latency_s)
            print(
                f"  {name:<16} n={len(lat):>6}  p50 {percentile(lat, 0.5) * 1000:7.2f} ms  "
                f"p99 {percentile(lat, 0.99) * 1000:7.2f} ms  "
                f"mean {statistics.fmean(lat) * 1000 if lat else float('nan'):7.2f} ms",
                flush=True,
            )

        print(
            f"\n3. Broker CPU per GB fetched ({fetch_bytes / GB:.0f} GB per mode, raw Fetch "
            "loop over a 1 KiB-record topic, page cache warm)"
        )
        topic = new_topic(admin, 1)
        fill = int(200_000 * (0.5 if args.quick else 1.0))
        native_produce(bootstrap, topic, fill, 1024)
        end = admin.list_offsets({TopicPartition(topic, 0): "latest"})[TopicPartition(topic, 0)]
        admin.close()
        results = {}
        for mode, setting in (("sendfile", "true"), ("read+send", "false")):
            if setting == "false":
                cluster.update_config(broker_id, {"kraftlog.fetch.zero.copy.enable": "false"})
                cluster.restart(broker_id)
                cluster.wait_ready(60)
            pid = cluster.pid(broker_id)
            if pid is None:
                raise RuntimeError("broker not running")
            gb, cpu_per_gb, seconds = raw_fetch_cpu(bootstrap, pid, topic, end.offset, fetch_bytes)
            results[mode] = cpu_per_gb
            print(
                f"  {mode:<10} {gb:5.2f} GB in {seconds:5.1f} s ({gb / seconds:5.2f} GB/s)  "
                f"broker CPU {cpu_per_gb:6.3f} s/GB",
                flush=True,
            )
        print(f"  sendfile / read+send CPU ratio: {results['sendfile'] / results['read+send']:.2f}")
    finally:
        cluster.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
