"""Spark and transactions: read_committed beside read_uncommitted, the exactly-once writer
beside the at-least-once one (prints, never asserts).

    .venv/bin/python -m bench.spark_write                  # 1,000,000 records
    .venv/bin/python -m bench.spark_write --quick          # 200,000 records

Starts its own LocalCluster (1 controller + 3 brokers) in a temporary directory, then on a
local[2] SparkSession:

- reads: a topic of 6 partitions (replication factor 1) filled by transactional producers,
  transactions of ``TXN_RECORDS`` records, one in ``ABORT_EVERY`` aborted. Spark's Arrow
  ``count()`` with ``kafka.isolation.level`` read_committed (plans to the last stable
  offset, drops the aborted transactions' records) and read_uncommitted (everything),
  alternating, three runs each; the best of each is compared (target: read_committed >= 90 %
  of read_uncommitted), both in rows returned per second and in records read per second
  (read_committed fetches the aborted records too, and returns a tenth fewer rows);
- writes: the same cached DataFrame of ``--records`` rows (100 B values, 2 Spark
  partitions) written with ``df.write.format("kraftlog")`` to a new topic of 6 partitions
  (replication factor 3) with ``exactlyOnce`` false (idempotent producer, acks=all) and true
  (a prepared transaction per task, the driver's decision and EndTxns), alternating, twice
  each (target: exactly-once >= 50 % of at-least-once);
- streaming: the committed records of the read topic, read in ``STREAM_BATCHES``
  micro-batches (Trigger.AvailableNow) and written to a new topic with ``exactlyOnce`` false
  and true: the per-batch cost of the decision log and the EndTxns shows here.

Rates on a shared 2-core machine swing with its load: compare the figures of one run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from collections.abc import Callable

from bench.machine import load_average
from bench.report import row
from bench.spark_setup import bench_cluster, local_session
from kraftlog_client import Admin, NewTopic, Producer

VALUE_BYTES = 100
PARTITIONS = 6
TXN_RECORDS = 10_000  # records per transaction of the read topic
ABORT_EVERY = 10  # one transaction in ten is aborted
READ_TOPIC = "spark-bench-txn"
CALL_TIMEOUT_S = 120.0
READ_RUNS = 3  # runs of each read, alternating (the JVM warms up over the first ones)
STREAM_BATCHES = 10  # micro-batches of the streaming writes (maxOffsetsPerTrigger)
STREAM_TIMEOUT_S = 600.0


def produce_transactions(bootstrap: str, records: int) -> tuple[float, int]:
    """Fill READ_TOPIC in transactions; returns (seconds, committed records)."""
    value = b"x" * VALUE_BYTES
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": "spark-bench-writer",
            "linger.ms": 5,
            "batch.size": 262144,
        }
    )
    committed = 0
    started = time.monotonic()
    try:
        producer.init_transactions(CALL_TIMEOUT_S)
        for n, first in enumerate(range(0, records, TXN_RECORDS)):
            count = min(TXN_RECORDS, records - first)
            producer.begin_transaction()
            for i in range(count):
                producer.send(READ_TOPIC, value, partition=(first + i) % PARTITIONS)
            if n % ABORT_EVERY == ABORT_EVERY - 1:
                producer.flush(CALL_TIMEOUT_S)
                producer.abort_transaction(CALL_TIMEOUT_S)
            else:
                producer.commit_transaction(CALL_TIMEOUT_S)
                committed += count
    finally:
        producer.close(CALL_TIMEOUT_S)
    return time.monotonic() - started, committed


def best_rate(label: str, action: Callable[[], int], runs: int) -> float:
    """Run ``action`` (returns the rows it handled) ``runs`` times; prints each, returns
    the best rows/s."""
    best = 0.0
    for run in range(1, runs + 1):
        started = time.monotonic()
        rows = action()
        seconds = time.monotonic() - started
        print(row(f"{label} (run {run})", rows, VALUE_BYTES, seconds), flush=True)
        best = max(best, rows / seconds)
    return best


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="200,000 records")
    args = parser.parse_args()
    if args.quick:
        args.records = min(args.records, 200_000)
    setup = bench_cluster("kraftlog-spark-write-bench-", READ_TOPIC, PARTITIONS)
    with setup as (cluster, bootstrap):
        print(
            f"== Spark and transactions, {args.records:,} records of {VALUE_BYTES} B, "
            f"{PARTITIONS} partitions on 3 brokers, local[2]; load {load_average()}",
            flush=True,
        )
        seconds, committed = produce_transactions(bootstrap, args.records)
        print(row("produce in transactions (1 in 10 aborted)", args.records, VALUE_BYTES, seconds))
        spark = local_session("kraftlog-bench-write")
        try:
            rates: dict[str, float] = {}
            scanned: dict[str, float] = {}
            for run in range(1, READ_RUNS + 1):
                for isolation in ("read_uncommitted", "read_committed"):
                    df = (
                        spark.read.format("kraftlog")
                        .option("kafka.bootstrap.servers", bootstrap)
                        .option("subscribe", READ_TOPIC)
                        .option("kafka.isolation.level", isolation)
                        .load()
                    )
                    started = time.monotonic()
                    rows = df.count()
                    seconds = time.monotonic() - started
                    print(row(f"Arrow count() {isolation} (run {run})", rows, VALUE_BYTES, seconds))
                    rates[isolation] = max(rates.get(isolation, 0.0), rows / seconds)
                    # Records the read went through: the aborted ones are fetched and dropped.
                    scanned[isolation] = max(scanned.get(isolation, 0.0), args.records / seconds)
            print(
                "   read_committed / read_uncommitted: rows/s "
                f"{rates['read_committed'] / rates['read_uncommitted']:.0%}, records read/s "
                f"{scanned['read_committed'] / scanned['read_uncommitted']:.0%} (best runs; "
                f"{committed:,} of {args.records:,} records committed; target >= 90 %)",
                flush=True,
            )
            data = (
                spark.range(args.records, numPartitions=2)
                .selectExpr(
                    f"CAST(lpad(CAST(id AS STRING), {VALUE_BYTES}, 'x') AS BINARY) AS value"
                )
                .cache()
            )
            data.count()
            with Admin({"bootstrap.servers": bootstrap}) as admin:
                topics = [f"spark-bench-out-{i}" for i in range(4)]
                admin.create_topics([NewTopic(t, PARTITIONS, 3) for t in topics])
                admin.wait_for_leaders(topics)
            write = {"false": 0.0, "true": 0.0}
            for i, eos in enumerate(("false", "true", "false", "true")):
                label = "exactly-once" if eos == "true" else "at-least-once"

                def run(topic: str = topics[i], eos: str = eos) -> int:
                    data.write.format("kraftlog").option(
                        "kafka.bootstrap.servers", bootstrap
                    ).option("topic", topic).option("exactlyOnce", eos).mode("append").save()
                    return args.records

                write[eos] = max(write[eos], best_rate(f"write {label}", run, 1))
            print(
                f"   batch exactly-once / at-least-once: {write['true'] / write['false']:.0%} "
                "(target >= 50 %)",
                flush=True,
            )
            stream = {"false": 0.0, "true": 0.0}
            for i, eos in enumerate(("false", "true")):
                label = "exactly-once" if eos == "true" else "at-least-once"
                out = f"spark-bench-stream-{i}"
                with Admin({"bootstrap.servers": bootstrap}) as admin:
                    admin.create_topics([NewTopic(out, PARTITIONS, 3)])
                    admin.wait_for_leaders([out])
                query = (
                    spark.readStream.format("kraftlog")
                    .option("kafka.bootstrap.servers", bootstrap)
                    .option("subscribe", READ_TOPIC)
                    .option("startingOffsets", "earliest")
                    .option("maxOffsetsPerTrigger", max(1, args.records // STREAM_BATCHES))
                    .load()
                    .select("value")
                    .writeStream.format("kraftlog")
                    .option("kafka.bootstrap.servers", bootstrap)
                    .option("topic", out)
                    .option("exactlyOnce", eos)
                    .option("checkpointLocation", str(cluster.directory / f"checkpoint-{i}"))
                    .trigger(availableNow=True)
                )
                started = time.monotonic()
                running = query.start()
                finished = running.awaitTermination(STREAM_TIMEOUT_S)
                seconds = time.monotonic() - started
                if not finished:
                    running.stop()
                    print(f"  streaming {label}: not done in {STREAM_TIMEOUT_S} s", flush=True)
                    continue
                print(row(f"streaming {label} ({STREAM_BATCHES} batches)", committed,
                          VALUE_BYTES, seconds), flush=True)  # fmt: skip
                stream[eos] = committed / seconds
            if stream["false"] and stream["true"]:
                print(
                    "   streaming exactly-once / at-least-once: "
                    f"{stream['true'] / stream['false']:.0%} (target >= 50 %)",
                    flush=True,
                )
            print(f"   load at the end: {load_average()}", flush=True)
        finally:
            spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
