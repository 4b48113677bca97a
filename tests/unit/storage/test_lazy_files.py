"""Descriptor economy: at most one open descriptor per log (the active segment's .log), closed
segments opened lazily and bounded by the log manager's LRU, indexes held without descriptors
and read on first use, new logs without files until their first append."""

from __future__ import annotations

import gc
import os

import pytest

from common.log_config import LogConfig
from data_plane.storage.log import FetchIsolation
from data_plane.storage.log_manager import LogManager
from data_plane.storage.segment_cache import OpenSegmentCache

from .conftest import batch

SMALL_SEGMENTS = {"segment_bytes": 2048, "index_interval_bytes": 200}


def fds_under(path: str) -> int:
    """Descriptors of this process open on files below ``path``."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(path)):
            n += 1
    return n


def open_paths() -> set[str]:
    out = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            out.add(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            continue
    return out


def fill(log, batches: int, tag: int = 0) -> None:
    for i in range(batches):
        log.append(batch(4, value_bytes=60, tag=tag * 10_000 + i), 0)


def read_all(log) -> bytes:
    """Every batch of the log, read through the public read path in small steps."""
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        fs = log.read(offset, 1, isolation=FetchIsolation.LOG_END)  # one whole batch
        data = fs.read_bytes()
        out.append(data)
        last_delta = int.from_bytes(data[23:27], "big")
        offset = int.from_bytes(data[0:8], "big") + last_delta + 1
    return b"".join(out)


@pytest.fixture
def manager_factory():
    opened: list[LogManager] = []

    def make(tmp_path, **kw) -> LogManager:
        m = LogManager(LogConfig(log_dirs=(str(tmp_path / "d"),), **SMALL_SEGMENTS), **kw)
        opened.append(m)
        return m

    yield make
    for m in opened:
        m.close()


def test_many_logs_with_many_segments_hold_at_most_one_descriptor_each(
    tmp_path, manager_factory
) -> None:
    m = manager_factory(tmp_path)
    logs = [m.get_or_create_log("t", p) for p in range(40)]
    for i, log in enumerate(logs):
        fill(log, 40, tag=i)
        assert len(log.segments()) > 3
    contents = {log.partition: read_all(log) for log in logs}
    gc.collect()
    # + 1: the log dir's .lock, held by the manager.
    assert fds_under(tmp_path) <= len(logs) + m.segment_cache.max_open_segments + 1
    m.close()

    m = manager_factory(tmp_path, max_open_segments=8)
    logs = m.all_logs()
    assert len(logs) == 40
    # After a clean restart only the active segments' files (and the .lock) are open.
    assert fds_under(tmp_path) <= len(logs) + 1
    for log in logs:
        # Closed segments are not opened, their indexes not read, by the load.
        for seg in log.segments()[:-1]:
            assert not seg.log.is_open
            assert not seg.offset_index.is_loaded and not seg.time_index.is_loaded
    for log in logs:
        assert read_all(log) == contents[log.partition]
    gc.collect()
    # Reads across every old segment of every log: the LRU bound holds.
    assert len(m.segment_cache) <= 8
    assert m.segment_cache.evictions > 0
    assert fds_under(tmp_path) <= len(logs) + 8 + 1


def test_a_slice_outlives_the_eviction_of_its_segment(tmp_path, manager_factory) -> None:
    m = manager_factory(tmp_path)
    fill(m.get_or_create_log("t", 0), 60)
    m.close()
    m = manager_factory(tmp_path, max_open_segments=2)
    log = m.get_log("t", 0)
    assert log is not None
    first = log.read(0, 1)
    expected = first.read_bytes()
    segments = log.segments()
    first_segment = segments[0]
    assert first_segment.log.is_open
    for seg in segments[1:-1]:
        log.read(seg.base_offset, 1)
    # Evicted: the segment let go of its descriptor, but the slice still holds it.
    assert not first_segment.log.is_open
    assert first.read_bytes() == expected
    path = first_segment.log.path
    assert path in open_paths()
    del first
    gc.collect()
    # The last reference went: the descriptor was closed.
    assert path not in open_paths()
    # Reading the evicted segment again reopens it.
    assert log.read(0, 1).read_bytes() == expected


def test_lru_cache_evicts_least_recently_used() -> None:
    class Res:
        def __init__(self) -> None:
            self.released = 0

        def release_resources(self) -> None:
            self.released += 1

    cache = OpenSegmentCache(2)
    a, b, c = Res(), Res(), Res()
    cache.touch(a)
    cache.touch(b)
    cache.touch(a)  # a is now the most recent
    cache.touch(c)
    assert (a.released, b.released, c.released) == (0, 1, 0)
    assert len(cache) == 2 and cache.evictions == 1
    cache.forget(a)
    assert len(cache) == 1
    with pytest.raises(ValueError):
        OpenSegmentCache(0)


def test_a_new_log_has_no_files_until_its_first_append(tmp_path, manager_factory) -> None:
    m = manager_factory(tmp_path)
    log = m.get_or_create_log("t", 0)
    assert os.listdir(log.dir_path) == []
    assert fds_under(tmp_path / "d" / "t-0") == 0
    assert log.read(0, 100).length == 0
    m.close()
    m = manager_factory(tmp_path)
    log = m.get_log("t", 0)
    assert log is not None and log.log_end_offset == 0
    assert not any(n.endswith(".log") for n in os.listdir(log.dir_path))
    log.append(batch(3), 0)
    names = set(os.listdir(log.dir_path))
    assert {
        "00000000000000000000.log",
        "00000000000000000000.index",
        "00000000000000000000.timeindex",
    } <= names
    assert fds_under(tmp_path / "d" / "t-0") == 1
    assert log.log_end_offset == 3 and len(log.read(0, 1000).read_bytes()) > 61


def test_garbled_index_of_an_old_segment_is_rebuilt_on_first_use(tmp_path, manager_factory) -> None:
    m = manager_factory(tmp_path)
    log = m.get_or_create_log("t", 0)
    fill(log, 40)
    expected = read_all(log)
    first = log.segments()[0]
    entries = [first.offset_index.entry(i) for i in range(first.offset_index.entries)]
    assert entries
    index_path = first.offset_index.path
    m.close()
    with open(index_path, "r+b") as f:
        f.write(b"\xff" * 8)  # an absurd first entry breaks the order
    m = manager_factory(tmp_path)
    log = m.get_log("t", 0)
    assert log is not None
    seg = log.segments()[0]
    assert not seg.offset_index.is_loaded  # not checked by the load
    assert read_all(log) == expected
    assert [seg.offset_index.entry(i) for i in range(seg.offset_index.entries)] == entries


def test_an_index_lagging_its_log_is_caught_up_by_the_tail_scan(tmp_path, manager_factory) -> None:
    m = manager_factory(tmp_path)
    log = m.get_or_create_log("t", 0)
    fill(log, 5)  # stays in one segment with several index entries
    assert len(log.segments()) == 1
    index_path = log.segments()[0].offset_index.path
    entries = log.segments()[0].offset_index.entries
    assert entries > 1
    m.close()
    # As if the entries had not been written back before a crash (the file keeps one).
    with open(index_path, "r+b") as f:
        f.truncate(8)
    m = manager_factory(tmp_path)
    log = m.get_log("t", 0)
    assert log is not None and log.log_end_offset == 20
    assert log.segments()[0].offset_index.entries == entries
