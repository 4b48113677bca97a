"""What the log cleaner may clean, and how much it would gain: pure decisions over segment
metadata (Kafka's LogCleanerManager.cleanableOffsets / LogToClean / groupSegmentsBySize).

Offsets of a compacted log::

    log start offset <= first dirty offset <= first uncleanable offset <= log end offset
    |---- clean ------|-------- dirty -------|------ not cleanable yet ------|

- first dirty offset: where the last cleaning ended (``cleaner-offset-checkpoint``), or the
  log start offset when there is no checkpoint or it lies outside the log.
- first uncleanable offset: the end of the last *closed* segment lying wholly below the high
  watermark (consumers must never see a cleaning of uncommitted data; the active segment is
  being written) and, with ``min.compaction.lag.ms``, below the first segment whose newest
  timestamp is younger than that lag. Always a segment boundary.
- dirty ratio = dirty bytes / (clean bytes + dirty bytes), both counted in whole segments; a
  log is cleaned when it reaches ``min.cleanable.dirty.ratio``, or at once when its first
  dirty segment holds a batch older than ``max.compaction.lag.ms``.

Thread-safety: pure functions over immutable inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from data_plane.storage.segment import MAX_RELATIVE_OFFSET


class SegmentInfo(Protocol):
    @property
    def base_offset(self) -> int: ...

    @property
    def largest_timestamp(self) -> int: ...


@dataclass(frozen=True, slots=True)
class CleanableRange:
    """The cleanable part of one log. ``segment_count`` closed segments (from the first)
    end at or below ``first_uncleanable_offset``; ``dirty_from`` indexes the first dirty
    one."""

    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    dirty_bytes: int
    segment_count: int
    dirty_from: int
    # The first dirty segment holds a batch older than max.compaction.lag.ms.
    max_lag_exceeded: bool

    @property
    def dirty_ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0

    def should_clean(self, min_cleanable_dirty_ratio: float) -> bool:
        if self.dirty_bytes == 0:
            return False
        return self.max_lag_exceeded or self.dirty_ratio >= min_cleanable_dirty_ratio


def cleanable_range(
    segments: Sequence[SegmentInfo],
    sizes: Sequence[int],
    *,
    log_start_offset: int,
    log_end_offset: int,
    checkpoint_offset: int | None,
    high_watermark: int,
    now_ms: int,
    min_compaction_lag_ms: int,
    max_compaction_lag_ms: int,
    first_batch_timestamp: Callable[[int], int] | None = None,
) -> CleanableRange:
    """The cleanable range of a log whose segments are ``segments`` (the last one active)
    of ``sizes`` bytes. ``first_batch_timestamp(i)`` gives the maxTimestamp of segment i's
    first batch (one read; only asked for the first dirty segment, only when
    ``max.compaction.lag.ms`` is finite)."""
    first_dirty = checkpoint_offset if checkpoint_offset is not None else log_start_offset
    if first_dirty < log_start_offset or first_dirty > log_end_offset:
        first_dirty = log_start_offset
    bound = high_watermark
    n_closed = len(segments) - 1

    def end_of(i: int) -> int:
        return segments[i + 1].base_offset

    count = 0
    while count < n_closed and end_of(count) <= bound:
        seg = segments[count]
        if (
            min_compaction_lag_ms > 0
            and seg.base_offset >= first_dirty
            and now_ms - seg.largest_timestamp < min_compaction_lag_ms
        ):
            break
        count += 1
    first_base = segments[0].base_offset if segments else 0
    first_uncleanable = end_of(count - 1) if count else first_base
    first_dirty = min(max(first_dirty, first_base), first_uncleanable)
    dirty_from = count
    clean = dirty = 0
    for i in range(count):
        if segments[i].base_offset >= first_dirty:
            dirty_from = min(dirty_from, i)
            dirty += sizes[i]
        elif end_of(i) > log_start_offset:
            clean += sizes[i]
    lag_exceeded = False
    if (
        dirty
        and first_batch_timestamp is not None
        and max_compaction_lag_ms < (1 << 62)
        and now_ms - first_batch_timestamp(dirty_from) > max_compaction_lag_ms
    ):
        lag_exceeded = True
    return CleanableRange(
        first_dirty_offset=first_dirty,
        first_uncleanable_offset=first_uncleanable,
        clean_bytes=clean,
        dirty_bytes=dirty,
        segment_count=count,
        dirty_from=dirty_from,
        max_lag_exceeded=lag_exceeded,
    )


def group_segments_by_size(
    bases: Sequence[int],
    ends: Sequence[int],
    sizes: Sequence[int],
    *,
    max_size_bytes: int,
) -> list[list[int]]:
    """Split consecutive segments (base offsets ``bases``, end offsets ``ends``, sizes
    ``sizes``) into groups to be cleaned into one segment each: a group's sources add up to
    at most ``max_size_bytes`` (``segment.bytes``, so the cleaned segment fits whatever is
    removed) and span at most the relative offset range of one segment. A segment bigger
    than the limit forms a group alone. Returns lists of indexes."""
    groups: list[list[int]] = []
    i = 0
    while i < len(bases):
        group = [i]
        total = sizes[i]
        i += 1
        while (
            i < len(bases)
            and total + sizes[i] <= max_size_bytes
            and ends[i] - 1 - bases[group[0]] <= MAX_RELATIVE_OFFSET
        ):
            group.append(i)
            total += sizes[i]
            i += 1
        groups.append(group)
    return groups
