"""Scale: 1,000 idle client connections, 100 producers and a 50-member consumer group on one
cluster, and the end-to-end latency they get at 20,000 records/s (prints; never asserts; on
demand, not in the suite).

    .venv/bin/python -m bench.scale [--seconds 30] [--rate 20000]
        [--client kraftlog|librdkafka|sarama] [--producers 100] [--config KEY=VALUE ...]

1 controller + 3 brokers; one topic of 100 partitions, RF 3, ``min.insync.replicas`` 2.

- Idle connections: 1,000 sockets spread over the brokers, each after an ApiVersions
  exchange (a client that connected and then went quiet), held open for the whole run.
- Clients: kraftlog's own Python client (the default), librdkafka through confluent-kafka
  (``--client librdkafka``), or Sarama in one Go process (``--client sarama``:
  ``bench/scale_sarama/main.go``, built offline from Debian's
  golang-github-shopify-sarama-dev; goroutines instead of processes and threads). On two
  cores the Python-driven load generators take most of the machine at this load (100
  producers sending about one record per request); docs/benchmarks.md has the figures.
- Consumers: 5 processes of 10 threads, each thread one consumer of one group (50 members,
  2 partitions each once the group has settled); the producers start only once every
  member holds an assignment that has not changed for GROUP_SETTLE_S.
- Producers: 4 processes of 25 producers each (``--producers N``: N/4 each; acks=all,
  idempotent, ``linger.ms`` 5 as in Kafka 4's default, or ``--linger-ms``); each process
  offers a quarter of the rate, paced, round-robin over its producers; each record carries
  its due time (CLOCK_MONOTONIC ns).
  Records have no key and go where the client's default partitioner puts them: a sticky
  partition that changes after a batch (kraftlog's client) or after
  ``sticky.partitioning.linger.ms`` (librdkafka); for Sarama, whose own default is a random
  partition per record, the Go program has the Java client's sticky partitioner (a new
  partition after 16 KiB).
- Latency: due -> received at a consumer, for the records due after WARMUP_S; p50 / p99 /
  p99.9 over the timed seconds (target p99 <= 50 ms). With Sarama also due -> acknowledged
  to the producer, which tells the produce path's share.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import confluent_kafka

from bench import go_build, replication
from bench.report import now_ns, percentile, recv_frame, send_paced
from bench.sections import local_cluster
from common.protocol.api_keys import ApiKey
from common.protocol.codec import decode_response, encode_request
from common.protocol.messages.api_versions import ApiVersionsRequest
from deploy.local_cluster import LocalCluster
from kraftlog_client import Consumer, Producer

TOPIC = "scale"
PARTITIONS = 100
IDLE_CONNECTIONS = 1_000
PRODUCER_PROCESSES = 4
PRODUCERS = 100
CONSUMER_PROCESSES = 5
CONSUMERS_PER_PROCESS = 10
GROUP = "scale-group"
GROUP_SETTLE_S = 5.0
GROUP_READY_TIMEOUT_S = 180.0
WARMUP_S = 5.0
DRAIN_S = 30.0
POLL_MS = 100
SARAMA_SOURCE = Path(__file__).resolve().parent / "scale_sarama"
RECORD_BYTES = 100
P99_TARGET_MS = 50.0
_DUE = struct.Struct(">q")


def idle_connections(brokers: list[tuple[str, int]], n: int) -> list[socket.socket]:
    """``n`` connections, each after one ApiVersions v0 exchange, left open."""
    out = []
    request = encode_request(ApiKey.API_VERSIONS, 0, 1, "idle", ApiVersionsRequest())
    for i in range(n):
        host, port = brokers[i % len(brokers)]
        s = socket.create_connection((host, port), timeout=30)
        s.sendall(request)  # encode_request frames it (size prefix included)
        _, body = decode_response(ApiKey.API_VERSIONS, 0, recv_frame(s))
        if body.error_code:
            raise RuntimeError(f"ApiVersions refused: {body}")
        out.append(s)
    return out


class _GroupMember:
    """One member of GROUP subscribed to TOPIC, through ``client``; ``poll`` returns the values
    of the records it received (waiting up to POLL_MS for the first)."""

    def __init__(self, client: str, bootstrap: str) -> None:
        self._native = client == "librdkafka"
        if self._native:
            self._c: Any = confluent_kafka.Consumer(
                {
                    "bootstrap.servers": bootstrap,
                    "group.id": GROUP,
                    "auto.offset.reset": "latest",
                    "enable.auto.commit": False,
                    "log_level": 0,
                }
            )
        else:
            self._c = Consumer(
                {
                    "bootstrap.servers": bootstrap,
                    "group.id": GROUP,
                    "auto.offset.reset": "latest",
                    "enable.auto.commit": "false",
                }
            )
        self._c.subscribe([TOPIC])

    def poll(self) -> list[bytes]:
        if not self._native:
            return [r.value for r in self._c.poll(POLL_MS)]
        # poll() returns at the first record; consume(n, timeout) would wait for n of them.
        m = self._c.poll(POLL_MS / 1e3)
        return [] if m is None or m.error() is not None else [m.value()]

    def assignment(self) -> frozenset[Any]:
        if self._native:
            return frozenset((tp.topic, tp.partition) for tp in self._c.assignment())
        return frozenset(self._c.assignment())

    def close(self) -> None:
        self._c.close()


def _consumers(
    client: str, bootstrap: str, settled: Any, start: Any, warm_ns: Any, end_ns: Any, conn: Any
) -> None:
    """Spawned: CONSUMERS_PER_PROCESS group members on threads. Sets ``settled`` once each
    has held the same non-empty assignment for GROUP_SETTLE_S; after ``start`` collects the
    latencies (s) of records due at or after ``warm_ns`` until ``end_ns`` plus DRAIN_S."""
    latencies: list[float] = []
    lock = threading.Lock()
    stable = [False] * CONSUMERS_PER_PROCESS
    stop = threading.Event()

    def member(i: int) -> None:
        c = _GroupMember(client, bootstrap)
        try:
            last, since = None, time.monotonic()
            mine: list[float] = []
            while not stop.is_set():
                values = c.poll()
                now = now_ns()
                assignment = c.assignment()
                if assignment != last:
                    last, since = assignment, time.monotonic()
                stable[i] = bool(assignment) and time.monotonic() - since >= GROUP_SETTLE_S
                if start.is_set():
                    warm = warm_ns.value
                    for value in values:
                        due = _DUE.unpack_from(value)[0]
                        if due >= warm:
                            mine.append((now - due) / 1e9)
                    if now > end_ns.value + int(DRAIN_S * 1e9):
                        break
            with lock:
                latencies.extend(mine)
        finally:
            c.close()

    threads = [
        threading.Thread(target=member, args=(i,), daemon=True)
        for i in range(CONSUMERS_PER_PROCESS)
    ]
    for t in threads:
        t.start()
    deadline = time.monotonic() + GROUP_READY_TIMEOUT_S + DRAIN_S + 600
    while not start.is_set() and time.monotonic() < deadline:
        if all(stable):
            settled.set()
        time.sleep(0.2)
    for t in threads:
        t.join(max(1.0, deadline - time.monotonic()))
    stop.set()
    conn.send(latencies)


def _producers(
    client: str,
    bootstrap: str,
    count: int,
    rate: float,
    start_ns: int,
    seconds: float,
    linger_ms: int,
    conn: Any,
) -> None:
    """Spawned: ``count`` producers sharing ``rate`` records/s, paced."""
    config = {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": linger_ms}
    native = client == "librdkafka"
    producers: list[Any] = [
        confluent_kafka.Producer({**config, "enable.idempotence": True, "log_level": 0})
        if native
        else Producer({**config, "enable.idempotence": "true"})
        for _ in range(count)
    ]
    failed = 0

    def done(err: object, _md: object) -> None:
        nonlocal failed
        if err is not None:
            failed += 1

    sent = 0
    try:
        for p in producers:
            if native:
                p.list_topics(TOPIC, timeout=30)
            else:
                p.partitions_for(TOPIC)
        pad = os.urandom(RECORD_BYTES - _DUE.size)

        def send(i: int, due: int) -> None:
            nonlocal sent
            p = producers[i % count]
            if native:
                p.produce(TOPIC, _DUE.pack(due) + pad, on_delivery=done)
                p.poll(0)  # serves delivery reports; never waits
            else:
                p.send(TOPIC, _DUE.pack(due) + pad, on_delivery=done)
            sent += 1

        send_paced(send, rate, start_ns, int(rate * seconds))
        for p in producers:
            p.flush(120)
    finally:
        if not native:  # librdkafka's producers close when collected
            for p in producers:
                p.close(30)
        conn.send({"sent": sent, "failed": failed})


def _sarama(
    bootstrap: str, producers: int, rate: int, seconds: float, linger_ms: int
) -> dict[str, Any]:
    """The whole load (producers and group members) from the Go program; its figures."""
    binary = go_build.go_binary(SARAMA_SOURCE, "scale-sarama", "github.com/Shopify/sarama")
    if binary is None:
        raise RuntimeError("go or Sarama is not installed (make test installs them as root)")
    done = subprocess.run(
        [
            str(binary),
            "-brokers",
            bootstrap,
            "-topic",
            TOPIC,
            "-group",
            GROUP,
            "-producers",
            str(producers),
            "-members",
            str(CONSUMER_PROCESSES * CONSUMERS_PER_PROCESS),
            "-rate",
            str(rate),
            "-seconds",
            f"{seconds}s",
            "-warmup",
            f"{WARMUP_S}s",
            "-drain",
            f"{DRAIN_S}s",
            "-linger",
            f"{linger_ms}ms",
            "-settle",
            f"{GROUP_SETTLE_S}s",
            "-ready-timeout",
            f"{GROUP_READY_TIMEOUT_S}s",
            "-size",
            str(RECORD_BYTES),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=GROUP_READY_TIMEOUT_S + WARMUP_S + seconds + DRAIN_S + 120,
    )
    try:
        out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError) as e:
        raise RuntimeError(f"scale-sarama failed:\n{done.stdout}\n{done.stderr[-4000:]}") from e
    if not out.get("ok"):
        raise RuntimeError(f"scale-sarama: {out.get('error')}")
    return out


def run(
    cluster: LocalCluster,
    rate: int,
    seconds: float,
    linger_ms: int,
    client: str,
    producers: int = PRODUCERS,
) -> dict[str, Any]:
    bootstrap = ",".join(cluster.bootstrap_servers())
    brokers = []
    for address in cluster.bootstrap_servers():
        host, port = address.rsplit(":", 1)
        brokers.append((host, int(port)))
    idle = idle_connections(brokers, IDLE_CONNECTIONS)
    if client == "sarama":
        try:
            out = _sarama(bootstrap, producers, rate, seconds, linger_ms)
            still_open = sum(1 for s in idle if s.fileno() >= 0)
        finally:
            for s in idle:
                s.close()
        latencies = [ms / 1e3 for ms in out["latencies_ms"]]
        figures = _figures(
            rate,
            seconds,
            out["group_settled_s"],
            still_open,
            out["sent"],
            out["send_failures"],
            latencies,
        )
        acks = [ms / 1e3 for ms in out.get("ack_latencies_ms") or ()]
        if acks:
            figures["ack_p50_ms"] = percentile(acks, 0.5) * 1e3
            figures["ack_p99_ms"] = percentile(acks, 0.99) * 1e3
        return figures
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    warm_ns, end_ns = ctx.Value("q", 0), ctx.Value("q", 0)
    consumer_procs, consumer_pipes, settled = [], [], []
    try:
        for _ in range(CONSUMER_PROCESSES):
            parent, child = ctx.Pipe()
            ready = ctx.Event()
            proc = ctx.Process(
                target=_consumers, args=(client, bootstrap, ready, start, warm_ns, end_ns, child)
            )
            proc.start()
            consumer_procs.append(proc)
            consumer_pipes.append(parent)
            settled.append(ready)
        t0 = time.monotonic()
        for ready in settled:
            if not ready.wait(max(1.0, GROUP_READY_TIMEOUT_S - (time.monotonic() - t0))):
                raise RuntimeError("the 50-member group did not settle")
        group_s = time.monotonic() - t0
        start_ns = now_ns() + int(5e9)  # the producer processes start before the first due
        warm_ns.value = start_ns + int(WARMUP_S * 1e9)
        end_ns.value = start_ns + int((WARMUP_S + seconds) * 1e9)
        start.set()
        producer_pipes, producer_procs = [], []
        for _ in range(PRODUCER_PROCESSES):
            parent, child = ctx.Pipe()
            proc = ctx.Process(
                target=_producers,
                args=(
                    client,
                    bootstrap,
                    producers // PRODUCER_PROCESSES,
                    rate / PRODUCER_PROCESSES,
                    start_ns,
                    WARMUP_S + seconds,
                    linger_ms,
                    child,
                ),
            )
            proc.start()
            producer_procs.append(proc)
            producer_pipes.append(parent)
        produced = [p.recv() if p.poll(WARMUP_S + seconds + 240) else {} for p in producer_pipes]
        latencies: list[float] = []
        for p in consumer_pipes:
            if p.poll(DRAIN_S + 120):
                latencies.extend(p.recv())
        for proc in producer_procs + consumer_procs:
            proc.join(30)
            if proc.is_alive():
                proc.kill()
                proc.join()
        still_open = sum(1 for s in idle if s.fileno() >= 0)
    finally:
        for s in idle:
            s.close()
    return _figures(
        rate,
        seconds,
        group_s,
        still_open,
        sum(p.get("sent", 0) for p in produced),
        sum(p.get("failed", 0) for p in produced),
        latencies,
    )


def _figures(
    rate: int,
    seconds: float,
    group_s: float,
    still_open: int,
    sent: int,
    failed: int,
    latencies: list[float],
) -> dict[str, Any]:
    return {
        "rate": rate,
        "seconds": seconds,
        "group_settled_s": group_s,
        "timed_expected": int(rate * seconds),
        "idle_connections_open": still_open,
        "sent": sent,
        "send_failures": failed,
        "samples": len(latencies),
        "p50_ms": percentile(latencies, 0.5) * 1e3,
        "p99_ms": percentile(latencies, 0.99) * 1e3,
        "p999_ms": percentile(latencies, 0.999) * 1e3,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rate", type=int, default=20_000)
    parser.add_argument("--linger-ms", type=int, default=5)
    parser.add_argument(
        "--client", choices=("kraftlog", "librdkafka", "sarama"), default="kraftlog"
    )
    parser.add_argument(
        "--producers",
        type=int,
        default=PRODUCERS,
        help=f"a multiple of {PRODUCER_PROCESSES} (default %(default)s)",
    )
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a node setting for the cluster (repeatable); defaults otherwise",
    )
    args = parser.parse_args()
    if args.producers <= 0 or args.producers % PRODUCER_PROCESSES:
        parser.error(f"--producers must be a positive multiple of {PRODUCER_PROCESSES}")
    overrides = dict(item.split("=", 1) for item in args.config)
    workdir = tempfile.mkdtemp(prefix="kraftlog-scale-")
    try:
        with local_cluster(workdir, 1, 3, overrides) as cluster:
            replication.create_topic(cluster, TOPIC, PARTITIONS)
            out = run(cluster, args.rate, args.seconds, args.linger_ms, args.client, args.producers)
        print(
            f"{IDLE_CONNECTIONS:,} idle connections ({out['idle_connections_open']:,} open at "
            f"the end), {args.producers} producers, a "
            f"{CONSUMER_PROCESSES * CONSUMERS_PER_PROCESS}-member group settled in "
            f"{out['group_settled_s']:.1f} s; {out['rate']:,} records/s for "
            f"{out['seconds']:g} s, {args.client} clients, linger.ms {args.linger_ms}: sent "
            f"{out['sent']:,} "
            f"({out['send_failures']} failed), {out['samples']:,} of "
            f"{out['timed_expected']:,} timed records received; end-to-end p50 "
            f"{out['p50_ms']:.1f} ms, p99 {out['p99_ms']:.1f} ms, p99.9 "
            f"{out['p999_ms']:.1f} ms (target p99 <= {P99_TARGET_MS:g} ms)"
            + (
                f"; produce acknowledged p50 {out['ack_p50_ms']:.1f} ms, p99 "
                f"{out['ack_p99_ms']:.1f} ms"
                if "ack_p99_ms" in out
                else ""
            )
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
