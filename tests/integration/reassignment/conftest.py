"""Fixtures: 1 controller + 3 brokers (real processes on 127.0.0.1) that a test may grow with
``LocalCluster.add_broker``; always torn down."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy.local_cluster import LocalCluster
from tests.integration.clusters import running_cluster
from tests.integration.replication.helpers import FAST_OVERRIDES


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path / "cluster", brokers=3, overrides=FAST_OVERRIDES) as c:
        yield c
