"""Click events, end to end: a generator produces them, Spark aggregates committed ones.

    .venv/bin/python -m spark_integration.examples.clicks            # or: make spark-example

1. :mod:`.generator` produces JSON click events (page, user, event time) into topic
   ``clicks`` with the idempotent producer (acks=all), record timestamps = event times;
2. :mod:`.job` reads the topic with ``spark.read.format("kraftlog")`` (committed records
   only, up to the high watermark), counts clicks and distinct users per page and per minute,
   and writes Parquet.

Without ``--bootstrap-servers`` it starts (or reuses) the local cluster in ``.cluster`` with
the ``kraftlog cluster up`` command, as ``make run`` does.
"""
