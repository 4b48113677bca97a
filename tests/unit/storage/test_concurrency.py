"""Appends and reads on one thread while flush and retention run on another."""

from __future__ import annotations

import threading

from common.log_config import LogConfig
from common.record_batch import iter_batch_headers
from data_plane.storage.log import FetchIsolation, Log

from .conftest import batch


def test_owner_thread_and_maintenance_thread_share_a_log(tmp_path) -> None:
    cfg = LogConfig(
        segment_bytes=2048,
        retention_bytes=20_000,
        retention_ms=-1,
        flush_ms=0,
        file_delete_delay_ms=10_000,
    )
    log = Log(str(tmp_path / "t-0"), cfg, topic="t", partition=0)
    done = threading.Event()
    errors: list[BaseException] = []
    rounds = [0]

    def maintenance() -> None:
        try:
            while not done.is_set() and rounds[0] < 100_000:
                log.maybe_flush()
                log.delete_old_segments()
                log.delete_pending_files()
                rounds[0] += 1
        except BaseException as e:  # reported to the main thread below
            errors.append(e)

    worker = threading.Thread(target=maintenance)
    worker.start()
    try:
        for i in range(1500):
            info = log.append(batch(2, tag=i), 0)
            log.update_high_watermark(info.last_offset + 1)
            start = max(log.log_start_offset, info.first_offset - 10)
            data = log.read(start, 4096, isolation=FetchIsolation.HIGH_WATERMARK).read_bytes()
            first = next(iter_batch_headers(data, allow_partial_tail=True))
            assert first.base_offset <= start <= first.last_offset
    finally:
        done.set()
        worker.join(timeout=120)
    assert not worker.is_alive() and not errors, errors
    assert rounds[0] > 0
    assert log.recovery_point <= log.log_end_offset == 3000
    # The maintenance thread's last pass may have run some appends before the last one (the
    # scheduler decides, and a loaded machine delays it): the next round's pass, then the
    # retention bound holds.
    log.delete_old_segments()
    assert 20_000 <= log.size_in_bytes < 20_000 + 2 * 2048
    # Every offset from the log start to the end is readable, in order, exactly once.
    offset, seen = log.log_start_offset, 0
    for _ in range(10_000):
        if offset >= log.log_end_offset:
            break
        h = next(iter_batch_headers(log.read(offset, 1).read_bytes()))
        assert h.base_offset == offset
        offset, seen = h.next_offset, seen + h.records_count
    assert seen == log.log_end_offset - log.log_start_offset
    log.close()
    reopened = Log(str(tmp_path / "t-0"), cfg, topic="t", partition=0)
    assert (reopened.log_end_offset, reopened.segments()[0].base_offset) == (
        3000,
        log.log_start_offset,
    )
    reopened.close()
