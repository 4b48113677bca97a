"""kraftlog and NATS JetStream, each driven by a native client (prints, never asserts).

    .venv/bin/python -m bench.native_peers [--quick]

The Python-client pairs of bench/nats_jetstream.py mostly compare nats-py with kraftlog's own
Python client. Here each server gets a client whose batching and sending run in compiled code:

- NATS JetStream (3 nodes, a stream of 3 replicas, file storage) with its Go client, nats.go
  from Debian's ``golang-github-nats-io-go-nats-dev``: ``bench/nats_native/main.go``, built
  offline in GOPATH mode into ``bench/.build/`` on first use (``make bench`` installs the
  packages as root);
- kraftlog (1 controller + 3 brokers, RF 3, ``min.insync.replicas`` 2, acks=all, idempotent)
  with librdkafka through confluent-kafka: C batching and sending, Python only calling
  ``produce``/``poll``/``consume``.

Rows, the same shapes on both sides: produce of 100 B and 1 KiB (every acknowledgement
received; kraftlog on 3 partitions, one leader per broker, as the suite's replicated section;
NATS on its one stream), consume of what was produced from the start, and end-to-end latency
at 5,000 / 20,000 / 50,000 messages/s offered (one partition or stream; a paced publisher
writes each message's due time, CLOCK_MONOTONIC; the consumer takes now - due; after 1 s of
warm-up). kraftlog's consumer runs in a process of its own, as librdkafka's does not share the
producer's interpreter lock then; NATS's publisher and subscriber share one Go process.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import confluent_kafka

from bench import anchors, go_build, replication
from bench.nats_jetstream import NatsCluster
from bench.report import latency_summary, rate
from bench.sections import REPLICATED_OVERRIDES, local_cluster

SOURCE_DIR = Path(__file__).resolve().parent / "nats_native"
RUN_TIMEOUT_S = 600.0
LATENCY_RATES = (5_000, 20_000, 50_000)
WARMUP_S = 1.0
SIZES = (100, 1024)
PARTITIONS = 3
_DUE = struct.Struct(">q")


def go_binary() -> Path | None:
    """The Go client program, built if needed; None when Go or nats.go is not installed."""
    return go_build.go_binary(SOURCE_DIR, "nats-bench", "github.com/nats-io/nats.go")


# --- NATS with nats.go --------------------------------------------------------------------------


def _go(binary: Path, servers: list[str], *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [str(binary), *args, "-servers", ",".join(servers)],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"nats-bench {args[0]} failed: {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def nats_rows(binary: Path, directory: str, quick: bool) -> dict[str, Any]:
    counts = _counts(quick)
    seconds = _latency_seconds(quick)
    cluster = NatsCluster(directory)
    out: dict[str, Any] = {}
    try:
        cluster.start()
        for size in SIZES:
            n, stream = counts[size], f"native{size}"
            p = _go(
                binary,
                cluster.servers,
                "produce",
                "-stream",
                stream,
                "-n",
                str(n),
                "-size",
                str(size),
            )
            out[f"produce_{size}"] = {**rate(n, p["seconds"], size), "errors": p["errors"]}
            c = _go(binary, cluster.servers, "consume", "-stream", stream, "-n", str(n))
            out[f"consume_{size}"] = rate(c["messages"], c["seconds"], size)
        for offered in LATENCY_RATES:
            os.sync()
            host = anchors.host_speed()
            r = _go(
                binary,
                cluster.servers,
                "latency",
                "-stream",
                f"nlat{offered}",
                "-rate",
                str(offered),
                "-seconds",
                str(seconds),
                "-warmup",
                str(WARMUP_S),
            )
            out[f"e2e_{offered}"] = {**latency_summary(r["latencies_s"], offered, seconds), **host}
    finally:
        cluster.close()
    return out


# --- kraftlog with librdkafka ------------------------------------------------------------------


def _producer(bootstrap: str, **extra: object) -> confluent_kafka.Producer:
    return confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "batch.size": 256 * 1024,
            "queue.buffering.max.messages": 1_000_000,
            "log_level": 0,
            **extra,
        }
    )


def _produce_n(bootstrap: str, topic: str, n: int, size: int) -> float:
    p = _producer(bootstrap)
    p.list_topics(topic, timeout=30)
    value = os.urandom(size)
    start = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                p.produce(topic, value)
                break
            except BufferError:
                p.poll(0.005)
    if p.flush(300) != 0:
        raise RuntimeError(f"{topic}: records left unacknowledged")
    return time.perf_counter() - start


def _consume_n(bootstrap: str, topic: str, n: int) -> tuple[float, int]:
    c = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"native-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            # librdkafka stops prefetching at 100,000 queued messages or 64 MiB by default,
            # which leaves the brokers idle while Python drains the queue.
            "queued.min.messages": 1_000_000,
            "queued.max.messages.kbytes": 1_048_576,
            "max.partition.fetch.bytes": 8 * 1024 * 1024,
            "log_level": 0,
        }
    )
    got = 0
    try:
        c.assign(
            [
                confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
                for p in range(PARTITIONS)
            ]
        )
        # The clock starts at the first record, as nats-bench's does: connecting and finding
        # the partitions' first offsets are not part of the rate.
        deadline = time.perf_counter() + 300
        while got == 0 and time.perf_counter() < deadline:
            got = sum(1 for m in c.consume(num_messages=1, timeout=1.0) if not m.error())
        start = time.perf_counter()
        while got < n and time.perf_counter() < deadline:
            # Never more than remain: consume() waits for num_messages until its timeout.
            batch = c.consume(num_messages=min(10_000, n - got), timeout=1.0)
            got += sum(1 for m in batch if not m.error())
        return time.perf_counter() - start, got - 1
    finally:
        c.close()


def _latency_reader(bootstrap: str, topic: str, total: int, ready: Any, out: Any) -> None:
    """Due -> delivered seconds (CLOCK_MONOTONIC, shared by every process) of the first
    ``total`` records of ``topic``, sent back through ``out``."""
    c = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"native-lat-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 5,
            "log_level": 0,
        }
    )
    latencies: list[int] = []
    try:
        c.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
        c.poll(0.5)
        ready.set()
        deadline = time.monotonic() + 120
        while len(latencies) < total and time.monotonic() < deadline:
            m = c.poll(0.05)
            if m is not None and m.error() is None and m.value():
                latencies.append(time.monotonic_ns() - _DUE.unpack_from(m.value())[0])
    finally:
        c.close()
        out.send(latencies)


def _e2e(bootstrap: str, topic: str, offered: int, seconds: float) -> list[float]:
    warm = int(WARMUP_S * offered)
    total = warm + int(seconds * offered)
    ctx = multiprocessing.get_context("spawn")  # librdkafka threads do not survive fork
    ready = ctx.Event()
    receive, send = ctx.Pipe(duplex=False)
    reader = ctx.Process(
        target=_latency_reader, args=(bootstrap, topic, total, ready, send), daemon=True
    )
    reader.start()
    ready.wait(60)
    p = _producer(bootstrap, **{"linger.ms": 1})
    p.list_topics(topic, timeout=30)
    pad = b"x" * (100 - _DUE.size)
    start = time.monotonic_ns()
    for i in range(total):
        due = start + i * 1_000_000_000 // offered
        wait = due - time.monotonic_ns()
        if wait > 0:
            time.sleep(wait / 1e9)
        p.produce(topic, _DUE.pack(due) + pad, partition=0)
        p.poll(0)
    p.flush(60)
    latencies: list[int] = receive.recv() if receive.poll(seconds + 120) else []
    reader.join(30)
    return [ns / 1e9 for ns in latencies[warm:]]


def kraftlog_rows(directory: str, quick: bool) -> dict[str, Any]:
    counts = _counts(quick)
    seconds = _latency_seconds(quick)
    out: dict[str, Any] = {}
    with local_cluster(directory, 1, 3, REPLICATED_OVERRIDES) as cluster:
        bootstrap = ",".join(cluster.bootstrap_servers())
        replication.create_topic(cluster, "native-warmup", PARTITIONS)
        _produce_n(bootstrap, "native-warmup", counts[100] // 4, 100)
        for size in SIZES:
            n, topic = counts[size], f"native{size}"
            replication.create_topic(cluster, topic, PARTITIONS)
            out[f"produce_{size}"] = rate(n, _produce_n(bootstrap, topic, n, size), size)
            took, got = _consume_n(bootstrap, topic, n)  # the first record is not timed
            out[f"consume_{size}"] = rate(got, took, size)
        for offered in LATENCY_RATES:
            topic = f"nlat{offered}"
            replication.create_topic(cluster, topic, 1)
            os.sync()
            host = anchors.host_speed()
            lat = _e2e(bootstrap, topic, offered, seconds)
            out[f"e2e_{offered}"] = {**latency_summary(lat, offered, seconds), **host}
    return out


def _counts(quick: bool) -> dict[int, int]:
    return {100: 100_000 if quick else 300_000, 1024: 50_000 if quick else 150_000}


def _latency_seconds(quick: bool) -> float:
    return 3.0 if quick else 8.0


# --- the section -------------------------------------------------------------------------------


def section_native_peers(directory: str, quick: bool) -> dict[str, Any]:
    """Both servers with native clients, one after the other in the same session."""
    binary = go_binary()
    if binary is None:
        return {
            "skipped": "go or nats.go missing (make bench installs golang-go and "
            "golang-github-nats-io-go-nats-dev)"
        }
    if shutil.which("nats-server") is None:
        return {"skipped": "nats-server missing (make bench installs it)"}
    return {
        "kraftlog": kraftlog_rows(os.path.join(directory, "kraftlog"), quick),
        "nats": nats_rows(binary, os.path.join(directory, "nats"), quick),
    }


def ratios(section: dict[str, Any]) -> list[tuple[str, str, str, float]]:
    """(row, kraftlog figure, NATS figure, ratio) of every pair, ratio > 1 favouring kraftlog:
    records/s kraftlog / NATS, p99 NATS / kraftlog."""
    k, n = section["kraftlog"], section["nats"]
    out = []
    for kind in ("produce", "consume"):
        for size in SIZES:
            key = f"{kind}_{size}"
            kr, nr = k[key]["records_per_s"], n[key]["records_per_s"]
            out.append((f"{kind} {size} B (records/s)", f"{kr:,.0f}", f"{nr:,.0f}", kr / nr))
    for offered in LATENCY_RATES:
        key = f"e2e_{offered}"
        kp, np_ = k[key]["p99_ms"], n[key]["p99_ms"]
        out.append(
            (
                f"end-to-end p50 / p99 at {offered:,}/s (ms)",
                f"{k[key]['p50_ms']:.2f} / {kp:.2f}",
                f"{n[key]['p50_ms']:.2f} / {np_:.2f}",
                np_ / kp if kp else float("nan"),
            )
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="kraftlog-bench-native-")
    try:
        section = section_native_peers(workdir, args.quick)
        if "skipped" in section:
            print(f"skipped: {section['skipped']}")
            return
        print(
            f"native clients, {os.cpu_count()} cores: kraftlog RF 3 with confluent-kafka "
            f"{confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]}); "
            "NATS JetStream R3 with nats.go"
        )
        print(f"  {'row':<42} {'kraftlog':>18} {'NATS':>18} {'ratio':>7}")
        for label, kf, nf, ratio in ratios(section):
            print(f"  {label:<42} {kf:>18} {nf:>18} {ratio:>6.2f}x")
        print("  (ratio > 1 favours kraftlog: records/s kraftlog / NATS, p99 NATS / kraftlog)")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
