from __future__ import annotations

from pathlib import Path

import pytest

from data_plane.broker.errors import (
    FencedLeaderEpochError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    UnknownLeaderEpochError,
)
from data_plane.broker.partition import Partition, Role
from data_plane.storage import (
    FetchIsolation,
    Log,
    LogConfig,
    OffsetOutOfRangeError,
    Record,
    build_batch,
    validate_produce_payload,
)
from metadata.image import PartitionRegistration


@pytest.fixture
def log(tmp_path: Path):
    lg = Log(str(tmp_path / "t-0"), LogConfig(log_dirs=(str(tmp_path),)), topic="t", partition=0)
    yield lg
    lg.close()


def _reg(leader: int, epoch: int, isr: tuple[int, ...] = (1,)) -> PartitionRegistration:
    return PartitionRegistration(
        replicas=(1, 2), isr=isr, leader=leader, leader_epoch=epoch, partition_epoch=epoch
    )


def _append(part: Partition, n: int, acks: int = 1):
    payload = bytearray(build_batch([Record(None, b"v%d" % i, 1000 + i) for i in range(n)]))
    info = validate_produce_payload(payload, max_batch_bytes=1 << 20)
    return part.append_records_to_leader(payload, acks, info)


def test_leader_with_isr_of_one_advances_hw_on_append(log: Log) -> None:
    part = Partition("t", 0, 1, log)
    assert part.apply_registration(_reg(1, 3), 1) is True
    assert part.role is Role.LEADER and part.leader_epoch == 3
    info = _append(part, 5)
    assert (info.first_offset, info.last_offset) == (0, 4)
    assert part.high_watermark == 5
    res = part.read_records(0, 1 << 20, FetchIsolation.HIGH_WATERMARK)
    assert res.high_watermark == 5 and res.records.length > 0
    # the batch carries the leader epoch: partitionLeaderEpoch at byte 12
    assert int.from_bytes(res.records.read_bytes()[12:16], "big") == 3


def test_hw_waits_for_replication_with_larger_isr(log: Log) -> None:
    part = Partition("t", 0, 1, log)
    part.apply_registration(_reg(1, 0, isr=(1, 2)), 1)
    _append(part, 3)
    assert part.high_watermark == 0 and log.log_end_offset == 3
    assert part.read_records(0, 1 << 20, FetchIsolation.HIGH_WATERMARK).records.length == 0
    assert part.read_records(0, 1 << 20, FetchIsolation.LOG_END).records.length > 0
    assert part.available_bytes(0, 1 << 20, FetchIsolation.HIGH_WATERMARK) == 0
    assert part.update_high_watermark(2) is True
    assert part.update_high_watermark(1) is False  # never backwards
    assert part.high_watermark == 2


def test_follower_refuses_leader_operations(log: Log) -> None:
    part = Partition("t", 0, 1, log)
    part.apply_registration(_reg(2, 1), 1)
    assert part.role is Role.FOLLOWER
    with pytest.raises(NotLeaderOrFollowerError):
        _append(part, 1)
    with pytest.raises(NotLeaderOrFollowerError):
        part.read_records(0, 100, FetchIsolation.HIGH_WATERMARK)
    assert log.log_end_offset == 0


def test_leader_epoch_fencing(log: Log) -> None:
    part = Partition("t", 0, 1, log)
    part.apply_registration(_reg(1, 5), 1)
    part.check_leader_epoch(-1)
    part.check_leader_epoch(5)
    with pytest.raises(FencedLeaderEpochError):
        part.read_records(0, 100, FetchIsolation.HIGH_WATERMARK, current_leader_epoch=4)
    with pytest.raises(UnknownLeaderEpochError):
        part.check_leader_epoch(6)


def test_stale_registration_ignored(log: Log) -> None:
    part = Partition("t", 0, 1, log)
    part.apply_registration(_reg(1, 5), 1)
    assert part.apply_registration(_reg(2, 4), 1) is False
    assert part.is_leader and part.leader_epoch == 5


def test_acks_all_needs_min_insync_replicas(log: Log) -> None:
    part = Partition("t", 0, 1, log)
    part.apply_registration(_reg(1, 0, isr=(1,)), 2)
    with pytest.raises(NotEnoughReplicasError):
        _append(part, 1, acks=-1)
    assert log.log_end_offset == 0
    _append(part, 1, acks=1)  # acks=1 does not need the ISR
    assert log.log_end_offset == 1


def test_delete_records_moves_log_start(log: Log) -> None:
    part = Partition("t", 0, 1, log)
    part.apply_registration(_reg(1, 0), 1)
    _append(part, 4)
    _append(part, 4)
    assert part.delete_records_before(4) == 4
    with pytest.raises(OffsetOutOfRangeError):
        part.read_records(0, 100, FetchIsolation.HIGH_WATERMARK)
    with pytest.raises(OffsetOutOfRangeError):
        part.delete_records_before(9)
    assert part.delete_records_before(-1) == 8
