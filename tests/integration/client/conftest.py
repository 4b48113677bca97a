"""One LocalCluster (1 controller + 1 broker) shared by the client integration tests of a
module, always torn down; tests use their own topics so they do not interfere."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

import pytest

from deploy.local_cluster import LocalCluster
from kraftlog_client import Admin, NewTopic
from tests.integration.clusters import running_cluster

_topic_ids = itertools.count()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("client-cluster")) as c:
        yield c


@pytest.fixture(scope="module")
def bootstrap(cluster: LocalCluster) -> str:
    return ",".join(cluster.bootstrap_servers())


@pytest.fixture
def admin(bootstrap: str) -> Iterator[Admin]:
    a = Admin({"bootstrap.servers": bootstrap})
    yield a
    a.close()


@pytest.fixture
def new_topic(admin: Admin) -> Callable[..., str]:
    """Create a topic with a unique name and wait until its partitions have leaders."""

    def make(partitions: int = 1, **configs: str) -> str:
        name = f"client-test-{next(_topic_ids)}"
        admin.create_topics([NewTopic(name, partitions, 1, configs)])
        admin.wait_for_leaders([name], timeout_ms=30_000)
        return name

    return make
