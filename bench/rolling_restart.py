"""Produce latency through a rolling restart, against a quiet run, in one run, printed:
3 controllers and 3 brokers, a topic of 6 partitions (RF 3, min.insync.replicas 2), a
confluent-kafka idempotent acks=all producer offering 20,000 records/s of 100 B.

- quiet: produce for a while, nothing restarted;
- rolling: the same while ``kraftlog cluster restart --rolling`` restarts every node one at a
  time (deploy/rolling_restart.py).

Each phase reports acknowledgement latency p50 / p99 / max and the longest stall: the longest
time with records waiting and none acknowledged (target: no stall longer than 2 s).

    .venv/bin/python -m bench.rolling_restart [--quick]

Part of ``make bench`` (bench.suite runs it as the "rolling_restart" section).
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import tempfile
import threading
import time
import uuid

import confluent_kafka

from deploy.local_cluster import LocalCluster
from deploy.rolling_restart import rolling_restart
from metadata.messages import NewTopic

PARTITIONS = 6
RATE = 20_000
VALUE_BYTES = 100
READY_TIMEOUT_S = 90.0
RESTART_TIMEOUT_S = 120.0
STALL_TARGET_S = 2.0
_TS = struct.Struct(">d")


class Phase:
    """Send times and acknowledgement times of one phase (delivery callbacks run on the
    producing thread, inside poll())."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.ack_times: list[float] = []
        self.errors = 0

    def delivered(self, err: object, msg: confluent_kafka.Message) -> None:
        now = time.monotonic()
        if err is not None:
            self.errors += 1
            return
        self.latencies.append(now - _TS.unpack_from(msg.value())[0])
        self.ack_times.append(now)

    def report(self, label: str) -> str:
        lat = sorted(self.latencies)
        if not lat:
            return f"  {label}: no record acknowledged"

        def q(x: float) -> float:
            return lat[min(len(lat) - 1, int(x * len(lat)))] * 1000

        # The longest stall: the longest gap between acknowledgements, or the longest latency
        # (a gap at the start of a phase shows there).
        gaps = [b - a for a, b in zip(self.ack_times, self.ack_times[1:], strict=False)]
        stall = max([*gaps, lat[-1]])
        verdict = "ok" if stall <= STALL_TARGET_S else f"over the {STALL_TARGET_S:.0f} s target"
        return (
            f"  {label:<8} {len(lat):>9,} records acked, latency p50 {q(0.5):7.1f} ms, "
            f"p99 {q(0.99):8.1f} ms, max {lat[-1] * 1000:8.1f} ms; longest stall "
            f"{stall * 1000:7.1f} ms ({verdict}); errors {self.errors}"
        )


def idempotent_producer(bootstrap: str) -> confluent_kafka.Producer:
    """The producer the phases measure: idempotent, acks=all, 5 ms linger."""
    return confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "log_level": 0,
        }
    )


def produce_for(
    p: confluent_kafka.Producer, topic: str, phase: Phase, until: threading.Event, cap_s: float
) -> None:
    """Offer RATE records/s until ``until`` is set (or ``cap_s`` passes), then flush."""
    pad = b"x" * (VALUE_BYTES - _TS.size)
    start = time.monotonic()
    i = 0
    while not until.is_set() and time.monotonic() - start < cap_s:
        due = start + i / RATE
        now = time.monotonic()
        if now < due:
            p.poll(min(due - now, 0.001))
            continue
        try:
            p.produce(topic, _TS.pack(time.monotonic()) + pad, on_delivery=phase.delivered)
            i += 1
        except BufferError:
            p.poll(0.005)
        p.poll(0)
    p.flush(RESTART_TIMEOUT_S)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    quiet_s = 5.0 if args.quick else 15.0
    workdir = tempfile.mkdtemp(prefix="kraftlog-bench-rolling-")
    cluster = LocalCluster.create(workdir, controllers=3, brokers=3)
    try:
        cluster.start()
        cluster.wait_ready(READY_TIMEOUT_S)
        topic = f"rolling-{uuid.uuid4().hex[:6]}"
        with cluster.client(30.0) as admin:
            (res,) = admin.create_topics(
                [NewTopic(topic, PARTITIONS, 3, configs={"min.insync.replicas": "2"})]
            )
            if res.error_code:
                raise RuntimeError(f"create {topic}: {res.error_message}")
        bootstrap = ",".join(cluster.bootstrap_servers())
        print(
            f"kraftlog rolling restart benchmark: 3 controllers + 3 brokers, RF 3, "
            f"{os.cpu_count()} cores, {RATE:,} records/s of {VALUE_BYTES} B offered, "
            f"confluent-kafka {confluent_kafka.__version__} idempotent acks=all",
            flush=True,
        )
        p = idempotent_producer(bootstrap)
        # Warm-up: connections and metadata, not reported.
        produce_for(p, topic, Phase(), threading.Event(), 2.0)
        quiet = Phase()
        produce_for(p, topic, quiet, threading.Event(), quiet_s)
        print(quiet.report("quiet"), flush=True)
        rolling = Phase()
        done = threading.Event()
        outcome: list[str] = []

        def restart() -> None:
            try:
                steps = rolling_restart(cluster, grace_s=30.0, timeout_s=RESTART_TIMEOUT_S)
                total = sum(s.stop_seconds + s.healthy_seconds for s in steps)
                outcome.append(f"{len(steps)} nodes in {total:.1f} s")
            except Exception as e:  # reported, the phase still ends
                outcome.append(f"failed: {e}")
            finally:
                done.set()

        restarter = threading.Thread(target=restart, daemon=True)
        restarter.start()
        produce_for(p, topic, rolling, done, RESTART_TIMEOUT_S * 8)
        restarter.join(RESTART_TIMEOUT_S)
        print(
            rolling.report("rolling") + f"; restart: {outcome[0] if outcome else '?'}", flush=True
        )
    finally:
        cluster.close()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
