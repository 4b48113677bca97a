"""Time from a log directory failing to its partitions being led elsewhere, printed (root).

1 controller and 3 brokers; broker 1 keeps its logs in three directories on failing disks
(chaos/failing_disks.py): a tmpfs filled to ENOSPC, a loop-mounted ext4 forced read-only and
a healthy tmpfs. A topic of 6 partitions, RF 3 (min.insync.replicas 2), puts two replicas in each. A
confluent-kafka idempotent acks=all producer offers 20,000 records/s of 100 B throughout (the
paced producer of bench.rolling_restart).

For each failure (ENOSPC first, then EROFS): the time from the fault (the filler's last write,
the ext4 error) until the metadata shows every partition of that directory with another leader
and broker 1 out of its ISR (target: 5 s), polled every POLL_S; and the producer's latency,
errors and longest acknowledgement stall over the whole run.

    .venv/bin/python -m bench.log_dir_failure

Part of ``make bench`` (bench.suite runs it as the "log_dir_failure" section).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path

import confluent_kafka
import confluent_kafka.admin

from bench.rolling_restart import RATE, Phase, idempotent_producer, produce_for
from chaos.failing_disks import FailingDisks, unavailable_reason
from deploy.local_cluster import LocalCluster

PARTITIONS = 6  # each directory of broker 1 holds two
READY_TIMEOUT_S = 90.0
MOVE_TIMEOUT_S = 60.0
POLL_S = 0.02
TARGET_S = 5.0


def placement(disks: FailingDisks, topic: str) -> dict[int, Path]:
    """partition -> the directory of broker 1 holding it."""
    return {p: d for (t, p), d in disks.replica_dirs().items() if t == topic}


def moved_off(
    admin: confluent_kafka.admin.AdminClient, topic: str, partitions: list[int], broker: int
) -> bool:
    md = admin.list_topics(topic, timeout=5)
    for index in partitions:
        p = md.topics[topic].partitions[index]
        if p.leader in (broker, -1) or broker in p.isrs:
            return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="accepted; the run is short")
    parser.parse_args()
    why = unavailable_reason()
    if why is not None:
        print(f"log directory failure benchmark skipped: {why}")
        return
    workdir = Path(tempfile.mkdtemp(prefix="kraftlog-bench-logdirs-"))
    disks = FailingDisks(workdir / "disks")
    cluster = LocalCluster.create(
        workdir / "cluster",
        controllers=1,
        brokers=3,
        overrides={"min.insync.replicas": "2"},
    )
    jbod = cluster.broker_ids[0]
    disks.use_for(cluster, jbod)
    stop = threading.Event()
    producer: threading.Thread | None = None
    try:
        cluster.start()
        cluster.wait_ready(READY_TIMEOUT_S)
        bootstrap = ",".join(cluster.bootstrap_servers())
        admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": bootstrap})
        topic = f"jbod-{uuid.uuid4().hex[:6]}"
        futures = admin.create_topics([confluent_kafka.admin.NewTopic(topic, PARTITIONS, 3)])
        for f in futures.values():
            f.result(30)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while len(placement(disks, topic)) < PARTITIONS and time.monotonic() < deadline:
            time.sleep(0.1)
        by_dir: dict[Path, list[int]] = {}
        for index, d in placement(disks, topic).items():
            by_dir.setdefault(d, []).append(index)
        print(
            f"kraftlog log directory failure benchmark: 1 controller + 3 brokers, RF 3, "
            f"{os.cpu_count()} cores, {RATE:,} records/s offered (idempotent acks=all); broker "
            f"{jbod}'s replicas per directory: "
            + ", ".join(f"{d.parent.name} {len(ts)}" for d, ts in sorted(by_dir.items())),
            flush=True,
        )
        acks = Phase()
        p = idempotent_producer(bootstrap)
        producer = threading.Thread(
            target=produce_for, args=(p, topic, acks, stop, MOVE_TIMEOUT_S * 4), daemon=True
        )
        producer.start()
        time.sleep(3)  # warm-up under load
        full, ext4, _healthy = disks.log_dirs()
        for label, failing, fault in (
            ("ENOSPC (tmpfs filled)", full, disks.fill),
            ("EROFS (ext4 error)", ext4, disks.break_ext4),
        ):
            fault()
            started = time.monotonic()
            moved = False
            while time.monotonic() - started < MOVE_TIMEOUT_S:
                if moved_off(admin, topic, by_dir.get(failing, []), jbod):
                    moved = True
                    break
                time.sleep(POLL_S)
            took = time.monotonic() - started
            verdict = (
                "not moved in time"
                if not moved
                else ("ok" if took <= TARGET_S else f"over the {TARGET_S:.0f} s target")
            )
            print(
                f"  {label:<22} {len(by_dir.get(failing, []))} partitions led elsewhere after "
                f"{took * 1000:7.1f} ms ({verdict})",
                flush=True,
            )
            time.sleep(1)
        stop.set()
        producer.join(MOVE_TIMEOUT_S)
        print(acks.report("producer"), flush=True)
    finally:
        stop.set()
        cluster.close()
        disks.close()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
