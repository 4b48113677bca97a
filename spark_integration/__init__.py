"""The PySpark data source for kraftlog topics (format ``kraftlog``; see docs/spark.md).

    import spark_integration
    spark_integration.register(spark)
    spark.read.format("kraftlog").option("kafka.bootstrap.servers", "127.0.0.1:9092") \\
        .option("subscribe", "events").load()

When the package is installed, Spark 4.x also finds the source by itself through the top-level
module :mod:`pyspark_kraftlog` (Spark registers every ``pyspark_*`` module's ``DefaultSource``).
The pyspark-free parts (options, offsets, planning, columnar decoding) import without Spark.
"""

from __future__ import annotations

from typing import Any

FORMAT_NAME = "kraftlog"


def register(spark: Any) -> None:
    """Register format ``kraftlog`` with ``spark`` (a SparkSession)."""
    from spark_integration.source import KraftlogDataSource

    spark.dataSource.register(KraftlogDataSource)


__all__ = ["FORMAT_NAME", "register"]
