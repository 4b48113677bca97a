"""The log cleaner: latest value per key at original offsets, tombstones and their delete
horizon, idempotent producers' batches, keyless records, readers of replaced segments."""

from __future__ import annotations

import dataclasses
import os

import pytest

from common.compression import Compression
from common.errors import InvalidRecordError
from common.record_batch import DELETE_HORIZON_MASK, iter_batch_headers, validate_batch
from data_plane.storage.log import FetchIsolation, Log
from data_plane.storage.record_codec import decode_records

from .cleaner_helpers import COMPACT, append_keyed, clean, keyed, latest_values, read_all


def fill(log: Log, rounds: int, keys: int, *, value_bytes: int = 30) -> dict[int, tuple]:
    """``rounds`` passes over ``keys`` keys, one record per batch; returns offset -> (k, v)."""
    written = {}
    for r in range(rounds):
        for k in range(keys):
            key, value = b"k%d" % k, (b"r%d-" % r).ljust(value_bytes, b"v")
            written[append_keyed(log, [(key, value)])] = (key, value)
    log.roll()
    return written


def test_cleaning_keeps_the_latest_value_of_each_key_at_its_original_offset(
    open_log, clock
) -> None:
    log = open_log(COMPACT)
    written = fill(log, rounds=6, keys=10)
    before = log.size_in_bytes
    result = clean(log, clock)
    assert result.completed and result.stats.groups_swapped >= 1
    assert result.end_offset == log.segments()[-1].base_offset
    _, records = read_all(log)
    latest_offset = {}
    for offset, (key, _v) in written.items():
        latest_offset[key] = max(latest_offset.get(key, -1), offset)
    assert sorted(r.offset for r in records) == sorted(latest_offset.values())
    for r in records:
        assert written[r.offset] == (r.key, r.value)
    assert log.size_in_bytes < before / 3
    # Every retained offset is still found by a read starting at it, and a read inside a
    # gap lands on the next retained batch.
    for r in records:
        first = next(iter_batch_headers(log.read(r.offset, 1).read_bytes()))
        assert first.base_offset <= r.offset <= first.last_offset
    assert log.read(0, 1).first_offset >= 0


def test_cleaned_log_survives_a_restart_and_a_second_cleaning(tmp_path, clock) -> None:
    path = str(tmp_path / "t-0")
    log = Log(path, COMPACT, topic="t", partition=0, clock_ms=clock)
    fill(log, rounds=4, keys=8)
    first = clean(log, clock)
    assert first.completed
    _, records = read_all(log)
    fill(log, rounds=2, keys=4)  # new values of half the keys
    second = clean(log, clock, checkpoint=first.end_offset)
    assert second.completed and second.end_offset > first.end_offset
    _, after = read_all(log)
    hw = log.high_watermark
    log.close()
    reopened = Log(path, COMPACT, topic="t", partition=0, clock_ms=clock, high_watermark=hw)
    try:
        _, again = read_all(reopened)
        assert [(r.offset, r.key, r.value) for r in again] == [
            (r.offset, r.key, r.value) for r in after
        ]
        values = latest_values(again)
        assert {k: v[:3] for k, v in values.items()} == {
            **{b"k%d" % k: b"r1-" for k in range(4)},
            **{b"k%d" % k: b"r3-" for k in range(4, 8)},
        }
        assert len(again) == 8 and len(records) == 8
    finally:
        reopened.close()


def test_tombstones_stay_until_delete_retention_ms_after_their_first_cleaning(
    open_log, clock
) -> None:
    log = open_log(COMPACT)
    fill(log, rounds=3, keys=4)
    tomb = append_keyed(log, [(b"k1", None)])
    append_keyed(log, [(b"k2", b"after")])
    log.roll()
    first = clean(log, clock)
    headers, records = read_all(log)
    assert (tomb, b"k1", None) in [(r.offset, r.key, r.value) for r in records]
    # The batch holding the tombstone carries its delete horizon.
    holder = next(h for h in headers if h.base_offset <= tomb <= h.last_offset)
    assert holder.attributes & DELETE_HORIZON_MASK
    assert holder.base_timestamp == clock.now_ms + COMPACT.delete_retention_ms
    # Record timestamps survive the re-basing.
    assert next(r for r in records if r.offset == tomb).timestamp == 1000
    clock.advance(COMPACT.delete_retention_ms - 1)
    fill(log, rounds=1, keys=1)
    second = clean(log, clock, checkpoint=first.end_offset)
    assert second.completed and second.stats.tombstones_removed == 0
    assert any(r.offset == tomb for r in read_all(log)[1])
    clock.advance(1)
    fill(log, rounds=1, keys=1)
    third = clean(log, clock, checkpoint=second.end_offset)
    assert third.completed and third.stats.tombstones_removed == 1
    _, records = read_all(log)
    assert b"k1" not in latest_values(records)
    assert {r.key for r in records} == {b"k0", b"k2", b"k3"}


