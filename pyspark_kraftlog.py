"""Lets Spark 4.x register format ``kraftlog`` by itself: at the first Python data source
lookup Spark imports every top-level ``pyspark_*`` module on the Python path and registers its
``DefaultSource`` (pyspark.sql.worker.lookup_data_sources). See spark_integration."""

from spark_integration.source import KraftlogDataSource as DefaultSource

__all__ = ["DefaultSource"]
