"""Fixtures for broker integration tests: small LocalClusters (real node processes on
127.0.0.1) in tmp_path, always torn down, with short failure-detection timeouts."""

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
def make_cluster(tmp_path: Path) -> Iterator[ClusterFactory]:
    clusters: list[LocalCluster] = []

    def make(controllers: int = 1, brokers: int = 1, **overrides: str) -> LocalCluster:
        props = dict(FAST_OVERRIDES)
        props.update(overrides)
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
