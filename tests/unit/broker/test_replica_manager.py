"""ReplicaManager and the delayed operations, driven without any server (sans-IO)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from common.error_codes import ErrorCode
from common.topic_partition import TopicPartition
from data_plane.broker.delayed import DelayedFetch, DelayedProduce, FetchPartitionStatus
from data_plane.broker.errors import NotLeaderOrFollowerError, UnknownTopicOrPartitionError
from data_plane.broker.purgatory import DelayedOperationPurgatory
from data_plane.broker.replica_manager import ReplicaManager
from data_plane.storage import FetchIsolation, LogConfig, LogManager, Record, build_batch
from metadata.image import MetadataImage, PartitionRegistration, TopicImage

TP = TopicPartition("t", 0)


class Clock:
    now = 0

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def log_manager(tmp_path: Path):
    lm = LogManager(LogConfig(log_dirs=(str(tmp_path),)))
    yield lm
    lm.close()


def image(offset: int, leader: int, isr: tuple[int, ...] = (1,), epoch: int = 0) -> MetadataImage:
    tid = uuid.UUID(int=7)
    reg = PartitionRegistration((1, 2), isr, leader, epoch, epoch)
    topic = TopicImage("t", tid, {0: reg})
    return MetadataImage(offset=offset, topics_by_name={"t": topic}, topics_by_id={tid: topic})


def records(n: int = 2) -> bytearray:
    return bytearray(build_batch([Record(None, b"v", 1) for _ in range(n)]))


def test_partition_waits_for_its_log_then_leads(log_manager: LogManager) -> None:
    changed: list[TopicPartition] = []
    rm = ReplicaManager(1, log_manager, on_partition_change=changed.append)
    assert rm.apply_image(image(1, leader=1)) == []
    with pytest.raises(NotLeaderOrFollowerError):
        rm.leader_partition(TP)  # known to the metadata, log not created yet
    log_manager.get_or_create_log("t", 0)
    assert rm.apply_image(rm.image) == [TP] and changed == [TP]
    assert rm.leader_partition(TP).leader_epoch == 0
    with pytest.raises(UnknownTopicOrPartitionError):
        rm.leader_partition(TopicPartition("t", 1))
    assert rm.apply_image(image(2, leader=2, epoch=1)) == [TP]
    assert not rm.get_partition(TP).is_leader
    assert rm.append_records(TP, records(), 1).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert rm.apply_image(MetadataImage(offset=3)) == [TP]
    assert rm.get_partition(TP) is None


def test_append_results_and_corrupt_batch(log_manager: LogManager) -> None:
    log_manager.get_or_create_log("t", 0)
    rm = ReplicaManager(1, log_manager)
    rm.apply_image(image(1, leader=1))
    ok = rm.append_records(TP, records(3), 1)
    assert (ok.error_code, ok.base_offset, ok.last_offset) == (0, 0, 2)
    bad = records(3)
    bad[-1] ^= 1
    assert rm.append_records(TP, bad, 1).error_code == ErrorCode.CORRUPT_MESSAGE
    assert rm.append_records(TP, None, 1).error_code == ErrorCode.INVALID_RECORD
    assert rm.get_partition(TP).log.log_end_offset == 3


def test_delayed_produce_completes_when_hw_passes_or_times_out(log_manager: LogManager) -> None:
    log_manager.get_or_create_log("t", 0)
    rm = ReplicaManager(1, log_manager)
    rm.apply_image(image(1, leader=1, isr=(1, 2)))
    clock = Clock()
    purgatory = DelayedOperationPurgatory("Produce", clock, 10)
    rm.set_partition_change_listener(purgatory.check_and_complete)
    r = rm.append_records(TP, records(2), -1)
    outcomes: list[dict] = []
    op = DelayedProduce(1000, {TP: r.last_offset + 1}, rm, outcomes.append)
    assert purgatory.try_complete_else_watch(op, [TP]) is False
    rm.get_partition(TP).update_high_watermark(2)
    purgatory.check_and_complete(TP)
    assert outcomes == [{TP: ErrorCode.NO_ERROR}]

    r = rm.append_records(TP, records(2), -1)
    op = DelayedProduce(1000, {TP: r.last_offset + 1}, rm, outcomes.append)
    purgatory.try_complete_else_watch(op, [TP])
    clock.now = 1000
    purgatory.expire()
    assert outcomes[-1] == {TP: ErrorCode.REQUEST_TIMED_OUT}

    op = DelayedProduce(1000, {TP: 10}, rm, outcomes.append)
    purgatory.try_complete_else_watch(op, [TP])
    rm.apply_image(image(2, leader=2, isr=(2,), epoch=1))  # leadership moves away
    assert outcomes[-1] == {TP: ErrorCode.NOT_LEADER_OR_FOLLOWER}


class _Replicas:
    """A ReplicaManager stand-in over fake partitions (the delayed operations read only
    get_partition)."""

    def __init__(self, parts: dict[TopicPartition, Any]) -> None:
        self.parts = parts

    def get_partition(self, tp: TopicPartition) -> Any:
        return self.parts[tp]


def test_delayed_produce_re_checks_only_the_partition_that_changed() -> None:
    class Part:
        def __init__(self) -> None:
            self.hw = 0
            self.checks = 0

        def check_enough_replicas_reach_offset(self, required: int) -> tuple[bool, int]:
            self.checks += 1
            return self.hw >= required, ErrorCode.NO_ERROR

    tps = [TopicPartition("t", i) for i in range(3)]
    parts = {tp: Part() for tp in tps}

    outcomes: list[dict] = []
    purgatory = DelayedOperationPurgatory("Produce", Clock(), 10)
    op = DelayedProduce(1000, dict.fromkeys(tps, 5), _Replicas(parts), outcomes.append)  # type: ignore[arg-type]
    assert purgatory.try_complete_else_watch(op, tps) is False
    assert [parts[tp].checks for tp in tps] == [1, 1, 1]
    parts[tps[1]].hw = 5
    purgatory.check_and_complete(tps[1])
    purgatory.check_and_complete(tps[1])  # decided: not checked again
    assert [parts[tp].checks for tp in tps] == [1, 2, 1]
    parts[tps[0]].hw = parts[tps[2]].hw = 5
    purgatory.check_and_complete(tps[0])
    assert outcomes == []
    purgatory.check_and_complete(tps[2])
    assert [parts[tp].checks for tp in tps] == [2, 2, 2]
    assert outcomes == [dict.fromkeys(tps, ErrorCode.NO_ERROR)]


def test_delayed_fetch_counts_only_the_partition_that_changed() -> None:
    class Part:
        is_leader = True

        def __init__(self) -> None:
            self.bytes = 0
            self.reads = 0

        def available_bytes(self, offset: int, max_bytes: int, isolation: FetchIsolation) -> int:
            self.reads += 1
            return self.bytes

    tps = [TopicPartition("t", i) for i in range(3)]
    parts = {tp: Part() for tp in tps}

    done: list[bool] = []
    purgatory = DelayedOperationPurgatory("Fetch", Clock(), 10)
    statuses = [FetchPartitionStatus(tp, 0, 1 << 20) for tp in tps]
    replicas = _Replicas(parts)
    # known: as the request's own read found the partitions: 4, 0, 0 bytes.
    op = DelayedFetch(500, 10, statuses, FetchIsolation.LOG_END, replicas, done.append, {tps[0]: 4})  # type: ignore[arg-type]
    assert purgatory.try_complete_else_watch(op, tps) is False
    assert [parts[tp].reads for tp in tps] == [0, 0, 0]  # the first check read nothing
    parts[tps[1]].bytes = 5
    purgatory.check_and_complete(tps[1])
    assert [parts[tp].reads for tp in tps] == [0, 1, 0] and done == []  # 4 + 5 < 10
    parts[tps[2]].bytes = 1
    purgatory.check_and_complete(tps[2])
    assert [parts[tp].reads for tp in tps] == [0, 1, 1] and done == [False]
    assert op.woken == {tps[1], tps[2]}


def test_delayed_fetch_waits_for_min_bytes(log_manager: LogManager) -> None:
    log_manager.get_or_create_log("t", 0)
    rm = ReplicaManager(1, log_manager)
    rm.apply_image(image(1, leader=1))
    purgatory = DelayedOperationPurgatory("Fetch", Clock(), 10)
    rm.set_partition_change_listener(purgatory.check_and_complete)
    done: list[bool] = []
    size = len(records(2))
    op = DelayedFetch(
        500,
        size + 1,
        [FetchPartitionStatus(TP, 0, 1 << 20)],
        FetchIsolation.HIGH_WATERMARK,
        rm,
        done.append,
    )
    assert purgatory.try_complete_else_watch(op, [TP]) is False
    rm.append_records(TP, records(2), 1)
    assert done == []  # one batch: not yet min_bytes
    rm.append_records(TP, records(2), 1)
    assert done == [False]


def test_recreated_topic_waits_for_its_new_log(log_manager: LogManager) -> None:
    old_log = log_manager.get_or_create_log("t", 0)
    rm = ReplicaManager(1, log_manager)
    rm.apply_image(image(1, leader=1))
    assert rm.get_partition(TP).log is old_log
    tid = uuid.UUID(int=8)  # same name, new topic id: a delete and a create in one delta
    reg = PartitionRegistration((1, 2), (1,), 1, 0, 0)
    topic = TopicImage("t", tid, {0: reg})
    rm.apply_image(MetadataImage(offset=2, topics_by_name={"t": topic}, topics_by_id={tid: topic}))
    assert rm.get_partition(TP) is None  # the LogManager still holds the old log
    log_manager.delete_log("t", 0)
    new_log = log_manager.get_or_create_log("t", 0)
    assert rm.apply_image(rm.image) == [TP]
    assert rm.get_partition(TP).log is new_log and rm.get_partition(TP).is_leader
