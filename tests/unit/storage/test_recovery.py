"""Recovery on open: torn and corrupt tails, rebuilt indexes, layout errors, corrupt reads."""

from __future__ import annotations

import os
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.errors import CorruptRecordError
from common.log_config import LogConfig
from common.record_batch import iter_batch_headers
from data_plane.storage.errors import LogDirLayoutError
from data_plane.storage.log import Log

from .conftest import ManualClock, batch

SMALL = LogConfig(segment_bytes=3000, index_interval_bytes=200)


def build_log(dir_path: str, n_batches: int) -> list[tuple[int, bytes]]:
    """Write a log; return (base offset, bytes) of every batch, in order."""
    log = Log(dir_path, SMALL, topic="t", partition=0, clock_ms=ManualClock())
    for i in range(n_batches):
        log.append(batch(1 + i % 4, value_bytes=10 + (i * 7) % 60, tag=i, timestamp=1000 + i), 0)
    out = []
    for seg in log.segments():
        data = seg.log.read(0, seg.size_in_bytes)
        out.extend(
            (h.base_offset, data[h.position : h.position + h.size_in_bytes])
            for h in iter_batch_headers(data)
        )
    log.close()
    return out


def last_segment_path(dir_path: str) -> str:
    return os.path.join(dir_path, sorted(n for n in os.listdir(dir_path) if n.endswith(".log"))[-1])


def all_batches(log: Log) -> list[tuple[int, bytes]]:
    out = []
    offset = log.log_start_offset
    for _ in range(10_000):
        if offset >= log.log_end_offset:
            break
        data = log.read(offset, 1).read_bytes()
        h = next(iter_batch_headers(data))
        out.append((h.base_offset, data[: h.size_in_bytes]))
        offset = h.next_offset
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_batches=st.integers(min_value=30, max_value=80),
    cut_fraction=st.floats(min_value=0.0, max_value=1.0),
    flips=st.lists(st.floats(min_value=0.0, max_value=1.0), max_size=3),
    truncate=st.booleans(),
    drop_index=st.booleans(),
)
def test_reopen_after_torn_or_corrupt_tail(n_batches, cut_fraction, flips, truncate, drop_index):
    with tempfile.TemporaryDirectory() as d:
        dir_path = os.path.join(d, "t-0")
        batches = build_log(dir_path, n_batches)
        path = last_segment_path(dir_path)
        base = int(os.path.basename(path)[:20])
        in_last = [(o, b) for o, b in batches if o >= base]
        positions, pos = [], 0
        for _, b in in_last:
            positions.append((pos, pos + len(b)))
            pos += len(b)
        size = os.path.getsize(path)
        damage = size  # first damaged byte
        flipped: set[int] = set()
        with open(path, "r+b") as f:
            if truncate:
                cut = int(size * cut_fraction)
                f.truncate(cut)
                size = cut
                damage = min(damage, cut)
            for fraction in flips:
                if size == 0:
                    break
                # Damage the tail half; skip baseOffset and partitionLeaderEpoch, which the
                # CRC does not cover (by design, as in Kafka), so no reader can detect it.
                p = size // 2 + int((size - size // 2 - 1) * fraction)
                start = next(s for s, e in positions if s <= p < e)
                if p - start < 8 or 12 <= p - start < 16 or p in flipped:
                    continue
                flipped.add(p)
                f.seek(p)
                old = f.read(1)
                f.seek(p)
                f.write(bytes([old[0] ^ 0x5A]))
                damage = min(damage, p)
        if drop_index:
            os.unlink(path[:-4] + ".index")
        expected = [ob for ob, (s, e) in zip(in_last, positions, strict=True) if e <= damage]
        expected = [ob for ob in batches if ob[0] < base] + expected
        log = Log(dir_path, SMALL, topic="t", partition=0, clock_ms=ManualClock())
        try:
            assert all_batches(log) == expected
            end = expected[-1][0] + _count(expected[-1][1]) if expected else 0
            assert log.log_end_offset == max(end, base)
            assert log.truncated_on_load_bytes == sum(len(b) for _, b in in_last) - sum(
                len(b) for o, b in expected if o >= base
            ) - (sum(len(b) for _, b in in_last) - size)
            active = log.segments()[-1]
            active.offset_index.sanity_check(max(active.size_in_bytes, 1))
            # The rebuilt index points at real batch starts.
            starts = {s for s, e in positions}
            for slot in range(active.offset_index.entries):
                _, position = active.offset_index.entry(slot)
                assert position in starts
            # The log keeps working after recovery.
            info = log.append(batch(2), 0)
            assert info.first_offset == log.log_end_offset - 2
        finally:
            log.close()


def _count(b: bytes) -> int:
    return next(iter_batch_headers(b)).last_offset_delta + 1


