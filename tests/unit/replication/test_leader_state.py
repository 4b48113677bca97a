"""LeaderReplicationState driven by scripted fetches and ticks (injected time)."""

from __future__ import annotations

import pytest

from data_plane.replication.errors import (
    InvalidIsrError,
    IsrChangePendingError,
    UnknownReplicaError,
)
from data_plane.replication.leader_state import (
    UNKNOWN_OFFSET,
    IsrChangeKind,
    LeaderReplicationState,
)

LAG_MS = 1000


def state(isr=(1, 2, 3), start_offset=0, now_ms=0) -> LeaderReplicationState:
    return LeaderReplicationState(
        1,
        (1, 2, 3),
        isr,
        leader_epoch=5,
        partition_epoch=7,
        leader_epoch_start_offset=start_offset,
        now_ms=now_ms,
        replica_lag_time_max_ms=LAG_MS,
    )


def test_high_watermark_is_min_leo_over_isr_and_waits_for_every_member() -> None:
    s = state()
    assert s.high_watermark(100) == UNKNOWN_OFFSET  # nobody fetched in this epoch yet
    s.update_follower_fetch_state(2, 80, 100, now_ms=10)
    assert s.high_watermark(100) == UNKNOWN_OFFSET
    s.update_follower_fetch_state(3, 90, 100, now_ms=10)
    assert s.high_watermark(100) == 80
    s.update_follower_fetch_state(2, 100, 100, now_ms=20)
    assert s.high_watermark(100) == 90


def test_last_caught_up_time_follows_kafkas_rule() -> None:
    s = state()
    s.update_follower_fetch_state(2, 100, 100, now_ms=100)  # at the LEO: caught up now
    assert s.followers[2].last_caught_up_time_ms == 100
    # Behind the current LEO (150) but at the LEO of its previous fetch (100): it was caught
    # up at the previous fetch's time.
    s.update_follower_fetch_state(2, 100, 150, now_ms=300)
    assert s.followers[2].last_caught_up_time_ms == 100
    s.update_follower_fetch_state(2, 150, 200, now_ms=500)
    assert s.followers[2].last_caught_up_time_ms == 300
    s.update_follower_fetch_state(2, 160, 250, now_ms=700)  # below 200: no progress
    assert s.followers[2].last_caught_up_time_ms == 300


def test_shrink_drops_only_lagging_members_and_one_change_at_a_time() -> None:
    s = state(now_ms=0)
    s.update_follower_fetch_state(2, 100, 100, now_ms=500)
    assert s.maybe_shrink(100, now_ms=1000) is None  # both within the window (new leader)
    proposal = s.maybe_shrink(100, now_ms=1200)
    assert proposal is not None and proposal.kind is IsrChangeKind.SHRINK
    assert proposal.new_isr == (1, 2) and (proposal.leader_epoch, proposal.partition_epoch) == (
        5,
        7,
    )
    # While pending the leaving member still counts for the HW (maximal ISR).
    assert s.maximal_isr == (1, 2, 3)
    assert s.maybe_shrink(100, now_ms=5000) is None
    assert s.apply_committed((1, 2), 8)
    assert s.pending is None and s.isr == (1, 2) and s.high_watermark(100) == 100


def test_a_follower_at_the_leader_leo_is_never_dropped() -> None:
    s = state(isr=(1, 2))
    s.update_follower_fetch_state(2, 100, 100, now_ms=0)
    assert s.maybe_shrink(100, now_ms=60_000) is None


def test_expand_needs_hw_and_the_current_epoch_and_counts_while_pending() -> None:
    s = state(isr=(1, 2), start_offset=50)
    s.update_follower_fetch_state(2, 100, 100, now_ms=0)
    s.update_follower_fetch_state(3, 40, 100, now_ms=0)
    assert s.maybe_expand_isr(3, s.high_watermark(100)) is None  # below HW and epoch start
    s.update_follower_fetch_state(3, 99, 100, now_ms=1)
    assert s.maybe_expand_isr(3, s.high_watermark(100)) is None  # below HW (100)
    s.update_follower_fetch_state(3, 100, 100, now_ms=2)
    proposal = s.maybe_expand_isr(3, s.high_watermark(100))
    assert proposal is not None and proposal.kind is IsrChangeKind.EXPAND
    assert proposal.new_isr == (1, 2, 3)
    assert s.maximal_isr == (1, 2, 3)
    s.update_follower_fetch_state(3, 100, 120, now_ms=3)
    s.update_follower_fetch_state(2, 120, 120, now_ms=3)
    assert s.high_watermark(120) == 100  # the pending member holds the HW back
    s.on_alter_partition_failed(proposal)
    assert s.pending is None and s.maximal_isr == (1, 2)


def test_illegal_inputs_raise_and_change_nothing() -> None:
    s = state()
    with pytest.raises(UnknownReplicaError):
        s.update_follower_fetch_state(9, 10, 100, now_ms=0)
    with pytest.raises(InvalidIsrError):
        s.apply_committed((2, 3), 8)  # leader missing
    assert s.isr == (1, 2, 3) and s.partition_epoch == 7
    with pytest.raises(InvalidIsrError):
        state(isr=(1, 1))
    s.maybe_shrink(0, now_ms=10_000)
    with pytest.raises(IsrChangePendingError):
        s._propose(IsrChangeKind.SHRINK, (1,))


def test_older_partition_epoch_is_ignored() -> None:
    s = state()
    assert not s.apply_committed((1, 2), 6)
    assert s.isr == (1, 2, 3)


def test_refreshing_a_caught_up_follower_moves_only_its_times() -> None:
    s = state(isr=(1, 2))
    assert not s.refresh_caught_up_follower(2, 100, now_ms=5)  # its LEO is not known yet
    s.update_follower_fetch_state(2, 100, 100, now_ms=10)
    assert s.refresh_caught_up_follower(2, 100, now_ms=50)
    f = s.followers[2]
    assert (f.log_end_offset, f.last_caught_up_time_ms, f.last_fetch_time_ms) == (100, 50, 50)
    assert f.last_fetch_leader_log_end_offset == 100
    # The same as the full path would have recorded for that fetch.
    full = state(isr=(1, 2))
    full.update_follower_fetch_state(2, 100, 100, now_ms=10)
    full.update_follower_fetch_state(2, 100, 100, now_ms=50)
    assert full.followers[2] == f
    assert not s.refresh_caught_up_follower(2, 120, now_ms=60)  # the leader's LEO moved
    assert f.last_fetch_time_ms == 50
    s.update_follower_fetch_state(3, 100, 100, now_ms=10)
    assert not s.refresh_caught_up_follower(3, 100, now_ms=60)  # not in the ISR: may expand
    proposal = s.maybe_expand_isr(3, s.high_watermark(100))
    assert proposal is not None
    assert s.refresh_caught_up_follower(3, 100, now_ms=70)  # in the maximal ISR now
    assert not s.refresh_caught_up_follower(9, 100, now_ms=70)  # not a replica
