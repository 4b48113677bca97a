"""A read_committed consumer never takes a group offset that a transaction is still
committing (KIP-447 ``require_stable``): while a transaction holds the group's offset of a
partition, the consumer's OffsetFetch is answered UNSTABLE_OFFSET_COMMIT and retried, so it
gets the transaction's offset once it commits, not the older one. Without it a member
resuming right after a transactional commit processed the last transaction's input again
(an exactly-once violation the chaos campaign found). A read_uncommitted consumer still
gets the last committed offset at once."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from deploy.local_cluster import LocalCluster
from kraftlog_client import Consumer, TopicPartition
from tests.integration.transactions.test_native_transactions import (
    CALL_TIMEOUT_S,
    native_producer,
)
from tests.integration.transactions.test_transactions_clients import bootstrap, make_topic

pytestmark = [pytest.mark.integration]
# How long the transaction stays open while the read_committed consumer asks: long enough
# for its first OffsetFetch to reach the coordinator on a loaded machine.
PENDING_S = 2.0


def group_consumer(cluster: LocalCluster, group: str, isolation: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap(cluster),
            "group.id": group,
            "isolation.level": isolation,
            "enable.auto.commit": False,
        }
    )


def test_read_committed_consumer_waits_for_a_pending_transactional_offset(
    cluster: LocalCluster,
) -> None:
    topic = make_topic(cluster)
    tp = TopicPartition(topic, 0)
    group = f"stable-{uuid.uuid4().hex[:6]}"
    first = group_consumer(cluster, group, "read_uncommitted")
    try:
        first.commit({tp: 5}, timeout_ms=CALL_TIMEOUT_S * 1000)
    finally:
        first.close()
    producer = native_producer(cluster, f"stable-{uuid.uuid4().hex[:6]}")
    try:
        producer.begin_transaction()
        producer.send_offsets_to_transaction({tp: 10}, group, CALL_TIMEOUT_S)
        # Pending: a read_uncommitted consumer sees the committed 5 at once.
        plain = group_consumer(cluster, group, "read_uncommitted")
        try:
            assert plain.committed([tp], timeout_ms=CALL_TIMEOUT_S * 1000) == {tp: 5}
        finally:
            plain.close()
        stable = group_consumer(cluster, group, "read_committed")
        got: dict[TopicPartition, int | None] = {}
        asker = threading.Thread(
            target=lambda: got.update(stable.committed([tp], timeout_ms=CALL_TIMEOUT_S * 1000))
        )
        try:
            asker.start()
            time.sleep(PENDING_S)
            producer.commit_transaction(CALL_TIMEOUT_S)
            asker.join(CALL_TIMEOUT_S)
            assert not asker.is_alive()
        finally:
            stable.close()
    finally:
        producer.close(CALL_TIMEOUT_S)
    # The transaction's offset, never the 5 it replaced.
    assert got == {tp: 10}
