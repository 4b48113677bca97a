"""The native producer's TransactionManager without a network: request order, gating of
EndTxn on outstanding batches, error classes (retriable, abortable, fatal)."""

from __future__ import annotations

import pytest

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.messages.add_offsets_to_txn import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
)
from common.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequestTopic,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnResponseResultsByPartition,
    AddPartitionsToTxnResponseTopicResult,
)
from common.protocol.messages.end_txn import EndTxnResponse
from common.protocol.messages.init_producer_id import InitProducerIdResponse
from common.protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)
from common.topic_partition import TopicPartition
from kraftlog_client.errors import KafkaError
from kraftlog_client.transaction_manager import (
    ConsumerGroupMetadata,
    TransactionManager,
    TxnState,
)

TP = TopicPartition("t", 0)


def added_answer(codes: dict[int, int]) -> AddPartitionsToTxnResponse:
    """The coordinator's AddPartitionsToTxn answer: topic "t", a code per partition."""
    results = [
        AddPartitionsToTxnResponseResultsByPartition(partition_index=p, partition_error_code=c)
        for p, c in codes.items()
    ]
    return AddPartitionsToTxnResponse(
        results_by_topic_v3_and_below=[
            AddPartitionsToTxnResponseTopicResult(name="t", results_by_partition=results)
        ]
    )


def ready() -> tuple[TransactionManager, list[tuple[int, int]]]:
    ids: list[tuple[int, int]] = []
    tm = TransactionManager("tx", 60_000, backoff_ms=100, clock=lambda: 0.0)
    tm.on_producer_id(lambda pid, epoch: ids.append((pid, epoch)))
    result = tm.init_transactions()
    req = tm.next_request(0.0, batches_outstanding=False)
    assert req is not None and req.api_key == ApiKey.INIT_PRODUCER_ID
    tm.handle_response(req, InitProducerIdResponse(error_code=0, producer_id=7, producer_epoch=2))
    result.wait(0)
    assert tm.state is TxnState.READY and ids == [(7, 2)]
    return tm, ids


def test_partitions_are_added_before_their_batches_drain_and_end_waits() -> None:
    tm, _ = ready()
    tm.begin_transaction()
    tm.maybe_add_partition(TP)
    assert not tm.may_drain(TP)
    commit = tm.begin_commit()
    req = tm.next_request(0.0, batches_outstanding=True)
    assert req is not None and req.api_key == ApiKey.ADD_PARTITIONS_TO_TXN
    assert req.body.v3_and_below_topics == [
        AddPartitionsToTxnRequestTopic(name="t", partitions=[0])
    ]
    tm.handle_response(
        req,
        added_answer({0: 0}),
    )
    assert tm.may_drain(TP)
    # EndTxn waits while the transaction's batches are outstanding.
    assert tm.next_request(0.0, batches_outstanding=True) is None
    end = tm.next_request(0.0, batches_outstanding=False)
    assert end is not None and end.api_key == ApiKey.END_TXN and end.body.committed
    tm.handle_response(end, EndTxnResponse(error_code=0))
    commit.wait(0)
    assert tm.state is TxnState.READY and not tm.may_drain(TP)


def test_retriable_errors_retry_and_fenced_is_fatal() -> None:
    tm, _ = ready()
    tm.begin_transaction()
    result = tm.send_offsets_to_transaction({TP: 5}, ConsumerGroupMetadata("g"))
    req = tm.next_request(0.0, False)
    assert req.body == AddOffsetsToTxnRequest(
        transactional_id="tx", producer_id=7, producer_epoch=2, group_id="g"
    )
    tm.handle_response(req, AddOffsetsToTxnResponse(error_code=ErrorCode.CONCURRENT_TRANSACTIONS))
    again = tm.next_request(10.0, False)
    assert again is req and req.attempts == 1
    tm.handle_response(req, AddOffsetsToTxnResponse(error_code=0))
    commit_req = tm.next_request(10.0, False)
    assert commit_req.api_key == ApiKey.TXN_OFFSET_COMMIT and commit_req.group == "g"
    assert commit_req.body.topics == [
        TxnOffsetCommitRequestTopic(
            name="t",
            partitions=[
                TxnOffsetCommitRequestPartition(
                    partition_index=0,
                    committed_offset=5,
                    committed_leader_epoch=-1,
                    committed_metadata="",
                )
            ],
        )
    ]
    fenced = TxnOffsetCommitResponsePartition(
        partition_index=0, error_code=ErrorCode.PRODUCER_FENCED
    )
    tm.handle_response(
        commit_req,
        TxnOffsetCommitResponse(
            topics=[TxnOffsetCommitResponseTopic(name="t", partitions=[fenced])]
        ),
    )
    with pytest.raises(KafkaError) as info:
        result.wait(0)
    assert info.value.code == ErrorCode.PRODUCER_FENCED
    assert tm.state is TxnState.FATAL_ERROR
    with pytest.raises(KafkaError):
        tm.begin_abort()


def test_failed_batch_makes_commit_refused_and_abort_bumps_the_epoch() -> None:
    tm, ids = ready()
    tm.begin_transaction()
    tm.maybe_add_partition(TP)
    _added(tm)  # a batch is drained, so can fail, only once its partition is added
    tm.batch_failed(KafkaError(ErrorCode.MESSAGE_SIZE_TOO_LARGE, "x"))
    assert tm.state is TxnState.ABORTABLE_ERROR
    with pytest.raises(KafkaError):
        tm.begin_commit()
    abort = tm.begin_abort()
    end = tm.next_request(0.0, False)
    assert end.api_key == ApiKey.END_TXN and not end.body.committed
    tm.handle_response(end, EndTxnResponse(error_code=0))
    # Sequences may have gaps: a new epoch before the next transaction.
    init = tm.next_request(0.0, False)
    assert init.api_key == ApiKey.INIT_PRODUCER_ID
    tm.handle_response(init, InitProducerIdResponse(error_code=0, producer_id=7, producer_epoch=3))
    abort.wait(0)
    assert tm.state is TxnState.READY and ids[-1] == (7, 3)


