"""``python -m deploy.demo`` (what ``make run`` runs): a local cluster, a topic, its state.

Starts a 3-controller + 3-broker cluster detached in ``.cluster`` (or reuses the one running
there), creates the topic ``demo`` (3 partitions, replication factor 3) unless it exists,
then shows ``topics describe``, ``quorum status`` and ``cluster status`` exactly as the
``kraftlog`` command prints them, produces and consumes records over the Kafka protocol with
the native client, and says how to stop it.

The produce step writes with acks=all to the replicated topic ``demo``, so every record it
reports was copied to all in-sync replicas; the consumer sees only committed records (below the
high watermark).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from deploy.cli import main as kraftlog

CLUSTER_DIR = ".cluster"
DEMO_TOPIC = "demo"
EVENTS = 1000
CLIENT_TIMEOUT_S = 30.0


def run_step(title: str, argv: Sequence[str]) -> int:
    print(f"\n$ kraftlog {' '.join(argv)}    # {title}", flush=True)
    rc = kraftlog(list(argv))
    sys.stdout.flush()
    return rc


def produce_and_consume() -> int:
    """Send EVENTS keyed records to DEMO_TOPIC (acks=all) and read them all back."""
    import time

    from deploy.local_cluster import LocalCluster
    from kraftlog_client import Consumer, Producer

    bootstrap = ",".join(LocalCluster.open(CLUSTER_DIR).bootstrap_servers())
    print(f"\n# produce {EVENTS} records to {DEMO_TOPIC} and read them back ({bootstrap})")
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "compression.type": "zstd"})
    try:
        futures = [
            producer.send(DEMO_TOPIC, value=b"event %d" % i, key=b"user-%d" % (i % 10))
            for i in range(EVENTS)
        ]
        producer.flush(CLIENT_TIMEOUT_S)
        last = [f.get(CLIENT_TIMEOUT_S) for f in futures][-1]
    finally:
        producer.close(CLIENT_TIMEOUT_S)
    print(
        f"produced {EVENTS} records; the last went to partition {last.partition} "
        f"at offset {last.offset}"
    )
    consumer = Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"})
    per_partition: dict[int, int] = {}
    try:
        consumer.assign([(DEMO_TOPIC, p) for p in consumer.partitions_for_topic(DEMO_TOPIC)])
        deadline = time.monotonic() + CLIENT_TIMEOUT_S
        while sum(per_partition.values()) < EVENTS and time.monotonic() < deadline:
            for r in consumer.poll(timeout_ms=500):
                per_partition[r.partition] = per_partition.get(r.partition, 0) + 1
    finally:
        consumer.close()
    print(
        f"consumed {sum(per_partition.values())} records: "
        + ", ".join(f"partition {p}: {n}" for p, n in sorted(per_partition.items()))
    )
    return 0 if sum(per_partition.values()) >= EVENTS else 1


def main() -> int:
    steps: list[tuple[str, list[str]]] = [
        ("start a local cluster", ["cluster", "up", "--dir", CLUSTER_DIR, "--detach"]),
        (
            "create a topic",
            [
                "topics",
                "create",
                DEMO_TOPIC,
                "--partitions",
                "3",
                "--replication-factor",
                "3",
                "--if-not-exists",
                "--dir",
                CLUSTER_DIR,
            ],
        ),
        ("partitions, leaders, ISR", ["topics", "describe", DEMO_TOPIC, "--dir", CLUSTER_DIR]),
        ("the controller quorum", ["quorum", "status", "--dir", CLUSTER_DIR]),
        ("every node", ["cluster", "status", "--dir", CLUSTER_DIR]),
    ]
    for title, argv in steps:
        rc = run_step(title, argv)
        if rc != 0:
            print(f"\nstep failed (exit {rc}); node logs are in {CLUSTER_DIR}/node-*/node.log")
            return rc
    rc = produce_and_consume()
    if rc != 0:
        print(f"\nproduce/consume failed; node logs are in {CLUSTER_DIR}/node-*/node.log")
        return rc
    print(
        f"\nThe cluster keeps running in {CLUSTER_DIR}. Stop it with `make stop` "
        f"(or `.venv/bin/kraftlog cluster down --dir {CLUSTER_DIR}`)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
