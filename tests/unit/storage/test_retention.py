"""Retention by time, by size and by log start offset; delayed unlink of .deleted files."""

from __future__ import annotations

import os

import pytest

from common.log_config import LogConfig
from data_plane.storage.errors import OffsetOutOfRangeError

from .conftest import batch


def fill_at(log, clock, n: int, step_ms: int = 0) -> None:
    for i in range(n):
        log.append(batch(2, timestamp=clock.now_ms, tag=i), 0)
        clock.advance(step_ms)
    log.update_high_watermark(log.log_end_offset)


def deleted_files(log) -> list[str]:
    return [n for n in os.listdir(log.dir_path) if n.endswith(".deleted")]


def test_retention_by_time_deletes_whole_old_segments_only(open_log, clock) -> None:
    cfg = LogConfig(segment_bytes=1024, retention_ms=60_000, file_delete_delay_ms=5_000)
    log = open_log(cfg)
    fill_at(log, clock, 40, step_ms=1000)  # timestamps span 40 s
    segs = log.segments()
    assert len(segs) >= 4
    assert log.delete_old_segments() == 0  # nothing older than 60 s yet
    clock.advance(60_000 - 40_000 + 1 + (segs[1].largest_timestamp - segs[0].largest_timestamp))
    # Now the first segment's newest record is > 60 s old, the second's not all of it.
    deleted = log.delete_old_segments()
    assert deleted >= 1
    remaining = log.segments()
    assert remaining[0].base_offset == segs[deleted].base_offset
    assert log.log_start_offset == remaining[0].base_offset
    for s in remaining[:-1]:
        assert clock.now_ms - s.largest_timestamp <= 60_000
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)
    # Files linger as .deleted until file.delete.delay.ms.
    assert deleted_files(log)
    assert log.delete_pending_files() == 0
    clock.advance(5_000)
    assert log.delete_pending_files() == deleted
    assert not deleted_files(log)


def test_active_segment_is_never_deleted(open_log, clock) -> None:
    log = open_log(LogConfig(segment_bytes=2048, retention_ms=1000))
    fill_at(log, clock, 30)
    clock.advance(10**9)
    log.delete_old_segments()
    assert len(log.segments()) == 1
    assert log.segments()[0].size_in_bytes > 0
    assert log.log_start_offset == log.segments()[0].base_offset


def test_retention_by_size(open_log, clock) -> None:
    log = open_log(LogConfig(segment_bytes=2048, retention_bytes=5000, retention_ms=-1))
    fill_at(log, clock, 150)
    sizes = [s.size_in_bytes for s in log.segments()]
    total = sum(sizes)
    expected = 0
    while total - sizes[expected] >= 5000 and expected < len(sizes) - 1:
        total -= sizes[expected]
        expected += 1
    assert expected >= 2
    assert log.delete_old_segments() == expected
    assert log.size_in_bytes >= 5000
    assert log.size_in_bytes - log.segments()[0].size_in_bytes < 5000


def test_retention_never_passes_the_high_watermark(open_log, clock) -> None:
    log = open_log(LogConfig(segment_bytes=2048, retention_ms=1000))
    fill_at(log, clock, 60)
    log.update_high_watermark(log.segments()[1].base_offset)
    clock.advance(10**9)
    assert log.delete_old_segments() == 1  # only the segment wholly below the HW


def test_retention_by_log_start_offset(open_log, clock) -> None:
    log = open_log(LogConfig(segment_bytes=2048, retention_ms=-1, cleanup_policy="compact"))
    fill_at(log, clock, 60)
    segs = log.segments()
    target = segs[2].base_offset + 1  # inside the third segment
    with pytest.raises(OffsetOutOfRangeError):
        log.maybe_increment_log_start_offset(log.high_watermark + 1)
    assert log.maybe_increment_log_start_offset(target)
    assert log.log_start_offset == target
    with pytest.raises(OffsetOutOfRangeError):
        log.read(target - 1, 100)
    assert log.delete_old_segments() == 2  # the third segment still holds offsets >= target
    assert log.segments()[0].base_offset == segs[2].base_offset
    assert log.log_start_offset == target
    assert not log.maybe_increment_log_start_offset(target - 1)
