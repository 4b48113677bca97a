"""Fixtures for broker integration tests: small LocalClusters (real node processes on
127.0.0.1) in tmp_path, always torn down, with short failure-detection timeouts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.clusters import ClusterFactory, cluster_factory


@pytest.fixture
def make_cluster(tmp_path: Path) -> Iterator[ClusterFactory]:
    with cluster_factory(tmp_path) as make:
        yield make
