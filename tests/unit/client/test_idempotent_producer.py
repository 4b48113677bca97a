"""The idempotent producer against a scripted broker (real sockets and codec): producer ids,
sequences kept across retries, reset on UNKNOWN_PRODUCER_ID, fencing; and the in-order retry
guard of the accumulator + IdempotenceManager, driven directly."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

import pytest

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.codec import RequestHeader, encode_response, unsupported_version_response
from common.protocol.messages.init_producer_id import InitProducerIdResponse
from common.record_batch import HEADER_STRUCT
from common.topic_partition import TopicPartition
from kraftlog_client import ClientClosedError, KafkaError, Producer
from kraftlog_client.accumulator import RecordAccumulator
from kraftlog_client.config import ProducerConfig, client_config
from kraftlog_client.idempotence import IdempotenceManager, Outcome
from tests.unit.client.scripted_broker import ScriptedBroker, metadata_response

Script = Callable[[int], tuple[int, int]]  # produce attempt -> (error, base_offset)


class Recorder:
    """What the scripted broker saw: producer ids handed out, batch headers produced."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pids = itertools.count(1000)
        self.headers: list[tuple[int, int, int]] = []  # (producer_id, epoch, base_sequence)


def start(
    broker_factory: Callable[..., ScriptedBroker], produce: Script, rec: Recorder
) -> ScriptedBroker:
    holder: list[ScriptedBroker] = []
    attempts = itertools.count()

    def handler(header: RequestHeader, body: Any) -> bytes | None:
        if header.api_key == ApiKey.API_VERSIONS:
            return unsupported_version_response(header).to_bytes()
        if header.api_key == ApiKey.METADATA:
            return metadata_response(header, port=holder[0].port)
        if header.api_key == ApiKey.INIT_PRODUCER_ID:
            assert body.transactional_id is None
            with rec.lock:
                pid = next(rec.pids)
            return encode_response(
                header,
                InitProducerIdResponse(
                    throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=0
                ),
            ).to_bytes()
        if header.api_key != ApiKey.PRODUCE:
            return None
        records = body["topic_data"][0]["partition_data"][0]["records"]
        fields = HEADER_STRUCT.unpack_from(bytes(records), 0)
        with rec.lock:
            rec.headers.append((fields[9], fields[10], fields[11]))
            error, base_offset = produce(next(attempts))
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


def producer(broker: ScriptedBroker) -> Producer:
    return Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{broker.port}",
            "retry.backoff.ms": "20",
            "linger.ms": "0",
        }
    )


def test_a_retry_keeps_its_producer_id_and_sequence(
    broker_factory: Callable[..., ScriptedBroker],
) -> None:
    rec = Recorder()
    broker = start(
        broker_factory,
        lambda attempt: (ErrorCode.NOT_ENOUGH_REPLICAS, -1) if attempt == 0 else (0, 10 + attempt),
        rec,
    )
    with producer(broker) as p:
        assert p.send("t", b"a").get(30).offset == 11
        assert p.send("t", b"b").get(30).offset == 12
    assert rec.headers == [(1000, 0, 0), (1000, 0, 0), (1000, 0, 1)]
    assert broker.count(ApiKey.INIT_PRODUCER_ID) == 1


def test_unknown_producer_id_fails_the_batch_and_resets_the_sequences(
    broker_factory: Callable[..., ScriptedBroker],
) -> None:
    rec = Recorder()
    broker = start(
        broker_factory,
        lambda attempt: (ErrorCode.UNKNOWN_PRODUCER_ID, -1) if attempt == 1 else (0, attempt),
        rec,
    )
    with producer(broker) as p:
        assert p.send("t", b"a").get(30).offset == 0
        with pytest.raises(KafkaError) as info:
            p.send("t", b"b").get(30)
        assert info.value.code == ErrorCode.UNKNOWN_PRODUCER_ID
        assert p.send("t", b"c").get(30).offset == 2
    assert rec.headers == [(1000, 0, 0), (1000, 0, 1), (1001, 0, 0)]
    assert broker.count(ApiKey.INIT_PRODUCER_ID) == 2


