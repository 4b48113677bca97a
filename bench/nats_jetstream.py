"""NATS JetStream beside kraftlog: a 3-node cluster, a stream of 3 replicas (prints, never asserts).

    .venv/bin/python -m bench.nats_jetstream            # produce/consume 100 B and 1 KiB
    .venv/bin/python -m bench.nats_jetstream --quick

Needs Debian's ``nats-server`` on PATH (``make bench`` installs it as root) and the nats-py
client (the ``bench`` extra). :class:`NatsCluster` starts three ``nats-server`` processes on
127.0.0.1 (ports from deploy.ports.free_ports, below the ephemeral range), each with JetStream
and file storage in its own directory, routes to the other two; they are killed by ``close()``.

Workloads, the same shapes as kraftlog's in bench/suite.py:

- produce: one asyncio publisher, ``publish_async`` (acks collected by nats-py's futures, at
  most ``max_pending`` in flight), to a stream with ``num_replicas=3`` and file storage. The
  stream's acknowledgement means the message is stored by a quorum (2 of 3): the counterpart of
  kraftlog's acks=all with min.insync.replicas 2.
- consume: one ordered pull consumer without acks (``AckPolicy.NONE``) reading the stream from
  the start in batches: the counterpart of a Kafka consumer that does not commit per record.
- end-to-end latency at a fixed rate: a paced publisher writes its due time (CLOCK_MONOTONIC ns,
  the same clock in every process) into each message; a push subscriber in the same process
  takes ``now - due`` when the message arrives. The publisher does not wait for acks to pace.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.anchors import host_speed
from bench.report import PACING_SLEEP_S, latency_summary, percentile, rate, row
from deploy.ports import free_ports

NATS_SERVER = "nats-server"
READY_TIMEOUT_S = 30.0
STOP_GRACE_S = 5.0
# nats-py's default is 4000 acks in flight; more only adds memory on a 2-core machine.
MAX_PENDING_ACKS = 4000
CONSUME_BATCH = 1000
STREAM_REPLICAS = 3
_DUE = struct.Struct(">q")


def available() -> str | None:
    """The path of nats-server and the nats-py module both present; else None."""
    path = shutil.which(NATS_SERVER)
    try:
        import nats  # noqa: F401
    except ImportError:
        return None
    return path


@dataclass
class _Node:
    name: str
    client_port: int
    cluster_port: int
    directory: Path
    process: subprocess.Popen[bytes] | None = None


class NatsCluster:
    """Three nats-server processes in one cluster on 127.0.0.1, JetStream file storage.

    Not thread-safe; one owner starts and closes it. Every process is killed by ``close()``.
    """

    def __init__(self, root: str | os.PathLike[str], nodes: int = 3) -> None:
        self.root = Path(root)
        ports = free_ports(2 * nodes)
        self.nodes = [
            _Node(f"n{i}", ports[2 * i], ports[2 * i + 1], self.root / f"n{i}")
            for i in range(nodes)
        ]

    @property
    def servers(self) -> list[str]:
        return [f"nats://127.0.0.1:{n.client_port}" for n in self.nodes]

    def pids(self) -> list[int]:
        return [n.process.pid for n in self.nodes if n.process is not None]

    def _config(self, node: _Node) -> str:
        routes = ", ".join(
            f'"nats-route://127.0.0.1:{o.cluster_port}"' for o in self.nodes if o is not node
        )
        return (
            f'server_name: "{node.name}"\n'
            f"listen: 127.0.0.1:{node.client_port}\n"
            f'jetstream {{ store_dir: "{node.directory / "js"}" }}\n'
            f'cluster {{ name: "bench"\n  listen: 127.0.0.1:{node.cluster_port}\n'
            f"  routes: [{routes}] }}\n"
        )

    def start(self) -> None:
        binary = shutil.which(NATS_SERVER)
        if binary is None:
            raise FileNotFoundError("nats-server is not installed (apt-get install nats-server)")
        for node in self.nodes:
            node.directory.mkdir(parents=True, exist_ok=True)
            conf = node.directory / "nats.conf"
            conf.write_text(self._config(node))
            log = open(node.directory / "nats.log", "wb")  # noqa: SIM115 - owned by the process
            try:
                node.process = subprocess.Popen(
                    [binary, "-c", str(conf)], stdout=log, stderr=subprocess.STDOUT
                )
            finally:
                log.close()
        asyncio.run(self._wait_ready())

    async def _wait_ready(self) -> None:
        """Until a stream of 3 replicas can be created and deleted (JetStream meta leader up)."""
        import nats

        deadline = time.monotonic() + READY_TIMEOUT_S
        last: Exception | None = None
        while time.monotonic() < deadline:
            for node in self.nodes:
                if node.process is not None and node.process.poll() is not None:
                    raise RuntimeError(
                        f"nats-server {node.name} exited: "
                        f"{(node.directory / 'nats.log').read_text()[-2000:]}"
                    )
            try:
                nc = await nats.connect(
                    self.servers,
                    connect_timeout=2,
                    max_reconnect_attempts=0,
                    error_cb=_quiet,
                    allow_reconnect=False,
                )
                try:
                    js = nc.jetstream(timeout=5)
                    await js.add_stream(
                        name="ready-probe", subjects=["ready-probe"], num_replicas=STREAM_REPLICAS
                    )
                    await js.delete_stream("ready-probe")
                    return
                finally:
                    await nc.close()
            except Exception as e:  # not ready yet: no meta leader, no route, refused
                last = e
                await asyncio.sleep(0.5)
        raise TimeoutError(f"NATS cluster not ready after {READY_TIMEOUT_S:.0f} s: {last!r}")

    def close(self) -> None:
        for node in self.nodes:
            if node.process is not None and node.process.poll() is None:
                node.process.send_signal(signal.SIGTERM)
        for node in self.nodes:
            if node.process is None:
                continue
            try:
                node.process.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                node.process.kill()
                node.process.wait(STOP_GRACE_S)
            node.process = None


async def _quiet(_error: Exception) -> None:
    """nats-py logs every refused connection while the cluster starts; readiness is polled."""


async def _stream(nc: object, name: str) -> None:
    from nats.js.api import StorageType

    js = nc.jetstream(timeout=10)  # type: ignore[attr-defined]
    await js.add_stream(
        name=name, subjects=[name], num_replicas=STREAM_REPLICAS, storage=StorageType.FILE
    )


async def _produce(servers: list[str], stream: str, n: int, size: int) -> float:
    import nats

    nc = await nats.connect(servers, max_reconnect_attempts=0)
    try:
        await _stream(nc, stream)
        js = nc.jetstream(timeout=30, publish_async_max_pending=MAX_PENDING_ACKS)
        value = os.urandom(size)
        publish = js.publish_async
        start = time.perf_counter()
        futures = [await publish(stream, value) for _ in range(n)]
        await asyncio.wait_for(js.publish_async_completed(), 300)
        elapsed = time.perf_counter() - start
        failed = sum(1 for f in futures if f.exception() is not None)
        if failed:
            raise RuntimeError(f"NATS: {failed} of {n} publishes failed")
        return elapsed
    finally:
        await nc.close()


async def _consume(servers: list[str], stream: str, n: int) -> tuple[float, int]:
    import nats
    from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

    nc = await nats.connect(servers, max_reconnect_attempts=0)
    try:
        js = nc.jetstream(timeout=30)
        sub = await js.pull_subscribe(
            stream,
            durable=None,
            stream=stream,
            config=ConsumerConfig(
                ack_policy=AckPolicy.NONE, deliver_policy=DeliverPolicy.ALL, max_ack_pending=-1
            ),
        )
        count = 0
        nbytes = 0
        start = time.perf_counter()
        deadline = time.monotonic() + 300
        while count < n and time.monotonic() < deadline:
            try:
                msgs = await sub.fetch(CONSUME_BATCH, timeout=5)
            except nats.errors.TimeoutError:
                continue
            count += len(msgs)
            for m in msgs:
                nbytes += len(m.data)
        return time.perf_counter() - start, count
    finally:
        await nc.close()


async def _e2e_latency(
    servers: list[str], stream: str, rate: int, seconds: float, warmup_s: float
) -> list[float]:
    import nats

    nc = await nats.connect(servers, max_reconnect_attempts=0)
    try:
        await _stream(nc, stream)
        js = nc.jetstream(timeout=30, publish_async_max_pending=MAX_PENDING_ACKS)
        latencies: list[float] = []
        warm_until_ns = 0

        async def on_msg(msg: object) -> None:
            due = _DUE.unpack_from(msg.data)[0]  # type: ignore[attr-defined]
            if due >= warm_until_ns:
                latencies.append((time.clock_gettime_ns(time.CLOCK_MONOTONIC) - due) / 1e9)

        from nats.js.api import AckPolicy, ConsumerConfig

        await js.subscribe(
            stream,
            cb=on_msg,
            ordered_consumer=True,
            config=ConsumerConfig(ack_policy=AckPolicy.NONE),
        )
        pad = os.urandom(100 - _DUE.size)
        total = int(rate * (warmup_s + seconds))
        start_ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        warm_until_ns = start_ns + int(warmup_s * 1e9)
        step_ns = 1e9 / rate
        i = 0
        while i < total:
            now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            due_count = min(total, int((now - start_ns) / step_ns) + 1)
            while i < due_count:
                due = start_ns + int(i * step_ns)
                await js.publish_async(stream, _DUE.pack(due) + pad)
                i += 1
            await asyncio.sleep(PACING_SLEEP_S)
        await asyncio.wait_for(js.publish_async_completed(), 60)
        expected = int(rate * seconds)
        deadline = time.monotonic() + 30
        while len(latencies) < expected and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        return latencies
    finally:
        await nc.close()


def produce(cluster: NatsCluster, stream: str, n: int, size: int) -> float:
    """Seconds to publish ``n`` messages of ``size`` bytes, every ack (R3 quorum) received."""
    return asyncio.run(_produce(cluster.servers, stream, n, size))


def consume(cluster: NatsCluster, stream: str, n: int) -> tuple[float, int]:
    """(seconds, messages) to read ``n`` messages of ``stream`` from the start."""
    return asyncio.run(_consume(cluster.servers, stream, n))


def e2e_latency(
    cluster: NatsCluster, stream: str, rate: int, seconds: float, warmup_s: float = 1.0
) -> list[float]:
    """Due -> delivered seconds of each message after ``warmup_s`` at ``rate`` messages/s."""
    return asyncio.run(_e2e_latency(cluster.servers, stream, rate, seconds, warmup_s))


LATENCY_RATES = (5_000, 20_000, 50_000)


def section_nats(directory: str, quick: bool) -> dict[str, Any]:
    """The suite's NATS section: produce/consume 100 B and 1 KiB, e2e latency at fixed rates,
    in the same shapes (and JSON keys) as bench/sections.py's kraftlog figures."""
    scale = 0.25 if quick else 1.0
    cluster = NatsCluster(directory)
    try:
        cluster.start()
        out: dict[str, Any] = {"server": _server_version(), "replicas": STREAM_REPLICAS}
        for size, n in ((100, int(100_000 * scale)), (1024, int(50_000 * scale))):
            stream = f"s{size}"
            out[f"produce_{size}"] = rate(n, produce(cluster, stream, n, size), size)
            seconds, got = consume(cluster, stream, n)
            out[f"consume_{size}"] = rate(got, seconds, size)
        latency: dict[str, Any] = {}
        seconds_per_rate = 3.0 if quick else 5.0
        for offered in LATENCY_RATES:
            os.sync()  # as for kraftlog (bench/sections.latency_rows): no writeback backlog
            host = host_speed()
            lat = e2e_latency(cluster, f"lat{offered}", offered, seconds_per_rate)
            latency[str(offered)] = {
                **latency_summary(lat, offered, seconds_per_rate),
                **host,
            }
        out["e2e_latency"] = latency
        return out
    finally:
        cluster.close()


