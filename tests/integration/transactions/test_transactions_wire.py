"""Transactions over the raw wire against 3 real brokers: a hanging transaction holds the last
stable offset until its timeout aborts it, and bad input gets Kafka's error codes."""

from __future__ import annotations

import uuid

import pytest

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnRequestTopic,
)
from common.protocol.messages.end_txn import EndTxnRequest
from common.protocol.messages.init_producer_id import (
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from common.protocol.messages.list_offsets import (
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
)
from common.protocol.messages.write_txn_markers import (
    WriteTxnMarkersRequest,
    WriteTxnMarkersRequestMarker,
    WriteTxnMarkersRequestTopic,
)
from data_plane.storage import Record, build_batch
from data_plane.storage.record_codec import build_end_txn_marker
from deploy.local_cluster import LocalCluster
from tests.integration.replication.helpers import create_topic, port_of, wait_for
from tests.integration.transactions.test_transactions_clients import coordinator_of, read_all
from tests.unit.broker.wire import WireClient

pytestmark = [pytest.mark.integration]


def client_for(cluster: LocalCluster, broker: int) -> WireClient:
    return WireClient(port_of(cluster, broker), cluster.host_of(broker))


def find_coordinator(cluster: LocalCluster, txn_id: str) -> WireClient:
    """A connection to ``txn_id``'s coordinator (``__transaction_state`` is created on the
    first FindCoordinator)."""
    return client_for(cluster, coordinator_of(cluster, txn_id))


def init(client: WireClient, txn_id: str, timeout_ms: int) -> InitProducerIdResponse:
    def attempt() -> InitProducerIdResponse | None:
        r = client.call(
            ApiKey.INIT_PRODUCER_ID,
            1,
            InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=timeout_ms),
        )
        return r if r.error_code == 0 else None

    return wait_for(attempt, "InitProducerId")


def latest(client: WireClient, topic: str, isolation: int) -> int:
    partition = ListOffsetsRequestPartition(partition_index=0, timestamp=-1)
    body = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=isolation,
        topics=[ListOffsetsRequestTopic(name=topic, partitions=[partition])],
    )
    p = client.call(ApiKey.LIST_OFFSETS, 5, body).topics[0].partitions[0]
    assert p.error_code == 0, p
    return int(p.offset)


def produce(client: WireClient, topic: str, batch: bytearray, txn_id: str | None) -> dict:
    body = {
        "transactional_id": txn_id,
        "acks": -1,
        "timeout_ms": 30_000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": bytes(batch)}]}],
    }
    return client.call(ApiKey.PRODUCE, 7, body)["responses"][0]["partition_responses"][0]


def setting(cluster: LocalCluster, name: str) -> tuple[str, str, WireClient, WireClient]:
    """A new one-partition topic (RF 3) and transactional id, with connections to the id's
    coordinator and to the partition's leader."""
    topic = f"{name}-{uuid.uuid4().hex[:6]}"
    leader_id = create_topic(cluster, topic)
    txn_id = f"{name}-{uuid.uuid4().hex[:6]}"
    return topic, txn_id, find_coordinator(cluster, txn_id), client_for(cluster, leader_id)


def test_hanging_transaction_holds_the_lso_until_its_timeout(cluster: LocalCluster) -> None:
    topic, txn_id, coordinator, leader = setting(cluster, "hang")
    try:
        ids = init(coordinator, txn_id, 3000)
        pid, epoch = ids.producer_id, ids.producer_epoch
        plain = produce(leader, topic, build_batch([Record(None, b"before", 1)]), None)
        assert plain["error_code"] == 0
        add_partition(coordinator, txn_id, pid, epoch, topic)
        txn_batch = build_batch(
            [Record(None, b"hanging", 1)],
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=0,
            is_transactional=True,
        )
        first = produce(leader, topic, txn_batch, txn_id)
        assert first["error_code"] == 0, first
        after = produce(leader, topic, build_batch([Record(None, b"after", 1)]), None)
        assert after["error_code"] == 0
        # The transaction is open: read_committed readers stop at its first offset.
        assert latest(leader, topic, 1) == first["base_offset"]
        assert latest(leader, topic, 0) == after["base_offset"] + 1
        # No EndTxn comes: the coordinator aborts it after transaction.timeout.ms.
        wait_for(lambda: latest(leader, topic, 1) > after["base_offset"], "the timeout abort")
        # Its epoch was bumped: the stuck producer is fenced.
        assert end_txn(coordinator, txn_id, pid, epoch) == ErrorCode.PRODUCER_FENCED
        assert end_txn(coordinator, txn_id, pid, epoch, version=1) == (
            ErrorCode.INVALID_PRODUCER_EPOCH
        )
    finally:
        coordinator.close()
        leader.close()
    assert sorted(read_all(cluster, topic, "read_committed", 2, partitions=1)) == [
        b"after",
        b"before",
    ]