def test_corrupt_middle_segment_drops_everything_after(tmp_path) -> None:
    dir_path = str(tmp_path / "t-0")
    batches = build_log(dir_path, 80)
    logs = sorted(n for n in os.listdir(dir_path) if n.endswith(".log"))
    assert len(logs) >= 3
    second = os.path.join(dir_path, logs[1])
    with open(second, "r+b") as f:
        f.seek(100)
        byte = f.read(1)
        f.seek(100)
        f.write(bytes([byte[0] ^ 1]))
    log = Log(dir_path, SMALL, topic="t", partition=0)
    try:
        assert len(log.segments()) == 2
        got = all_batches(log)
        assert got == batches[: len(got)]
        assert log.dropped_on_load_batches >= len(batches) - len(got)
        assert not any(n.endswith(".log") and n > logs[1] for n in os.listdir(dir_path))
    finally:
        log.close()


def test_missing_or_garbled_index_of_a_flushed_segment_is_rebuilt(tmp_path) -> None:
    dir_path = str(tmp_path / "t-0")
    build_log(dir_path, 80)
    log = Log(dir_path, SMALL, topic="t", partition=0)
    end = log.log_end_offset
    first = log.segments()[0]
    entries = [first.offset_index.entry(i) for i in range(first.offset_index.entries)]
    assert entries
    index_path, time_path = first.offset_index.path, first.time_index.path
    log.close()
    os.unlink(index_path)
    with open(time_path, "r+b") as f:
        f.write(b"\xff" * 12)  # an absurd first timestamp breaks the order
    log = Log(dir_path, SMALL, topic="t", partition=0, recovery_point=end, clean_shutdown=True)
    try:
        assert index_path[:-6] + ".log" in log.rebuilt_indexes
        seg = log.segments()[0]
        assert [seg.offset_index.entry(i) for i in range(seg.offset_index.entries)] == entries
        seg.time_index.sanity_check(log.segments()[1].base_offset)
        assert log.log_end_offset == end
    finally:
        log.close()


def test_torn_tail_is_caught_even_after_a_clean_shutdown(tmp_path) -> None:
    dir_path = str(tmp_path / "t-0")
    batches = build_log(dir_path, 40)
    path = last_segment_path(dir_path)
    os.truncate(path, os.path.getsize(path) - 3)
    log = Log(dir_path, SMALL, topic="t", partition=0, recovery_point=10**6, clean_shutdown=True)
    try:
        assert all_batches(log) == batches[:-1]
        assert log.recovery_point == log.log_end_offset
    finally:
        log.close()


def test_corruption_in_flushed_data_is_reported_to_the_reader(tmp_path) -> None:
    dir_path = str(tmp_path / "t-0")
    batches = build_log(dir_path, 60)
    first = os.path.join(dir_path, "00000000000000000000.log")
    victim = 5
    pos = sum(len(b) for _, b in batches[:victim]) + 70
    with open(first, "r+b") as f:
        f.seek(pos)
        byte = f.read(1)
        f.seek(pos)
        f.write(bytes([byte[0] ^ 0xFF]))
    end = batches[-1][0] + _count(batches[-1][1])
    # Clean shutdown and a recovery point at the end: the segment is not rescanned on open.
    log = Log(dir_path, SMALL, topic="t", partition=0, recovery_point=end, clean_shutdown=True)
    try:
        assert log.log_end_offset == end
        assert log.read(batches[victim - 1][0], 1).read_bytes() == batches[victim - 1][1]
        with pytest.raises(CorruptRecordError, match="CRC") as e:
            log.read(batches[victim][0], 1)
        assert e.value.error_code == 2
        with pytest.raises(CorruptRecordError):
            log.read(batches[0][0], 1 << 20)  # a slice reaching over the bad batch
        assert log.read(batches[victim + 1][0], 1).read_bytes() == batches[victim + 1][1]
    finally:
        log.close()


def test_garbage_file_in_partition_dir_names_the_file(tmp_path) -> None:
    dir_path = tmp_path / "t-0"
    build_log(str(dir_path), 5)
    (dir_path / "notes.txt").write_text("hello")
    with pytest.raises(LogDirLayoutError, match=r"notes\.txt"):
        Log(str(dir_path), SMALL, topic="t", partition=0)
    os.unlink(dir_path / "notes.txt")
    (dir_path / "00000000000000000000.log.deleted").write_bytes(b"x")
    (dir_path / "00000000000000000077.index").write_bytes(b"")  # index without a log
    log = Log(str(dir_path), SMALL, topic="t", partition=0)
    log.close()
    assert sorted(n for n in os.listdir(dir_path) if n != "leader-epoch-checkpoint") == [
        "00000000000000000000.index",
        "00000000000000000000.log",
        "00000000000000000000.timeindex",
    ]


def test_garbage_segment_file_is_truncated_not_served(tmp_path) -> None:
    dir_path = tmp_path / "t-0"
    dir_path.mkdir()
    (dir_path / "00000000000000000000.log").write_bytes(os.urandom(5000))
    log = Log(str(dir_path), SMALL, topic="t", partition=0)
    try:
        assert log.log_end_offset == 0 and log.truncated_on_load_bytes == 5000
    finally:
        log.close()
