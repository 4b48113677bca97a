"""One cluster for the idempotence tests: 1 controller + 3 brokers (real processes on
127.0.0.1), shared by the module (each test uses its own topic and restarts the broker it
killed), always torn down."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from deploy.local_cluster import LocalCluster
from tests.integration.clusters import running_cluster
from tests.integration.replication.helpers import FAST_OVERRIDES


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    path = tmp_path_factory.mktemp("idempotence") / "cluster"
    with running_cluster(path, brokers=3, overrides=FAST_OVERRIDES) as c:
        yield c
