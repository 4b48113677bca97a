"""The Kafka wire-protocol broker: connections, request handlers, partitions, purgatory.

Layout (one job per module; docs/broker.md has the whole picture)::

    config.py                BrokerConfig: Kafka-named broker settings
    server.py                KafkaServer: listeners, housekeeping tick, metadata images as events
    client_connection.py     one client connection: socket reads, handler tasks, sendmsg/sendfile
    request_pipeline.py      sans-IO request order, back-pressure, muting, close-after
    purgatory.py             sans-IO delayed operations with an injected clock
    delayed.py               DelayedFetch / DelayedProduce conditions
    partition.py             Partition: leader/follower state, leader epoch, high watermark
    replica_manager.py       ReplicaManager: the partitions this broker hosts, from metadata
    partition_logs.py        PartitionLogs: creates and deletes logs, then publishes each image
    metadata_publisher.py    MetadataPublisher: images handed to subscribers as events
    coordinator_partition_writer.py  the coordinators' PartitionWriter over the ReplicaManager
    handlers/                one module per API
"""
