"""The Spark job: committed click events -> clicks and users per page per minute -> Parquet.

Output columns: ``window_start`` (timestamp, the minute), ``page``, ``clicks`` (long),
``users`` (approximate distinct users, long). Rows are ordered by minute, then clicks.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

CLICK_SCHEMA = "page string, user string, ts long"


def read_clicks(spark: SparkSession, bootstrap: str, topic: str) -> DataFrame:
    """The committed click events of ``topic`` as (event_time, page, user)."""
    raw = (
        spark.read.format("kraftlog")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
    )
    events = raw.select(F.from_json(F.col("value").cast("string"), CLICK_SCHEMA).alias("e"))
    return events.select(
        F.timestamp_millis(F.col("e.ts")).alias("event_time"), "e.page", "e.user"
    ).where(F.col("page").isNotNull())


def clicks_per_page_per_minute(events: DataFrame) -> DataFrame:
    return (
        events.groupBy(F.window("event_time", "1 minute").alias("w"), "page")
        .agg(F.count("*").alias("clicks"), F.approx_count_distinct("user").alias("users"))
        .select(F.col("w.start").alias("window_start"), "page", "clicks", "users")
        .orderBy("window_start", F.desc("clicks"), "page")
    )


def run_job(spark: SparkSession, bootstrap: str, topic: str, output: str) -> dict[str, Any]:
    """Aggregate and write Parquet to ``output`` (replaced); returns a small summary."""
    events = read_clicks(spark, bootstrap, topic).cache()
    try:
        result = clicks_per_page_per_minute(events)
        result.write.mode("overwrite").parquet(output)
        written = spark.read.parquet(output)
        return {
            "events": events.count(),
            "rows": written.count(),
            "clicks": written.agg(F.sum("clicks")).first()[0],
            "top": written.groupBy("page")
            .agg(F.sum("clicks").alias("clicks"))
            .orderBy(F.desc("clicks"))
            .limit(5)
            .collect(),
        }
    finally:
        events.unpersist()
