"""Pure parts of the log cleaner: the cleanable range and dirty ratio, grouping, the offset
map's bound, the I/O throttler."""

from __future__ import annotations

import math
import tracemalloc
from dataclasses import dataclass

import pytest

from data_plane.storage.compaction.cleanable import cleanable_range, group_segments_by_size
from data_plane.storage.compaction.offset_map import OffsetMap, OffsetMapFullError
from data_plane.storage.compaction.throttler import Throttler
from data_plane.storage.segment import MAX_RELATIVE_OFFSET


@dataclass
class Seg:
    base_offset: int
    largest_timestamp: int = 0


def segs(*bases: int) -> list[Seg]:
    return [Seg(b) for b in bases]


def plan(segments, sizes, **kw):
    args = dict(
        log_start_offset=0,
        log_end_offset=segments[-1].base_offset + 10,
        checkpoint_offset=None,
        high_watermark=segments[-1].base_offset + 10,
        now_ms=1_000_000,
        min_compaction_lag_ms=0,
        max_compaction_lag_ms=(1 << 63) - 1,
    )
    args.update(kw)
    return cleanable_range(segments, sizes, **args)


def test_dirty_ratio_counts_closed_segments_from_the_checkpoint() -> None:
    s = segs(0, 100, 200, 300, 400)  # 400 is the active segment
    sizes = [1000, 1000, 3000, 1000, 500]
    p = plan(s, sizes, checkpoint_offset=200)
    assert (p.first_dirty_offset, p.first_uncleanable_offset) == (200, 400)
    assert (p.clean_bytes, p.dirty_bytes, p.dirty_from, p.segment_count) == (2000, 4000, 2, 4)
    assert p.dirty_ratio == pytest.approx(4000 / 6000)
    assert p.should_clean(0.5) and not p.should_clean(0.7)
    # No checkpoint: everything closed is dirty.
    assert plan(s, sizes).dirty_ratio == 1.0
    # A checkpoint outside the log (truncated, or below the log start) counts from the start.
    assert plan(s, sizes, checkpoint_offset=10_000).first_dirty_offset == 0
    assert plan(s, sizes, checkpoint_offset=50, log_start_offset=100).first_dirty_offset == 100


def test_the_high_watermark_and_min_compaction_lag_bound_the_cleanable_range() -> None:
    s = segs(0, 100, 200, 300)
    sizes = [10, 10, 10, 10]
    # HW inside segment 100: only segment 0 lies wholly below it.
    p = plan(s, sizes, high_watermark=150)
    assert (p.first_uncleanable_offset, p.dirty_bytes) == (100, 10)
    assert plan(s, sizes, high_watermark=0).dirty_bytes == 0
    assert not plan(s, sizes, high_watermark=0).should_clean(0.0)
    # min.compaction.lag.ms: segment 100's newest record is too young.
    young = [Seg(0, 1_000), Seg(100, 999_500), Seg(200, 1_000), Seg(300)]
    p = plan(young, sizes, min_compaction_lag_ms=1000)
    assert p.first_uncleanable_offset == 100


def test_max_compaction_lag_forces_a_cleaning_below_the_dirty_ratio() -> None:
    s = segs(0, 100, 200)
    sizes = [10_000, 10, 10]
    kw = dict(checkpoint_offset=100, first_batch_timestamp=lambda i: 1_000)
    lazy = plan(s, sizes, max_compaction_lag_ms=10_000_000, **kw)
    assert not lazy.should_clean(0.5) and not lazy.max_lag_exceeded
    due = plan(s, sizes, max_compaction_lag_ms=5_000, **kw)
    assert due.max_lag_exceeded and due.should_clean(0.5)


def test_groups_stay_within_segment_bytes_and_one_offset_range() -> None:
    bases = [0, 10, 20, 30, 40]
    ends = [10, 20, 30, 40, 50]
    assert group_segments_by_size(bases, ends, [400, 400, 300, 900, 50], max_size_bytes=1000) == [
        [0, 1],
        [2],
        [3, 4],
    ]
    # A segment bigger than the limit is a group of its own.
    assert group_segments_by_size([0, 10], [10, 20], [5000, 1], max_size_bytes=1000) == [[0], [1]]
    far = [0, MAX_RELATIVE_OFFSET]
    assert group_segments_by_size(far, [1, MAX_RELATIVE_OFFSET + 5], [1, 1], max_size_bytes=99) == [
        [0],
        [1],
    ]


def test_offset_map_keeps_the_latest_offset_and_its_memory_bound() -> None:
    m = OffsetMap(160 * 1000, load_factor=0.5)
    assert m.max_entries == 500
    for i in range(500):
        m.put(b"key-%d" % i, i)
    m.put(b"key-3", 900)  # an existing key always fits
    assert (m.get(b"key-3"), m.get(b"key-4"), m.get(b"nope")) == (900, 4, -1)
    assert m.latest_offset == 900 and m.is_full
    with pytest.raises(OffsetMapFullError):
        m.put(b"one-more", 901)
    assert m.get(b"one-more") == -1 and len(m) == 500


def test_a_full_offset_map_stays_within_its_memory_budget() -> None:
    budget = 8 * 1024 * 1024
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        m = OffsetMap(budget, load_factor=1.0)
        for i in range(m.max_entries):
            m.put(b"some-longer-key-%d" % i, 1_000_000_000 + i)
        used, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert m.is_full and m.max_entries > 40_000
    assert used - before <= budget


def test_throttler_sleeps_to_the_configured_rate() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    t = Throttler(1000.0, check_interval_ms=100, clock_s=lambda: now[0], sleep_s=sleep)
    assert t.maybe_throttle(500) == 0.0  # within the check interval: no decision yet
    now[0] += 0.1
    # 500 + 500 bytes in 0.1 s at 1000 B/s should have taken 1 s: sleep 0.9 s.
    assert t.maybe_throttle(500) == pytest.approx(0.9)
    # A burst owing more than MAX_SLEEP_S (1 s) sleeps at most that at a time and carries
    # the rest into the next periods: 6000 bytes at 1000 B/s take 6 s in all.
    now[0] += 0.1
    assert t.maybe_throttle(5000) == pytest.approx(1.0)
    for _ in range(20):
        now[0] += 0.15  # past the check interval, so a 0 means the debt is paid
        if t.maybe_throttle(0) == 0.0:
            break
    assert max(slept) <= 1.0
    assert now[0] == pytest.approx(6.0, abs=0.2)
    assert Throttler(math.inf).maybe_throttle(10**12) == 0.0
