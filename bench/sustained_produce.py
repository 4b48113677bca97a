"""Sustained replicated produce with and without ``log.writeback.window.bytes`` (prints;
never asserts; on demand, not in the suite).

    .venv/bin/python -m bench.writeback_window [--records 1500000] [--rounds 2]

Each trial is a fresh cluster (1 controller + 3 brokers, RF 3, ``min.insync.replicas`` 2,
one topic of 3 partitions, one leader per broker) taking ``--records`` records of 1 KiB
from librdkafka (acks=all, idempotent, 1 MiB batches, ``linger.ms`` 50), about 1.5 GB per
trial so the page cache grows by several GB when the kernel keeps it all. Trials alternate
window 0 (Kafka's behaviour) and WINDOW_BYTES, ``--rounds`` times, with PAUSE_S between
them so memory freed by the previous trial has gone back to the host when the VM reports
free pages. Per trial: MB/s from the first produce to the last acknowledgement, and the
brokers' user / system CPU seconds from /proc.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import confluent_kafka

from bench import replication
from bench.report import MB
from bench.sections import REPLICATED_OVERRIDES, local_cluster

WINDOW_BYTES = 16 * 1024 * 1024
RECORD_BYTES = 1024
PAUSE_S = 10.0
FLUSH_TIMEOUT_S = 300.0
_HZ = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> tuple[float, float]:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) / _HZ, int(fields[12]) / _HZ


def trial(window: int, records: int) -> dict[str, float]:
    workdir = tempfile.mkdtemp(prefix="kraftlog-writeback-")
    try:
        overrides = {**REPLICATED_OVERRIDES, "log.writeback.window.bytes": str(window)}
        with local_cluster(workdir, 1, 3, overrides) as cluster:
            replication.create_topic(cluster, "wb", 3)
            pids = [pid for n in cluster.broker_ids if (pid := cluster.pid(n)) is not None]
            p = confluent_kafka.Producer({
                "bootstrap.servers": ",".join(cluster.bootstrap_servers()),
                "acks": "all", "enable.idempotence": True, "linger.ms": 50,
                "batch.size": 1024 * 1024, "queue.buffering.max.messages": 1_000_000,
                "log_level": 0})
            p.list_topics("wb", timeout=30)
            value = os.urandom(RECORD_BYTES)
            os.sync()
            before = [_cpu_s(pid) for pid in pids]
            start = time.perf_counter()
            for _ in range(records):
                while True:
                    try:
                        p.produce("wb", value)
                        break
                    except BufferError:
                        p.poll(0.005)
            if p.flush(FLUSH_TIMEOUT_S) != 0:
                raise RuntimeError("records left unacknowledged")
            took = time.perf_counter() - start
            after = [_cpu_s(pid) for pid in pids]
        used = [(a[0] - b[0], a[1] - b[1]) for a, b in zip(after, before, strict=True)]
        return {
            "mb_per_s": records * RECORD_BYTES / took / MB,
            "broker_user_s": sum(u for u, _ in used) / len(used),
            "broker_sys_s": sum(s for _, s in used) / len(used),
        }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_500_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    for r in range(args.rounds):
        for window in (0, WINDOW_BYTES):
            time.sleep(PAUSE_S)
            out = trial(window, args.records)
            print(f"round {r + 1}, log.writeback.window.bytes {window}: "
                  f"{out['mb_per_s']:.1f} MB/s; per broker CPU user {out['broker_user_s']:.2f} s,"
                  f" system {out['broker_sys_s']:.2f} s", flush=True)


if __name__ == "__main__":
    main()
