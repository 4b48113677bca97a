"""PartitionLogs: metadata changes become partition logs on a real LogManager, and each image is
published only once the logs it hosts exist."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from common.config_resources import RESOURCE_TOPIC
from common.log_config import LogConfig
from common.topic_partition import TopicPartition
from data_plane.broker.partition_logs import PartitionLogs
from data_plane.broker.replica_manager import ReplicaManager
from data_plane.storage.log_manager import LogManager
from metadata.delta import MetadataDelta
from metadata.image import MetadataImage
from metadata.records import (
    ConfigRecord,
    MetadataRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)

BROKER = 101


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[LogManager]:
    lm = LogManager(LogConfig(log_dirs=(str(tmp_path / "d"),)))
    yield lm
    lm.close()


class Follower:
    """Feeds records to PartitionLogs the way the broker's metadata manager does."""

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


def names(manager: LogManager) -> set[str]:
    return {f"{lg.topic}-{lg.partition}" for lg in manager.all_logs()}


def test_hosted_partitions_become_logs_and_deletes_remove_them(manager: LogManager) -> None:
    f = Follower(PartitionLogs(BROKER, manager, LogConfig(log_dirs=manager.log_dirs)))
    a, b = uuid.uuid4(), uuid.uuid4()
    f.apply(
        TopicRecord("a", a),
        partition(a, 0, (BROKER, 102)),
        partition(a, 1, (102, BROKER)),
        partition(a, 2, (102, 103)),  # not hosted here
        TopicRecord("b", b),
        partition(b, 0, (103, BROKER)),
    )
    assert names(manager) == {"a-0", "a-1", "b-0"}
    f.apply(RemoveTopicRecord(a))
    assert names(manager) == {"b-0"}
    summary = f.replicas.summary(f.image)
    assert summary["local_logs"] == 1 and summary["hosted_partitions"] == 1
    assert summary["apply_errors"] == 0 and "b" in summary["topics"]  # type: ignore[operator]


def test_topic_configs_reach_new_and_existing_logs(manager: LogManager) -> None:
    f = Follower(PartitionLogs(BROKER, manager, LogConfig(log_dirs=manager.log_dirs)))
    t = uuid.uuid4()
    f.apply(
        TopicRecord("t", t),
        ConfigRecord(RESOURCE_TOPIC, "t", "retention.ms", "1234"),
        partition(t, 0, (BROKER,)),
    )
    log = manager.get_log("t", 0)
    assert log is not None and log.config.retention_ms == 1234
    f.apply(ConfigRecord(RESOURCE_TOPIC, "t", "retention.ms", "5678"))
    assert log.config.retention_ms == 5678
    # A value this broker cannot read is skipped (the broker default stays), the other
    # overrides still apply, and nothing raises.
    f.apply(ConfigRecord(RESOURCE_TOPIC, "t", "segment.bytes", "huge"))
    assert log.config.segment_bytes == LogConfig().segment_bytes
    assert log.config.retention_ms == 5678
    assert f.replicas.errors == 0


def test_equal_images_have_equal_digests(manager: LogManager) -> None:
    f1 = Follower(PartitionLogs(BROKER, manager, LogConfig(log_dirs=manager.log_dirs)))
    f2 = Follower(PartitionLogs(BROKER, manager, LogConfig(log_dirs=manager.log_dirs)))
    t = uuid.uuid4()
    for f in (f1, f2):
        f.apply(TopicRecord("t", t), partition(t, 0, (BROKER,)))
    s1, s2 = f1.replicas.summary(f1.image), f2.replicas.summary(f2.image)
    assert s1["image_sha256"] == s2["image_sha256"]
    f2.apply(partition(t, 1, (BROKER,)))
    assert f2.replicas.summary(f2.image)["image_sha256"] != s1["image_sha256"]


def test_an_image_is_published_after_its_logs_exist_and_hosted_at_once(
    manager: LogManager,
) -> None:
    """The event the replica manager gets names only partitions whose log exists: it leads
    in the same call, with nothing pending and no second call."""
    logs = PartitionLogs(BROKER, manager, LogConfig(log_dirs=manager.log_dirs))
    rm = ReplicaManager(BROKER, manager)
    seen: list[tuple[int, set[str]]] = []

    def on_image(image: MetadataImage) -> None:
        seen.append((image.offset, names(manager)))
        rm.apply_image(image)

    unsubscribe = logs.subscribe(on_image)
    f = Follower(logs)
    a = uuid.uuid4()
    f.apply(TopicRecord("a", a), partition(a, 0, (BROKER, 102)), partition(a, 1, (102, BROKER)))
    assert seen == [(f.image.offset, {"a-0", "a-1"})]
    assert rm.get_partition(TopicPartition("a", 0)).is_leader
    assert not rm.get_partition(TopicPartition("a", 1)).is_leader
    f.apply(RemoveTopicRecord(a))
    assert seen[-1] == (f.image.offset, set())
    assert rm.get_partition(TopicPartition("a", 0)) is None
    unsubscribe()
    f.apply(TopicRecord("b", uuid.uuid4()))
    assert len(seen) == 2


def test_a_late_subscriber_gets_the_current_image_first(manager: LogManager) -> None:
    logs = PartitionLogs(BROKER, manager, LogConfig(log_dirs=manager.log_dirs))
    f = Follower(logs)
    a = uuid.uuid4()
    f.apply(TopicRecord("a", a), partition(a, 0, (BROKER,)))
    got: list[MetadataImage] = []
    logs.subscribe(got.append)
    assert got == [f.image]


def test_a_partition_whose_log_is_missing_is_hosted_with_the_next_image(
    manager: LogManager,
) -> None:
    rm = ReplicaManager(BROKER, manager)
    f = Follower(PartitionLogs(BROKER, manager, LogConfig(log_dirs=manager.log_dirs)))
    a = uuid.uuid4()
    f.apply(TopicRecord("a", a), partition(a, 0, (BROKER,)))
    manager.delete_log("a", 0)  # as if creating it had failed
    rm.apply_image(f.image)
    assert rm.get_partition(TopicPartition("a", 0)) is None
    manager.get_or_create_log("a", 0)
    f.apply(TopicRecord("b", uuid.uuid4()))  # the next image, unrelated to "a"
    changed = rm.apply_image(f.image)
    assert TopicPartition("a", 0) in changed
    assert rm.get_partition(TopicPartition("a", 0)).is_leader
