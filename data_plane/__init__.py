"""Brokers' data plane: storage, the Kafka wire protocol, replication and the native client."""
