"""The Kafka wire-protocol broker: connections, request handlers, partitions, purgatory.

Layout (one job per module; docs/broker.md has the whole picture)::

    config.py          BrokerConfig: Kafka-named broker settings
    server.py          KafkaServer: asyncio listeners, framing, in-order responses, sendfile
    connection.py      one client connection (read frames, queue, write parts)
    purgatory.py       sans-IO delayed operations with an injected clock
    delayed.py         DelayedFetch / DelayedProduce conditions
    partition.py       Partition: leader/follower state, leader epoch, high watermark
    replica_manager.py ReplicaManager: the partitions this broker hosts, from metadata
    handlers/          one module per API
"""
