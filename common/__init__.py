"""The shared vocabulary at the bottom of the layers: Kafka error codes, TopicPartition, the
config definition machinery, durable file writes, the RecordBatch v2 format and its codecs, the
per-topic LogConfig and the security model (principals, ACLs, quotas, SCRAM). It imports
nothing of kraftlog's other packages."""