def add_partition(client: WireClient, txn_id: str, pid: int, epoch: int, topic: str) -> None:
    """AddPartitionsToTxn of ``topic``-0 (v2); asserts NO_ERROR."""
    added = client.call(
        ApiKey.ADD_PARTITIONS_TO_TXN,
        2,
        AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=txn_id,
            v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[AddPartitionsToTxnRequestTopic(name=topic, partitions=[0])],
        ),
    )
    result = added.results_by_topic_v3_and_below[0].results_by_partition[0]
    assert result.partition_error_code == 0, added


def end_txn(client: WireClient, txn_id: str, pid: int, epoch: int, *, version: int = 2) -> int:
    """EndTxn(commit); its error code."""
    body = EndTxnRequest(
        transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=True
    )
    return int(client.call(ApiKey.END_TXN, version, body).error_code)


def test_bad_transactional_input_gets_kafka_errors(cluster: LocalCluster) -> None:
    topic, txn_id, coordinator, leader = setting(cluster, "bad")
    try:
        assert end_txn(coordinator, f"never-{txn_id}", 1, 0) in (
            ErrorCode.INVALID_PRODUCER_ID_MAPPING,
            ErrorCode.NOT_COORDINATOR,
        )
        ids = init(coordinator, txn_id, 60_000)
        pid, epoch = ids.producer_id, ids.producer_epoch
        # EndTxn with no transaction open.
        assert end_txn(coordinator, txn_id, pid, epoch) == ErrorCode.INVALID_TXN_STATE
        # A marker sent by a client as a Produce: refused, nothing written.
        marker = build_end_txn_marker(
            producer_id=pid,
            producer_epoch=epoch,
            coordinator_epoch=0,
            committed=True,
            timestamp_ms=1,
        )
        refused = produce(leader, topic, marker, txn_id)
        assert refused["error_code"] == ErrorCode.INVALID_RECORD
        # A transactional batch for a partition its transaction never added: the leader asks
        # the coordinator, which does not confirm it (nothing is written).
        txn_batch = build_batch(
            [Record(None, b"t", 1)],
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=0,
            is_transactional=True,
        )
        unverified = produce(leader, topic, txn_batch, txn_id)
        assert unverified["error_code"] == ErrorCode.INVALID_TXN_STATE, unverified
        assert latest(leader, topic, 0) == 0
        add_partition(coordinator, txn_id, pid, epoch, topic)
        # Added: the same batch is appended; then a plain one from the same producer while
        # its transaction is open: INVALID_TXN_STATE.
        assert produce(leader, topic, txn_batch, txn_id)["error_code"] == 0
        plain = build_batch(
            [Record(None, b"p", 1)], producer_id=pid, producer_epoch=epoch, base_sequence=1
        )
        assert produce(leader, topic, plain, None)["error_code"] == ErrorCode.INVALID_TXN_STATE
        # An older epoch than the producer's: fenced by the partition.
        old = build_batch(
            [Record(None, b"o", 1)],
            producer_id=pid,
            producer_epoch=epoch - 1 if epoch else 0,
            base_sequence=5,
            is_transactional=True,
        )
        if epoch:
            assert produce(leader, topic, old, txn_id)["error_code"] == (
                ErrorCode.INVALID_PRODUCER_EPOCH
            )
        # WriteTxnMarkers from a stale coordinator epoch after a newer one wrote: fenced.
        marker = WriteTxnMarkersRequestMarker(
            producer_id=pid,
            producer_epoch=epoch,
            transaction_result=False,
            topics=[WriteTxnMarkersRequestTopic(name=topic, partition_indexes=[0])],
            coordinator_epoch=1_000,
        )
        r = leader.call(ApiKey.WRITE_TXN_MARKERS, 0, WriteTxnMarkersRequest(markers=[marker]))
        assert r.markers[0].topics[0].partitions[0].error_code == 0
        marker.coordinator_epoch = 999
        r = leader.call(ApiKey.WRITE_TXN_MARKERS, 0, WriteTxnMarkersRequest(markers=[marker]))
        code = r.markers[0].topics[0].partitions[0].error_code
        assert code == ErrorCode.TRANSACTION_COORDINATOR_FENCED
        # The broker keeps serving.
        assert latest(leader, topic, 0) >= 2
    finally:
        coordinator.close()
        leader.close()