def test_invalid_producer_epoch_stops_the_producer(
    broker_factory: Callable[..., ScriptedBroker],
) -> None:
    rec = Recorder()
    broker = start(broker_factory, lambda attempt: (ErrorCode.INVALID_PRODUCER_EPOCH, -1), rec)
    with producer(broker) as p:
        with pytest.raises(KafkaError) as info:
            p.send("t", b"a").get(30)
        assert info.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
        p._sender.join(30)
        with pytest.raises(ClientClosedError, match="INVALID_PRODUCER_EPOCH"):
            p.send("t", b"b")


def _drain(acc: RecordAccumulator, idem: IdempotenceManager, now_ms: float) -> list[Any]:
    drained, _, _ = acc.drain(now_ms, lambda tp: 1, lambda node: True, idem.may_drain)
    out = drained.get(1, [])
    for batch in out:
        idem.on_send(batch)
    return out


def test_retries_go_in_sequence_order_one_at_a_time_before_new_batches() -> None:
    config: ProducerConfig = client_config(
        ProducerConfig, {"linger.ms": 0, "batch.size": 200, "retry.backoff.ms": 0}
    )
    acc = RecordAccumulator(config, clock=lambda: 0.0)
    idem = IdempotenceManager()
    tp = TopicPartition("t", 0)
    assert _drain(acc, idem, 0.0) == []
    acc.append(tp, 1, None, b"x" * 150, None, 1000)
    assert _drain(acc, idem, 0.0) == []  # no producer id yet: nothing leaves
    idem.set_producer_id(7, 0)
    first = _drain(acc, idem, 0.0)
    acc.append(tp, 1, None, b"y" * 150, None, 1000)
    second = _drain(acc, idem, 0.0)
    acc.append(tp, 1, None, b"z" * 150, None, 1000)
    [b0], [b1] = first, second
    assert (b0.producer_id, b0.base_sequence, b1.base_sequence) == (7, 0, 1)
    # b0 fails retriably; b1 then gets OUT_OF_ORDER (b0 missing): retriable, not a reset.
    assert idem.classify(b0, ErrorCode.NOT_LEADER_OR_FOLLOWER, True) is Outcome.RETRY
    idem.on_retry(b0)
    acc.reenqueue(b0, 1.0)
    assert idem.classify(b1, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, False) is Outcome.RETRY
    idem.on_retry(b1)
    acc.reenqueue(b1, 1.0)  # re-enqueued after b0 although put back last
    assert _drain(acc, idem, 2.0) == [b0]
    assert _drain(acc, idem, 2.0) == []  # b1 waits until b0 is answered
    idem.on_done(b0, was_in_flight=True)
    assert _drain(acc, idem, 2.0) == [b1]
    assert b1.base_sequence == 1 and b1.attempts == 1
    [b2] = _drain(acc, idem, 2.0)  # the retries are out: new data follows, numbered on
    assert b2.base_sequence == 2


def test_a_sequence_error_with_nothing_earlier_unresolved_resets() -> None:
    config: ProducerConfig = client_config(ProducerConfig, {"linger.ms": 0})
    acc = RecordAccumulator(config, clock=lambda: 0.0)
    idem = IdempotenceManager()
    idem.set_producer_id(7, 0)
    tp = TopicPartition("t", 0)
    acc.append(tp, 1, None, b"x", None, 1000)
    [b0] = _drain(acc, idem, 0.0)
    assert idem.classify(b0, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, False) is Outcome.RESET
    assert idem.classify(b0, ErrorCode.INVALID_PRODUCER_EPOCH, False) is Outcome.FATAL
    idem.request_reset()
    acc.append(tp, 1, None, b"y", None, 1000)
    assert not idem.needs_producer_id()  # b0 is still unresolved
    assert _drain(acc, idem, 0.0) == []  # no new data during a reset
    idem.on_done(b0, was_in_flight=True)
    assert idem.needs_producer_id()
    idem.set_producer_id(8, 0)
    [b1] = _drain(acc, idem, 0.0)
    assert (b1.producer_id, b1.base_sequence) == (8, 0)
