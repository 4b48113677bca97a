"""Maintenance never touches a partition being deleted: a deletion that lands while
maintenance is about to fsync the partition's ``partition.metadata`` and directory waits for
it (or makes maintenance skip the partition); no FileNotFoundError, nothing logged."""

from __future__ import annotations

import logging
import threading
import uuid

import pytest

from common.log_config import LogConfig
from data_plane.storage.log_manager import LogManager
from data_plane.storage.partition_metadata import PartitionMetadataFile

# How long the flush waits for a deletion to sneak in between its listing and its fsync. A
# correct manager makes the deletion wait, so the window only bounds the test's duration.
RACE_WINDOW_S = 0.5


def test_a_deletion_during_the_partition_metadata_flush_is_harmless(
    tmp_path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    m = LogManager(LogConfig(log_dirs=(str(tmp_path / "d"),)))
    try:
        m.get_or_create_log("t", 0, topic_id=uuid.uuid4())  # a dirty partition.metadata
        in_flush = threading.Event()
        deleted = threading.Event()
        original_flush = PartitionMetadataFile.flush

        def slow_flush(self: PartitionMetadataFile) -> None:
            in_flush.set()
            deleted.wait(RACE_WINDOW_S)  # a deletion would happen now, if it could
            original_flush(self)

        monkeypatch.setattr(PartitionMetadataFile, "flush", slow_flush)

        def delete() -> None:
            in_flush.wait(30)
            m.delete_log("t", 0)
            deleted.set()

        deleter = threading.Thread(target=delete)
        deleter.start()
        caplog.set_level(logging.WARNING)
        report = m.maintenance(retention=False)
        deleter.join(30)
        assert not deleter.is_alive()
        assert report.errors == ()
        assert m.get_log("t", 0) is None
        assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
        # And a round after the deletion has nothing left to do for it.
        assert m.flush_partition_metadata() == 0
    finally:
        m.close()


def test_maintenance_skips_a_log_deleted_during_its_round(
    tmp_path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    m = LogManager(LogConfig(log_dirs=(str(tmp_path / "d"),)))
    try:
        log = m.get_or_create_log("t", 0)
        original = type(log).maybe_flush

        def flush_after_deletion(self) -> bool:  # type: ignore[no-untyped-def]
            m.delete_log("t", 0)  # the log is closed under the round's feet
            return original(self)

        monkeypatch.setattr(type(log), "maybe_flush", flush_after_deletion)
        caplog.set_level(logging.WARNING)
        report = m.maintenance(retention=False)
        assert report.errors == ()
        assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    finally:
        m.close()
