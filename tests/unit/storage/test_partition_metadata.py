"""partition.metadata: Kafka's format, topic id recorded by get_or_create_log, a stale log of
a deleted-and-re-created topic replaced, delete_log guarded by the topic id."""

from __future__ import annotations

import os
import uuid

import pytest

from common.log_config import LogConfig
from data_plane.storage.errors import CorruptCheckpointError
from data_plane.storage.log_manager import LogManager
from data_plane.storage.partition_metadata import (
    PARTITION_METADATA_FILE,
    PartitionMetadataFile,
    topic_id_from_string,
    topic_id_to_string,
)

from .conftest import batch


@pytest.fixture
def managers():
    opened: list[LogManager] = []
    yield opened
    for m in opened:
        m.close()


def open_manager(tmp_path, managers) -> LogManager:
    m = LogManager(LogConfig(log_dirs=(str(tmp_path / "d"),)))
    managers.append(m)
    return m


def test_topic_id_string_is_kafkas_base64() -> None:
    tid = uuid.UUID("00000000-0000-0000-0000-000000000001")
    assert topic_id_to_string(tid) == "AAAAAAAAAAAAAAAAAAAAAQ"
    some = uuid.uuid4()
    assert topic_id_from_string(topic_id_to_string(some)) == some
    with pytest.raises(ValueError):
        topic_id_from_string("short")


def test_file_format_and_corruption(tmp_path) -> None:
    f = PartitionMetadataFile(str(tmp_path))
    assert f.read() is None
    tid = uuid.uuid4()
    f.record(tid)
    assert (tmp_path / PARTITION_METADATA_FILE).read_text() == (
        f"version: 0\ntopic_id: {topic_id_to_string(tid)}\n"
    )
    assert f.read() == tid and f.dirty
    f.flush()
    assert not f.dirty
    other = uuid.uuid4()
    f.record(other)  # an existing file is replaced atomically
    assert f.read() == other
    (tmp_path / PARTITION_METADATA_FILE).write_text("version: 7\ntopic_id: x\n")
    with pytest.raises(CorruptCheckpointError, match="version"):
        f.read()
    (tmp_path / PARTITION_METADATA_FILE).write_text("")
    with pytest.raises(CorruptCheckpointError):
        f.read()


def test_get_or_create_log_records_the_topic_id_and_reloads_it(tmp_path, managers) -> None:
    m = open_manager(tmp_path, managers)
    tid = uuid.uuid4()
    log = m.get_or_create_log("orders", 0, topic_id=tid)
    path = os.path.join(log.dir_path, PARTITION_METADATA_FILE)
    assert os.path.exists(path)
    assert m.topic_id_of("orders", 0) == tid
    assert m.get_or_create_log("orders", 0, topic_id=tid) is log
    m.close()
    m = open_manager(tmp_path, managers)
    assert m.topic_id_of("orders", 0) == tid


def test_a_log_of_a_recreated_topic_is_replaced(tmp_path, managers) -> None:
    m = open_manager(tmp_path, managers)
    old_id, new_id = uuid.uuid4(), uuid.uuid4()
    old = m.get_or_create_log("orders", 0, topic_id=old_id)
    old.append(batch(5), 0)
    m.close()
    m = open_manager(tmp_path, managers)
    assert m.get_log("orders", 0).log_end_offset == 5
    new = m.get_or_create_log("orders", 0, topic_id=new_id)
    assert new is not old and new.log_end_offset == 0
    assert m.topic_id_of("orders", 0) == new_id
    assert [n for n in os.listdir(tmp_path / "d") if n.endswith("-delete")] == []
    m.close()
    m = open_manager(tmp_path, managers)
    log = m.get_log("orders", 0)
    assert log is not None and log.log_end_offset == 0
    assert m.topic_id_of("orders", 0) == new_id


def test_a_log_without_a_stored_id_adopts_the_given_one(tmp_path, managers) -> None:
    m = open_manager(tmp_path, managers)
    log = m.get_or_create_log("orders", 0)
    log.append(batch(2), 0)
    assert m.topic_id_of("orders", 0) is None
    tid = uuid.uuid4()
    assert m.get_or_create_log("orders", 0, topic_id=tid) is log
    assert m.topic_id_of("orders", 0) == tid and log.log_end_offset == 2


def test_a_torn_file_counts_as_missing(tmp_path, managers) -> None:
    m = open_manager(tmp_path, managers)
    log = m.get_or_create_log("orders", 0, topic_id=uuid.uuid4())
    log.append(batch(2), 0)
    m.close()
    (tmp_path / "d" / "orders-0" / PARTITION_METADATA_FILE).write_text("")  # torn by a crash
    m = open_manager(tmp_path, managers)
    tid = uuid.uuid4()
    log = m.get_or_create_log("orders", 0, topic_id=tid)
    assert log.log_end_offset == 2 and m.topic_id_of("orders", 0) == tid


def test_delete_log_keeps_a_log_of_another_topic_id(tmp_path, managers) -> None:
    m = open_manager(tmp_path, managers)
    tid = uuid.uuid4()
    m.get_or_create_log("orders", 0, topic_id=tid)
    assert not m.delete_log("orders", 0, topic_id=uuid.uuid4())
    assert m.get_log("orders", 0) is not None
    assert m.delete_log("orders", 0, topic_id=tid)
    assert m.get_log("orders", 0) is None


def test_maintenance_fsyncs_recorded_files_a_bounded_number_at_a_time(tmp_path, managers) -> None:
    m = open_manager(tmp_path, managers)
    for p in range(3):
        m.get_or_create_log("orders", p, topic_id=uuid.uuid4())
    assert m.flush_partition_metadata(max_files=2) == 2
    assert m.maintenance().errors == ()
    assert m.flush_partition_metadata() == 0
