"""ProducerStateManager and its hooks in Log: scripted producer sequences on real logs."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from common.log_config import LogConfig
from data_plane.storage.log import Log
from data_plane.storage.producer_state import (
    NUM_BATCHES_TO_RETAIN,
    InvalidProducerEpochError,
    OutOfOrderSequenceError,
    ProducerStateManager,
    UnknownProducerIdError,
    in_sequence,
)
from data_plane.storage.record_codec import Record, build_batch

PID = 4242
NOW_MS = 1_700_000_000_000
# Small segments so a handful of batches roll (and snapshot) several times.
SMALL = LogConfig(segment_bytes=1024, index_interval_bytes=128)


def pbatch(
    seq: int,
    n: int = 2,
    *,
    pid: int = PID,
    epoch: int = 0,
    ts: int = NOW_MS,
    value_bytes: int = 30,
) -> bytearray:
    records = [
        Record(b"k", (b"%d-%d-%d" % (pid, seq, i)).ljust(value_bytes, b"x"), ts + i)
        for i in range(n)
    ]
    return build_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def plain_batch(n: int = 3) -> bytearray:
    return build_batch([Record(b"k", b"v%d" % i, NOW_MS) for i in range(n)])


@pytest.fixture
def make_log(tmp_path) -> Iterator:
    opened: list[Log] = []

    def make(config: LogConfig = SMALL, **kwargs) -> Log:
        log = Log(
            os.path.join(tmp_path, "t-0"),
            config,
            topic="t",
            partition=0,
            clock_ms=lambda: NOW_MS,
            **kwargs,
        )
        opened.append(log)
        return log

    yield make
    for log in opened:
        log.close()


def state_of(log: Log) -> dict[int, tuple[int, list[tuple[int, int, int, int]]]]:
    return {
        pid: (
            e.producer_epoch,
            [(b.first_seq, b.last_seq, b.first_offset, b.last_offset) for b in e.batches],
        )
        for pid, e in log.producer_state.producers.items()
    }


def test_in_order_batches_are_appended_and_tracked(make_log) -> None:
    log = make_log()
    offsets = [log.append(pbatch(seq), 0).first_offset for seq in range(0, 8, 2)]
    assert offsets == [0, 2, 4, 6]
    entry = log.producer_state.last_entry(PID)
    assert entry is not None and entry.producer_epoch == 0
    assert [(b.first_seq, b.last_seq) for b in entry.batches] == [(0, 1), (2, 3), (4, 5), (6, 7)]


@pytest.mark.parametrize("back", range(1, NUM_BATCHES_TO_RETAIN + 1))
def test_duplicate_of_each_of_last_five_batches_returns_original_offsets(make_log, back) -> None:
    log = make_log(LogConfig())
    firsts = []
    for seq in range(0, 14, 2):  # 7 batches: the last 5 are retained
        log.append(plain_batch(), 0)  # interleaved non-idempotent data shifts offsets
        firsts.append(log.append(pbatch(seq), 0).first_offset)
    leo = log.log_end_offset
    seq = 14 - 2 * back
    info = log.append(pbatch(seq), 0)
    assert info.duplicate
    assert (info.first_offset, info.last_offset) == (firsts[-back], firsts[-back] + 1)
    assert log.log_end_offset == leo  # nothing written


def test_retry_older_than_the_last_five_is_out_of_order(make_log) -> None:
    log = make_log(LogConfig())
    for seq in range(0, 12, 2):  # 6 batches: seq 0-1 has been forgotten
        log.append(pbatch(seq), 0)
    with pytest.raises(OutOfOrderSequenceError) as e:
        log.append(pbatch(0), 0)
    assert e.value.error_code == 45


def test_sequence_gap_is_out_of_order_and_appends_nothing(make_log) -> None:
    log = make_log()
    log.append(pbatch(0), 0)
    before = state_of(log)
    with pytest.raises(OutOfOrderSequenceError):
        log.append(pbatch(3), 0)  # expected 2
    assert log.log_end_offset == 2
    assert state_of(log) == before


def test_epoch_bump_must_restart_at_zero(make_log) -> None:
    log = make_log()
    log.append(pbatch(0), 0)
    log.append(pbatch(2), 0)
    with pytest.raises(OutOfOrderSequenceError):
        log.append(pbatch(4, epoch=1), 0)
    info = log.append(pbatch(0, epoch=1), 0)
    assert not info.duplicate and info.first_offset == 4
    entry = log.producer_state.last_entry(PID)
    assert entry is not None and entry.producer_epoch == 1
    assert [(b.first_seq, b.last_seq) for b in entry.batches] == [(0, 1)]
    # The old epoch's batches are no longer duplicates but fenced.
    with pytest.raises(InvalidProducerEpochError) as e:
        log.append(pbatch(2, epoch=0), 0)
    assert e.value.error_code == 47


def test_unknown_producer_with_nonzero_sequence(make_log) -> None:
    log = make_log()
    with pytest.raises(UnknownProducerIdError) as e:
        log.append(pbatch(7), 0)
    assert e.value.error_code == 59
    assert log.append(pbatch(0), 0).first_offset == 0


def test_several_producers_and_batches_in_one_payload(make_log) -> None:
    log = make_log(LogConfig())
    payload = pbatch(0, pid=1) + pbatch(0, pid=2) + pbatch(2, pid=1)
    info = log.append(payload, 0)
    assert (info.first_offset, info.last_offset) == (0, 5)
    assert state_of(log) == {1: (0, [(0, 1, 0, 1), (2, 3, 4, 5)]), 2: (0, [(0, 1, 2, 3)])}
    # A payload whose second batch breaks the chain appends none of it.
    with pytest.raises(OutOfOrderSequenceError):
        log.append(pbatch(4, pid=1) + pbatch(9, pid=1), 0)
    assert log.log_end_offset == 6


def test_sequence_wraps_at_int32_max(tmp_path) -> None:
    assert in_sequence(2**31 - 1, 0)
    assert not in_sequence(2**31 - 1, 1)
    assert in_sequence(5, 6) and not in_sequence(5, 5)
    # A follower learns a batch whose sequences wrap (2**31-1, 0, 1); as leader it then
    # expects 2.
    follower_data = pbatch(2**31 - 1, n=3)
    follower = Log(
        os.path.join(tmp_path, "w-0"),
        LogConfig(),
        topic="w",
        partition=0,
        clock_ms=lambda: NOW_MS,
    )
    try:
        follower.append_as_follower(follower_data)
        entry = follower.producer_state.last_entry(PID)
        assert entry is not None and entry.last_seq == 1
        with pytest.raises(OutOfOrderSequenceError):
            follower.append(pbatch(0), 1)
        assert follower.append(pbatch(2), 1).first_offset == 3
    finally:
        follower.close()


def test_follower_appends_unchecked_and_answer_duplicates_after_failover(make_log, tmp_path):
    leader = make_log()
    for seq in range(0, 10, 2):
        leader.append(pbatch(seq), 3)
    data = leader.read(0, 1 << 20).read_bytes()
    follower = Log(
        os.path.join(tmp_path, "f-0"), SMALL, topic="f", partition=0, clock_ms=lambda: NOW_MS
    )
    try:
        follower.append_as_follower(data)
        assert state_of(follower) == state_of(leader)
        # The follower becomes leader: a retry of the last batch gets its original offset.
        info = follower.append(pbatch(8), 4)
        assert info.duplicate and info.first_offset == 8
        assert follower.append(pbatch(10), 4).first_offset == 10
    finally:
        follower.close()


def test_snapshot_at_roll_and_rebuild_equal_live_state(make_log, tmp_path) -> None:
    log = make_log()
    for seq in range(0, 40, 2):
        log.append(pbatch(seq, pid=1), 0)
        log.append(pbatch(seq, pid=2, epoch=3), 0)
    assert len(log.segments()) > 3
    snaps = log.producer_state.snapshot_offsets()
    assert snaps and snaps == [s.base_offset for s in log.segments()[1:]]
    live = state_of(log)
    # Rebuilt from the newest snapshot plus a replay of the active segment.
    fresh = ProducerStateManager(log.dir_path)
    start = fresh.load(log.log_start_offset, log.log_end_offset)
    assert start == snaps[-1]
    seg = log.active_segment
    fresh.replay(seg.log.batches_from(0))
    assert {
        pid: (
            e.producer_epoch,
            [(b.first_seq, b.last_seq, b.first_offset, b.last_offset) for b in e.batches],
        )
        for pid, e in fresh.producers.items()
    } == live
    # Crash (no close, no final snapshot): a reopened log rebuilds the same state.
    log2 = Log(log.dir_path, SMALL, topic="t", partition=0, clock_ms=lambda: NOW_MS)
    try:
        assert state_of(log2) == live
    finally:
        log2.close()


def test_torn_snapshot_is_ignored_and_state_rebuilt_from_log(make_log) -> None:
    log = make_log()
    for seq in range(0, 30, 2):
        log.append(pbatch(seq), 0)
    live = state_of(log)
    snaps = log.producer_state.snapshot_offsets()
    path = log.producer_state.snapshot_path(snaps[-1])
    with open(path, "r+b") as f:
        f.seek(8)
        f.write(b"\xff\xff")
    reopened = Log(log.dir_path, SMALL, topic="t", partition=0, clock_ms=lambda: NOW_MS)
    try:
        assert state_of(reopened) == live
        assert not os.path.exists(path)
    finally:
        reopened.close()


def test_clean_close_writes_snapshot_at_log_end(make_log, tmp_path) -> None:
    log = make_log(LogConfig())
    log.append(pbatch(0), 0)
    live = state_of(log)
    log.close()
    assert log.producer_state.snapshot_offsets() == [2]
    reopened = Log(
        log.dir_path,
        LogConfig(),
        topic="t",
        partition=0,
        clock_ms=lambda: NOW_MS,
        clean_shutdown=True,
    )
    try:
        assert state_of(reopened) == live
        assert reopened.append(pbatch(0), 0).duplicate
    finally:
        reopened.close()


def test_log_without_idempotent_producers_writes_no_snapshot(make_log) -> None:
    log = make_log()
    for _ in range(30):
        log.append(plain_batch(), 0)
    log.close()
    assert len(log.segments()) > 1
    assert not [n for n in os.listdir(log.dir_path) if n.endswith(".snapshot")]


def test_truncation_removes_state_beyond_the_truncation_point(make_log) -> None:
    log = make_log()
    for seq in range(0, 40, 2):
        log.append(pbatch(seq), 0)
    assert len(log.segments()) > 2
    log.truncate_to(10)  # keeps seq 0..9 (offsets 0..9)
    assert log.log_end_offset == 10
    assert all(off <= 10 for off in log.producer_state.snapshot_offsets())
    entry = log.producer_state.last_entry(PID)
    assert entry is not None and entry.last_seq == 9
    assert log.append(pbatch(10), 0).first_offset == 10  # in sequence again
    log.truncate_to(0)
    assert log.producer_state.last_entry(PID) is None


def test_truncate_fully_forgets_everything(make_log) -> None:
    log = make_log()
    for seq in range(0, 30, 2):
        log.append(pbatch(seq), 0)
    log.truncate_fully_and_start_at(100)
    assert log.producer_state.producers == {}
    assert log.producer_state.snapshot_offsets() == []


def test_expiration_forgets_silent_producers(make_log) -> None:
    log = make_log(LogConfig())
    log.append(pbatch(0, pid=1, ts=NOW_MS - 10_000), 0)
    log.append(pbatch(0, pid=2, ts=NOW_MS), 0)
    assert log.remove_expired_producers(NOW_MS, 5_000) == 1
    assert set(log.producer_state.producers) == {2}
    with pytest.raises(UnknownProducerIdError):
        log.append(pbatch(2, pid=1), 0)


def test_log_start_offset_past_a_producer_forgets_it(make_log) -> None:
    log = make_log(LogConfig())
    log.append(pbatch(0, pid=1), 0)
    log.append(pbatch(0, pid=2), 0)
    log.update_high_watermark(log.log_end_offset)
    log.maybe_increment_log_start_offset(2)
    assert set(log.producer_state.producers) == {2}
