"""Transactions in the log: open transactions hold the last stable offset back, end markers
close them, aborted ones are indexed for read_committed fetches, and all of it survives
restarts, truncation and compaction."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.errors import InvalidRecordError
from common.log_config import LogConfig
from common.record_batch import iter_batch_headers, validate_produce_payload
from data_plane.storage.log import FetchIsolation, Log
from data_plane.storage.producer_state import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    TransactionCoordinatorFencedError,
)
from data_plane.storage.record_codec import (
    Record,
    build_batch,
    build_end_txn_marker,
    decode_records,
    read_end_txn_marker,
)
from data_plane.storage.transaction_index import AbortedTxn
from tests.unit.storage.cleaner_helpers import COMPACT, clean, read_all

NOW_MS = 1_700_000_000_000
SMALL = LogConfig(segment_bytes=1024, index_interval_bytes=128)


class Producer:
    """A transactional producer's batches for one partition (sequence kept per epoch)."""

    def __init__(self, pid: int, epoch: int = 0) -> None:
        self.pid = pid
        self.epoch = epoch
        self.seq = 0

    def batch(self, n: int = 2, *, key: bytes = b"k", transactional: bool = True) -> bytearray:
        records = [Record(key, b"%d-%d" % (self.pid, self.seq + i), NOW_MS) for i in range(n)]
        out = build_batch(
            records,
            producer_id=self.pid,
            producer_epoch=self.epoch,
            base_sequence=self.seq,
            is_transactional=transactional,
        )
        self.seq += n
        return out


def end(log: Log, p: Producer, *, committed: bool, coordinator_epoch: int = 0) -> int:
    info = log.append_end_txn_marker(
        producer_id=p.pid,
        producer_epoch=p.epoch,
        coordinator_epoch=coordinator_epoch,
        committed=committed,
        leader_epoch=0,
    )
    return info.first_offset


def open_log(path: str, config: LogConfig = SMALL, **kwargs) -> Log:
    return Log(path, config, topic="t", partition=0, clock_ms=lambda: NOW_MS, **kwargs)


@pytest.fixture
def log(tmp_path):
    lg = open_log(os.path.join(tmp_path, "t-0"))
    yield lg
    lg.close()


def committed_offsets(log: Log) -> list[int]:
    """Offsets of the data records a read_committed consumer keeps, reading to the LSO
    with the aborted transactions the log hands out (the consumer's filtering)."""
    out: list[int] = []
    offset = log.log_start_offset
    for _ in range(10_000):
        fs = log.read(offset, 1 << 20, isolation=FetchIsolation.TXN_COMMITTED)
        if fs.length == 0:
            break
        aborted = log.collect_aborted_transactions(offset, fs)
        data = fs.read_bytes()
        pos = 0
        for h in iter_batch_headers(data, allow_partial_tail=True):
            offset = h.next_offset
            if h.is_control:
                pos += h.size_in_bytes
                continue
            in_aborted = h.is_transactional and any(
                t.producer_id == h.producer_id and t.first_offset <= h.base_offset < t.last_offset
                for t in aborted
            )
            if not in_aborted:
                out.extend(r.offset for r in decode_records(data, pos)[1])
            pos += h.size_in_bytes
    return out


def test_open_transaction_holds_the_last_stable_offset(log) -> None:
    p = Producer(1)
    log.append(build_batch([Record(b"k", b"plain", NOW_MS)]), 0)  # offset 0
    first = log.append(p.batch(), 0).first_offset  # 1-2
    log.append(build_batch([Record(b"k", b"plain", NOW_MS)]), 0)  # 3
    log.update_high_watermark(log.log_end_offset)
    assert log.high_watermark == 4
    assert log.last_stable_offset == first == 1
    fs = log.read(0, 1 << 20, isolation=FetchIsolation.TXN_COMMITTED)
    assert [h.base_offset for h in iter_batch_headers(fs.read_bytes())] == [0]

    marker = end(log, p, committed=True)
    assert marker == 4
    # The marker is not replicated yet: the transaction is still unstable.
    assert log.last_stable_offset == 1
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == log.high_watermark == 5
    assert committed_offsets(log) == [0, 1, 2, 3]


