"""Log and LogSegment: append, roll, lookups across segments, HW capping, truncation, flush."""

from __future__ import annotations

import os

import pytest

from common.errors import RecordTooLargeError
from common.log_config import LogConfig
from common.record_batch import LOG_APPEND_TIME, iter_batch_headers, validate_batch
from data_plane.storage.errors import (
    InvalidAppendOffsetError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
)
from data_plane.storage.log import FetchIsolation
from data_plane.storage.record_codec import decode_records

from .conftest import batch

SMALL = LogConfig(segment_bytes=4096, index_interval_bytes=256)


def headers_of(data: bytes):
    return list(iter_batch_headers(data, allow_partial_tail=True))


def fill(log, batches: int, records_per_batch: int = 3, ts0: int = 10_000):
    infos = []
    for i in range(batches):
        infos.append(
            log.append(batch(records_per_batch, timestamp=ts0 + 10 * i, tag=i), leader_epoch=4)
        )
    return infos


def test_append_assigns_offsets_and_stamps_epoch(open_log) -> None:
    log = open_log(SMALL)
    infos = fill(log, 5)
    expected = [(3 * k, 3 * k + 2) for k in range(5)]
    assert [(i.first_offset, i.last_offset) for i in infos] == expected
    assert infos[-1].max_timestamp == 10_042 and infos[-1].offset_of_max_timestamp == 14
    assert log.log_end_offset == 15
    data = log.read(0, 1 << 20).read_bytes()
    hs = headers_of(data)
    assert [h.base_offset for h in hs] == [0, 3, 6, 9, 12]
    assert {h.partition_leader_epoch for h in hs} == {4}
    validate_batch(data, hs[2].position)


def test_read_only_payload_is_copied_and_writable_payload_is_stamped_in_place(open_log) -> None:
    log = open_log(SMALL)
    ro = bytes(batch(2))
    log.append(ro, 0)
    assert ro[:8] == b"\0" * 8
    rw = batch(2)
    log.append(memoryview(rw), 0)
    assert int.from_bytes(rw[:8], "big") == 2


def test_roll_on_size_and_reads_across_many_segments(open_log) -> None:
    log = open_log(SMALL)
    fill(log, 200)
    segs = log.segments()
    assert len(segs) >= 7
    assert all(s.size_in_bytes <= SMALL.segment_bytes for s in segs)
    assert [s.base_offset for s in segs] == sorted(s.base_offset for s in segs)
    for offset in (0, 1, 2, 3, 299, 300, 301, 450, 597, 599):
        fs = log.read(offset, 1)
        first = headers_of(fs.read_bytes())[0]
        assert first.base_offset <= offset <= first.last_offset
        assert fs.segment_base_offset <= offset
    # Reading at the end of a segment continues in the next one.
    boundary = segs[3].base_offset
    fs = log.read(boundary, 10_000)
    assert fs.segment_base_offset == boundary and fs.first_offset == boundary
    # Every record once, in order, by walking with reads.
    offset, seen = 0, []
    for _ in range(1000):
        if offset == log.log_end_offset:
            break
        fs = log.read(offset, 700)
        for h in headers_of(fs.read_bytes()):
            _, records = decode_records(fs.read_bytes(), h.position)
            seen.extend(r.offset for r in records if r.offset >= offset)
            offset = h.next_offset
    assert seen == list(range(600))


def test_roll_on_time_and_on_full_index(open_log, clock) -> None:
    log = open_log(LogConfig(segment_ms=1000, index_interval_bytes=0, segment_index_bytes=8 * 4))
    log.append(batch(), 0)
    log.append(batch(), 0)
    assert len(log.segments()) == 1
    clock.advance(1001)
    log.append(batch(), 0)
    assert [s.base_offset for s in log.segments()] == [0, 2]
    for _ in range(5):
        log.append(batch(), 0)
    # 4 index entries fit; the time index keeps a slot free, so it fills first and rolls.
    assert len(log.segments()) >= 3
    assert log.read(0, 1).first_offset == 0
    assert log.log_end_offset == 8


