"""LogDirCheckpoints and log_dir_layout.py: per-directory checkpoint files, the directory
lock and the scan of a log directory's partition directories."""

from __future__ import annotations

import os

import pytest

from data_plane.storage.checkpoints import RECOVERY_POINT_CHECKPOINT, OffsetCheckpointFile
from data_plane.storage.errors import LogDirLayoutError
from data_plane.storage.log_dir_checkpoints import LogDirCheckpoints
from data_plane.storage.log_dir_failure import LogDirFailureChannel
from data_plane.storage.log_dir_layout import (
    KNOWN_TOP_LEVEL_FILES,
    LOCK_FILE,
    lock_log_dir,
    scan_partition_dirs,
)


def two_dirs(tmp_path) -> tuple[str, str]:
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    os.makedirs(a)
    os.makedirs(b)
    return a, b


def test_each_directory_lists_only_its_own_partitions(tmp_path) -> None:
    a, b = two_dirs(tmp_path)
    failures = LogDirFailureChannel()
    dir_of = {("t", 0): a, ("t", 1): b}
    checkpoints = LogDirCheckpoints(failures, lambda: (a, b), lambda: dict(dir_of))
    # An entry for a partition without a log here is left out.
    checkpoints.write(RECOVERY_POINT_CHECKPOINT, {("t", 0): 5, ("t", 1): 7, ("u", 0): 1})
    assert checkpoints.read(a, RECOVERY_POINT_CHECKPOINT) == {("t", 0): 5}
    assert checkpoints.read(b, RECOVERY_POINT_CHECKPOINT) == {("t", 1): 7}
    assert checkpoints.read_online(RECOVERY_POINT_CHECKPOINT) == {("t", 0): 5, ("t", 1): 7}


def test_an_unchanged_directory_is_not_rewritten_unless_forced(tmp_path) -> None:
    a, b = two_dirs(tmp_path)
    checkpoints = LogDirCheckpoints(
        LogDirFailureChannel(), lambda: (a, b), lambda: {("t", 0): a, ("t", 1): b}
    )
    checkpoints.write(RECOVERY_POINT_CHECKPOINT, {("t", 0): 5, ("t", 1): 7})
    # Changed behind its back: only a forced write or a change of b's entries rewrites b.
    OffsetCheckpointFile(os.path.join(b, RECOVERY_POINT_CHECKPOINT)).write({})
    checkpoints.write(RECOVERY_POINT_CHECKPOINT, {("t", 0): 6, ("t", 1): 7})
    assert checkpoints.read(a, RECOVERY_POINT_CHECKPOINT) == {("t", 0): 6}
    assert checkpoints.read(b, RECOVERY_POINT_CHECKPOINT) == {}
    checkpoints.write(RECOVERY_POINT_CHECKPOINT, {("t", 0): 6, ("t", 1): 7}, force=True)
    assert checkpoints.read(b, RECOVERY_POINT_CHECKPOINT) == {("t", 1): 7}


def test_a_failed_write_takes_its_directory_offline_and_the_others_are_written(
    tmp_path,
) -> None:
    a, b = two_dirs(tmp_path)
    failures = LogDirFailureChannel()

    def online() -> tuple[str, ...]:
        return tuple(d for d in (a, b) if not failures.is_offline(d))

    checkpoints = LogDirCheckpoints(failures, online, lambda: {("t", 0): a, ("t", 1): b})
    # A directory in place of the file's ".tmp" makes the write fail with an OSError.
    os.makedirs(os.path.join(a, RECOVERY_POINT_CHECKPOINT + ".tmp"))
    checkpoints.write(RECOVERY_POINT_CHECKPOINT, {("t", 0): 5, ("t", 1): 7})
    assert failures.is_offline(a) and not failures.is_offline(b)
    assert checkpoints.read(b, RECOVERY_POINT_CHECKPOINT) == {("t", 1): 7}
    assert checkpoints.read_online(RECOVERY_POINT_CHECKPOINT) == {("t", 1): 7}


def test_a_locked_directory_cannot_be_locked_again(tmp_path) -> None:
    log_dir = str(tmp_path / "d")
    fd = lock_log_dir(log_dir)
    try:
        assert os.path.exists(os.path.join(log_dir, LOCK_FILE))
        with pytest.raises(LogDirLayoutError, match="locked by another process"):
            lock_log_dir(log_dir)
    finally:
        os.close(fd)
    os.close(lock_log_dir(log_dir))


def test_the_scan_returns_partitions_and_removes_deleted_logs(tmp_path) -> None:
    log_dir = str(tmp_path)
    os.makedirs(os.path.join(log_dir, "my-topic-3"))
    os.makedirs(os.path.join(log_dir, "t-0"))
    deleted = os.path.join(log_dir, "t-1." + "ab" * 16 + "-delete")
    os.makedirs(deleted)
    open(os.path.join(log_dir, RECOVERY_POINT_CHECKPOINT), "w").close()
    found = scan_partition_dirs(log_dir, KNOWN_TOP_LEVEL_FILES)
    assert found == [
        (("my-topic", 3), os.path.join(log_dir, "my-topic-3")),
        (("t", 0), os.path.join(log_dir, "t-0")),
    ]
    assert not os.path.exists(deleted)


def test_the_scan_names_a_stray_file_unless_it_is_allowed(tmp_path) -> None:
    open(os.path.join(str(tmp_path), "stray"), "w").close()
    with pytest.raises(LogDirLayoutError, match="stray"):
        scan_partition_dirs(str(tmp_path), KNOWN_TOP_LEVEL_FILES)
    assert scan_partition_dirs(str(tmp_path), KNOWN_TOP_LEVEL_FILES | {"stray"}) == []


def test_the_scan_names_a_directory_that_is_not_a_partition(tmp_path) -> None:
    os.makedirs(os.path.join(str(tmp_path), "stray"))
    with pytest.raises(LogDirLayoutError, match="stray"):
        scan_partition_dirs(str(tmp_path), KNOWN_TOP_LEVEL_FILES | {"stray"})
