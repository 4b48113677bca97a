"""kafka-python as a test oracle, imported with its DeprecationWarning silenced."""

from __future__ import annotations

import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka.partitioner.default import murmur2 as kafka_murmur2  # noqa: F401
    from kafka.record.default_records import (  # noqa: F401
        DefaultRecordBatch,
        DefaultRecordBatchBuilder,
    )
