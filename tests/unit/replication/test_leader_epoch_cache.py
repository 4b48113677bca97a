"""LeaderEpochFileCache: Kafka's endOffsetFor answers, truncation, the checkpoint file."""

from __future__ import annotations

import pytest

from data_plane.storage.errors import CorruptCheckpointError
from data_plane.storage.leader_epoch_cache import EpochEndOffset, EpochEntry, LeaderEpochFileCache


def test_end_offset_for_follows_kafka(tmp_path) -> None:
    c = LeaderEpochFileCache(str(tmp_path / "leader-epoch-checkpoint"))
    assert c.end_offset_for(0, 10) == EpochEndOffset(-1, -1)
    c.assign(1, 10)
    c.assign(3, 50)
    c.assign(6, 80)
    assert not c.assign(5, 90)  # not newer: ignored
    assert c.end_offset_for(6, 100) == (6, 100)  # latest epoch: the LEO
    assert c.end_offset_for(4, 100) == (3, 80)  # floor epoch 3 ends where 6 starts
    assert c.end_offset_for(3, 100) == (3, 80)
    assert c.end_offset_for(0, 100) == (0, 10)  # older than all: requested, first start
    assert c.end_offset_for(7, 100) == (-1, -1)  # newer than all
    assert c.end_offset_for(-1, 100) == (-1, -1)


def test_checkpoint_file_round_trip_and_truncation(tmp_path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    c = LeaderEpochFileCache(str(path))
    c.assign(0, 0)
    c.assign(2, 100)
    c.assign(4, 200)
    assert path.read_text() == "0\n3\n0 0\n2 100\n4 200\n"
    c.truncate_from_end(150)
    assert LeaderEpochFileCache(str(path)).entries() == [EpochEntry(0, 0), EpochEntry(2, 100)]
    c.truncate_from_start(120)
    assert c.entries() == [EpochEntry(2, 120)]
    c.assign(5, 110)  # a new epoch below existing starts replaces them
    assert c.entries() == [EpochEntry(5, 110)]
    c.clear()
    assert LeaderEpochFileCache(str(path)).entries() == []


@pytest.mark.parametrize(
    "text", ["1\n0\n", "0\n2\n0 0\n", "0\n2\n3 10\n2 20\n", "0\n1\nx y\n", "garbage"]
)
def test_corrupt_files_are_named(tmp_path, text) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text(text)
    with pytest.raises(CorruptCheckpointError, match="leader-epoch-checkpoint"):
        LeaderEpochFileCache(str(path))


def test_a_truncation_without_write_leaves_the_file_stale_until_written(tmp_path) -> None:
    path = str(tmp_path / "leader-epoch-checkpoint")
    cache = LeaderEpochFileCache(path)
    cache.assign(1, 0)
    cache.assign(4, 50)
    cache.truncate_from_end(50, write=False)
    assert cache.entries() == [EpochEntry(1, 0)] and cache.stale
    # The file still names epoch 4: a load drops it again.
    assert LeaderEpochFileCache(path).entries() == [EpochEntry(1, 0), EpochEntry(4, 50)]
    assert cache.write_pending() and not cache.stale
    assert not cache.write_pending()
    assert LeaderEpochFileCache(path).entries() == [EpochEntry(1, 0)]
    # Any later write (here an assign) writes the whole, current list and clears staleness.
    cache.truncate_from_end(0, write=False)
    cache.assign(5, 0)
    assert not cache.stale
    assert LeaderEpochFileCache(path).entries() == [EpochEntry(5, 0)]
