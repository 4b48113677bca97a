"""The kraftlog data source in a real local[2] Spark against a real 3-broker cluster.

Format kraftlog is never registered by hand here (except in the test of register()): Spark
finds it through the top-level pyspark_kraftlog module, so these tests also cover
auto-registration.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from deploy.local_cluster import LocalCluster
from kraftlog_client import Admin, TopicPartition
from tests.spark.helpers import DEADLINE_S, consume, delete_records, leader_of, produce

pytestmark = pytest.mark.integration

T0_MS = 1_700_000_000_000


def reader(spark, bootstrap: str, **options: str):
    r = spark.read.format("kraftlog").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        r = r.option(key, value)
    return r.load()


def rows(df) -> list[tuple]:
    return sorted(
        (
            r.topic,
            r.partition,
            r.offset,
            bytes(r.key) if r.key is not None else None,
            bytes(r.value) if r.value is not None else None,
        )
        for r in df.collect()
    )


def test_batch_read_is_the_committed_log_and_never_above_the_high_watermark(
    spark, cluster: LocalCluster, bootstrap: str, admin: Admin, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(1, replication_factor=3)
    produce(bootstrap, topic, [b"committed-%d" % i for i in range(200)])
    leader = leader_of(admin, topic)
    follower = next(b for b in cluster.broker_ids if b != leader)
    cluster.pause(follower)
    try:
        # A parked replica fetch of the paused follower could still carry the next records
        # into its socket: let the leader answer it first (replica.fetch.wait.max.ms 200).
        time.sleep(1.0)
        offsets = produce(bootstrap, topic, [b"uncommitted-%d" % i for i in range(50)], acks="1")
        assert offsets == list(range(200, 250))  # the leader's log end offset is 250
        hw = admin.list_offsets({TopicPartition(topic, 0): "latest"})[TopicPartition(topic, 0)]
        assert hw.offset == 200  # the paused follower is still in the ISR

        expected = [(topic, 0, o, k, v) for o, k, v in consume(bootstrap, topic, 0, 200)]
        assert [e[2] for e in expected] == list(range(200))
        df = reader(spark, bootstrap, subscribe=topic)
        # Every record has these columns: declared NOT NULL (key and value may be null).
        assert [(f.name, f.nullable) for f in df.schema.fields] == [
            ("key", True),
            ("value", True),
            ("topic", False),
            ("partition", False),
            ("offset", False),
            ("timestamp", False),
            ("timestampType", False),
        ]
        arrow_rows = rows(df)
        tuple_rows = rows(reader(spark, bootstrap, subscribe=topic, **{"kraftlog.arrow": "false"}))
        assert arrow_rows == expected
        assert tuple_rows == expected
        assert max(r[2] for r in arrow_rows) == 199
        latest = admin.list_offsets({TopicPartition(topic, 0): "latest"})
        assert latest[TopicPartition(topic, 0)].offset == 200  # still held back while we read
    finally:
        cluster.resume(follower)
    deadline = time.monotonic() + DEADLINE_S
    while reader(spark, bootstrap, subscribe=topic).count() != 250:
        assert time.monotonic() < deadline, "the HW did not reach 250 after the resume"
        time.sleep(0.5)


def test_batch_read_of_transactions_returns_the_committed_records(
    spark, bootstrap: str, new_topic: Callable[..., str]
) -> None:
    """Committed and aborted transactions on two partitions: a Spark batch read (the default
    read_committed) returns exactly the committed records on both paths; read_uncommitted
    returns the aborted ones too; markers never become rows."""
    import confluent_kafka

    topic = new_topic(2)
    p = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"spark-read-{topic}"}
    )
    p.init_transactions(60)
    committed, aborted = [], []
    for n, commit in enumerate((True, False, True, False, True)):
        p.begin_transaction()
        values = [b"t%d-%d" % (n, i) for i in range(20)]
        for i, v in enumerate(values):
            p.produce(topic, v, partition=i % 2)
        p.flush(60)
        if commit:
            p.commit_transaction(60)
            committed += values
        else:
            p.abort_transaction(60)
            aborted += values

    def values_of(df) -> list[bytes]:
        return sorted(bytes(r.value) for r in df.collect())

    assert values_of(reader(spark, bootstrap, subscribe=topic)) == sorted(committed)
    no_arrow = reader(spark, bootstrap, subscribe=topic, **{"kraftlog.arrow": "false"})
    assert values_of(no_arrow) == sorted(committed)
    everything = reader(
        spark, bootstrap, subscribe=topic, **{"kafka.isolation.level": "read_uncommitted"}
    )
    assert values_of(everything) == sorted(committed + aborted)


def test_offsets_json_timestamps_min_partitions_headers_and_patterns(
    spark, bootstrap: str, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(2, prefix="opts")
    other = new_topic(1, prefix="opts")
    new_topic(1, prefix="elsewhere")
    stamps = [T0_MS + i * 1000 for i in range(40)]
    headers = [[("n", b"%d" % i), ("null", None)] if i % 10 == 0 else None for i in range(40)]
    for p in (0, 1):
        produce(
            bootstrap,
            topic,
            [b"p%d-%d" % (p, i) for i in range(40)],
            partition=p,
            timestamps=stamps,
            headers=headers,
        )
    produce(bootstrap, other, [b"o-%d" % i for i in range(10)], partition=0)

    # subscribePattern (and a topic it must not match), minPartitions, includeHeaders.
    df = reader(
        spark, bootstrap, subscribePattern="opts-.*", minPartitions="6", includeHeaders="true"
    )
    assert df.rdd.getNumPartitions() == 6
    got = df.selectExpr("*", "unix_millis(timestamp) AS ms").collect()
    assert {(r.topic, r.partition) for r in got} == {(other, 0), (topic, 0), (topic, 1)}
    assert len(got) == 90
    with_headers = {(r.partition, r.offset): r.headers for r in got if r.headers}
    assert sorted(with_headers) == [(p, o) for p in (0, 1) for o in range(0, 40, 10)]
    assert [(h.key, h.value) for h in with_headers[(1, 20)]] == [("n", b"20"), ("null", None)]
    assert {r.ms for r in got if r.topic == topic} == set(stamps)

    # Offsets JSON with -2 (earliest) and -1 (latest).
    df = reader(
        spark,
        bootstrap,
        subscribe=topic,
        startingOffsets=json.dumps({topic: {"0": 10, "1": -2}}),
        endingOffsets=json.dumps({topic: {"0": 30, "1": -1}}),
    )
    got = rows(df)
    assert [(r[1], r[2]) for r in got] == [(0, o) for o in range(10, 30)] + [
        (1, o) for o in range(40)
    ]

    # Timestamps: the first offset at or after each.
    df = reader(
        spark,
        bootstrap,
        subscribe=topic,
        startingTimestamp=str(T0_MS + 4500),
        endingOffsetsByTimestamp=json.dumps({topic: {"0": T0_MS + 8000, "1": T0_MS + 99_000}}),
    )
    assert [(r[1], r[2]) for r in rows(df)] == [(0, o) for o in range(5, 8)] + [
        (1, o) for o in range(5, 40)
    ]

    # Nothing to read (a topic that does not exist yet): an empty result, not an error.
    assert reader(spark, bootstrap, subscribe="opts-no-such-topic").count() == 0

    with pytest.raises(Exception, match="conflict"):
        reader(
            spark, bootstrap, subscribe=topic, startingOffsets="earliest", startingTimestamp="1"
        ).collect()


def test_streaming_available_now_reads_everything_once_across_a_restart(
    spark, bootstrap: str, new_topic: Callable[..., str], admin: Admin, tmp_path: Path
) -> None:
    prefix = f"stream{time.monotonic_ns() % 10**6}"
    first = new_topic(2, prefix=prefix)
    produce(bootstrap, first, [b"a-%d" % i for i in range(300)])
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def run() -> list[int]:
        query = (
            reader_stream(
                spark,
                bootstrap,
                subscribePattern=f"{prefix}-.*",
                startingOffsets="earliest",
                maxOffsetsPerTrigger="120",
            )
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(240), "the availableNow query did not finish"
        assert query.exception() is None
        return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]

    batches = run()
    assert sum(batches) == 300 and max(batches) <= 121 and len(batches) >= 3
    produce(bootstrap, first, [b"b-%d" % i for i in range(100)])
    second = new_topic(1, prefix=prefix)  # a new partition, picked up by the pattern
    produce(bootstrap, second, [b"c-%d" % i for i in range(50)])
    assert sum(run()) == 150  # the restart resumes at the checkpointed offsets

    got = spark.read.parquet(str(out)).select("topic", "partition", "offset", "value").collect()
    keys = [(r.topic, r.partition, r.offset) for r in got]
    assert len(keys) == len(set(keys)) == 450  # exactly once
    values = sorted(bytes(r.value) for r in got)
    assert values == sorted(
        [b"a-%d" % i for i in range(300)]
        + [b"b-%d" % i for i in range(100)]
        + [b"c-%d" % i for i in range(50)]
    )


def test_streaming_with_a_rate_limit_reads_committed_transactions_once(
    spark, bootstrap: str, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    """maxOffsetsPerTrigger over a partition whose offsets include aborted records and
    markers: the triggers split the offsets (markers and aborted records are offsets that
    give no row), and the output holds every committed record exactly once."""
    import confluent_kafka

    topic = new_topic(1)
    p = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"spark-stream-{topic}"}
    )
    p.init_transactions(60)
    committed = []
    for n in range(6):
        p.begin_transaction()
        values = [b"s%d-%d" % (n, i) for i in range(15)]
        for v in values:
            p.produce(topic, v, partition=0)
        p.flush(60)
        if n % 3 == 1:
            p.abort_transaction(60)
        else:
            p.commit_transaction(60)
            committed += values
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    query = (
        reader_stream(
            spark, bootstrap, subscribe=topic, startingOffsets="earliest", maxOffsetsPerTrigger="20"
        )
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(240), "the availableNow query did not finish"
    assert query.exception() is None
    batches = [b["numInputRows"] for b in query.recentProgress if b["numInputRows"]]
    assert len(batches) >= 3 and max(batches) <= 20
    got = spark.read.parquet(str(out)).select("offset", "value").collect()
    assert len({r.offset for r in got}) == len(got)  # exactly once
    assert sorted(bytes(r.value) for r in got) == sorted(committed)


def reader_stream(spark, bootstrap: str, **options: str):
    r = spark.readStream.format("kraftlog").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        r = r.option(key, value)
    return r.load()


def test_fail_on_data_loss_after_the_log_start_moved(
    spark, cluster: LocalCluster, bootstrap: str, admin: Admin, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(1)
    produce(bootstrap, topic, [b"v%d" % i for i in range(100)])
    assert delete_records(cluster, admin, topic, 40) == 40
    start = json.dumps({topic: {"0": 0}})
    with pytest.raises(Exception, match="failOnDataLoss"):
        reader(spark, bootstrap, subscribe=topic, startingOffsets=start).collect()
    got = rows(
        reader(spark, bootstrap, subscribe=topic, startingOffsets=start, failOnDataLoss="false")
    )
    assert [r[2] for r in got] == list(range(40, 100))


def test_writer_uses_key_value_partition_and_headers(
    spark, bootstrap: str, new_topic: Callable[..., str]
) -> None:
    import spark_integration

    spark_integration.register(spark)  # explicit registration works beside the automatic one
    topic = new_topic(2)
    data = [
        (b"k%d" % i, f"value-{i}", i % 2, [("h", b"%d" % i)] if i % 5 == 0 else [])
        for i in range(40)
    ]
    df = spark.createDataFrame(
        data,
        "key binary, value string, partition int, headers array<struct<key:string,value:binary>>",
    )
    df.write.format("kraftlog").option("kafka.bootstrap.servers", bootstrap).option(
        "topic", topic
    ).mode("append").save()
    written = reader(spark, bootstrap, subscribe=topic, includeHeaders="true").collect()
    assert sorted((bytes(r.key), bytes(r.value), r.partition) for r in written) == sorted(
        (k, v.encode(), p) for k, v, p, _h in data
    )
    assert sorted(bytes(r.key) for r in written if r.headers) == sorted(
        b"k%d" % i for i in range(0, 40, 5)
    )
    with pytest.raises(Exception, match="topic option or a topic column"):
        df.drop("partition").write.format("kraftlog").option(
            "kafka.bootstrap.servers", bootstrap
        ).mode("append").save()


def test_streaming_processing_time_trigger_picks_up_new_records(
    spark, bootstrap: str, new_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = new_topic(2)
    produce(bootstrap, topic, [b"early-%d" % i for i in range(100)])
    query = (
        reader_stream(spark, bootstrap, subscribe=topic, startingOffsets="earliest")
        .writeStream.format("memory")
        .queryName("processing_time_clicks")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    try:

        def seen() -> int:
            return spark.sql("SELECT count(*) AS n FROM processing_time_clicks").first().n

        deadline = time.monotonic() + 180
        while seen() < 100:
            assert query.exception() is None and time.monotonic() < deadline
            time.sleep(0.5)
        produce(bootstrap, topic, [b"late-%d" % i for i in range(50)])
        while seen() < 150:
            assert query.exception() is None and time.monotonic() < deadline
            time.sleep(0.5)
        assert seen() == 150
    finally:
        query.stop()
