"""The exactly-once writer in a real local[2] session against the 3-broker cluster: batch
writes (committed once; a failing job leaves nothing visible to read_committed) and the
streaming writer's recovery running on the driver before the first batch's tasks."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from spark_integration.commit_log import CommitLog, Decision
from spark_integration.options import parse_write_options
from spark_integration.transactional_writer import write_transaction
from tests.spark.helpers import DEADLINE_S, produce
from tests.spark.test_exactly_once_protocol import read_committed

pytestmark = pytest.mark.integration

OUT_PARTITIONS = 2
COMMIT_LOG = "_eos_spark_decisions"


def _eos_write(df, bootstrap: str, topic: str, prefix: str) -> None:  # type: ignore[no-untyped-def]
    (
        df.write.format("kraftlog")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("exactlyOnce", "true")
        .option("transactionalIdPrefix", prefix)
        .option("exactlyOnce.commitLog", COMMIT_LOG)
        .mode("append")
        .save()
    )


def test_batch_write_exactly_once_and_a_failed_job_leaves_nothing(
    spark, bootstrap: str, new_topic: Callable[..., str]
) -> None:
    from pyspark.sql.functions import udf

    topic = new_topic(partitions=OUT_PARTITIONS, replication_factor=3, prefix="eos-batch")
    prefix = f"eos-batch-{uuid.uuid4().hex[:8]}"
    values = [f"v-{i}" for i in range(300)]

    def fail_on_one(value: str) -> str:
        if value == "v-250":
            raise ValueError("a task fails mid-write")
        return value

    fail_on = udf(fail_on_one, "string", useArrow=False)

    failing = spark.createDataFrame([(v,) for v in values], "value string").repartition(3)
    with pytest.raises(Exception, match="a task fails mid-write"):
        _eos_write(failing.select(fail_on("value").alias("value")), bootstrap, topic, prefix)
    df = spark.createDataFrame([(v,) for v in values], "value string").repartition(3)
    _eos_write(df, bootstrap, topic, prefix)
    got = read_committed(bootstrap, topic, len(values))
    assert sorted(got) == sorted(v.encode() for v in values)
    latest = CommitLog(bootstrap, COMMIT_LOG, DEADLINE_S).latest(prefix)
    assert latest is not None and latest.applied and len(latest.transactions) == 3


def test_streaming_writer_rolls_a_decision_forward_before_the_first_tasks(
    spark, bootstrap: str, new_topic: Callable[..., str], tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """A decision (batch -1: before this query's first batch) for transactions of the very
    ids the query's tasks use, not applied yet. Were it rolled forward after a task's
    init_transactions, that init would have aborted the decided transaction and the
    roll-forward would fail (TransactionLostError): the decided records must show up beside
    the query's."""
    source = new_topic(partitions=2, replication_factor=1, prefix="eos-in")
    sink = new_topic(partitions=OUT_PARTITIONS, replication_factor=3, prefix="eos-out")
    prefix = f"eos-stream-{uuid.uuid4().hex[:8]}"
    inputs = [b"in-%d" % i for i in range(200)]
    produce(bootstrap, source, inputs)
    options = parse_write_options(
        {
            "kafka.bootstrap.servers": bootstrap,
            "topic": sink,
            "transactionalIdPrefix": prefix,
            "exactlyOnce.commitLog": COMMIT_LOG,
        },
        streaming=True,
    )
    decided = [
        write_transaction(
            options, p, ["value"], iter([(b"decided-%d-%d" % (p, i),) for i in range(5)])
        )
        for p in range(2)
    ]
    log = CommitLog(bootstrap, COMMIT_LOG, DEADLINE_S)
    log.append(Decision(prefix, -1, tuple(w.prepared for w in decided if w.prepared), False))
    query = (
        spark.readStream.format("kraftlog")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", 80)
        .load()
        .select("value")
        .writeStream.format("kraftlog")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", sink)
        .option("transactionalIdPrefix", prefix)
        .option("exactlyOnce.commitLog", COMMIT_LOG)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(240), "the availableNow query did not finish"
    assert query.exception() is None
    expected = inputs + [b"decided-%d-%d" % (p, i) for p in range(2) for i in range(5)]
    got = read_committed(bootstrap, sink, len(expected))
    assert sorted(got) == sorted(expected)
    latest = log.latest(prefix)
    assert latest is not None and latest.applied and latest.batch_id >= 2
