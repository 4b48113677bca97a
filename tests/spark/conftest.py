"""Fixtures of the Spark tests: one local[2] SparkSession and one 3-broker cluster for the
whole package (a session start costs ~9 s, a cluster ~5 s), both always torn down.

The cluster keeps a paused follower in the ISR for 10 minutes (replica.lag.time.max.ms and
broker.session.timeout.ms), so a test can hold the high watermark below the leader's log end.
Tests use their own topics. Spark's Python workers run this interpreter
(PYSPARK_PYTHON) and see the repository on PYTHONPATH, which is also how Spark finds the
top-level ``pyspark_kraftlog`` module and registers format kraftlog without a call.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="the spark extra is not installed (pip install -e .[spark])")

from deploy.local_cluster import LocalCluster
from kraftlog_client import Admin, NewTopic
from tests.integration.clusters import FAST_OVERRIDES, running_cluster

REPO_ROOT = Path(__file__).resolve().parents[2]
SPARK_CLUSTER_OVERRIDES = {
    **FAST_OVERRIDES,
    # A paused follower stays in the ISR (and its broker unfenced) for 10 minutes: Spark jobs
    # on a loaded 2-core machine can take tens of seconds while a test holds the HW back.
    "broker.session.timeout.ms": "600000",
    "replica.lag.time.max.ms": "600000",
    "replica.fetch.wait.max.ms": "200",
}
_topic_ids = itertools.count()


@pytest.fixture(scope="session")
def spark() -> Iterator:
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    path = os.environ.get("PYTHONPATH", "")
    if str(REPO_ROOT) not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), path) if p)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("kraftlog-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with running_cluster(
        tmp_path_factory.mktemp("spark-cluster"), brokers=3, overrides=SPARK_CLUSTER_OVERRIDES
    ) as c:
        yield c


@pytest.fixture(scope="session")
def bootstrap(cluster: LocalCluster) -> str:
    return ",".join(cluster.bootstrap_servers())


@pytest.fixture
def admin(bootstrap: str) -> Iterator[Admin]:
    a = Admin({"bootstrap.servers": bootstrap})
    yield a
    a.close()


@pytest.fixture
def new_topic(admin: Admin) -> Callable[..., str]:
    """Create a topic with a unique name; returns once every partition has a leader."""

    def make(
        partitions: int = 1, replication_factor: int = 1, prefix: str = "spark", **configs: str
    ) -> str:
        name = f"{prefix}-{next(_topic_ids)}"
        admin.create_topics([NewTopic(name, partitions, replication_factor, configs)])
        admin.wait_for_leaders([name])
        return name

    return make
