"""Retention: which of a log's oldest segments may be deleted (Kafka's deletableSegments).

A pure decision over segment metadata; :meth:`Log.delete_old_segments` acts on it. Rules, each
deleting a *prefix* of the segments (the oldest first) and only whole segments:

- ``retention.ms``: a segment goes when its largest timestamp is more than ``retention.ms``
  old (-1 = keep forever); stops at the first younger segment.
- ``retention.bytes``: while the log minus the oldest segment would still be at least
  ``retention.bytes`` (-1 = no limit), that segment goes, so a segment goes only when all of
  it lies beyond the limit.
- log start offset (DeleteRecords, follower catch-up): a segment goes when the next segment
  starts at or below the log start offset, i.e. when every offset in it is below it.

Time and size retention apply only to ``cleanup.policy=delete`` and only to segments wholly
below the high watermark (never uncommitted data). The active (last) segment is never deleted.
Thread-safety: pure functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

RETENTION_TIME = "retention.ms"
RETENTION_SIZE = "retention.bytes"
LOG_START_OFFSET = "log start offset"


class SegmentMeta(Protocol):
    @property
    def base_offset(self) -> int: ...

    @property
    def size_in_bytes(self) -> int: ...

    @property
    def largest_timestamp(self) -> int: ...


@dataclass(frozen=True, slots=True)
class RetentionDecision:
    """Delete ``segments[:count]``; ``reason`` names the rule that reached furthest."""

    count: int
    reason: str


def deletable_segments(
    segments: Sequence[SegmentMeta],
    *,
    now_ms: int,
    retention_ms: int,
    retention_bytes: int,
    log_start_offset: int,
    high_watermark: int,
    delete_policy: bool,
) -> RetentionDecision:
    """How many of the oldest ``segments`` (the last one being the active segment) to delete."""
    if len(segments) < 2:
        return RetentionDecision(0, "")
    best = RetentionDecision(0, "")
    n_closed = len(segments) - 1

    def next_base(i: int) -> int:
        return segments[i + 1].base_offset

    count = 0
    while count < n_closed and next_base(count) <= log_start_offset:
        count += 1
    if count > best.count:
        best = RetentionDecision(count, LOG_START_OFFSET)
    if not delete_policy:
        return best

    # Only whole segments already below the high watermark are candidates for time/size.
    committed = 0
    while committed < n_closed and next_base(committed) <= high_watermark:
        committed += 1

    if retention_ms >= 0:
        count = 0
        while count < committed and now_ms - segments[count].largest_timestamp > retention_ms:
            count += 1
        if count > best.count:
            best = RetentionDecision(count, RETENTION_TIME)

    if retention_bytes >= 0:
        excess = sum(s.size_in_bytes for s in segments) - retention_bytes
        count = 0
        while count < committed and excess - segments[count].size_in_bytes >= 0:
            excess -= segments[count].size_in_bytes
            count += 1
        if count > best.count:
            best = RetentionDecision(count, RETENTION_SIZE)
    return best
