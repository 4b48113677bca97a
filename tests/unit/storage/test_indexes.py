"""OffsetIndex and TimeIndex: preallocation, lookup, truncation, trimming, sanity checks."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from data_plane.storage.offset_index import InvalidIndexError, OffsetIndex
from data_plane.storage.time_index import TimeIndex


def test_offset_index_preallocates_looks_up_and_trims(tmp_path) -> None:
    path = str(tmp_path / "00000000000000000100.index")
    idx = OffsetIndex(path, 100, 8 * 50, writable=True)
    assert os.path.getsize(path) == 400
    assert idx.lookup(150) == (100, 0)
    for i in range(1, 11):
        idx.append(100 + i * 10, i * 1000)
    assert idx.lookup(99) == (100, 0)
    assert idx.lookup(110) == (110, 1000)
    assert idx.lookup(119) == (110, 1000)
    assert idx.lookup(10_000) == (200, 10_000)
    with pytest.raises(InvalidIndexError):
        idx.append(200, 20_000)  # not after the last entry
    idx.truncate_to(150)
    assert idx.entries == 4 and idx.lookup(10_000) == (140, 4000)
    idx.close()
    assert os.path.getsize(path) == 4 * 8
    again = OffsetIndex(path, 100, 8 * 50, writable=False)
    assert again.entries == 4 and again.lookup(145) == (140, 4000)
    again.sanity_check(log_size_bytes=5000)
    with pytest.raises(InvalidIndexError, match="beyond its log"):
        again.sanity_check(log_size_bytes=4000)
    again.close()


def test_untrimmed_index_after_a_crash_fails_its_sanity_check(tmp_path) -> None:
    path = str(tmp_path / "00000000000000000000.index")
    idx = OffsetIndex(path, 0, 8 * 50, writable=True)
    idx.append(5, 100)
    idx.flush()
    idx.close_handler()  # a crash: the file stays preallocated with zero entries after ours
    reopened = OffsetIndex(path, 0, 8 * 50, writable=False)
    assert reopened.entries == 50
    with pytest.raises(InvalidIndexError, match="not sorted"):
        reopened.sanity_check(log_size_bytes=10_000)
    reopened.close_handler()


def test_full_index_and_misaligned_file(tmp_path) -> None:
    idx = OffsetIndex(str(tmp_path / "a.index"), 0, 8 * 3, writable=True)
    for i in range(3):
        idx.append(i, i * 10 + 1)
    assert idx.is_full
    with pytest.raises(ValueError, match="full"):
        idx.append(10, 1000)
    idx.close()
    path = tmp_path / "b.index"
    path.write_bytes(b"\0" * 13)
    bad = OffsetIndex(str(path), 0, 800, writable=False)
    with pytest.raises(InvalidIndexError, match="whole number"):
        bad.sanity_check(100)
    bad.close_handler()


def test_time_index_keeps_only_growing_timestamps(tmp_path) -> None:
    path = str(tmp_path / "00000000000000000000.timeindex")
    idx = TimeIndex(path, 0, 12 * 10, writable=True)
    assert idx.last_entry() == (-1, 0)
    assert not idx.maybe_append(-1, 0)  # batches without a timestamp make no entry
    assert idx.maybe_append(1000, 5)
    assert not idx.maybe_append(900, 8)
    assert idx.maybe_append(2000, 9)
    assert idx.maybe_append(3000, 20)
    assert idx.lookup(999) == (-1, 0)
    assert idx.lookup(2500) == (2000, 9)
    assert idx.lookup(5000) == (3000, 20)
    idx.truncate_to(9)
    assert idx.last_entry() == (1000, 5)
    for i in range(8):
        idx.maybe_append(4000 + i, 30 + i)
    assert idx.is_full  # one slot stays free for the roll entry
    assert idx.maybe_append(9999, 99, skip_full_check=True)
    idx.close()
    again = TimeIndex(path, 0, 120, writable=False)
    assert again.last_entry() == (9999, 99)
    again.sanity_check(next_offset=100)
    with pytest.raises(InvalidIndexError, match="beyond its log"):
        again.sanity_check(next_offset=99)
    again.close()


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(1, 50), min_size=0, max_size=40),
    st.lists(st.integers(0, 3000), min_size=1, max_size=20),
)
def test_offset_index_lookup_matches_a_linear_scan(tmp_path_factory, gaps, targets) -> None:
    """lookup = the last entry at or below the target (base offset, 0 when none), for targets
    before, inside and past the entries (the log-end fast path)."""
    path = str(tmp_path_factory.mktemp("idx") / "00000000000000000100.index")
    idx = OffsetIndex(path, 100, 8 * 64, writable=True)
    entries: list[tuple[int, int]] = []
    offset, position = 100, 0
    for gap in gaps:
        offset += gap
        position += gap * 10
        idx.append(offset, position)
        entries.append((offset, position))
    for target in targets:
        below = [e for e in entries if e[0] <= target]
        assert idx.lookup(target) == (below[-1] if below else (100, 0))
    idx.close()
