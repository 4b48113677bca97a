"""Log compaction (Kafka's log cleaner): the cleaner threads and their manager, one compaction
pass, cleanable ranges, the offset map and the I/O throttler."""
