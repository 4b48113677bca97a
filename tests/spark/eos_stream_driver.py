"""A streaming query in its own driver process, for the kill -9 test: reads ``--source``
with the kraftlog source, writes ``--sink`` with the exactly-once kraftlog sink, in
micro-batches of ``--max-offsets`` records (Trigger.AvailableNow: every record present when
the query starts, then exit 0), its checkpoint in ``--checkpoint``.

    python tests/spark/eos_stream_driver.py --bootstrap 127.0.0.1:9092 --source in \\
        --sink out --prefix q1 --commit-log decisions --checkpoint /tmp/chk

Spark's Python workers run this interpreter (PYSPARK_PYTHON) with the repository on
PYTHONPATH, both set by the caller.
"""

from __future__ import annotations

import argparse
import sys

# Bound on one run of the query, seconds (a loaded 2-core machine, tens of batches).
RUN_TIMEOUT_S = 600


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    for name in ("bootstrap", "source", "sink", "prefix", "commit-log", "checkpoint"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--max-offsets", type=int, default=100)
    args = parser.parse_args(argv)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("kraftlog-eos-driver")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    try:
        query = (
            spark.readStream.format("kraftlog")
            .option("kafka.bootstrap.servers", args.bootstrap)
            .option("subscribe", args.source)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", args.max_offsets)
            .load()
            .select("key", "value")
            .writeStream.format("kraftlog")
            .option("kafka.bootstrap.servers", args.bootstrap)
            .option("topic", args.sink)
            .option("transactionalIdPrefix", args.prefix)
            .option("exactlyOnce.commitLog", args.commit_log)
            .option("checkpointLocation", args.checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        if not query.awaitTermination(RUN_TIMEOUT_S):
            query.stop()
            print(f"the query did not finish in {RUN_TIMEOUT_S} s", file=sys.stderr)
            return 2
        return 0 if query.exception() is None else 1
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
