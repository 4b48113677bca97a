"""Follower truncation decisions (KIP-101/279) and the follower high watermark."""

from __future__ import annotations

from data_plane.replication.follower import (
    OffsetTruncationState,
    follower_high_watermark,
    truncation_offset,
)
from data_plane.storage.leader_epoch_cache import EpochEndOffset

UNDEF = EpochEndOffset(-1, -1)


def test_leader_does_not_know_the_epoch_truncates_to_hw() -> None:
    assert truncation_offset(UNDEF, EpochEndOffset(3, 150), 150, 100) == (100, True)


def test_same_epoch_truncates_to_the_smaller_end() -> None:
    got = truncation_offset(EpochEndOffset(3, 120), EpochEndOffset(3, 150), 150, 100)
    assert got == OffsetTruncationState(120, True)
    got = truncation_offset(EpochEndOffset(3, 200), EpochEndOffset(3, 150), 150, 100)
    assert got == OffsetTruncationState(150, True)


def test_follower_has_an_older_epoch_only_truncates_and_asks_again() -> None:
    got = truncation_offset(EpochEndOffset(4, 130), EpochEndOffset(2, 110), 150, 100)
    assert got == OffsetTruncationState(110, False)


def test_follower_knows_no_epoch_up_to_the_leaders() -> None:
    assert truncation_offset(EpochEndOffset(1, 90), UNDEF, 150, 100) == (90, True)


def test_follower_high_watermark_never_passes_its_own_log_end() -> None:
    assert follower_high_watermark(500, 300) == 300
    assert follower_high_watermark(200, 300) == 200
