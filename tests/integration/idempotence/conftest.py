"""One cluster for the idempotence tests: 1 controller + 3 brokers (real processes on
127.0.0.1), shared by the module (each test uses its own topic and restarts the broker it
killed), always torn down."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from deploy.local_cluster import LocalCluster
from tests.integration.replication.helpers import FAST_OVERRIDES

READY_TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    c = LocalCluster.create(
        tmp_path_factory.mktemp("idempotence") / "cluster",
        controllers=1,
        brokers=3,
        overrides=dict(FAST_OVERRIDES),
    )
    try:
        c.start()
        c.wait_ready(READY_TIMEOUT_S)
        yield c
    finally:
        c.close()
