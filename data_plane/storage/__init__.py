"""Partition storage: RecordBatch v2, log segments with sparse indexes, logs, recovery, retention."""