def test_abort_is_indexed_and_filtered_by_read_committed(log) -> None:
    a, b = Producer(1), Producer(2)
    log.append(a.batch(), 0)  # 0-1
    log.append(b.batch(), 0)  # 2-3
    abort_at = end(log, a, committed=False)  # 4
    log.append(b.batch(), 0)  # 5-6
    commit_at = end(log, b, committed=True)  # 7
    log.update_high_watermark(log.log_end_offset)
    entries = log.active_segment.txn_index.entries
    # The abort happened while b's transaction (from 2) was open: the LSO then was 2.
    assert entries == [AbortedTxn(1, 0, abort_at, 2)]
    assert commit_at == 7
    assert committed_offsets(log) == [2, 3, 5, 6]
    fs = log.read(0, 1 << 20, isolation=FetchIsolation.TXN_COMMITTED)
    assert log.collect_aborted_transactions(0, fs) == entries
    # A fetch from past the abort marker no longer needs the entry.
    fs = log.read(5, 1 << 20, isolation=FetchIsolation.TXN_COMMITTED)
    assert log.collect_aborted_transactions(5, fs) == []


def test_non_transactional_batch_while_a_transaction_is_open_is_refused(log) -> None:
    p = Producer(1)
    log.append(p.batch(), 0)
    with pytest.raises(InvalidTxnStateError):
        log.append(p.batch(transactional=False), 0)
    assert log.log_end_offset == 2


def test_verified_appends_need_the_current_guard(log) -> None:
    """With verification a batch opening a transaction needs the guard of a verification
    taken before any marker of its producer; later batches of the open transaction do not."""
    p = Producer(1)
    with pytest.raises(InvalidTxnStateError):
        log.append(p.batch(), 0, verify_transactions=True)  # never verified
    p.seq = 0
    guard = log.start_txn_verification(1)
    assert guard is not None and log.start_txn_verification(1) is guard  # one per producer
    first = log.append(p.batch(), 0, verify_transactions=True, verification=guard).first_offset
    assert log.start_txn_verification(1) is None  # open here: nothing to verify
    log.append(p.batch(), 0, verify_transactions=True)
    end(log, p, committed=True)

    # A marker between the verification and the append voids the guard: a late batch of an
    # ended transaction must not open a new one that no marker would close.
    guard = log.start_txn_verification(1)
    end(log, p, committed=False)
    late = p.batch()
    with pytest.raises(InvalidTxnStateError):
        log.append(late, 0, verify_transactions=True, verification=guard)
    # A failed verification drops its guard; a new one is another guard.
    again = log.start_txn_verification(1)
    assert again is not None and again is not guard
    log.end_txn_verification(again)
    assert log.start_txn_verification(1) is not again
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == log.high_watermark
    assert first == 0


def test_stale_markers_are_fenced(log) -> None:
    p = Producer(1, epoch=3)
    log.append(p.batch(), 0)
    end(log, p, committed=True, coordinator_epoch=5)
    old = Producer(1, epoch=2)
    with pytest.raises(InvalidProducerEpochError):
        end(log, old, committed=False, coordinator_epoch=5)
    with pytest.raises(TransactionCoordinatorFencedError):
        end(log, p, committed=False, coordinator_epoch=4)
    assert log.log_end_offset == 3
    # A marker of a newer epoch (the coordinator fencing a zombie) is accepted.
    end(log, Producer(1, epoch=4), committed=False, coordinator_epoch=6)
    assert log.producer_state.last_entry(1).producer_epoch == 4


def test_clients_may_not_send_control_batches() -> None:
    marker = build_end_txn_marker(
        producer_id=1, producer_epoch=0, coordinator_epoch=0, committed=True, timestamp_ms=NOW_MS
    )
    with pytest.raises(InvalidRecordError):
        validate_produce_payload(marker, max_batch_bytes=1 << 20)
    info = validate_produce_payload(marker, max_batch_bytes=1 << 20, allow_control=True)
    assert info.batches[0].is_control and info.batches[0].is_transactional
    decoded = read_end_txn_marker(marker)
    assert decoded is not None and decoded.committed and decoded.coordinator_epoch == 0


def test_follower_indexes_the_aborts_it_replicates(tmp_path, log) -> None:
    a = Producer(1)
    log.append(a.batch(), 0)
    end(log, a, committed=False)
    log.append(a.batch(), 0)
    follower = open_log(os.path.join(tmp_path, "f-0"))
    try:
        data = log.read(0, 1 << 20).read_bytes()
        follower.append_as_follower(data)
        assert follower.active_segment.txn_index.entries == log.active_segment.txn_index.entries
        assert follower.producer_state.ongoing_transactions == {1: 3}
        follower.update_high_watermark(follower.log_end_offset)
        assert follower.last_stable_offset == 3
    finally:
        follower.close()


