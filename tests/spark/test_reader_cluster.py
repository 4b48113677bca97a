"""The source's read path against the real cluster without Spark: plans re-read equal, and
data loss found at read time (the log start moved after planning)."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pytest

from data_plane.client import Admin
from deploy.local_cluster import LocalCluster
from spark_integration.options import parse_read_options
from spark_integration.planning import DataLossError
from spark_integration.source import KraftlogBatchReader, read_partition
from tests.spark.helpers import delete_records, produce

pytestmark = pytest.mark.integration


def _read(options, plan) -> pa.Table:
    batches = [b for r in plan for b in read_partition(options, r)]
    return pa.Table.from_batches(batches)


def test_a_plan_reads_the_same_rows_twice_even_after_more_writes(
    bootstrap: str, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(3)
    produce(bootstrap, topic, [b"v%d" % i for i in range(3000)])
    options = parse_read_options(
        {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "minPartitions": "7"},
        streaming=False,
    )
    plan = KraftlogBatchReader(options).plan()
    assert len(plan) == 7 and sum(r.size for r in plan) == 3000
    first = _read(options, plan)
    produce(bootstrap, topic, [b"later-%d" % i for i in range(500)])
    second = _read(options, plan)
    assert first.num_rows == 3000
    assert first.equals(second)
    assert sorted(first.column("offset").to_pylist()) == sorted(
        o for r in plan for o in range(r.start, r.end)
    )


def test_data_loss_found_while_reading(
    cluster: LocalCluster, bootstrap: str, admin: Admin, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(1)
    produce(bootstrap, topic, [b"v%d" % i for i in range(200)])
    strict = parse_read_options(
        {"kafka.bootstrap.servers": bootstrap, "subscribe": topic}, streaming=False
    )
    lenient = parse_read_options(
        {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "failOnDataLoss": "false"},
        streaming=False,
    )
    (planned,) = KraftlogBatchReader(strict).plan()
    assert (planned.start, planned.end) == (0, 200)
    assert delete_records(cluster, admin, topic, 150) == 150
    with pytest.raises(DataLossError, match=r"0\.\.149"):
        _read(strict, [planned])
    assert _read(lenient, [planned]).column("offset").to_pylist() == list(range(150, 200))
