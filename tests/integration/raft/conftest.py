"""Fixtures for multi-voter metadata-log tests: every voter process is killed on teardown."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# The helper module lives next to the tests (tests/ has no packages).
sys.path.insert(0, str(Path(__file__).parent))
from raft_cluster import RaftCluster


@pytest.fixture
def raft_cluster(tmp_path: Path) -> Iterator[Callable[..., RaftCluster]]:
    clusters: list[RaftCluster] = []

    def make(**kwargs: Any) -> RaftCluster:
        cluster = RaftCluster(tmp_path / f"cluster{len(clusters)}", **kwargs)
        clusters.append(cluster)
        cluster.start()
        return cluster

    yield make
    for cluster in clusters:
        cluster.close()
