from __future__ import annotations

import threading

import pytest

from common.topic_partition import TopicPartition
from data_plane.storage.record_codec import decode_records
from kraftlog_client.accumulator import RecordAccumulator
from kraftlog_client.config import ProducerConfig, client_config
from kraftlog_client.errors import ClientClosedError, KafkaTimeoutError, RecordTooLargeError

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


class FakeClock:
    """Injected time (seconds); send()'s blocking waits still use real Condition timeouts."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(**props: object) -> tuple[RecordAccumulator, FakeClock]:
    clock = FakeClock()
    config = client_config(ProducerConfig, {k.replace("_", "."): v for k, v in props.items()})
    return RecordAccumulator(config, clock), clock


def leader_of(_tp: TopicPartition) -> int:
    return 1


def ready(_node: int) -> bool:
    return True


def test_batches_fill_up_to_batch_size_and_become_sendable_when_full() -> None:
    acc, clock = make(batch_size=1000, linger_ms=1000)
    futures = [acc.append(TP0, 5, None, b"x" * 100, None, 0)[0] for _ in range(20)]
    drained, _next, _unknown = acc.drain(clock() * 1000, leader_of, ready)
    batches = drained[1]
    assert len(batches) == 1  # one batch per partition per request
    first = batches[0]
    assert first.size_bytes <= 1000 and first.count == 8
    header, records = decode_records(first.wire_bytes(0))
    assert header.records_count == 8 and records[0].value == b"x" * 100
    assert futures[0]._result is first.result and futures[8]._result is not first.result


def test_linger_holds_a_partial_batch_until_it_expires() -> None:
    acc, clock = make(linger_ms=50)
    acc.append(TP0, 5, b"k", b"v", None, 0)
    drained, next_ms, _ = acc.drain(clock() * 1000, leader_of, ready)
    assert drained == {} and 0 < next_ms <= 50
    clock.now += 0.05
    drained, _, _ = acc.drain(clock() * 1000, leader_of, ready)
    assert [b.tp for b in drained[1]] == [TP0]


def test_flush_makes_partial_batches_sendable_at_once() -> None:
    acc, clock = make(linger_ms=10_000)
    acc.append(TP0, 5, None, b"v", None, 0)
    acc.append(TP1, 5, None, b"v", None, 0)
    waiting = acc.begin_flush()
    drained, _, _ = acc.drain(clock() * 1000, leader_of, ready)
    assert {b.tp for b in drained[1]} == {TP0, TP1} and len(waiting) == 2
    acc.end_flush()


def test_unknown_leaders_are_reported_and_batches_stay_queued() -> None:
    acc, clock = make(linger_ms=0)
    acc.append(TP0, 5, None, b"v", None, 0)
    drained, _, unknown = acc.drain(clock() * 1000, lambda tp: None, ready)
    assert drained == {} and unknown == {"t"} and acc.has_queued()


def test_buffer_memory_blocks_send_until_max_block_ms_then_times_out() -> None:
    acc, _clock = make(batch_size=1000, buffer_memory=2000, linger_ms=0)
    acc.append(TP0, 5, None, b"v", None, 0)
    acc.append(TP1, 5, None, b"v", None, 0)
    assert acc.used_bytes == 2000
    with pytest.raises(KafkaTimeoutError):
        acc.append(TopicPartition("t", 2), 5, None, b"v", None, 0)


def test_completing_a_batch_frees_memory_and_wakes_a_blocked_send() -> None:
    acc, clock = make(batch_size=1000, buffer_memory=1000, linger_ms=0)
    acc.append(TP0, 5, None, b"v", None, 0)
    result: list[object] = []

    def blocked_send() -> None:
        result.append(acc.append(TP1, 5, None, b"w", None, 30_000)[0])

    thread = threading.Thread(target=blocked_send)
    thread.start()
    drained, _, _ = acc.drain(clock() * 1000, leader_of, ready)
    (batch,) = drained[1]
    acc.complete(batch, 0, -1, None)
    thread.join(30)
    assert not thread.is_alive() and len(result) == 1
    assert acc.used_bytes == 1000


def test_a_record_larger_than_max_request_size_is_refused() -> None:
    acc, _ = make(max_request_size=500)
    with pytest.raises(RecordTooLargeError):
        acc.append(TP0, 5, None, b"x" * 600, None, 0)
    assert acc.used_bytes == 0


def test_a_record_larger_than_batch_size_gets_a_batch_of_its_own() -> None:
    acc, clock = make(batch_size=100, linger_ms=1000)
    acc.append(TP0, 5, None, b"x" * 300, None, 0)
    drained, _, _ = acc.drain(clock() * 1000, leader_of, ready)
    assert drained[1][0].count == 1 and drained[1][0].reserved_bytes > 300


def test_expired_batches_are_removed() -> None:
    acc, clock = make(linger_ms=1000)
    acc.append(TP0, 5, None, b"v", None, 0)
    assert acc.expire(clock() * 1000, 120_000) == []
    clock.now += 121
    (expired,) = acc.expire(clock() * 1000, 120_000)
    assert expired.tp == TP0 and not acc.has_queued()


def test_retried_batches_wait_for_the_backoff_and_go_first() -> None:
    acc, clock = make(linger_ms=0, retry_backoff_ms=100)
    acc.append(TP0, 5, None, b"first", None, 0)
    (first,) = acc.drain(clock() * 1000, leader_of, ready)[0][1]
    acc.append(TP0, 6, None, b"second", None, 0)
    acc.reenqueue(first, clock() * 1000)
    assert acc.drain(clock() * 1000, leader_of, ready)[0] == {}
    clock.now += 0.1
    (again,) = acc.drain(clock() * 1000, leader_of, ready)[0][1]
    assert again is first and first.attempts == 1


def test_append_after_close_raises() -> None:
    acc, _ = make()
    acc.close()
    with pytest.raises(ClientClosedError):
        acc.append(TP0, 5, None, b"v", None, 0)


def test_callbacks_run_once_with_metadata() -> None:
    acc, clock = make(linger_ms=0)
    future = acc.append(TP0, 5, b"key", b"value", None, 0)[0]
    seen: list[tuple[object, object]] = []
    future.add_done_callback(lambda err, md: seen.append((err, md)))
    (batch,) = acc.drain(clock() * 1000, leader_of, ready)[0][1]
    acc.complete(batch, 42, -1, None)
    assert future.get(0).offset == 42
    assert seen == [(None, future.get(0))]
    late: list[object] = []
    future.add_done_callback(lambda err, md: late.append(md))
    assert late == [future.get(0)]


def test_appended_batches_are_byte_identical_to_the_storage_builder() -> None:
    from data_plane.storage.record_codec import Record, build_batch

    acc, clock = make(batch_size=1 << 20, linger_ms=0)
    rows = []
    for i in range(300):
        key = None if i % 4 else b"k%d" % i
        value = None if i % 11 == 0 else b"v" * (i % 150)
        headers = [("h", b"x")] if i % 5 == 0 else None
        ts = 1_000_000 + i * 7 - (5 if i % 13 == 0 else 0)
        acc.append(TP0, ts, key, value, headers, 0)
        rows.append(Record(key, value, ts, tuple(headers or ())))
    (batch,) = acc.drain(clock() * 1000, leader_of, ready)[0][1]
    assert bytes(batch.wire_bytes(0)) == bytes(build_batch(rows))
