"""Partition storage: RecordBatch v2, segments with sparse indexes, logs, recovery, retention."""
