"""log.writeback.window.bytes: early writeback and page cache drops behind the active
segment's end, done by page_cache's background worker, never changing what is read back."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

from common.configdef import ConfigError, from_props, with_overrides
from common.log_config import LogConfig
from data_plane.storage import page_cache
from data_plane.storage.errors import LogClosedError
from data_plane.storage.file_records import FileRecords
from data_plane.storage.log import Log

from .conftest import batch

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux calls")


@pytest.fixture
def jobs(monkeypatch) -> list[tuple[int, int, int]]:
    """The (drop_from, writeback_from, end) of every job offered, still carried out."""
    offered: list[tuple[int, int, int]] = []
    real = page_cache.submit

    def spy(file, drop_from: int, writeback_from: int, end: int) -> bool:
        offered.append((drop_from, writeback_from, end))
        return real(file, drop_from, writeback_from, end)

    monkeypatch.setattr(page_cache, "submit", spy)
    return offered


@pytest.fixture
def records(tmp_path) -> Iterator[FileRecords]:
    """A fresh segment file, closed after the test."""
    f = FileRecords(str(tmp_path / "0.log"))
    yield f
    f.close()


@linux_only
def test_each_window_drops_the_range_started_one_window_earlier(records, jobs) -> None:
    records.append(b"a" * 3000)
    records.write_back_behind(4096)
    assert jobs == []  # less than a window appended
    records.append(b"b" * 2000)
    records.write_back_behind(4096)
    records.append(b"c" * 5000)
    records.write_back_behind(4096)
    records.append(b"d" * 100)
    records.write_back_behind(4096)
    assert jobs == [(0, 0, 5000), (0, 5000, 10_000)]
    page_cache.wait_idle()
    assert records.read(0, 20_000) == b"a" * 3000 + b"b" * 2000 + b"c" * 5000 + b"d" * 100


@linux_only
def test_truncation_pulls_the_marks_back(records, jobs) -> None:
    records.append(b"x" * 8192)
    records.write_back_behind(4096)
    records.truncate_to(1000)
    records.append(b"y" * 5000)
    records.write_back_behind(4096)
    # Marks clamped to 1000: the new job drops nothing past the file's end.
    assert jobs == [(0, 0, 8192), (0, 1000, 6000)]
    page_cache.wait_idle()
    assert records.read(0, 10_000) == b"x" * 1000 + b"y" * 5000


def test_a_skipped_job_leaves_the_marks_for_the_next_append(records, monkeypatch) -> None:
    offered: list[tuple[int, int, int]] = []
    accept = [False]

    def submit(file, drop_from: int, writeback_from: int, end: int) -> bool:
        offered.append((drop_from, writeback_from, end))
        return accept[0]

    monkeypatch.setattr(page_cache, "submit", submit)
    records.append(b"x" * 5000)
    records.write_back_behind(4096)
    accept[0] = True
    records.append(b"x" * 10)
    records.write_back_behind(4096)
    assert offered == [(0, 0, 5000), (0, 0, 5010)]


@linux_only
def test_drop_and_writeback_keep_the_bytes(tmp_path) -> None:
    assert page_cache.SUPPORTED
    path = tmp_path / "f"
    data = os.urandom(1 << 20)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, data, 0)
        page_cache.start_writeback(fd, 0, 1 << 19)
        page_cache.drop(fd, 0, 1 << 20)
        assert os.pread(fd, 1 << 20, 0) == data
    finally:
        os.close(fd)


@linux_only
def test_a_job_on_a_bad_descriptor_is_skipped_and_the_worker_goes_on(tmp_path) -> None:
    class Gone:
        def fileno(self) -> int:
            fd = os.open(tmp_path / "g", os.O_RDWR | os.O_CREAT, 0o644)
            os.close(fd)
            return fd  # closed: every call on it fails with EBADF

    class Closed:
        def fileno(self) -> int:
            raise LogClosedError("segment file is closed")  # as a closed segment's holder

    assert page_cache.submit(Gone(), 0, 4096, 8192)
    assert page_cache.submit(Closed(), 0, 4096, 8192)
    page_cache.wait_idle()
    worker = page_cache._worker
    fd = os.open(tmp_path / "h", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, b"z" * 8192, 0)

        class Open:
            def fileno(self) -> int:
                return fd

        assert page_cache.submit(Open(), 0, 4096, 8192)
        page_cache.wait_idle()
        assert os.pread(fd, 8192, 0) == b"z" * 8192
        assert page_cache._worker is worker and worker.is_alive()  # the same worker went on
    finally:
        os.close(fd)


@linux_only
def test_a_log_with_a_window_reads_back_what_it_wrote_across_rolls(
    open_log, tmp_path, clock, jobs
) -> None:
    log = open_log(LogConfig(segment_bytes=64 * 1024, writeback_window_bytes=8 * 1024))
    reference = Log(
        str(tmp_path / "r-0"),
        LogConfig(segment_bytes=64 * 1024),
        topic="r",
        partition=0,
        clock_ms=clock,
    )
    try:
        for i in range(120):
            log.append(batch(4, value_bytes=300, tag=i, timestamp=1000), leader_epoch=1)
            reference.append(batch(4, value_bytes=300, tag=i, timestamp=1000), leader_epoch=1)
        page_cache.wait_idle()
        assert len(jobs) > 10
        assert len(log.segments()) > 1
        end = log.log_end_offset
        assert end == reference.log_end_offset == 480
        got = [log.read(o, 1 << 22).read_bytes() for o in (0, 200, 479)]
        want = [reference.read(o, 1 << 22).read_bytes() for o in (0, 200, 479)]
        assert got == want and all(got)
    finally:
        reference.close()


def test_the_window_is_a_broker_setting_with_kafkas_behaviour_by_default() -> None:
    assert LogConfig().writeback_window_bytes == 0
    broker = from_props(LogConfig, {"log.writeback.window.bytes": str(16 << 20)})
    assert broker.writeback_window_bytes == 16 << 20
    with pytest.raises(ConfigError, match=r"log\.writeback\.window\.bytes"):
        from_props(LogConfig, {"log.writeback.window.bytes": "-1"})
    # Not a topic setting: topic overrides leave it as the broker set it.
    assert (
        with_overrides(broker, {"segment.bytes": "2000"}, topic=True).writeback_window_bytes
        == 16 << 20
    )
