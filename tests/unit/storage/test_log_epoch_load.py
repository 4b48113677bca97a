"""A log's load drops the leader epochs past its end without rewriting the checkpoint; the
first append writes it before the log grows, so a stale epoch never names new records."""

from __future__ import annotations

import os

from data_plane.storage.leader_epoch_cache import (
    LEADER_EPOCH_CHECKPOINT,
    EpochEntry,
    LeaderEpochFileCache,
)

from .conftest import batch


def test_a_load_leaves_the_file_stale_and_the_first_append_writes_it(open_log, tmp_path) -> None:
    log = open_log()
    log.append(batch(40), leader_epoch=1)
    log.leader_epoch_cache.assign(4, 40)  # became leader of epoch 4 at 40, wrote nothing
    log.close()
    path = os.path.join(tmp_path, "t-0", LEADER_EPOCH_CHECKPOINT)
    written_at = os.stat(path).st_mtime_ns

    again = open_log()
    # Epoch 4 started at the log end: dropped in memory, the file not rewritten.
    assert again.leader_epoch_cache.entries() == [EpochEntry(1, 0)]
    assert again.leader_epoch_cache.stale
    assert os.stat(path).st_mtime_ns == written_at
    again.close()

    # The next load drops it again. Records of epoch 1 appended now (a follower copying a new
    # leader's older records) add no epoch, so only the write before the append keeps the
    # file from naming them epoch 4 at the load after.
    third = open_log()
    third.append(batch(20), leader_epoch=1)
    assert not third.leader_epoch_cache.stale
    third.close()
    assert LeaderEpochFileCache(path).entries() == [EpochEntry(1, 0)]
    assert open_log().leader_epoch_cache.entries() == [EpochEntry(1, 0)]
