"""Fixtures: 1 controller + 3 brokers (real processes on 127.0.0.1), always torn down."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from deploy.local_cluster import LocalCluster
from tests.integration.replication.helpers import FAST_OVERRIDES

READY_TIMEOUT_S = 60.0

ClusterFactory = Callable[..., LocalCluster]


@pytest.fixture
def make_cluster(tmp_path: Path) -> Iterator[ClusterFactory]:
    clusters: list[LocalCluster] = []

    def make(brokers: int = 3, **overrides: str) -> LocalCluster:
        props = dict(FAST_OVERRIDES)
        props.update(overrides)
        cluster = LocalCluster.create(
            tmp_path / f"cluster-{len(clusters)}", controllers=1, brokers=brokers, overrides=props
        )
        clusters.append(cluster)
        cluster.start()
        cluster.wait_ready(READY_TIMEOUT_S)
        return cluster

    yield make
    for cluster in clusters:
        for b in cluster.broker_ids:
            if cluster.is_paused(b):
                cluster.resume(b)
        cluster.close()