def test_high_watermark_caps_consumer_reads_at_a_batch_boundary(open_log) -> None:
    log = open_log(SMALL)
    fill(log, 100)
    log.update_high_watermark(150)
    fs = log.read(120, 1 << 20, isolation=FetchIsolation.HIGH_WATERMARK)
    hs = headers_of(fs.read_bytes())
    assert hs[-1].next_offset == 150
    assert len(fs.read_bytes()) == hs[-1].position + hs[-1].size_in_bytes
    assert log.read(150, 1 << 20, isolation=FetchIsolation.HIGH_WATERMARK).length == 0
    assert log.read(200, 1 << 20, isolation=FetchIsolation.HIGH_WATERMARK).length == 0
    # A follower reads past the HW, to the log end.
    assert headers_of(log.read(150, 1 << 20).read_bytes())[0].base_offset == 150
    # The offset -> position helper, and max_offset capping.
    md = log.offset_metadata(150)
    seg = next(s for s in log.segments() if s.base_offset == md.segment_base_offset)
    assert seg.translate_offset(150).position == md.relative_position
    fs = log.read(0, 1 << 20, max_offset=6)
    assert [h.base_offset for h in headers_of(fs.read_bytes())] == [0, 3]
    assert log.update_high_watermark(10_000) == log.log_end_offset


def test_first_batch_is_whole_even_above_max_bytes_and_slice_may_end_mid_batch(open_log) -> None:
    log = open_log()
    fill(log, 4, records_per_batch=10)
    fs = log.read(0, 10)
    assert fs.length == headers_of(fs.read_bytes())[0].size_in_bytes
    fs = log.read(0, 10, min_one_message=False)
    assert fs.length == 10
    whole = log.read(0, 1 << 20).length
    fs = log.read(0, whole - 7)
    assert fs.length == whole - 7


def test_out_of_range_reads(open_log) -> None:
    log = open_log(SMALL)
    fill(log, 3)
    with pytest.raises(OffsetOutOfRangeError) as e:
        log.read(10, 100)
    assert e.value.error_code == 1
    assert log.read(9, 100).length == 0


def test_find_offset_by_timestamp_across_segments(open_log) -> None:
    log = open_log(SMALL)
    fill(log, 150, ts0=100_000)  # batch i records at 100_000 + 10 i + (0, 1, 2)
    assert log.find_offset_by_timestamp(0) == (0, 100_000)
    assert log.find_offset_by_timestamp(100_001) == (1, 100_001)
    assert log.find_offset_by_timestamp(100_003) == (3, 100_010)
    assert log.find_offset_by_timestamp(100_000 + 10 * 120 + 2) == (362, 101_202)
    assert log.find_offset_by_timestamp(200_000) is None


def test_log_append_time(open_log, clock) -> None:
    log = open_log(LogConfig(message_timestamp_type="LogAppendTime"))
    info = log.append(batch(3, timestamp=5), 0)
    assert info.log_append_time_ms == clock.now_ms == info.max_timestamp
    h = validate_batch(log.read(0, 100).read_bytes())
    assert h.timestamp_type == LOG_APPEND_TIME and h.max_timestamp == clock.now_ms


def test_follower_append_keeps_offsets_and_rejects_going_backwards(open_log, tmp_path) -> None:
    leader = open_log(SMALL)
    fill(leader, 30)
    from data_plane.storage.log import Log

    follower = Log(str(tmp_path / "t-1"), SMALL, topic="t", partition=1)
    try:
        offset = 0
        while offset < leader.log_end_offset:
            data = leader.read(offset, 500).read_bytes()
            whole = [h for h in headers_of(data)]
            end = whole[-1].position + whole[-1].size_in_bytes
            info = follower.append_as_follower(data[:end])
            assert info.first_offset == offset
            offset = info.last_offset + 1
        assert follower.log_end_offset == leader.log_end_offset
        ours, theirs = follower.read(0, 1 << 20), leader.read(0, 1 << 20)
        assert ours.read_bytes()[:200] == theirs.read_bytes()[:200]
        with pytest.raises(InvalidAppendOffsetError):
            follower.append_as_follower(leader.read(30, 1).read_bytes())
        # A gap (compacted leader) is allowed and rolls to a segment at the new offset.
        gap = batch(2)
        gap[:8] = (500).to_bytes(8, "big")
        follower.append_as_follower(gap)
        assert follower.log_end_offset == 502
    finally:
        follower.close()


