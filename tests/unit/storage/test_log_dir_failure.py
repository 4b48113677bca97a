"""Log directory failures (JBOD): a real I/O error in one directory takes it offline, its logs
close and its partitions are refused, while the other directory keeps serving, checkpointing
and getting new logs; placement of new logs by free space."""

from __future__ import annotations

import os
import shutil
import uuid

import pytest

from common.log_config import LogConfig
from data_plane.storage.errors import KafkaStorageError
from data_plane.storage.log_dir_placement import choose_log_dir
from data_plane.storage.log_manager import CLEAN_SHUTDOWN_FILE, LogManager

from .conftest import batch

TOPIC_ID = uuid.UUID(int=7)


def cfg(tmp_path) -> LogConfig:
    return LogConfig(log_dirs=(str(tmp_path / "d1"), str(tmp_path / "d2")), segment_bytes=4096)


def two_logs(m: LogManager):
    first = m.get_or_create_log("t", 0, topic_id=TOPIC_ID)
    second = m.get_or_create_log("t", 1, topic_id=TOPIC_ID)
    assert os.path.dirname(first.dir_path) != os.path.dirname(second.dir_path)
    return first, second


def test_an_io_error_takes_only_its_directory_offline(tmp_path) -> None:
    m = LogManager(cfg(tmp_path))
    seen: list[tuple[str, list]] = []
    m.add_offline_listener(lambda d, tps: seen.append((d, list(tps))))
    healthy, failing = two_logs(m)
    good_dir, bad_dir = (os.path.dirname(x.dir_path) for x in (healthy, failing))
    failing.append(batch(3), 0)
    shutil.rmtree(failing.dir_path)  # the next file it creates fails (ENOENT)
    with pytest.raises(KafkaStorageError):
        failing.roll()
    assert m.failures.is_offline(bad_dir) and not m.failures.is_offline(good_dir)
    assert m.handle_pending_failures() == 1
    assert seen == [(bad_dir, [("t", 1)])]
    assert m.get_log("t", 1) is None
    with pytest.raises(KafkaStorageError, match="offline log directory"):
        m.get_or_create_log("t", 1, topic_id=TOPIC_ID)
    assert m.offline_partitions() == {("t", 1): (bad_dir, TOPIC_ID)}
    # The healthy directory keeps serving and takes every new log.
    healthy.append(batch(2), 0)
    newer = [m.get_or_create_log("t", p) for p in (2, 3)]
    assert {os.path.dirname(x.dir_path) for x in newer} == {good_dir}
    report = m.maintenance(retention=True)
    assert report.errors == ()
    described = {d.path: d for d in m.describe_dirs()}
    assert described[bad_dir].offline_reason is not None
    assert described[bad_dir].total_bytes == -1 and described[bad_dir].logs == []
    assert sorted(x.partition for x in described[good_dir].logs) == [0, 2, 3]
    assert described[good_dir].usable_bytes > 0
    m.close()
    assert os.path.exists(os.path.join(good_dir, CLEAN_SHUTDOWN_FILE))
    assert not os.path.exists(os.path.join(bad_dir, CLEAN_SHUTDOWN_FILE))
    # Repaired and restarted: both directories load; the failed one recovers (no marker).
    again = LogManager(cfg(tmp_path))
    try:
        assert not again.found_clean_shutdown
        assert again.online_dirs() == again.log_dirs
        assert again.get_log("t", 0).log_end_offset == 2
    finally:
        again.close()


def test_an_io_error_in_an_append_takes_its_directory_offline(tmp_path) -> None:
    m = LogManager(cfg(tmp_path))
    try:
        healthy, failing = two_logs(m)
        failing.append(batch(1), 0)
        # The active segment's descriptor now refers to a read-only file: the next write
        # fails in the kernel (EBADF), as on a disk that went read-only.
        fd = failing.active_segment.log._get_handle().fileno()
        read_only = os.open(failing.active_segment.log.path, os.O_RDONLY)
        os.dup2(read_only, fd)
        os.close(read_only)
        with pytest.raises(KafkaStorageError):
            failing.append(batch(1), 0)
        assert m.failures.is_offline(os.path.dirname(failing.dir_path))
        assert not m.failures.is_offline(os.path.dirname(healthy.dir_path))
        healthy.append(batch(1), 0)
    finally:
        m.close()


def test_a_failed_checkpoint_write_takes_its_directory_offline(tmp_path) -> None:
    m = LogManager(cfg(tmp_path))
    try:
        healthy, failing = two_logs(m)
        healthy.append(batch(1), 0)
        failing.append(batch(1), 0)
        bad_dir = os.path.dirname(failing.dir_path)
        # The checkpoint's temporary file cannot be created: a directory holds its name.
        os.mkdir(os.path.join(bad_dir, "recovery-point-offset-checkpoint.tmp"))
        m.maintenance()
        assert m.failures.is_offline(bad_dir)
        m.handle_pending_failures()
        assert m.get_log("t", 1) is None and m.get_log("t", 0) is healthy
        good_dir = os.path.dirname(healthy.dir_path)
        checkpoint = os.path.join(good_dir, "recovery-point-offset-checkpoint")
        with open(checkpoint, encoding="utf-8") as f:
            assert "t 0 " in f.read()
    finally:
        m.close()


def test_a_directory_that_cannot_be_used_at_startup_starts_offline(tmp_path) -> None:
    (tmp_path / "d2").write_text("not a directory")
    m = LogManager(cfg(tmp_path))
    try:
        assert m.online_dirs() == (str(tmp_path / "d1"),)
        assert not m.found_clean_shutdown
        log = m.get_or_create_log("t", 0)
        assert os.path.dirname(log.dir_path) == str(tmp_path / "d1")
    finally:
        m.close()
    (tmp_path / "d1").rename(tmp_path / "gone")
    (tmp_path / "d1").write_text("not a directory either")
    with pytest.raises(KafkaStorageError, match="every log directory"):
        LogManager(cfg(tmp_path))


def test_placement_prefers_free_space_and_balances_equal_disks() -> None:
    free = {"/a": 100, "/b": 500, "/c": 480}
    counts = {"/a": 0, "/b": 3, "/c": 1}
    # /b and /c are within 10 % of each other: the one with fewer logs.
    assert choose_log_dir(["/a", "/b", "/c"], counts, free.__getitem__) == "/c"
    free["/c"] = 300
    assert choose_log_dir(["/a", "/b", "/c"], counts, free.__getitem__) == "/b"
    assert choose_log_dir(["/a"], counts, free.__getitem__) == "/a"
    equal = {"/a": 0, "/b": 0}
    assert choose_log_dir(["/a", "/b"], equal, lambda _d: 1000) == "/a"
