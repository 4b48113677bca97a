"""Follower-side decisions (sans-IO): where to truncate before fetching from a new leader, and
the follower's high watermark.

Truncation (KIP-101/KIP-279, Kafka's AbstractFetcherThread.getOffsetTruncationState): the
follower asks the leader (OffsetForLeaderEpoch) for the end offset of the follower's latest
epoch; the leader answers with the largest epoch <= that one it knows and where it ended.

- the leader knows no such epoch (end offset UNDEFINED): truncate to the follower's high
  watermark (everything below it was committed, so the leader has it);
- the follower does not know the leader's epoch (no epoch <= it in its cache): truncate to
  min(leader end offset, LEO);
- the follower's largest epoch <= the leader's epoch is an *older* epoch: truncate to that
  epoch's end in the follower's log and ask again with the next older epoch (not complete);
- same epoch: truncate to min(leader end offset, follower's end of that epoch, LEO).

The follower's high watermark is min(leader's HW, its own LEO): it never exposes what it
does not have.
"""

from __future__ import annotations

from typing import NamedTuple

from data_plane.storage.leader_epoch_cache import (
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    EpochEndOffset,
)


class OffsetTruncationState(NamedTuple):
    offset: int
    truncation_completed: bool


def truncation_offset(
    leader_answer: EpochEndOffset,
    follower_end_for_leader_epoch: EpochEndOffset,
    log_end_offset: int,
    high_watermark: int,
) -> OffsetTruncationState:
    """Where to truncate, given the leader's OffsetForLeaderEpoch answer and the follower's own
    ``end_offset_for(leader_answer.epoch)``."""
    if leader_answer.end_offset == UNDEFINED_EPOCH_OFFSET:
        return OffsetTruncationState(min(high_watermark, log_end_offset), True)
    if leader_answer.epoch == UNDEFINED_EPOCH:
        return OffsetTruncationState(min(leader_answer.end_offset, log_end_offset), True)
    follower = follower_end_for_leader_epoch
    if follower.epoch == UNDEFINED_EPOCH or follower.end_offset == UNDEFINED_EPOCH_OFFSET:
        return OffsetTruncationState(min(leader_answer.end_offset, log_end_offset), True)
    if follower.epoch != leader_answer.epoch:
        return OffsetTruncationState(min(follower.end_offset, log_end_offset), False)
    return OffsetTruncationState(
        min(leader_answer.end_offset, follower.end_offset, log_end_offset), True
    )


def follower_high_watermark(leader_high_watermark: int, log_end_offset: int) -> int:
    return min(leader_high_watermark, log_end_offset)
