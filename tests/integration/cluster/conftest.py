"""Fixtures for multi-process cluster tests: a LocalCluster in tmp_path, always torn down.

The cluster uses short timeouts so failures show quickly: brokers are fenced 2.5 s after their
last heartbeat (heartbeats every 300 ms) and voters elect after 500-1000 ms of silence.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from deploy.local_cluster import LocalCluster

FAST_OVERRIDES = {
    "broker.session.timeout.ms": "2500",
    "broker.heartbeat.interval.ms": "300",
    "controller.quorum.election.timeout.ms": "500",
    "controlled.shutdown.timeout.ms": "5000",
}
READY_TIMEOUT_S = 60.0

ClusterFactory = Callable[..., LocalCluster]


@pytest.fixture
def cluster_factory(tmp_path: Path) -> Iterator[ClusterFactory]:
    clusters: list[LocalCluster] = []

    def make(controllers: int = 3, brokers: int = 3, **overrides: str) -> LocalCluster:
        props = dict(FAST_OVERRIDES)
        props.update({k.replace("_", "."): v for k, v in overrides.items()})
        cluster = LocalCluster.create(
            tmp_path / f"cluster-{len(clusters)}",
            controllers=controllers,
            brokers=brokers,
            overrides=props,
        )
        clusters.append(cluster)
        cluster.start()
        cluster.wait_ready(READY_TIMEOUT_S)
        return cluster

    yield make
    for cluster in clusters:
        cluster.close()


@pytest.fixture
def cluster(cluster_factory: ClusterFactory) -> LocalCluster:
    """3 controllers (ids 1-3) and 3 brokers (ids 101-103), ready."""
    return cluster_factory()
