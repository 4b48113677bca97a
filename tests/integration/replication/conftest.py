"""Fixtures: 1 controller + 3 brokers (real processes on 127.0.0.1), always torn down."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.clusters import ClusterFactory, cluster_factory
from tests.integration.replication.helpers import FAST_OVERRIDES

__all__ = ["ClusterFactory"]


@pytest.fixture
def make_cluster(tmp_path: Path) -> Iterator[ClusterFactory]:
    with cluster_factory(tmp_path, brokers=3, overrides=FAST_OVERRIDES) as make:
        yield make
