"""One append path keyed by AppendOrigin: what a leader appended (CLIENT) and a follower
copied (REPLICATION) is byte for byte the same log, with the same epochs and producers."""

from __future__ import annotations

import pytest

from common.errors import InvalidRecordError
from common.log_config import LogConfig
from data_plane.storage import Log
from data_plane.storage.errors import InvalidAppendOffsetError
from data_plane.storage.producer_state import AppendOrigin
from data_plane.storage.record_codec import Record, build_batch


def open_log(path) -> Log:
    return Log(str(path), LogConfig(segment_bytes=4096), topic="t", partition=0)


def idempotent(seq: int, n: int = 3) -> bytearray:
    records = [Record(b"k%d" % i, b"v" * 50, 1000 + i) for i in range(n)]
    return build_batch(records, producer_id=7, producer_epoch=0, base_sequence=seq)


def test_a_follower_copy_of_a_leader_log_is_identical(tmp_path) -> None:
    leader, follower = open_log(tmp_path / "l"), open_log(tmp_path / "f")
    try:
        seq = 0
        for epoch in (0, 0, 1, 1, 3):
            leader.append(idempotent(seq), epoch, origin=AppendOrigin.CLIENT)
            seq += 3
        # Enough to roll segments on both sides; the follower fetches in two pieces.
        middle = leader.offset_metadata(9)
        first = leader.read(0, 1 << 20, max_offset=9).read_bytes()
        follower.append(first, origin=AppendOrigin.REPLICATION)
        rest = leader.read(9, 1 << 20).read_bytes()
        follower.append_as_follower(rest)
        assert middle.message_offset == 9
        assert follower.log_end_offset == leader.log_end_offset == 15
        assert leader.read(0, 1 << 20).read_bytes() == follower.read(0, 1 << 20).read_bytes()
        assert follower.leader_epoch_cache.latest_epoch == 3
        assert list(follower.leader_epoch_cache.entries()) == list(
            leader.leader_epoch_cache.entries()
        )
        # The follower knows the producer as the leader does: a retry is a duplicate.
        assert follower.producer_state.producers.keys() == leader.producer_state.producers.keys()
        again = follower.append(idempotent(12), 3)
        assert again.duplicate and again.first_offset == 12
    finally:
        leader.close()
        follower.close()


def test_replication_refuses_offsets_below_the_log_end(tmp_path) -> None:
    leader, follower = open_log(tmp_path / "l"), open_log(tmp_path / "f")
    try:
        leader.append(idempotent(0), 0)
        data = leader.read(0, 1 << 20).read_bytes()
        follower.append(data, origin=AppendOrigin.REPLICATION)
        with pytest.raises(InvalidAppendOffsetError):
            follower.append(data, origin=AppendOrigin.REPLICATION)
        assert follower.log_end_offset == 3
    finally:
        leader.close()
        follower.close()


def test_a_follower_append_reports_what_the_leader_appended(tmp_path) -> None:
    leader, follower = open_log(tmp_path / "l"), open_log(tmp_path / "f")
    try:
        stamps = (5000, 9000, 7000)  # the largest timestamp is not in the last batch
        infos = [
            leader.append(build_batch([Record(b"k", b"v", ts), Record(b"k", b"w", ts - 1)]), 2)
            for ts in stamps
        ]
        data = leader.read(0, 1 << 20).read_bytes()
        info = follower.append_as_follower(data)
        assert (info.first_offset, info.last_offset) == (0, infos[-1].last_offset)
        assert info.max_timestamp == 9000
        assert info.offset_of_max_timestamp == infos[1].last_offset
        assert (info.record_count, info.batch_count, info.valid_bytes) == (6, 3, len(data))
        assert info.log_append_time_ms == -1 and not info.duplicate
        assert follower.leader_epoch_cache.latest_epoch == 2
    finally:
        leader.close()
        follower.close()


def test_a_follower_refuses_an_empty_payload(tmp_path) -> None:
    follower = open_log(tmp_path / "f")
    try:
        with pytest.raises(InvalidRecordError):
            follower.append_as_follower(b"")
        assert follower.log_end_offset == 0
    finally:
        follower.close()
