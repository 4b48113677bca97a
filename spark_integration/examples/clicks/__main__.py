"""``python -m spark_integration.examples.clicks``: generate clicks, aggregate, write Parquet."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence

from spark_integration.examples.clicks.generator import ensure_topic, produce_clicks

CLUSTER_DIR = ".cluster"
CLUSTER_UP_TIMEOUT_S = 180


def local_cluster_bootstrap(directory: str) -> str:
    """Start (or reuse) the local cluster in ``directory`` with the kraftlog command line and
    return its bootstrap servers."""
    cli = [sys.executable, "-m", "deploy.cli", "cluster"]
    subprocess.run(
        [*cli, "up", "--dir", directory, "--detach"], check=True, timeout=CLUSTER_UP_TIMEOUT_S
    )
    status = subprocess.run(
        [*cli, "status", "--dir", directory, "--json"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return ",".join(json.loads(status.stdout)["bootstrap_servers"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_integration.examples.clicks")
    parser.add_argument("--bootstrap-servers", help="a running cluster (default: .cluster)")
    parser.add_argument("--topic", default="clicks")
    parser.add_argument("--events", type=int, default=20_000, help="click events to produce")
    parser.add_argument(
        "--output", default=".cluster/clicks-per-minute.parquet", help="Parquet directory"
    )
    args = parser.parse_args(argv)

    bootstrap = args.bootstrap_servers or local_cluster_bootstrap(CLUSTER_DIR)
    ensure_topic(bootstrap, args.topic)
    started = time.monotonic()
    produced = produce_clicks(bootstrap, args.topic, args.events)
    print(
        f"produced {produced} click events to {args.topic} ({bootstrap}) "
        f"in {time.monotonic() - started:.1f} s"
    )

    # Spark's Python workers must run this interpreter and import this repository.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from spark_integration.examples.clicks.job import run_job

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("kraftlog-clicks")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        import spark_integration

        spark_integration.register(spark)
        started = time.monotonic()
        summary = run_job(spark, bootstrap, args.topic, args.output)
        print(
            f"read {summary['events']} committed events; wrote {summary['rows']} rows "
            f"(page x minute, {summary['clicks']} clicks) to {args.output} "
            f"in {time.monotonic() - started:.1f} s"
        )
        print("top pages:", ", ".join(f"{r.page} {r.clicks}" for r in summary["top"]))
        spark.read.parquet(args.output).show(10, truncate=False)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
