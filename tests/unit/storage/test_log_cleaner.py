"""The log cleaner inside a LogManager: background threads, cleaner-offset-checkpoint,
selection by dirty ratio, uncleanable logs, deletion of a log; retention every
log.retention.check.interval.ms."""

from __future__ import annotations

import dataclasses
import os
import time

import pytest

from common.log_config import LogConfig
from data_plane.storage.checkpoints import OffsetCheckpointFile
from data_plane.storage.compaction.log_cleaner_manager import CLEANER_OFFSET_CHECKPOINT
from data_plane.storage.log_manager import LogManager

from .cleaner_helpers import COMPACT, append_keyed, latest_values, read_all
from .conftest import ManualClock, batch

WAIT_S = 60.0


@pytest.fixture
def managers():
    opened: list[LogManager] = []
    yield opened
    for m in opened:
        m.close()


def compact_manager(tmp_path, managers, clock=None, **overrides) -> LogManager:
    cfg = dataclasses.replace(
        COMPACT, log_dirs=(str(tmp_path / "d1"),), log_cleaner_backoff_ms=20, **overrides
    )
    m = LogManager(cfg, clock_ms=clock or ManualClock())
    managers.append(m)
    return m


def write_rounds(log, rounds: int, keys: int) -> None:
    for r in range(rounds):
        for k in range(keys):
            append_keyed(log, [(b"k%d" % k, (b"r%d-" % r).ljust(30, b"v"))])
    log.roll()


def test_cleaner_threads_clean_a_compacted_log_and_checkpoint_it(tmp_path, managers) -> None:
    m = compact_manager(tmp_path, managers)
    log = m.get_or_create_log("c", 0)
    plain = m.get_or_create_log(
        "p", 0, dataclasses.replace(log.config, cleanup_policy="delete", retention_ms=-1)
    )
    write_rounds(log, rounds=5, keys=6)
    write_rounds(plain, rounds=5, keys=6)
    plain_size = plain.size_in_bytes
    m.start(interval_ms=50)
    deadline = time.monotonic() + WAIT_S
    while m.cleaner.cleanings_completed < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert m.cleaner.cleanings_completed >= 1
    report = m.cleaner.last_reports[("c", 0)]
    assert report.completed and report.dirty_ratio == 1.0
    checkpoint = OffsetCheckpointFile(str(tmp_path / "d1" / CLEANER_OFFSET_CHECKPOINT)).read()
    assert checkpoint == {("c", 0): log.segments()[-1].base_offset}
    _, records = read_all(log)
    assert len(records) == 6 and all(r.value.startswith(b"r4-") for r in records)
    assert plain.size_in_bytes == plain_size  # delete policy: never compacted
    # Clean again only once dirty enough: nothing new, so no new cleaning.
    assert m.cleaner.clean_once() is None


def test_checkpoint_survives_a_restart_and_limits_the_next_cleaning(tmp_path, managers) -> None:
    clock = ManualClock()
    m = compact_manager(tmp_path, managers, clock)
    log = m.get_or_create_log("c", 0)
    write_rounds(log, rounds=4, keys=5)
    first = m.cleaner.clean_once()
    assert first is not None and first.completed
    m.close()
    managers.remove(m)
    m2 = compact_manager(tmp_path, managers, clock, min_cleanable_dirty_ratio=0.5)
    log2 = m2.get_log("c", 0)
    assert m2.cleaner.manager.checkpoint_offset(("c", 0), m2.log_dirs[0]) == first.end_offset
    # A little new dirty data stays below the 0.5 ratio: no cleaning.
    append_keyed(log2, [(b"k0", b"new")])
    log2.roll()
    assert m2.cleaner.clean_once() is None
    write_rounds(log2, rounds=3, keys=5)
    again = m2.cleaner.clean_once()
    assert again is not None and again.completed and again.end_offset > first.end_offset


def test_a_log_that_cannot_be_cleaned_is_marked_and_skipped(tmp_path, managers) -> None:
    # 64 KiB of offset map holds about 360 keys; one segment holds more.
    m = compact_manager(
        tmp_path, managers, log_cleaner_dedupe_buffer_size=64 * 1024, segment_bytes=1 << 20
    )
    log = m.get_or_create_log("c", 0)
    for i in range(0, 1000, 50):
        append_keyed(log, [(b"key-%d" % (i + j), b"v") for j in range(50)])
    log.roll()
    assert m.cleaner.clean_once() is None
    assert ("c", 0) in m.cleaner.manager.uncleanable
    assert "log.cleaner.dedupe.buffer.size" in m.cleaner.manager.uncleanable[("c", 0)]
    assert m.cleaner.clean_once() is None  # skipped from now on
    assert not [n for n in os.listdir(log.dir_path) if n.endswith(".cleaned")]


