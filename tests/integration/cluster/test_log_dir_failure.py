"""Log directory failures on real disks (root: tmpfs and a loop-mounted ext4).

One broker of three keeps its partitions in three directories: a small tmpfs the test fills
to ENOSPC, an ext4 filesystem the test forces read-only (the kernel's own error path, as a
failing disk takes it), and a healthy tmpfs, all with the same free space so that the broker
spreads its replicas over the three. Under an idempotent acks=all producer:

- each failed directory goes offline on its own, the broker process keeps running, reports
  it, and the controller moves the leadership of its replicas there to other ISR members
  and takes them out of the ISR, while the replicas in the healthy directory stay in their
  ISRs (and lead where they led);
- DescribeLogDirs answers KAFKA_STORAGE_ERROR for the failed directories;
- no acknowledged record is lost or duplicated, and the producer sees no error;
- after the disks are repaired and the broker restarted, its replicas catch up from the
  leaders and every ISR is whole again.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import confluent_kafka
import confluent_kafka.admin
import pytest

from chaos.failing_disks import FailingDisks, unavailable_reason
from common.protocol.api_keys import ApiKey
from common.protocol.messages.describe_log_dirs import DescribeLogDirsRequest
from deploy.local_cluster import LocalCluster, wait_until
from tests.integration.clusters import FAST_OVERRIDES, READY_TIMEOUT_S, running_cluster
from tests.integration.kafka_python_admin import kafka_python_admin
from tests.integration.load import PARTITIONS, Load, log_values
from tests.unit.broker.wire import WireClient

pytestmark = pytest.mark.integration

TOPIC = "jbod"
EXTRA_TOPICS = ("spread-a", "spread-b", "spread-c")
DEADLINE_S = 90.0
KAFKA_STORAGE_ERROR = 56


@pytest.fixture
def disks(tmp_path: Path) -> Iterator[FailingDisks]:
    why = unavailable_reason()
    if why is not None:
        pytest.skip(why)
    try:
        made = FailingDisks(tmp_path / "disks")
    except subprocess.CalledProcessError as e:
        pytest.skip(f"cannot make loop and tmpfs filesystems here: {e} {e.stderr!r}")
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def cluster(tmp_path: Path, disks: FailingDisks) -> Iterator[LocalCluster]:
    with running_cluster(
        tmp_path / "cluster",
        controllers=1,
        brokers=3,
        overrides={**FAST_OVERRIDES, "min.insync.replicas": "2"},
        before_start=lambda c: disks.use_for(c, c.broker_ids[0]),
    ) as started:
        yield started


def partitions_of(admin: confluent_kafka.admin.AdminClient) -> dict[tuple[str, int], tuple]:
    """(topic, partition) -> (leader, isr) as the cluster's metadata says."""
    md = admin.list_topics(timeout=10)
    return {
        (name, p.id): (p.leader, tuple(sorted(p.isrs)))
        for name, t in md.topics.items()
        if name == TOPIC or name in EXTRA_TOPICS
        for p in t.partitions.values()
    }


def log_dir_errors(cluster: LocalCluster, broker_id: int) -> dict[str, int]:
    port = cluster.node(broker_id).broker_port
    assert port is not None
    client = WireClient(port)
    try:
        response = client.call(ApiKey.DESCRIBE_LOG_DIRS, 4, DescribeLogDirsRequest(topics=None))
    finally:
        client.close()
    assert response.error_code == 0
    return {r.log_dir: r.error_code for r in response.results}


def test_failed_directories_go_offline_and_the_broker_keeps_serving(
    cluster: LocalCluster, disks: FailingDisks
) -> None:
    jbod = cluster.broker_ids[0]
    bootstrap = ",".join(cluster.bootstrap_servers())
    admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": bootstrap})
    topics = [TOPIC, *EXTRA_TOPICS]
    futures = admin.create_topics(
        [confluent_kafka.admin.NewTopic(t, PARTITIONS if t == TOPIC else 1, 3) for t in topics]
    )
    for f in futures.values():
        f.result(30)

    def all_placed() -> dict[tuple[str, int], Path] | None:
        found = disks.replica_dirs()
        return found if len(found) == PARTITIONS + len(EXTRA_TOPICS) else None

    placed = wait_until(all_placed, DEADLINE_S, "every replica of the JBOD broker created")
    by_dir: dict[Path, list[tuple[str, int]]] = {}
    for tp, d in placed.items():
        by_dir.setdefault(d, []).append(tp)
    assert set(by_dir) == set(disks.log_dirs()), by_dir  # spread over the three directories
    full, ext4, healthy = disks.log_dirs()
    pid = cluster.pid(jbod)

    load = Load(bootstrap, TOPIC)
    load.start()
    extra = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    try:
        wait_until(lambda: len(load.acked) > 200, DEADLINE_S, "records acknowledged")
        for index, broken in enumerate((full, ext4)):
            if index == 0:
                disks.fill()
            else:
                disks.break_ext4()

            def moved(d: Path = broken) -> bool:
                # Writes to every topic reach each directory (replicas append what they fetch).
                for t in EXTRA_TOPICS:
                    extra.produce(t, b"x" * 512)
                extra.poll(0)
                state = partitions_of(admin)
                return all(
                    state[tp][0] not in (jbod, -1) and jbod not in state[tp][1] for tp in by_dir[d]
                )

            wait_until(moved, DEADLINE_S, f"leadership and ISR moved off {broken}")
        state = partitions_of(admin)
        for tp in by_dir[healthy]:
            assert jbod in state[tp][1], (tp, state[tp])  # still in sync, still serving
        assert cluster.pid(jbod) == pid  # the same process throughout
        expected = {str(full): KAFKA_STORAGE_ERROR, str(ext4): KAFKA_STORAGE_ERROR, str(healthy): 0}
        assert log_dir_errors(cluster, jbod) == expected
        # kafka-python's admin (kafka-log-dirs.sh's view) sees the same.
        with kafka_python_admin(bootstrap) as kp:
            (answer,) = kp.describe_log_dirs(brokers=[jbod])
        assert {d["log_dir"]: d["error_code"] for d in answer["log_dirs"]} == expected
        time.sleep(1)  # a little more load after both failures
    finally:
        extra.flush(30)
        load.stop()
    assert load.errors == [], load.errors[:10]
    in_log = log_values(bootstrap, TOPIC)
    assert len(in_log) == len(set(in_log)), "a record is in the log twice"
    assert load.acked <= set(in_log), "an acknowledged record is missing from the log"

    # Repaired and restarted: the replicas recover from the leaders.
    assert cluster.stop_node(jbod)
    disks.repair()
    cluster.start_node(jbod)
    cluster.wait_ready(READY_TIMEOUT_S)

    def whole() -> bool:
        return all(len(isr) == 3 for _, isr in partitions_of(admin).values())

    wait_until(whole, DEADLINE_S, "every ISR whole again after the repair")
    assert log_dir_errors(cluster, jbod) == {str(d): 0 for d in disks.log_dirs()}
    assert set(log_values(bootstrap, TOPIC)) >= load.acked
