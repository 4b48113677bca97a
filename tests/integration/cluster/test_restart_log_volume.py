"""A broker restarted under load: the other brokers' logs stay readable. The leaders propose
to put the restarted replicas back in their ISRs while the controller still fences them;
each refusal was logged on its own line (about 200 per leader for 300 partitions here, 16,000
lines in the benchmark's 10,000 partitions). Now a refused partition waits before proposing
again and refusals are summarized once per error code per interval."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest

from metadata.messages import NewTopic
from tests.integration.clusters import FAST_OVERRIDES, running_cluster

pytestmark = [pytest.mark.integration]

PARTITIONS = 300
READY_TIMEOUT_S = 90.0
# Generous bounds: the counts measured were 1 summary line and 200-400 lines per broker.
MAX_REFUSAL_LINES = 5
MAX_LINES_PER_BROKER = 3000
_REFUSAL = re.compile(r"AlterPartition .*rejected")


def test_restart_under_load_writes_a_bounded_number_of_lines(tmp_path: Path) -> None:
    import confluent_kafka

    with running_cluster(tmp_path / "c", brokers=3, overrides=FAST_OVERRIDES) as cluster:
        with cluster.client(30.0) as admin:
            (res,) = admin.create_topics(
                [NewTopic("load", PARTITIONS, 3, configs={"min.insync.replicas": "2"})]
            )
            assert res.error_code == 0, res
        bootstrap = ",".join(cluster.bootstrap_servers())
        stop = threading.Event()

        def load() -> None:
            p = confluent_kafka.Producer(
                {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "log_level": 0}
            )
            for i in range(10_000_000):
                if stop.is_set():
                    break
                try:
                    p.produce("load", b"x" * 100, partition=i % PARTITIONS)
                except BufferError:
                    p.poll(0.01)
                if i % 1000 == 0:
                    p.poll(0)
            p.flush(10)

        producer = threading.Thread(target=load)
        producer.start()
        try:
            time.sleep(2.0)
            victim = cluster.broker_ids[-1]
            others = [b for b in cluster.broker_ids if b != victim]
            before = {b: len(_lines(cluster.node(b).log_path)) for b in others}
            cluster.restart(victim)
            cluster.wait_ready(READY_TIMEOUT_S)
            time.sleep(3.0)  # the ISRs fill up again meanwhile
        finally:
            stop.set()
            producer.join(60)
        for b in others:
            written = _lines(cluster.node(b).log_path)[before[b] :]
            refusals = [line for line in written if _REFUSAL.search(line)]
            assert len(refusals) <= MAX_REFUSAL_LINES, refusals[:10]
            assert len(written) <= MAX_LINES_PER_BROKER, written[-20:]


def _lines(path: str | Path) -> list[str]:
    return Path(path).read_text(errors="replace").splitlines()