@pytest.mark.parametrize("clean", [True, False])
def test_restart_restores_open_transactions_and_aborted_index(tmp_path, clean) -> None:
    path = os.path.join(tmp_path, "t-0")
    log = open_log(path)
    a, b = Producer(1), Producer(2)
    for _ in range(6):  # several segments
        log.append(a.batch(4), 0)
        end(log, a, committed=False)
    log.append(b.batch(), 0)
    log.update_high_watermark(log.log_end_offset)
    lso = log.last_stable_offset
    aborted = [t for s in log.segments() for t in s.txn_index.entries]
    expected = committed_offsets(log)
    assert len(aborted) == 6 and len(log.segments()) > 1
    if clean:
        log.close()
    else:
        log.flush()
        # A crash: no snapshot at close, and the derived files are lost too.
        for name in os.listdir(path):
            if name.endswith((".snapshot", ".txnindex")):
                os.unlink(os.path.join(path, name))
    reopened = open_log(path, high_watermark=log.high_watermark, clean_shutdown=clean)
    try:
        assert reopened.last_stable_offset == lso
        assert [t for s in reopened.segments() for t in s.txn_index.entries] == aborted
        assert committed_offsets(reopened) == expected
        assert reopened.producer_state.ongoing_transactions == {2: lso}
    finally:
        reopened.close()
        if not clean:
            log.close()


def test_truncation_drops_aborts_above_the_target_and_reopens_the_transaction(log) -> None:
    a = Producer(1)
    log.append(a.batch(), 0)  # 0-1
    marker = end(log, a, committed=False)  # 2
    assert log.active_segment.txn_index.entries
    log.truncate_to(marker)
    assert log.active_segment.txn_index.entries == []
    assert log.producer_state.ongoing_transactions == {1: 0}
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 0


def test_cleaner_removes_aborted_batches_and_keeps_markers(tmp_path) -> None:
    log = open_log(os.path.join(tmp_path, "c-0"), COMPACT)
    try:
        committed, aborted = Producer(1), Producer(2)
        for i in range(12):
            log.append(committed.batch(1, key=b"key%d" % (i % 3)), 0)
            end(log, committed, committed=True)
            # The aborted producer writes the same keys later: it must not win.
            log.append(aborted.batch(1, key=b"key%d" % (i % 3)), 0)
            end(log, aborted, committed=False)
        log.roll()
        log.update_high_watermark(log.log_end_offset)
        before = committed_offsets(log)
        index_before = [t for s in log.segments() for t in s.txn_index.entries]
        result = clean(log, lambda: NOW_MS)
        assert result.stats.aborted_batches_removed > 0
        headers, records = read_all(log)
        assert not any(
            h.producer_id == aborted.pid and h.records_count > 0 and not h.is_control
            for h in headers
        )
        assert [t for s in log.segments() for t in s.txn_index.entries] == index_before
        after = committed_offsets(log)
        # Compaction keeps the latest committed value per key, and nothing aborted.
        assert set(after) <= set(before)
        latest = {}
        for r in records:
            if not r.key.startswith(b"\x00"):
                latest[r.key] = r.value
        assert all(v.startswith(b"1-") for v in latest.values())
        assert len(latest) == 3
    finally:
        log.close()


# -- a model of the last stable offset and the aborted transactions --------------------------

op = st.one_of(
    st.tuples(st.just("data"), st.integers(1, 3), st.integers(1, 3)),
    st.tuples(st.just("plain"), st.just(0), st.integers(1, 3)),
    st.tuples(st.just("commit"), st.integers(1, 3), st.just(0)),
    st.tuples(st.just("abort"), st.integers(1, 3), st.just(0)),
    st.tuples(st.just("hw"), st.just(0), st.just(0)),
    st.tuples(st.just("reopen"), st.just(0), st.just(0)),
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ops=st.lists(op, max_size=30))
def test_log_matches_a_model_of_transactions(tmp_path_factory, ops) -> None:
    path = os.path.join(tmp_path_factory.mktemp("model"), "t-0")
    log = open_log(path)
    producers = {pid: Producer(pid) for pid in (1, 2, 3)}
    open_first: dict[int, int] = {}  # model: pid -> first offset of its open transaction
    undecided: dict[int, int] = {}  # first offset -> marker offset, not yet below the HW
    aborted: list[AbortedTxn] = []
    txn_records: dict[int, list[int]] = {}  # pid -> offsets of its open transaction
    visible: list[int] = []  # offsets a read_committed consumer must see, in order
    try:
        for kind, pid, n in ops:
            if kind == "data":
                info = log.append(producers[pid].batch(n), 0)
                open_first.setdefault(pid, info.first_offset)
                txn_records.setdefault(pid, []).extend(
                    range(info.first_offset, info.last_offset + 1)
                )
            elif kind == "plain":
                info = log.append(build_batch([Record(b"k", b"v", NOW_MS)] * n), 0)
                visible.extend(range(info.first_offset, info.last_offset + 1))
            elif kind in ("commit", "abort"):
                marker = end(log, producers[pid], committed=kind == "commit")
                first = open_first.pop(pid, marker)
                undecided[first] = marker
                if kind == "abort":
                    others = list(open_first.values())
                    lso = min(others) if others else marker + 1
                    aborted.append(AbortedTxn(pid, first, marker, lso))
                else:
                    visible.extend(txn_records.get(pid, []))
                txn_records.pop(pid, None)
            elif kind == "hw":
                log.update_high_watermark(log.log_end_offset)
            else:
                hw = log.high_watermark
                log.close()
                log = open_log(path, high_watermark=hw, clean_shutdown=True)
                # A clean open loads the snapshot written at close and replays nothing, so
                # transactions decided above the high watermark count as stable (as in Kafka:
                # snapshots do not hold them).
                undecided.clear()
            hw = log.high_watermark
            undecided = {f: m for f, m in undecided.items() if m >= hw}
            unstable = list(open_first.values()) + list(undecided)
            expected_lso = min([hw, *unstable])
            assert log.last_stable_offset == expected_lso
            assert [t for s in log.segments() for t in s.txn_index.entries] == aborted
        log.update_high_watermark(log.log_end_offset)
        lso = log.last_stable_offset
        assert committed_offsets(log) == sorted(o for o in visible if o < lso)
    finally:
        log.close()