def test_size_limits(open_log) -> None:
    log = open_log(LogConfig(segment_bytes=2000, max_message_bytes=1500))
    with pytest.raises(RecordTooLargeError):
        log.append(batch(1, value_bytes=1600), 0)
    with pytest.raises(RecordListTooLargeError):
        log.append(batch(1, value_bytes=1400) + batch(1, value_bytes=1400), 0)
    assert log.log_end_offset == 0


def test_truncate_to_and_truncate_fully(open_log) -> None:
    log = open_log(SMALL)
    fill(log, 100)
    log.update_high_watermark(300)
    n_before = len(log.segments())
    assert log.truncate_to(151)  # inside the batch 150..152: it goes whole
    assert log.log_end_offset == 150
    assert log.high_watermark == 150
    assert len(log.segments()) < n_before
    assert log.read(147, 1 << 20).read_bytes() != b""
    assert headers_of(log.read(147, 1 << 20).read_bytes())[-1].next_offset == 150
    info = log.append(batch(2), 0)
    assert info.first_offset == 150
    assert not log.truncate_to(1000)
    log.truncate_fully_and_start_at(5000)
    assert (log.log_start_offset, log.log_end_offset, len(log.segments())) == (5000, 5000, 1)
    assert log.append(batch(1), 0).first_offset == 5000
    with pytest.raises(OffsetOutOfRangeError):
        log.read(10, 100)


def test_truncation_survives_reopen(open_log) -> None:
    log = open_log(SMALL)
    fill(log, 60)
    log.truncate_to(99)
    log.close()
    again = open_log(SMALL)
    assert again.log_end_offset == 99
    assert again.append(batch(1), 0).first_offset == 99


def test_flush_policy(open_log, clock) -> None:
    every = open_log(LogConfig(flush_messages=1))
    every.append(batch(3), 0)
    assert every.recovery_point == 3
    every.close()
    # Reopened without a checkpoint: recovery checks offsets 0..2 again but, as in Kafka,
    # does not fsync them, so the recovery point stays where the caller put it (0).
    timed = open_log(LogConfig(flush_ms=5000, segment_bytes=4096))  # reopens t-0
    assert timed.recovery_point == 0 and timed.log_end_offset == 3
    timed.flush()
    assert timed.recovery_point == 3
    timed.append(batch(3), 0)
    assert timed.recovery_point == 3 and not timed.maybe_flush()
    clock.advance(5000)
    assert timed.maybe_flush() and timed.recovery_point == 6
    # A roll schedules a flush of the rolled segment without waiting for flush.ms.
    fill(timed, 40)
    assert len(timed.segments()) > 1
    assert timed.maybe_flush()
    assert timed.recovery_point >= timed.segments()[-1].base_offset


def test_closed_segment_indexes_are_trimmed(open_log, tmp_path) -> None:
    log = open_log(SMALL)
    fill(log, 100)
    closed = log.segments()[0]
    assert os.path.getsize(closed.offset_index.path) == closed.offset_index.entries * 8
    active = log.segments()[-1]
    assert os.path.getsize(active.offset_index.path) == SMALL.segment_index_bytes


def test_an_append_larger_than_the_index_room_stays_readable(open_log) -> None:
    log = open_log(LogConfig(index_interval_bytes=0, segment_index_bytes=40))
    payload = bytearray()
    for i in range(20):
        payload += batch(1, tag=i)
    log.append(payload, 0)  # 20 batches into an index with room for 5 entries
    assert len(log.segments()) == 1
    for offset in range(20):
        assert log.read(offset, 1).first_offset == offset
    log.append(batch(1), 0)
    assert [s.base_offset for s in log.segments()] == [0, 20]
    log.append(payload, 0)
    assert log.read(25, 1).first_offset == 25
