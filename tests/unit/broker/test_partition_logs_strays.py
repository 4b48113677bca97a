"""PartitionLogs: topic ids reach partition.metadata, a re-created topic's stale log is
replaced, and stray logs are deleted only once the image holds this process's registration."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from common.log_config import LogConfig
from data_plane.broker.partition_logs import PartitionLogs
from data_plane.storage.log_manager import LogManager
from metadata.delta import MetadataDelta
from metadata.image import MetadataImage
from metadata.records import (
    MetadataRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from tests.unit.storage.conftest import batch

BROKER = 101
INCARNATION = "incarnation-of-this-process"


@pytest.fixture
def log_dir(tmp_path: Path) -> str:
    return str(tmp_path / "d")


@pytest.fixture
def managers() -> Iterator[list[LogManager]]:
    opened: list[LogManager] = []
    yield opened
    for m in opened:
        m.close()


def open_manager(log_dir: str, managers: list[LogManager]) -> LogManager:
    m = LogManager(LogConfig(log_dirs=(log_dir,)))
    managers.append(m)
    return m


class Follower:
    def __init__(self, replicas: PartitionLogs) -> None:
        self.replicas = replicas
        self.image = MetadataImage()
        self.offset = -1

    def apply(self, *records: MetadataRecord) -> None:
        delta = MetadataDelta(self.image)
        for record in records:
            self.offset += 1
            delta.replay(record, self.offset)
        self.image = delta.apply()
        self.replicas.apply_delta(self.image, delta)


def partition(tid: uuid.UUID, pid: int, replicas: tuple[int, ...]) -> PartitionRecord:
    return PartitionRecord(pid, tid, replicas, replicas, replicas[0], 0, 0)


def registration(incarnation: str) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(BROKER, incarnation, 7, (), None, True, False)


def names(manager: LogManager) -> set[str]:
    return {f"{lg.topic}-{lg.partition}" for lg in manager.all_logs()}


def seed_disk(log_dir: str, managers: list[LogManager], ids: dict[str, uuid.UUID]) -> None:
    """Logs a previous run left: each with data and its topic id."""
    m = open_manager(log_dir, managers)
    for name, tid in ids.items():
        m.get_or_create_log(name, 0, topic_id=tid).append(batch(3), 0)
    m.close()


def test_topic_ids_are_recorded(log_dir: str, managers: list[LogManager]) -> None:
    m = open_manager(log_dir, managers)
    f = Follower(PartitionLogs(BROKER, m, LogConfig(log_dirs=m.log_dirs)))
    a = uuid.uuid4()
    f.apply(TopicRecord("a", a), partition(a, 0, (BROKER,)), partition(a, 1, (102, BROKER)))
    assert m.topic_id_of("a", 0) == a and m.topic_id_of("a", 1) == a


def test_restart_replaces_recreated_topics_and_deletes_strays_once_caught_up(
    log_dir: str, managers: list[LogManager]
) -> None:
    kept, recreated_old, moved, gone = (uuid.uuid4() for _ in range(4))
    seed_disk(
        log_dir,
        managers,
        {"kept": kept, "recreated": recreated_old, "moved": moved, "gone": gone},
    )
    m = open_manager(log_dir, managers)
    f = Follower(
        PartitionLogs(BROKER, m, LogConfig(log_dirs=m.log_dirs), incarnation_id=INCARNATION)
    )
    recreated_new = uuid.uuid4()
    # The first fetch after the restart: topics as they are now, without our registration.
    f.apply(
        TopicRecord("kept", kept),
        partition(kept, 0, (BROKER, 102)),
        TopicRecord("recreated", recreated_new),
        partition(recreated_new, 0, (BROKER,)),
        TopicRecord("moved", moved),
        partition(moved, 0, (102, 103)),
    )
    # The re-created topic's old log was replaced by a new empty one at once ...
    recreated = m.get_log("recreated", 0)
    assert recreated is not None and recreated.log_end_offset == 0
    assert m.topic_id_of("recreated", 0) == recreated_new
    # ... but nothing is deleted as stray before the image is known to be caught up.
    assert names(m) == {"kept-0", "recreated-0", "moved-0", "gone-0"}
    assert not f.replicas.stray_scan_done
    f.apply(registration("an-older-incarnation"))
    assert names(m) == {"kept-0", "recreated-0", "moved-0", "gone-0"}
    f.apply(registration(INCARNATION))
    assert f.replicas.stray_scan_done
    assert names(m) == {"kept-0", "recreated-0"}
    assert m.get_log("kept", 0).log_end_offset == 3
    assert f.replicas.summary(f.image)["stray_logs_deleted"] == 2
    assert f.replicas.errors == 0


def test_without_an_incarnation_id_strays_are_kept(
    log_dir: str, managers: list[LogManager]
) -> None:
    seed_disk(log_dir, managers, {"gone": uuid.uuid4()})
    m = open_manager(log_dir, managers)
    f = Follower(PartitionLogs(BROKER, m, LogConfig(log_dirs=m.log_dirs)))
    f.apply(registration(INCARNATION))
    assert names(m) == {"gone-0"} and not f.replicas.stray_scan_done
    assert f.replicas.stray_logs(f.image) == [("gone", 0)]


def test_a_delete_of_the_old_id_spares_the_new_topics_log(
    log_dir: str, managers: list[LogManager]
) -> None:
    m = open_manager(log_dir, managers)
    f = Follower(PartitionLogs(BROKER, m, LogConfig(log_dirs=m.log_dirs)))
    old, new = uuid.uuid4(), uuid.uuid4()
    f.apply(TopicRecord("t", old), partition(old, 0, (BROKER,)))
    m.get_log("t", 0).append(batch(2), 0)
    # Deleted and re-created in one delta: the old log goes, the new one is empty.
    f.apply(RemoveTopicRecord(old), TopicRecord("t", new), partition(new, 0, (BROKER,)))
    log = m.get_log("t", 0)
    assert log is not None and log.log_end_offset == 0 and m.topic_id_of("t", 0) == new