def test_a_full_map_cleans_as_far_as_whole_segments_fit(tmp_path, managers) -> None:
    m = compact_manager(
        tmp_path, managers, log_cleaner_dedupe_buffer_size=64 * 1024, segment_bytes=4096
    )
    log = m.get_or_create_log("c", 0)
    for i in range(0, 1200, 40):
        append_keyed(log, [(b"key-%d" % (i + j), b"v") for j in range(40)])
    log.roll()
    report = m.cleaner.clean_once()
    assert report is not None and report.completed
    assert 0 < report.end_offset < log.segments()[-1].base_offset
    assert report.end_offset in [s.base_offset for s in log.segments()]
    assert ("c", 0) not in m.cleaner.manager.uncleanable


def test_deleting_a_log_forgets_its_cleaner_checkpoint(tmp_path, managers) -> None:
    m = compact_manager(tmp_path, managers)
    log = m.get_or_create_log("c", 0)
    write_rounds(log, rounds=3, keys=4)
    assert m.cleaner.clean_once() is not None
    path = str(tmp_path / "d1" / CLEANER_OFFSET_CHECKPOINT)
    assert ("c", 0) in OffsetCheckpointFile(path).read()
    assert m.delete_log("c", 0)
    assert OffsetCheckpointFile(path).read() == {}


def test_retention_runs_every_log_retention_check_interval_ms(tmp_path, managers) -> None:
    clock = ManualClock()
    cfg = LogConfig(
        log_dirs=(str(tmp_path / "d1"),),
        segment_bytes=1024,
        retention_ms=1000,
        file_delete_delay_ms=0,
        retention_check_interval_ms=60_000,
        log_cleaner_enable=False,
    )
    m = LogManager(cfg, clock_ms=clock)
    managers.append(m)
    log = m.get_or_create_log("t", 0)

    def fill() -> None:
        for _ in range(40):
            log.append(batch(2, timestamp=clock.now_ms), 0)
        log.update_high_watermark(log.log_end_offset)

    fill()
    clock.advance(2000)
    assert m.maintenance().deleted_segments >= 1  # the first round checks retention
    fill()
    clock.advance(2000)
    assert m.maintenance().deleted_segments == 0  # 2 s < log.retention.check.interval.ms
    assert m.maintenance(retention=True).deleted_segments >= 1  # forced
    fill()
    clock.advance(60_000)
    assert m.maintenance().deleted_segments >= 1  # due again


def test_compacted_log_with_delete_policy_too_is_cleaned_and_retained(tmp_path, managers) -> None:
    clock = ManualClock()
    m = compact_manager(tmp_path, managers, clock, cleanup_policy="compact,delete")
    log = m.get_or_create_log("c", 0)
    write_rounds(log, rounds=3, keys=4)
    assert m.cleaner.clean_once() is not None
    assert len(latest_values(read_all(log)[1])) == 4
    clock.advance(log.config.retention_ms + 1)
    append_keyed(log, [(b"fresh", b"v")], timestamp=clock.now_ms)
    log.roll()
    assert m.maintenance(retention=True).deleted_segments >= 1
    assert [r.key for r in read_all(log)[1]] == [b"fresh"]


def test_a_truncation_below_the_checkpoint_moves_it_down(tmp_path, managers) -> None:
    m = compact_manager(tmp_path, managers)
    log = m.get_or_create_log("c", 0)
    write_rounds(log, rounds=3, keys=4)
    report = m.cleaner.clean_once()
    assert report is not None and report.completed and report.end_offset > 3
    path = str(tmp_path / "d1" / CLEANER_OFFSET_CHECKPOINT)
    log.truncate_to(report.end_offset + 1)  # above: unchanged
    assert OffsetCheckpointFile(path).read() == {("c", 0): report.end_offset}
    log.truncate_to(report.end_offset - 2)  # a follower truncated into the cleaned range
    assert OffsetCheckpointFile(path).read() == {("c", 0): report.end_offset - 2}
    log.truncate_fully_and_start_at(1)
    assert OffsetCheckpointFile(path).read() == {("c", 0): 1}


def test_deleting_a_log_aborts_its_cleaning_in_progress(tmp_path, managers) -> None:
    # A throttle of 20 kB/s makes the cleaning of ~1 MB last far longer than the test.
    m = compact_manager(
        tmp_path,
        managers,
        segment_bytes=256 * 1024,
        log_cleaner_io_max_bytes_per_second=20_000.0,
    )
    log = m.get_or_create_log("c", 0)
    for i in range(0, 4000, 40):
        append_keyed(log, [(b"key-%d" % ((i + j) % 500), b"v" * 200) for j in range(40)])
    log.roll()
    m.start(interval_ms=50)
    deadline = time.monotonic() + WAIT_S
    while ("c", 0) not in m.cleaner.manager.in_progress() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ("c", 0) in m.cleaner.manager.in_progress()
    assert m.delete_log("c", 0)
    assert m.cleaner.manager.in_progress() == []
    assert not os.path.exists(log.dir_path)
    assert m.cleaner.cleanings_completed == 0 and not m.cleaner.manager.uncleanable_partitions()
    # The cleaner thread lives on and cleans other logs.
    other = m.get_or_create_log("d", 0)
    write_rounds(other, rounds=3, keys=4)
    deadline = time.monotonic() + WAIT_S
    while m.cleaner.cleanings_completed < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert m.cleaner.cleanings_completed == 1
