"""Fixtures: 1 controller + 3 brokers (real processes on 127.0.0.1) that a test may grow with
``LocalCluster.add_broker``; always torn down."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy.local_cluster import LocalCluster
from tests.integration.replication.helpers import FAST_OVERRIDES

READY_TIMEOUT_S = 60.0


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    c = LocalCluster.create(
        tmp_path / "cluster", controllers=1, brokers=3, overrides=dict(FAST_OVERRIDES)
    )
    try:
        c.start()
        c.wait_ready(READY_TIMEOUT_S)
        yield c
    finally:
        c.close()
