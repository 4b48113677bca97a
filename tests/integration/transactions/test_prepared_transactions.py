"""Two-phase commit with the native client against 3 real brokers: a producer prepares its
transaction and is closed, another client (Admin.complete_transaction, knowing only the
PreparedTxnState) commits or aborts it; completing twice is harmless; a new init_transactions
of the same transactional id aborts a prepared transaction nobody decided."""

from __future__ import annotations

import pickle
import uuid

import pytest

from common.error_codes import ErrorCode
from deploy.local_cluster import LocalCluster
from kraftlog_client import Admin, KafkaError, PreparedTxnState, Producer
from tests.integration.transactions.test_native_transactions import (
    CALL_TIMEOUT_S,
    native_producer,
    native_read,
)
from tests.integration.transactions.test_transactions_clients import (
    PARTITIONS,
    bootstrap,
    make_topic,
)

pytestmark = [pytest.mark.integration]
TIMEOUT_MS = CALL_TIMEOUT_S * 1000


def prepare(
    cluster: LocalCluster, topic: str, txn_id: str, values: list[bytes]
) -> PreparedTxnState:
    """Send ``values`` in a transaction, prepare it and close the producer."""
    p = native_producer(cluster, txn_id)
    try:
        p.begin_transaction()
        for i, v in enumerate(values):
            p.send(topic, v, partition=i % PARTITIONS)
        prepared = p.prepare_transaction(CALL_TIMEOUT_S)
        for call in (
            lambda: p.send(topic, b"late", partition=0),
            lambda: p.commit_transaction(CALL_TIMEOUT_S),
            lambda: p.abort_transaction(CALL_TIMEOUT_S),
        ):
            with pytest.raises(KafkaError) as refused:
                call()
            assert refused.value.code == ErrorCode.INVALID_TXN_STATE
    finally:
        p.close(CALL_TIMEOUT_S)
    # The state travels between processes.
    return pickle.loads(pickle.dumps(prepared))


def test_prepared_then_committed_by_another_client(cluster: LocalCluster) -> None:
    topic = make_topic(cluster)
    txn_id = f"prep-{uuid.uuid4().hex[:6]}"
    values = [b"v-%d" % i for i in range(20)]
    prepared = prepare(cluster, topic, txn_id, values)
    with Admin({"bootstrap.servers": bootstrap(cluster)}) as admin:
        # Closing the producer did not end it: the coordinator still holds it open.
        assert admin.describe_transaction(txn_id, timeout_ms=TIMEOUT_MS).state == "Ongoing"
        admin.complete_transaction(prepared, commit=True, timeout_ms=TIMEOUT_MS)
        admin.complete_transaction(prepared, commit=True, timeout_ms=TIMEOUT_MS)  # again: fine
        with pytest.raises(KafkaError) as other_way:
            admin.complete_transaction(prepared, commit=False, timeout_ms=TIMEOUT_MS)
        assert other_way.value.code == ErrorCode.INVALID_TXN_STATE
    assert sorted(native_read(cluster, topic, "read_committed", len(values))) == sorted(values)


def test_prepared_then_aborted_by_another_client(cluster: LocalCluster) -> None:
    topic = make_topic(cluster)
    txn_id = f"prep-{uuid.uuid4().hex[:6]}"
    prepared = prepare(cluster, topic, txn_id, [b"gone-%d" % i for i in range(20)])
    with Admin({"bootstrap.servers": bootstrap(cluster)}) as admin:
        admin.complete_transaction(prepared, commit=False, timeout_ms=TIMEOUT_MS)
        admin.complete_transaction(prepared, commit=False, timeout_ms=TIMEOUT_MS)
    after = native_producer(cluster, f"after-{uuid.uuid4().hex[:6]}")
    try:
        after.begin_transaction()
        after.send(topic, b"after", partition=0)
        after.commit_transaction(CALL_TIMEOUT_S)
    finally:
        after.close(CALL_TIMEOUT_S)
    assert native_read(cluster, topic, "read_committed", 1) == [b"after"]
    assert len(native_read(cluster, topic, "read_uncommitted", 21)) == 21


def test_init_transactions_aborts_an_undecided_prepared_transaction(
    cluster: LocalCluster,
) -> None:
    topic = make_topic(cluster)
    txn_id = f"prep-{uuid.uuid4().hex[:6]}"
    prepared = prepare(cluster, topic, txn_id, [b"orphan-%d" % i for i in range(20)])
    successor: Producer = native_producer(cluster, txn_id)  # fences and aborts it
    try:
        successor.begin_transaction()
        successor.send(topic, b"successor", partition=1)
        successor.commit_transaction(CALL_TIMEOUT_S)
    finally:
        successor.close(CALL_TIMEOUT_S)
    # The decision can no longer be taken: the epoch moved on.
    with Admin({"bootstrap.servers": bootstrap(cluster)}) as admin:
        with pytest.raises(KafkaError) as fenced:
            admin.complete_transaction(prepared, commit=True, timeout_ms=TIMEOUT_MS)
        assert fenced.value.code == ErrorCode.PRODUCER_FENCED
    assert native_read(cluster, topic, "read_committed", 1) == [b"successor"]
