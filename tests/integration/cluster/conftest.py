"""Fixtures for multi-process cluster tests: a LocalCluster in tmp_path, always torn down.

The cluster uses short timeouts so failures show quickly: brokers are fenced 2.5 s after their
last heartbeat (heartbeats every 300 ms) and voters elect after 500-1000 ms of silence.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy.local_cluster import LocalCluster
from tests.integration.clusters import ClusterFactory
from tests.integration.clusters import cluster_factory as make_factory


@pytest.fixture
def cluster_factory(tmp_path: Path) -> Iterator[ClusterFactory]:
    with make_factory(tmp_path, controllers=3, brokers=3) as make:
        yield make


@pytest.fixture
def cluster(cluster_factory: ClusterFactory) -> LocalCluster:
    """3 controllers (ids 1-3) and 3 brokers (ids 101-103), ready."""
    return cluster_factory()
