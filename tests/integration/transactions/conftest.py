"""One cluster for the transaction tests: 1 controller + 3 brokers (real processes on
127.0.0.1), shared by the module; each test uses its own topics and transactional ids.
Timed-out transactions are looked for every 500 ms so the hanging-transaction test is quick."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from deploy.local_cluster import LocalCluster
from tests.integration.clusters import running_cluster
from tests.integration.replication.helpers import FAST_OVERRIDES

TXN_OVERRIDES = {
    **FAST_OVERRIDES,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    path = tmp_path_factory.mktemp("transactions") / "cluster"
    with running_cluster(path, brokers=3, overrides=TXN_OVERRIDES) as c:
        yield c