def test_send_outside_a_transaction_is_refused() -> None:
    tm, _ = ready()
    with pytest.raises(KafkaError) as info:
        tm.maybe_add_partition(TP)
    assert info.value.code == ErrorCode.INVALID_TXN_STATE


def _added(tm: TransactionManager) -> None:
    req = tm.next_request(0.0, batches_outstanding=True)
    assert req is not None and req.api_key == ApiKey.ADD_PARTITIONS_TO_TXN
    tm.handle_response(
        req,
        added_answer({0: 0}),
    )


def test_prepare_leaves_the_transaction_open_and_refuses_every_later_call() -> None:
    tm, _ = ready()
    tm.begin_transaction()
    tm.maybe_add_partition(TP)
    with pytest.raises(KafkaError) as pending:
        tm.prepare()  # AddPartitionsToTxn not sent yet: records are still on their way
    assert pending.value.code == ErrorCode.INVALID_TXN_STATE
    assert tm.state is TxnState.IN_TRANSACTION
    _added(tm)
    prepared = tm.prepare()
    assert (prepared.transactional_id, prepared.producer_id, prepared.producer_epoch) == (
        "tx",
        7,
        2,
    )
    assert tm.state is TxnState.PREPARED
    # Nothing is sent after the prepare: no EndTxn, whatever the sender asks.
    assert tm.next_request(0.0, batches_outstanding=False) is None
    assert not tm.has_work()
    for call in (
        lambda: tm.maybe_add_partition(TP),
        tm.begin_commit,
        tm.begin_abort,
        tm.begin_transaction,
        tm.prepare,
    ):
        with pytest.raises(KafkaError) as refused:
            call()
        assert refused.value.code == ErrorCode.INVALID_TXN_STATE
    assert tm.next_request(0.0, batches_outstanding=False) is None
    assert type(prepared).from_dict(prepared.to_dict()) == prepared


def test_prepare_after_a_failed_batch_refuses_and_abort_still_works() -> None:
    tm, _ = ready()
    tm.begin_transaction()
    tm.maybe_add_partition(TP)
    _added(tm)
    tm.batch_failed(KafkaError(ErrorCode.NOT_ENOUGH_REPLICAS, "batch"))
    with pytest.raises(KafkaError) as refused:
        tm.prepare()
    assert refused.value.code == ErrorCode.INVALID_TXN_STATE
    tm.begin_abort()
    end = tm.next_request(0.0, batches_outstanding=False)
    assert end is not None and end.api_key == ApiKey.END_TXN and not end.body.committed
    tm.handle_response(end, EndTxnResponse(error_code=0))
    assert tm.state is TxnState.INITIALIZING  # the failed batch left a sequence gap


def test_a_partition_being_added_is_not_added_again() -> None:
    tm, _ = ready()
    tm.begin_transaction()
    tm.maybe_add_partition(TP)
    req = tm.next_request(0.0, batches_outstanding=True)
    assert req is not None and req.api_key == ApiKey.ADD_PARTITIONS_TO_TXN
    tm.maybe_add_partition(TP)  # another record while AddPartitionsToTxn is in flight
    assert not tm.idle()
    tm.handle_response(
        req,
        added_answer({0: 0}),
    )
    assert tm.idle() and tm.next_request(0.0, batches_outstanding=False) is None
    assert tm.prepare().producer_id == 7


def test_partitions_sent_while_an_add_is_retried_are_added_after_it() -> None:
    tm, _ = ready()
    tm.begin_transaction()
    tm.maybe_add_partition(TP)
    first = tm.next_request(0.0, batches_outstanding=True)
    assert first is not None and first.api_key == ApiKey.ADD_PARTITIONS_TO_TXN
    tm.handle_response(
        first,
        added_answer({0: ErrorCode.CONCURRENT_TRANSACTIONS}),
    )
    other = TopicPartition("t", 1)
    tm.maybe_add_partition(other)  # sent while the first add waits for its retry
    retry = tm.next_request(10.0, batches_outstanding=True)
    assert retry is first and retry.body.v3_and_below_topics == [
        AddPartitionsToTxnRequestTopic(name="t", partitions=[0])
    ]
    tm.handle_response(
        retry,
        added_answer({0: 0}),
    )
    assert tm.may_drain(TP) and not tm.may_drain(other)
    second = tm.next_request(10.0, batches_outstanding=True)
    assert second is not None and second.body.v3_and_below_topics == [
        AddPartitionsToTxnRequestTopic(name="t", partitions=[1])
    ]
    tm.handle_response(
        second,
        added_answer({1: 0}),
    )
    assert tm.may_drain(TP) and tm.may_drain(other) and tm.idle()


def test_a_transaction_the_coordinator_never_saw_ends_without_end_txn() -> None:
    tm, _ = ready()
    tm.begin_transaction()
    commit = tm.begin_commit()
    assert tm.next_request(0.0, batches_outstanding=False) is None  # no EndTxn
    commit.wait(0)
    assert tm.state is TxnState.READY
    tm.begin_transaction()
    abort = tm.begin_abort()
    assert tm.next_request(0.0, batches_outstanding=False) is None
    abort.wait(0)
    # Once a partition is added, the coordinator knows it: EndTxn again.
    tm.begin_transaction()
    tm.maybe_add_partition(TP)
    _added(tm)
    tm.begin_commit()
    end = tm.next_request(0.0, batches_outstanding=False)
    assert end is not None and end.api_key == ApiKey.END_TXN
