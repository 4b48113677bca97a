"""What the Spark benchmarks share: a throwaway cluster (1 controller, 3 brokers, in a
temporary directory) holding one topic of replication factor 1, and a quiet local[2]
SparkSession whose Python workers run this interpreter."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from deploy.local_cluster import LocalCluster
from kraftlog_client import Admin, NewTopic

# Bound on the cluster's start (a loaded 2-core machine).
READY_TIMEOUT_S = 120.0


@contextmanager
def bench_cluster(prefix: str, topic: str, partitions: int) -> Iterator[tuple[LocalCluster, str]]:
    """(the started cluster, its bootstrap servers) with ``topic`` created; everything is
    stopped and deleted on the way out."""
    directory = tempfile.mkdtemp(prefix=prefix)
    cluster = LocalCluster.create(directory, controllers=1, brokers=3)
    try:
        cluster.start()
        cluster.wait_ready(READY_TIMEOUT_S)
        bootstrap = ",".join(cluster.bootstrap_servers())
        with Admin({"bootstrap.servers": bootstrap}) as admin:
            admin.create_topics([NewTopic(topic, partitions, 1)])
            admin.wait_for_leaders([topic])
        yield cluster, bootstrap
    finally:
        cluster.close()
        shutil.rmtree(directory, ignore_errors=True)


def local_session(app: str, config: Mapping[str, str] | None = None) -> Any:
    """A local[2] SparkSession (no UI, no progress bar, 2 shuffle partitions, 2 GiB driver),
    plus ``config``; Spark's own logging at ERROR."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master("local[2]")
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "2g")
        .config("spark.ui.showConsoleProgress", "false")
    )
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
