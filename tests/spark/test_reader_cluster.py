"""The source's read path against the real cluster without Spark: plans re-read equal, and
data loss found at read time (the log start moved after planning)."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pytest

from deploy.local_cluster import LocalCluster
from kraftlog_client import Admin
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


def test_a_read_returns_committed_transactions_only(
    bootstrap: str, new_topic: Callable[..., str]
) -> None:
    """Transactions committed, aborted, committed and one still open on one partition:
    read_committed (the default) plans up to the last stable offset and reads exactly the
    committed records, read_uncommitted every record, on the Arrow and the row path; markers
    never become rows."""
    import confluent_kafka

    topic = new_topic(1)
    p = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"spark-eos-{topic}"}
    )
    p.init_transactions(60)
    for name, commit in (("first", True), ("aborted", False), ("second", True)):
        p.begin_transaction()
        for i in range(10):
            p.produce(topic, b"%s-%d" % (name.encode(), i), partition=0)
        p.flush(60)
        if commit:
            p.commit_transaction(60)
        else:
            p.abort_transaction(60)
    # A transaction still open at planning time: read_committed stops before it.
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, b"open-%d" % i, partition=0)
    p.flush(60)
    committed = [b"first-%d" % i for i in range(10)] + [b"second-%d" % i for i in range(10)]
    everything = [
        b"%s-%d" % (name, i)
        for name in (b"first", b"aborted", b"second", b"open")
        for i in range(10)
    ]
    try:
        for arrow in ("true", "false"):
            for isolation, expected in (
                ("read_committed", committed),
                ("read_uncommitted", everything),
            ):
                options = parse_read_options(
                    {
                        "kafka.bootstrap.servers": bootstrap,
                        "subscribe": topic,
                        "kraftlog.arrow": arrow,
                        "kafka.isolation.level": isolation,
                    },
                    streaming=False,
                )
                plan = KraftlogBatchReader(options).plan()
                rows = [x for r in plan for x in read_partition(options, r)]
                if arrow == "true":
                    values = pa.Table.from_batches(rows).column("value").to_pylist()
                else:
                    values = [row[1] for row in rows]
                assert values == expected, (arrow, isolation)
        # The default is read_committed.
        options = parse_read_options(
            {"kafka.bootstrap.servers": bootstrap, "subscribe": topic}, streaming=False
        )
        rows = [x for r in KraftlogBatchReader(options).plan() for x in read_partition(options, r)]
        assert pa.Table.from_batches(rows).column("value").to_pylist() == committed
    finally:
        p.abort_transaction(60)
