"""Helpers of the Spark tests: produce, consume, partition leaders, DeleteRecords."""

from __future__ import annotations

import time

from common.protocol.api_keys import ApiKey
from common.protocol.messages.delete_records import (
    DeleteRecordsRequest,
    DeleteRecordsRequestPartition,
    DeleteRecordsRequestTopic,
)
from deploy.local_cluster import LocalCluster
from kraftlog_client import Admin, Consumer, Producer, TopicPartition
from tests.unit.broker.wire import WireClient

DEADLINE_S = 60.0


def produce(
    bootstrap: str,
    topic: str,
    values: list[bytes],
    *,
    partition: int | None = None,
    acks: str = "all",
    timestamps: list[int] | None = None,
    headers: list | None = None,
) -> list[int]:
    """Send ``values``; returns their offsets (all acknowledged)."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 2})
    try:
        futures = [
            producer.send(
                topic,
                v,
                key=b"k%d" % i,
                partition=partition,
                timestamp_ms=timestamps[i] if timestamps else None,
                headers=headers[i] if headers else None,
            )
            for i, v in enumerate(values)
        ]
        producer.flush(DEADLINE_S)
        return [f.get(DEADLINE_S).offset for f in futures]
    finally:
        producer.close(DEADLINE_S)


def consume(bootstrap: str, topic: str, partition: int, expected: int) -> list[tuple]:
    """(offset, key, value) of partition ``partition`` from 0 as the native consumer reads
    it, polling until ``expected`` records (and a little longer, to catch extra ones)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"})
    out: list[tuple] = []
    try:
        consumer.assign([TopicPartition(topic, partition)])
        deadline = time.monotonic() + DEADLINE_S
        while len(out) < expected and time.monotonic() < deadline:
            out.extend((r.offset, r.key, r.value) for r in consumer.poll(500))
        out.extend((r.offset, r.key, r.value) for r in consumer.poll(1000))
    finally:
        consumer.close()
    return out


def leader_of(admin: Admin, topic: str, partition: int = 0) -> int:
    return admin.describe_topics([topic])[topic].partitions[partition].leader


def delete_records(cluster: LocalCluster, admin: Admin, topic: str, before: int) -> int:
    """DeleteRecords v1 on partition 0 at its leader (moves the log start offset, as retention
    does); returns the new low watermark. The native client does not speak DeleteRecords."""
    leader = leader_of(admin, topic)
    port = cluster.node(leader).broker_port
    if port is None:
        raise AssertionError(f"broker {leader} has no port")
    client = WireClient(port, cluster.host_of(leader))
    try:
        partition = DeleteRecordsRequestPartition(partition_index=0, offset=before)
        body = DeleteRecordsRequest(
            topics=[DeleteRecordsRequestTopic(name=topic, partitions=[partition])],
            timeout_ms=10_000,
        )
        answer = client.call(ApiKey.DELETE_RECORDS, 1, body)
    finally:
        client.close()
    part = answer.topics[0].partitions[0]
    if part.error_code != 0:
        raise AssertionError(f"DeleteRecords failed: {part}")
    low_watermark: int = part.low_watermark
    return low_watermark