def test_compressed_batches_are_rebuilt_with_their_codec_and_a_valid_crc(open_log, clock) -> None:
    log = open_log(COMPACT)
    for r in range(5):
        pairs = [(b"k%d" % k, b"r%d-%d" % (r, k) * 5) for k in range(6)]
        append_keyed(log, pairs, compression=Compression.ZSTD)
    log.roll()
    assert clean(log, clock).completed
    headers, records = read_all(log)
    data = log.read(0, 1 << 20).read_bytes()
    pos = 0
    for h in iter_batch_headers(data):
        validate_batch(data, pos)  # CRC recomputed
        pos += h.size_in_bytes
    assert all(h.compression == Compression.ZSTD for h in headers if h.records_count)
    assert latest_values(records) == {b"k%d" % k: b"r4-%d" % k * 5 for k in range(6)}
    # The batch keeps its offsets: base and last offset delta are those of the original.
    assert headers[-1].last_offset == log.segments()[-1].base_offset - 1


def test_a_batch_keeps_base_offset_and_last_offset_delta_when_records_drop(open_log, clock) -> None:
    log = open_log(COMPACT)
    first = append_keyed(log, [(b"a", b"1"), (b"b", b"1"), (b"c", b"1")])
    append_keyed(log, [(b"a", b"2"), (b"c", b"2")])
    log.roll()
    assert clean(log, clock).completed
    headers, records = read_all(log)
    assert (headers[0].base_offset, headers[0].last_offset_delta) == (first, 2)
    assert headers[0].records_count == 1
    assert [(r.offset, r.key) for r in records] == [(1, b"b"), (3, b"a"), (4, b"c")]


def test_idempotent_producer_keeps_its_last_batch_emptied(tmp_path, clock) -> None:
    path = str(tmp_path / "t-0")
    log = Log(path, COMPACT, topic="t", partition=0, clock_ms=clock)
    pid = 7
    for seq in range(3):
        append_keyed(
            log, [(b"k", b"p%d" % seq)], producer_id=pid, producer_epoch=0, base_sequence=seq
        )
    # A non-idempotent writer supersedes the producer's key.
    append_keyed(log, [(b"k", b"plain")])
    log.roll()
    assert clean(log, clock).completed
    headers, records = read_all(log)
    assert [r.value for r in records] == [b"plain"]
    empty = [h for h in headers if h.producer_id == pid]
    assert len(empty) == 1
    assert (empty[0].records_count, empty[0].base_offset, empty[0].base_sequence) == (0, 2, 2)
    hw = log.high_watermark
    log.close()
    for name in os.listdir(path):
        if name.endswith(".snapshot"):
            os.unlink(os.path.join(path, name))  # force the rebuild from the cleaned log
    reopened = Log(path, COMPACT, topic="t", partition=0, clock_ms=clock, high_watermark=hw)
    try:
        assert reopened.producer_state.last_entry(pid).last_seq == 2
        # The producer's next sequence is accepted; a gap would not be.
        reopened.append(
            keyed([(b"k", b"p3")], producer_id=pid, producer_epoch=0, base_sequence=3), 0
        )
    finally:
        reopened.close()


def test_keyless_records_are_refused_on_a_compacted_topic_only(open_log) -> None:
    log = open_log(COMPACT)
    with pytest.raises(InvalidRecordError) as e:
        log.append(keyed([(b"k", b"v"), (None, b"v")]), 0)  # type: ignore[list-item]
    assert e.value.error_code == 87
    assert log.log_end_offset == 0
    log.update_config(dataclasses.replace(COMPACT, cleanup_policy="delete"))
    log.append(keyed([(None, b"v")]), 0)  # type: ignore[list-item]
    assert log.log_end_offset == 1


def test_a_slice_of_a_replaced_segment_stays_readable(open_log, clock) -> None:
    log = open_log(COMPACT)
    fill(log, rounds=4, keys=5)
    old = log.read(0, 1 << 20)
    old_bytes = old.read_bytes()
    assert clean(log, clock).completed
    assert log.delete_pending_files(force=True) >= 1  # the replaced files are unlinked
    # The slice handed out before the swap still reads the old bytes from its descriptor.
    assert os.pread(old.fileno, old.length, old.position) == old_bytes
    assert decode_records(old_bytes)[1][0].offset == 0
    # A new read re-resolves to the cleaned segment.
    assert log.read(0, 1 << 20).read_bytes() != old_bytes


def test_compact_delete_applies_retention_too(open_log, clock) -> None:
    cfg = dataclasses.replace(COMPACT, cleanup_policy="compact,delete", retention_ms=10_000)
    log = open_log(cfg)
    fill(log, rounds=3, keys=4)
    assert clean(log, clock).completed
    clock.advance(10_000)
    append_keyed(log, [(b"x", b"new")], timestamp=clock.now_ms)
    log.roll()
    assert log.delete_old_segments() >= 1
    _, records = read_all(log)
    assert [r.key for r in records] == [b"x"]


