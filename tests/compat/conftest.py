"""A real local kraftlog cluster for the compatibility tests: 1 controller + 1 broker
(replication factor 1 is all these tests need), started once per module and always torn down.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from deploy.local_cluster import LocalCluster
from tests.integration.clusters import running_cluster

KCAT = shutil.which("kcat") or "/usr/bin/kcat"


@pytest.fixture(scope="module")
def compat_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(tmp_path_factory.mktemp("compat") / "cluster") as cluster:
        yield cluster


@pytest.fixture(scope="module")
def bootstrap(compat_cluster: LocalCluster) -> str:
    return ",".join(compat_cluster.bootstrap_servers())


@pytest.fixture(scope="module")
def kcat() -> str:
    if not shutil.which(KCAT):
        pytest.skip("kcat is not installed (make system-deps installs the Debian package)")
    return KCAT