def test_transaction_index_file_cut_back_to_whole_entries(tmp_path) -> None:
    from data_plane.storage.transaction_index import ENTRY_SIZE, TransactionIndex

    path = os.path.join(tmp_path, "00000000000000000000.txnindex")
    idx = TransactionIndex(path)
    idx.append(AbortedTxn(1, 0, 5, 6))
    idx.append(AbortedTxn(2, 3, 9, 10))
    with open(path, "ab") as f:
        f.write(b"\x00\x00torn")  # a partial third entry (a crash mid-write)
    reread = TransactionIndex(path)
    assert reread.entries == [AbortedTxn(1, 0, 5, 6), AbortedTxn(2, 3, 9, 10)]
    assert os.path.getsize(path) == 2 * ENTRY_SIZE
    assert reread.collect(6, 100) == [AbortedTxn(2, 3, 9, 10)]
    assert reread.collect(0, 3) == [AbortedTxn(1, 0, 5, 6)]
    with pytest.raises(ValueError):
        reread.append(AbortedTxn(3, 0, 9, 10))  # markers never go backwards
    reread.truncate_to(9)
    assert TransactionIndex(path).entries == [AbortedTxn(1, 0, 5, 6)]


def test_version_1_producer_snapshot_still_loads(tmp_path) -> None:
    import struct

    import crc32c
    import msgpack

    from data_plane.storage.producer_state import NO_TXN, ProducerStateManager

    body = msgpack.packb([7, [[5, 2, NOW_MS, [[0, 1, 5, 6, NOW_MS]]]]])
    with open(os.path.join(tmp_path, f"{7:020d}.snapshot"), "wb") as f:
        f.write(struct.pack(">HI", 1, crc32c.crc32c(body)) + body)
    ps = ProducerStateManager(str(tmp_path))
    assert ps.load(0, 7) == 7
    entry = ps.last_entry(5)
    assert entry.producer_epoch == 2 and entry.current_txn_first_offset == NO_TXN
    assert ps.ongoing_transactions == {}


def test_orphan_transaction_index_is_removed_on_open(tmp_path) -> None:
    path = os.path.join(tmp_path, "t-0")
    log = open_log(path)
    log.append(Producer(1).batch(), 0)
    log.close()
    orphan = os.path.join(path, f"{500:020d}.txnindex")
    with open(orphan, "wb") as f:
        f.write(AbortedTxn(1, 500, 501, 502).encode())
    reopened = open_log(path, clean_shutdown=True)
    try:
        assert not os.path.exists(orphan)
    finally:
        reopened.close()


def test_abort_marker_segments_after_the_fetched_one_is_found(log) -> None:
    a = Producer(1)
    first = log.append(a.batch(1), 0).first_offset
    for _ in range(40):  # plain batches until several segments have rolled
        log.append(build_batch([Record(b"k", b"x" * 60, NOW_MS)]), 0)
    assert len(log.segments()) >= 3
    marker = end(log, a, committed=False)
    log.update_high_watermark(log.log_end_offset)
    fs = log.read(first, 200, isolation=FetchIsolation.TXN_COMMITTED)
    assert fs.segment_base_offset == 0 and log.active_segment.base_offset > 0
    assert [
        (t.producer_id, t.first_offset, t.last_offset)
        for t in log.collect_aborted_transactions(first, fs)
    ] == [(1, first, marker)]
    assert first not in committed_offsets(log)
