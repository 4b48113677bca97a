"""Producer delivery paths against a scripted broker: retries, fatal errors, expiry,
back-pressure and acks=0 (real sockets and codec; outcomes chosen by the script)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

import pytest

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.codec import RequestHeader, encode_response, unsupported_version_response
from common.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnResponseResultsByPartition,
    AddPartitionsToTxnResponseTopicResult,
)
from common.protocol.messages.end_txn import EndTxnResponse
from common.protocol.messages.find_coordinator import FindCoordinatorResponse
from common.protocol.messages.init_producer_id import InitProducerIdResponse
from kraftlog_client import KafkaError, KafkaTimeoutError, Producer
from tests.unit.client.scripted_broker import ScriptedBroker, metadata_response

Script = Callable[[int], tuple[int, int] | None]  # produce attempt -> (error, base_offset)


def start(broker_factory: Callable[..., ScriptedBroker], produce: Script) -> ScriptedBroker:
    """A broker whose metadata points at itself and whose Produce answers follow
    ``produce(attempt)`` (None = never answer)."""
    holder: list[ScriptedBroker] = []
    attempts = itertools.count()
    lock = threading.Lock()

    def handler(header: RequestHeader, body: dict[str, Any]) -> bytes | None:
        if header.api_key == ApiKey.API_VERSIONS:
            return unsupported_version_response(header).to_bytes()
        if header.api_key == ApiKey.METADATA:
            return metadata_response(header, port=holder[0].port)
        if header.api_key == ApiKey.INIT_PRODUCER_ID:
            return encode_response(
                header,
                InitProducerIdResponse(
                    throttle_time_ms=0, error_code=0, producer_id=1000, producer_epoch=0
                ),
            ).to_bytes()
        if header.api_key != ApiKey.PRODUCE:
            return None
        with lock:
            outcome = produce(next(attempts))
        if outcome is None or body["acks"] == 0:
            return None
        error, base_offset = outcome
        return encode_response(
            header,
            {
                "responses": [
                    {
                        "name": "t",
                        "partition_responses": [
                            {
                                "index": 0,
                                "error_code": error,
                                "base_offset": base_offset,
                                "log_append_time_ms": -1,
                                "log_start_offset": 0,
                            }
                        ],
                    }
                ],
                "throttle_time_ms": 0,
            },
        ).to_bytes()

    holder.append(broker_factory(handler))
    return holder[0]


def producer(broker: ScriptedBroker, **props: object) -> Producer:
    config = {
        "bootstrap.servers": f"127.0.0.1:{broker.port}",
        "retry.backoff.ms": "20",
        "linger.ms": "0",
    }
    config.update({k: str(v) for k, v in props.items()})
    return Producer(config)


def test_a_retriable_error_is_retried_after_a_metadata_refresh(
    broker_factory: Callable[..., ScriptedBroker],
) -> None:
    broker = start(
        broker_factory,
        lambda attempt: (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1) if attempt == 0 else (0, 10),
    )
    with producer(broker) as p:
        metadata_before = broker.count(ApiKey.METADATA)
        md = p.send("t", b"v").get(30)
        assert md.offset == 10 and md.partition == 0
        assert broker.count(ApiKey.PRODUCE) == 2
        assert broker.count(ApiKey.METADATA) > metadata_before


def test_a_non_retriable_error_fails_the_record_without_retry(
    broker_factory: Callable[..., ScriptedBroker],
) -> None:
    broker = start(broker_factory, lambda attempt: (ErrorCode.CORRUPT_MESSAGE, -1))
    seen: list[Exception | None] = []
    with producer(broker) as p:
        future = p.send("t", b"v", on_delivery=lambda err, md: seen.append(err))
        with pytest.raises(KafkaError) as info:
            future.get(30)
    assert info.value.code == ErrorCode.CORRUPT_MESSAGE
    assert broker.count(ApiKey.PRODUCE) == 1
    assert len(seen) == 1 and isinstance(seen[0], KafkaError)


def test_retries_stop_at_the_retries_setting(
    broker_factory: Callable[..., ScriptedBroker],
) -> None:
    broker = start(broker_factory, lambda attempt: (ErrorCode.NOT_ENOUGH_REPLICAS, -1))
    with producer(broker, retries=2) as p, pytest.raises(KafkaError) as info:
        p.send("t", b"v").get(30)
    assert info.value.code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert broker.count(ApiKey.PRODUCE) == 3


def test_unanswered_records_expire_at_delivery_timeout(
    broker_factory: Callable[..., ScriptedBroker],
) -> None:
    broker = start(broker_factory, lambda attempt: None)
    p = producer(broker, **{"request.timeout.ms": 300, "delivery.timeout.ms": 1000})
    try:
        with pytest.raises(KafkaTimeoutError):
            p.send("t", b"v").get(30)
    finally:
        p.close(5)


def test_full_buffer_memory_blocks_send_then_times_out(
    broker_factory: Callable[..., ScriptedBroker],
) -> None:
    broker = start(broker_factory, lambda attempt: None)
    p = producer(
        broker,
        **{
            "buffer.memory": 20000,
            "batch.size": 16384,
            "max.block.ms": 300,
            "request.timeout.ms": 60000,
        },
    )
    try:
        p.send("t", b"x" * 100)  # reserves one 16 KiB batch
        with pytest.raises(KafkaTimeoutError, match=r"buffer\.memory"):
            for _ in range(1000):
                p.send("t", b"x" * 100)
    finally:
        p.close(0)


def test_acks_zero_completes_without_a_response(
    broker_factory: Callable[..., ScriptedBroker],
) -> None:
    broker = start(broker_factory, lambda attempt: (0, 0))
    with producer(broker, acks=0) as p:
        futures = [p.send("t", b"%d" % i) for i in range(10)]
        p.flush(30)
        assert [f.get(0).offset for f in futures] == [-1] * 10


def test_bad_timestamps_are_refused_by_send(
    broker_factory: Callable[..., ScriptedBroker],
) -> None:
    broker = start(broker_factory, lambda attempt: (0, 0))
    with producer(broker) as p:
        for bad in (-5, 1 << 63, 1.5):
            with pytest.raises(ValueError, match="timestamp_ms"):
                p.send("t", b"v", timestamp_ms=bad)  # type: ignore[arg-type]
        assert p.send("t", b"v", timestamp_ms=1).get(30).offset == 0


def test_records_queued_after_a_transactions_batch_failed_fail_at_once(
    broker_factory: Callable[..., ScriptedBroker],
) -> None:
    """A failed batch makes the transaction abortable: later records are not sent (their
    producer epoch must change first) and fail at once, so flush returns."""
    holder: list[ScriptedBroker] = []

    def handler(header: RequestHeader, body: dict[str, Any]) -> bytes | None:
        if header.api_key == ApiKey.API_VERSIONS:
            return unsupported_version_response(header).to_bytes()
        if header.api_key == ApiKey.METADATA:
            return metadata_response(header, port=holder[0].port)
        answers: dict[int, Any] = {
            ApiKey.FIND_COORDINATOR: FindCoordinatorResponse(
                throttle_time_ms=0, error_code=0, node_id=7, host="127.0.0.1", port=holder[0].port
            ),
            ApiKey.INIT_PRODUCER_ID: InitProducerIdResponse(
                throttle_time_ms=0, error_code=0, producer_id=1000, producer_epoch=0
            ),
            ApiKey.ADD_PARTITIONS_TO_TXN: AddPartitionsToTxnResponse(
                throttle_time_ms=0,
                results_by_topic_v3_and_below=[
                    AddPartitionsToTxnResponseTopicResult(
                        name="t",
                        results_by_partition=[
                            AddPartitionsToTxnResponseResultsByPartition(
                                partition_index=0, partition_error_code=0
                            )
                        ],
                    )
                ],
            ),
            ApiKey.END_TXN: EndTxnResponse(throttle_time_ms=0, error_code=0),
            ApiKey.PRODUCE: {
                "responses": [
                    {
                        "name": "t",
                        "partition_responses": [
                            {
                                "index": 0,
                                "error_code": ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                "base_offset": -1,
                                "log_append_time_ms": -1,
                                "log_start_offset": 0,
                            }
                        ],
                    }
                ],
                "throttle_time_ms": 0,
            },
        }
        answer = answers.get(header.api_key)
        return None if answer is None else encode_response(header, answer).to_bytes()

    holder.append(broker_factory(handler))
    p = producer(holder[0], **{"transactional.id": "tx"})
    try:
        p.init_transactions(5)
        p.begin_transaction()
        with pytest.raises(KafkaError):
            p.send("t", b"first", partition=0).get(5)
        later = p.send("t", b"later", partition=0)
        p.flush(5)  # no KafkaTimeoutError: the queued record failed at once
        with pytest.raises(KafkaError):
            later.get(0)
        p.abort_transaction(5)
    finally:
        p.close(5)
