"""Sustained replicated produce of 1 KiB records from librdkafka, with and without
``log.writeback.window.bytes`` (prints; never asserts; a ``make bench`` section).

    .venv/bin/python -m bench.sustained_produce [--records 1500000] [--rounds 1]

Each trial is a fresh cluster (1 controller + 3 brokers, RF 3, ``min.insync.replicas`` 2,
one topic of 3 partitions, one leader per broker) taking ``--records`` records of 1 KiB
(1.5 GB by default, so the page cache grows by several GB when the kernel keeps it all)
from one librdkafka producer with acks=all, 1 MiB batches and ``linger.ms`` 50, in one of
two PRODUCERS:

- ``idempotent``: ``enable.idempotence`` true (Kafka's Java default);
- ``plain``: librdkafka's own default, idempotence off, with ``max.in.flight`` 5 (the Java
  producer's default; librdkafka's is 1,000,000).

Per round, each producer against window 0 (Kafka's behaviour) and WINDOW_BYTES, with
PAUSE_S before each trial so memory freed by the previous one has gone back to the host
when the VM reports free pages. Per trial: MB/s from the first produce to the last
acknowledgement, and the brokers' and the producer's user / system CPU seconds.
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
from bench.report import MB, cpu_times
from bench.sections import REPLICATED_OVERRIDES, local_cluster

WINDOW_BYTES = 16 * 1024 * 1024
RECORD_BYTES = 1024
PAUSE_S = 10.0
FLUSH_TIMEOUT_S = 300.0
PRODUCERS: dict[str, dict[str, object]] = {
    "idempotent": {"enable.idempotence": True},
    "plain": {"enable.idempotence": False, "max.in.flight": 5},
}


def trial(window: int, records: int, producer: str) -> dict[str, float]:
    workdir = tempfile.mkdtemp(prefix="kraftlog-writeback-")
    try:
        overrides = {**REPLICATED_OVERRIDES, "log.writeback.window.bytes": str(window)}
        with local_cluster(workdir, 1, 3, overrides) as cluster:
            replication.create_topic(cluster, "wb", 3)
            pids = [pid for n in cluster.broker_ids if (pid := cluster.pid(n)) is not None]
            p = confluent_kafka.Producer(
                {
                    "bootstrap.servers": ",".join(cluster.bootstrap_servers()),
                    "acks": "all",
                    "linger.ms": 50,
                    "batch.size": 1024 * 1024,
                    "queue.buffering.max.messages": 1_000_000,
                    "log_level": 0,
                    **PRODUCERS[producer],
                }
            )
            p.list_topics("wb", timeout=30)
            value = os.urandom(RECORD_BYTES)
            os.sync()
            before = [cpu_times(pid) for pid in pids]
            own_before = os.times()
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
            after = [cpu_times(pid) for pid in pids]
            own = os.times()
        used = [(a[0] - b[0], a[1] - b[1]) for a, b in zip(after, before, strict=True)]
        return {
            "mb_per_s": records * RECORD_BYTES / took / MB,
            "broker_user_s": sum(u for u, _ in used) / len(used),
            "broker_sys_s": sum(s for _, s in used) / len(used),
            "producer_user_s": own.user - own_before.user,
            "producer_sys_s": own.system - own_before.system,
        }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_500_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="500,000 records per trial")
    args = parser.parse_args()
    records = 500_000 if args.quick else args.records
    for r in range(args.rounds):
        for producer in PRODUCERS:
            for window in (0, WINDOW_BYTES):
                time.sleep(PAUSE_S)
                out = trial(window, records, producer)
                print(
                    f"round {r + 1}, {producer} producer, log.writeback.window.bytes "
                    f"{window}: {out['mb_per_s']:.1f} MB/s; per broker CPU user "
                    f"{out['broker_user_s']:.2f} s, system {out['broker_sys_s']:.2f} s; "
                    f"producer {out['producer_user_s']:.2f} / {out['producer_sys_s']:.2f} s",
                    flush=True,
                )


if __name__ == "__main__":
    main()
