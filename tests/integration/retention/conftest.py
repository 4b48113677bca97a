"""One LocalCluster (1 controller + 1 broker) shared by the retention and compaction tests,
always torn down; each test uses its own topics. The broker checks retention every 500 ms
and its cleaner threads look for dirty logs every 100 ms, so the tests see both at work
within seconds."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from deploy.local_cluster import LocalCluster
from kraftlog_client import Admin, NewTopic
from tests.integration.clusters import FAST_OVERRIDES, running_cluster

OVERRIDES = {
    **FAST_OVERRIDES,
    "log.retention.check.interval.ms": "500",
    "log.cleaner.backoff.ms": "100",
    # One broker: transactions need a __transaction_state it can host alone.
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
}
_topic_ids = itertools.count()


@pytest.fixture(scope="package")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("retention"), overrides=OVERRIDES) as c:
        yield c


@pytest.fixture
def bootstrap(cluster: LocalCluster) -> str:
    return ",".join(cluster.bootstrap_servers())


@pytest.fixture
def new_topic(bootstrap: str) -> Iterator[Callable[..., str]]:
    """Create a one-partition topic with ``configs`` and wait for its leader."""
    admin = Admin({"bootstrap.servers": bootstrap})

    def make(prefix: str, **configs: str) -> str:
        name = f"{prefix}-{next(_topic_ids)}"
        admin.create_topics([NewTopic(name, 1, 1, configs)])
        admin.wait_for_leaders([name], timeout_ms=30_000)
        return name

    yield make
    admin.close()


def partition_dir(cluster: LocalCluster, topic: str) -> Path:
    (broker,) = cluster.broker_ids
    matches = list(cluster.node(broker).data_dir.glob(f"**/{topic}-0"))
    assert len(matches) == 1, matches
    return matches[0]


def live_segments(cluster: LocalCluster, topic: str) -> list[Path]:
    """The partition's .log files that are not deleted (not yet unlinked .deleted ones)."""
    return sorted(partition_dir(cluster, topic).glob("*.log"))
