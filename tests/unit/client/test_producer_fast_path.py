"""send()'s fast path (a plain record into the batch its partition's previous record went
to) against a scripted broker that stores what it receives: batches roll and drain while
records are appended, and no record is lost, duplicated, reordered or given a wrong offset."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from common.protocol.api_keys import ApiKey
from common.protocol.codec import RequestHeader, encode_response, unsupported_version_response
from common.topic_partition import TopicPartition
from data_plane.storage.record_codec import decode_records
from kraftlog_client import Producer
from kraftlog_client.accumulator import RecordAccumulator
from kraftlog_client.config import ProducerConfig, client_config
from tests.unit.client.scripted_broker import ScriptedBroker, metadata_response

PARTITIONS = 3


class StoringBroker:
    """Appends every produced batch's values to its partition's log and answers with the
    base offset it got."""

    def __init__(self, factory: Callable[..., ScriptedBroker]) -> None:
        self.logs: dict[int, list[bytes | None]] = {p: [] for p in range(PARTITIONS)}
        self._lock = threading.Lock()
        self.broker = factory(self._handle)

    def _handle(self, header: RequestHeader, body: dict[str, Any]) -> bytes | None:
        if header.api_key == ApiKey.API_VERSIONS:
            return unsupported_version_response(header).to_bytes()
        if header.api_key == ApiKey.METADATA:
            return metadata_response(header, port=self.broker.port, partitions=PARTITIONS)
        if header.api_key != ApiKey.PRODUCE:
            return None
        answers = []
        for part in body["topic_data"][0]["partition_data"]:
            _header, records = decode_records(bytes(part["records"]))
            with self._lock:
                log = self.logs[part["index"]]
                base = len(log)
                log.extend(r.value for r in records)
            answers.append(
                {
                    "index": part["index"],
                    "error_code": 0,
                    "base_offset": base,
                    "log_append_time_ms": -1,
                    "log_start_offset": 0,
                }
            )
        return encode_response(
            header,
            {
                "responses": [{"name": "t", "partition_responses": answers}],
                "throttle_time_ms": 0,
            },
        ).to_bytes()


def test_every_record_lands_once_in_order_with_its_offset(
    broker_factory: Callable[..., ScriptedBroker],
) -> None:
    store = StoringBroker(broker_factory)
    # Small batches and no linger: batches fill, roll and are drained by the sender while
    # send() keeps appending to the open one.
    with Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{store.broker.port}",
            "linger.ms": "0",
            "batch.size": "2048",
            "enable.idempotence": "false",
        }
    ) as p:
        delivered: list[tuple[Exception | None, Any]] = []
        sent = []
        for i in range(3000):
            value = b"%06d" % i
            if i % 3 == 0:
                future = p.send("t", value, partition=1)  # an explicit partition
            elif i % 3 == 1:
                future = p.send("t", value, on_delivery=lambda e, m: delivered.append((e, m)))
            else:
                future = p.send("t", value)  # the sticky partition
            sent.append((value, future))
        p.flush(30)
        for value, future in sent:
            md = future.get(0)
            assert store.logs[md.partition][md.offset] == value
        assert sum(len(log) for log in store.logs.values()) == len(sent)
        explicit = [v for v in store.logs[1] if int(v) % 3 == 0]
        assert explicit == [b"%06d" % i for i in range(0, 3000, 3)]
        assert len(delivered) == 1000 and all(e is None for e, _m in delivered)


def test_append_value_refuses_a_batch_that_stopped_taking_appends() -> None:
    config = client_config(
        ProducerConfig, {"bootstrap.servers": "127.0.0.1:1", "batch.size": "1024", "linger.ms": "0"}
    )
    acc = RecordAccumulator(config, lambda: 1.0)
    tp = TopicPartition("t", 0)
    _future, _wake, _rolled, batch = acc.append(tp, 5, None, b"x" * 100, None, 0)
    future = acc.append_value(batch, 6, b"y" * 100)
    assert future is not None and future.relative_offset == 1 and batch.count == 2
    appended = 2
    while acc.append_value(batch, 6, b"z" * 100) is not None:  # until one does not fit
        appended += 1
    assert batch.count == appended and not batch.closed
    _f, _w, rolled, second = acc.append(tp, 7, None, b"z" * 100, None, 0)
    assert rolled and batch.closed and second is not batch  # append() rolls to a new batch
    drained, _next, _unknown = acc.drain(1000.0, lambda _tp: 1, lambda _n: True)
    assert drained[1] == [batch]
    drained, _next, _unknown = acc.drain(1000.0, lambda _tp: 1, lambda _n: True)
    assert drained[1] == [second] and second.closed
    assert acc.append_value(second, 7, b"v") is None  # drained
    acc.complete(second, 0, -1, None)
    assert acc.append_value(second, 7, b"v") is None and not second.records  # finished
    _f, _w, _r, third = acc.append(tp, 8, None, b"u", None, 0)
    acc.close()
    assert acc.append_value(third, 8, b"v") is None  # closed
    assert acc.append_value(third, 8, b"v" * 70000) is None  # too large for the fast path


def test_the_record_that_fills_a_batch_closes_it() -> None:
    # A 100-byte value with small deltas encodes to 109 bytes; the header takes 61.
    config = client_config(
        ProducerConfig,
        {"bootstrap.servers": "127.0.0.1:1", "batch.size": str(61 + 109 * 5), "linger.ms": "0"},
    )
    acc = RecordAccumulator(config, lambda: 1.0)
    _future, _wake, _rolled, batch = acc.append(
        TopicPartition("t", 0), 5, None, b"x" * 100, None, 0
    )
    for _ in range(3):
        assert acc.append_value(batch, 5, b"x" * 100) is not None and not batch.closed
    assert acc.append_value(batch, 5, b"x" * 100) is not None and batch.closed
    assert batch.size_bytes == 61 + 109 * 5
