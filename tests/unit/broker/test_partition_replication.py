"""Partition + LeaderReplicationState over real Logs: a leader and a follower replica driven
by hand (fetch offsets, follower appends, truncation, leader changes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.error_codes import ErrorCode
from data_plane.broker.errors import OffsetNotAvailableError
from data_plane.broker.partition import Partition, Role
from data_plane.replication.follower import truncation_offset
from data_plane.replication.leader_state import IsrChangeKind
from data_plane.storage import (
    FetchIsolation,
    Log,
    LogConfig,
    Record,
    build_batch,
    validate_produce_payload,
)
from metadata.image import PartitionRegistration

LAG_MS = 1000


def _log(tmp_path: Path, name: str) -> Log:
    d = tmp_path / name
    return Log(str(d / "t-0"), LogConfig(log_dirs=(str(d),)), topic="t", partition=0)


@pytest.fixture
def logs(tmp_path: Path):
    a, b = _log(tmp_path, "a"), _log(tmp_path, "b")
    yield a, b
    a.close()
    b.close()


def _reg(leader: int, epoch: int, isr=(1, 2), pepoch: int | None = None) -> PartitionRegistration:
    return PartitionRegistration(
        replicas=(1, 2),
        isr=isr,
        leader=leader,
        leader_epoch=epoch,
        partition_epoch=epoch if pepoch is None else pepoch,
    )


def _append(part: Partition, n: int, tag: bytes = b"v", acks: int = -1):
    payload = bytearray(build_batch([Record(None, tag + b"%d" % i, 1000 + i) for i in range(n)]))
    info = validate_produce_payload(payload, max_batch_bytes=1 << 20)
    return part.append_records_to_leader(payload, acks, info)


def _replicate(leader: Partition, follower: Partition, now_ms: int) -> None:
    """One follower fetch round: report the LEO, copy what the leader has beyond it."""
    leader.update_follower_fetch_state(follower.broker_id, follower.log.log_end_offset, now_ms)
    res = leader.read_records(follower.log.log_end_offset, 1 << 20, FetchIsolation.LOG_END)
    follower.append_records_as_follower(
        res.records.read_bytes(), res.high_watermark, res.log_start_offset
    )


def test_hw_follows_the_follower_and_acks_all_completes(logs) -> None:
    la, lb = logs
    leader, follower = Partition("t", 0, 1, la), Partition("t", 0, 2, lb)
    leader.apply_registration(_reg(1, 0), 2, 0, LAG_MS)
    follower.apply_registration(_reg(1, 0), 2, 0, LAG_MS)
    _append(leader, 5)
    assert leader.high_watermark == 0
    assert leader.check_enough_replicas_reach_offset(5) == (False, ErrorCode.NO_ERROR)
    _replicate(leader, follower, 10)  # follower now has 5, HW still 0 on the leader
    assert lb.log_end_offset == 5 and follower.high_watermark == 0
    _replicate(leader, follower, 20)  # its next fetch at 5 moves the HW
    assert leader.high_watermark == 5 and follower.high_watermark == 5
    assert leader.check_enough_replicas_reach_offset(5) == (True, ErrorCode.NO_ERROR)
    assert la.leader_epoch_cache.entries()[0] == (0, 0)
    assert lb.leader_epoch_cache.entries()[0] == (0, 0)


def test_shrink_then_not_enough_replicas_after_append(logs) -> None:
    la, _ = logs
    leader = Partition("t", 0, 1, la)
    leader.apply_registration(_reg(1, 0), 2, 0, LAG_MS)
    _append(leader, 3)
    proposal = leader.maybe_shrink_isr(5000)
    assert proposal is not None and proposal.kind is IsrChangeKind.SHRINK
    assert leader.high_watermark == 0  # pending: the follower still counts
    leader.on_alter_partition_result(proposal, ErrorCode.NO_ERROR, (1,), 0, 1)
    assert leader.isr == (1,) and leader.partition_epoch == 1
    # Below min.insync.replicas the HW stays put (KIP-966): the records are not committed.
    assert leader.high_watermark == 0
    assert leader.check_enough_replicas_reach_offset(3) == (
        True,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    )
    # An image behind the answer (older partition epoch) does not undo it.
    assert leader.apply_registration(_reg(1, 0, pepoch=0), 2, 0, LAG_MS) is False
    assert leader.isr == (1,)


def test_deposed_leader_fails_parked_produce_and_truncates_divergence(logs) -> None:
    la, lb = logs
    old, new = Partition("t", 0, 1, la), Partition("t", 0, 2, lb)
    old.apply_registration(_reg(1, 0), 1, 0, LAG_MS)
    new.apply_registration(_reg(1, 0), 1, 0, LAG_MS)
    _append(old, 4, b"a")
    _replicate(old, new, 1)
    _replicate(old, new, 2)
    assert old.high_watermark == 4
    _append(old, 3, b"x")  # only the old leader has these
    assert old.check_enough_replicas_reach_offset(7) == (False, ErrorCode.NO_ERROR)
    # The controller elects broker 2 in epoch 1.
    new.apply_registration(_reg(2, 1, isr=(2,)), 1, 10, LAG_MS)
    old.apply_registration(_reg(2, 1, isr=(2,)), 1, 10, LAG_MS)
    assert old.role is Role.FOLLOWER
    assert old.check_enough_replicas_reach_offset(7) == (True, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    _append(new, 2, b"n")
    assert lb.leader_epoch_cache.entries()[-1] == (1, 4)
    # Follower truncation: ask the new leader about the follower's latest epoch (0).
    answer = new.end_offset_for_epoch(la.leader_epoch_cache.latest_epoch)
    assert answer == (0, 4)
    decision = truncation_offset(
        answer,
        la.leader_epoch_cache.end_offset_for(answer.epoch, la.log_end_offset),
        la.log_end_offset,
        la.high_watermark,
    )
    assert decision == (4, True)
    assert old.truncate_to(decision.offset, "test") == 3
    _replicate(new, old, 20)
    _replicate(new, old, 30)
    assert la.log_end_offset == lb.log_end_offset == 6
    a = la.read(0, 1 << 20).read_bytes()
    b = lb.read(0, 1 << 20).read_bytes()
    assert a == b


def test_follower_refuses_leader_writes_and_fetch_epochs(logs) -> None:
    la, _ = logs
    part = Partition("t", 0, 1, la)
    part.apply_registration(_reg(2, 3), 1, 0, LAG_MS)
    with pytest.raises(Exception, match="not the leader"):
        _append(part, 1)
    part.apply_registration(_reg(1, 4), 1, 0, LAG_MS)
    with pytest.raises(Exception, match="leader, not follower"):
        part.truncate_to(0, "test")


def test_a_fetch_beyond_the_log_end_counts_for_nothing(logs) -> None:
    la, _ = logs
    leader = Partition("t", 0, 1, la)
    leader.apply_registration(_reg(1, 0, isr=(1,)), 1, 0, LAG_MS)
    _append(leader, 3)
    # A diverged follower (it has more than the leader) is neither tracked nor added.
    assert leader.update_follower_fetch_state(2, 9, 10) == (False, None)
    assert leader.leader_state is not None
    assert leader.leader_state.followers[2].log_end_offset == -1
    _, proposal = leader.update_follower_fetch_state(2, 3, 20)
    assert proposal is not None and proposal.new_isr == (1, 2)


def test_a_new_leader_names_no_offsets_until_its_hw_reaches_its_epoch_start(logs) -> None:
    """KIP-207: broker 2 takes over with 5 records its HW does not cover yet (it copied them
    but had not heard the HW move). Until broker 1, now its follower, fetches from it, it may
    not answer the latest offset (a client may already have seen 5 from broker 1)."""
    la, lb = logs
    old, new = Partition("t", 0, 1, la), Partition("t", 0, 2, lb)
    old.apply_registration(_reg(1, 0), 1, 0, LAG_MS)
    new.apply_registration(_reg(1, 0), 1, 0, LAG_MS)
    _append(old, 5)
    _replicate(old, new, 10)  # broker 2 holds 5 records, HW 0
    old.update_follower_fetch_state(2, 5, 15)  # the old leader's HW moves to 5
    assert (old.high_watermark, new.high_watermark, lb.log_end_offset) == (5, 0, 5)
    old.check_offsets_available()  # a follower's HW lag is nobody's business
    new.apply_registration(_reg(2, 1), 1, 30, LAG_MS)
    old.apply_registration(_reg(2, 1), 1, 30, LAG_MS)
    assert (new.leader_epoch_start_offset, new.high_watermark) == (5, 0)
    with pytest.raises(OffsetNotAvailableError):
        new.check_offsets_available()
    _replicate(new, old, 40)  # broker 1 reports its log end (5): the HW reaches the start
    assert new.high_watermark == 5
    new.check_offsets_available()
    assert old.leader_epoch_start_offset == -1  # a follower names no epoch start