def _server_version() -> str:
    binary = shutil.which(NATS_SERVER)
    if binary is None:
        return "missing"
    done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10)
    return done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if available() is None:
        print("nats-server or nats-py missing; nothing measured")
        return
    scale = 0.25 if args.quick else 1.0
    tmp = tempfile.mkdtemp(prefix="kraftlog-bench-nats-")
    cluster = NatsCluster(tmp)
    try:
        cluster.start()
        print(f"NATS JetStream: 3 nats-server on 127.0.0.1, stream R{STREAM_REPLICAS}, file")
        for size, n in ((100, int(200_000 * scale)), (1024, int(100_000 * scale))):
            stream = f"s{size}"
            print(
                row(f"produce publish_async {size} B", n, size, produce(cluster, stream, n, size)),
                flush=True,
            )
            seconds, got = consume(cluster, stream, n)
            print(row(f"consume pull {size} B", got, size, seconds), flush=True)
        for rate in (5_000, 20_000):
            lat = e2e_latency(cluster, f"lat{rate}", rate, 3.0 if args.quick else 5.0)
            print(
                f"  e2e at {rate:,}/s: n={len(lat)} p50 {percentile(lat, 0.5) * 1e3:.2f} ms "
                f"p99 {percentile(lat, 0.99) * 1e3:.2f} ms "
                f"p99.9 {percentile(lat, 0.999) * 1e3:.2f} ms",
                flush=True,
            )
    finally:
        cluster.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