def test_nothing_above_the_high_watermark_or_in_the_active_segment_is_cleaned(
    open_log, clock
) -> None:
    log = open_log(COMPACT)
    fill(log, rounds=3, keys=3)
    hw = log.segments()[1].base_offset  # only the first closed segment is committed
    for _ in range(3):
        log.append(keyed([(b"k0", b"uncommitted")]), 0)
    log.update_high_watermark(hw)
    result = clean(log, clock)
    assert result.end_offset <= hw
    offsets = []
    offset = 0
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20).read_bytes()
        for h in iter_batch_headers(data, allow_partial_tail=True):
            offsets.extend(r.offset for r in decode_records(data, h.position)[1])
            offset = h.next_offset
    assert set(range(hw, log.log_end_offset)) <= set(offsets)


def test_log_dump_reads_cleaned_segments_with_offset_gaps(open_log, clock, capsys) -> None:
    from deploy.cli import main

    log = open_log(dataclasses.replace(COMPACT, index_interval_bytes=64))
    for r in range(12):
        append_keyed(log, [(b"a%d" % r, b"1"), (b"b%d" % r, b"1"), (b"c%d" % r, b"1")])
        append_keyed(log, [(b"a%d" % r, b"2"), (b"c%d" % r, None)])
    log.roll()
    assert clean(log, clock).completed
    paths = [s.log.path for s in log.segments()[:-1]]
    rc = main(["log", "dump", "--records", "--verify-index", *paths])
    out = capsys.readouterr().out
    assert rc == 0, out
    batch_lines = [ln for ln in out.splitlines() if ln.startswith("baseOffset:")]
    assert len(batch_lines) == 24
    # The first batch of each pair keeps only b (offset delta 1) and its 3 offsets.
    assert batch_lines[0].startswith("baseOffset: 0 lastOffset: 2 count: 1")
    record_offsets = [int(ln.split()[2]) for ln in out.splitlines() if ln.startswith("| offset:")]
    assert record_offsets[:3] == [1, 3, 4]


def test_every_consumer_read_of_a_cleaned_log_holds_a_record(open_log, clock) -> None:
    """librdkafka doubles its fetch size on a fetch answer without a record and fails with
    MSG_SIZE_TOO_LARGE after about ten: a cleaning leaves no run of record-less batches (it
    keeps empty batches only for idempotent producers)."""
    log = open_log(dataclasses.replace(COMPACT, segment_bytes=2048))
    for r in range(8):
        for k in range(20):
            append_keyed(log, [(b"k%02d" % k, b"round-%d-" % r + b"x" * 60)])
    checkpoint = None
    for i in range(300):
        append_keyed(log, [(b"f%d" % (i % 10), b"y" * 100)])
        if i % 37 == 0:
            result = clean(log, clock, checkpoint)
            assert result.completed
            checkpoint = result.end_offset
    for offset in range(log.log_start_offset, log.high_watermark):
        data = log.read(offset, 1 << 20, isolation=FetchIsolation.HIGH_WATERMARK).read_bytes()
        headers = list(iter_batch_headers(data, allow_partial_tail=True))
        assert headers and headers[0].last_offset >= offset
        assert headers[0].records_count > 0, offset


def test_a_follower_copies_a_cleaned_leader_log_across_its_gaps(tmp_path, clock) -> None:
    leader = Log(str(tmp_path / "leader" / "t-0"), COMPACT, topic="t", partition=0, clock_ms=clock)
    follower = Log(
        str(tmp_path / "follower" / "t-0"), COMPACT, topic="t", partition=0, clock_ms=clock
    )
    try:
        pid = 3
        for seq in range(4):
            append_keyed(
                leader, [(b"p", b"%d" % seq)], producer_id=pid, producer_epoch=0, base_sequence=seq
            )
        append_keyed(leader, [(b"p", b"plain")])  # the producer's batches are all superseded
        fill(leader, rounds=5, keys=6)
        assert clean(leader, clock).completed
        offset = 0
        for _ in range(1000):  # the replica fetcher's loop: read from the follower's LEO
            if offset >= leader.log_end_offset:
                break
            data = leader.read(offset, 4096, isolation=FetchIsolation.LOG_END).read_bytes()
            whole = b"".join(
                data[h.position : h.position + h.size_in_bytes]
                for h in iter_batch_headers(data, allow_partial_tail=True)
            )
            follower.append_as_follower(whole)
            offset = follower.log_end_offset
        follower.update_high_watermark(follower.log_end_offset)
        assert follower.log_end_offset == leader.log_end_offset
        assert read_all(follower)[1] == read_all(leader)[1]
        # The emptied batch of the idempotent producer came along: the follower, made leader,
        # takes the producer's next sequence.
        assert follower.producer_state.last_entry(pid).last_seq == 3
        follower.append(
            keyed([(b"p", b"4")], producer_id=pid, producer_epoch=0, base_sequence=4), 1
        )
    finally:
        leader.close()
        follower.close()
