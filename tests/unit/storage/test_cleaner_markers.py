"""The log cleaner and transaction end markers: a marker goes only once no batch of its
transaction is left in the log and no producer snapshot a restart may load holds the
transaction open, and only ``delete.retention.ms`` after a cleaning first found it so (its
delete horizon); the log reopened after a marker is removed has no open transaction, and
read_committed consumers see the same records."""

from __future__ import annotations

import os

import pytest

from common.record_batch import DELETE_HORIZON_MASK, RecordBatchHeader
from data_plane.storage.log import Log
from data_plane.storage.transaction_index import AbortedTxn

from .cleaner_helpers import (
    COMPACT,
    TxnProducer,
    append_keyed,
    clean,
    latest_values,
    read_all,
    read_committed,
)
from .conftest import ManualClock

RETENTION_MS = COMPACT.delete_retention_ms
# Filler values: two segments holding one each exceed segment.bytes together, so the
# cleaner rewrites them in separate groups.
FILLER = b"x" * 600


def headers_by_offset(log: Log) -> dict[int, RecordBatchHeader]:
    return {h.base_offset: h for h in read_all(log)[0]}


def txn_entries(log: Log) -> list[AbortedTxn]:
    return [t for s in log.segments() for t in s.txn_index.entries]


def committed_view(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for r in read_committed(log)]


def snapshots(path: str) -> list[str]:
    return sorted(n for n in os.listdir(path) if n.endswith(".snapshot"))


def assert_stable(log: Log) -> None:
    assert log.producer_state.ongoing_transactions == {}
    assert log.last_stable_offset == log.high_watermark == log.log_end_offset


def test_marker_of_a_superseded_transaction_goes_after_delete_retention_ms(open_log, clock) -> None:
    log = open_log(COMPACT)
    p = TxnProducer(1)
    p.append(log, [(b"a", b"txn1")])
    m1 = p.end(log, committed=True)
    p.append(log, [(b"b", b"txn2")])
    m2 = p.end(log, committed=True)
    append_keyed(log, [(b"a", b"plain")])  # supersedes the first transaction's only record
    log.roll()
    view = latest_values(read_committed(log))

    first = clean(log, clock)
    assert first.stats.marker_horizons_set == 1 and first.stats.markers_removed == 0
    headers = headers_by_offset(log)
    assert headers[m1].attributes & DELETE_HORIZON_MASK
    assert headers[m1].base_timestamp == clock.now_ms + RETENTION_MS
    assert not headers[m2].attributes & DELETE_HORIZON_MASK
    assert latest_values(read_committed(log)) == view

    clock.advance(RETENTION_MS - 1)
    assert clean(log, clock).stats.markers_removed == 0
    assert m1 in headers_by_offset(log)

    clock.advance(1)
    third = clean(log, clock)
    assert third.stats.markers_removed == 1
    headers = headers_by_offset(log)
    assert m1 not in headers and m2 in headers
    assert latest_values(read_committed(log)) == view
    assert_stable(log)

    # The second transaction's record is live: its marker stays however long it waits.
    clock.advance(100 * RETENTION_MS)
    clean(log, clock)
    clock.advance(100 * RETENTION_MS)
    assert clean(log, clock).stats.marker_horizons_set == 0
    assert m2 in headers_by_offset(log)


def test_marker_stays_while_its_transaction_keeps_an_emptied_batch(open_log, clock) -> None:
    log = open_log(COMPACT)
    p = TxnProducer(1)
    last = p.append(log, [(b"a", b"txn")])
    marker = p.end(log, committed=True)
    append_keyed(log, [(b"a", b"plain")])
    log.roll()
    for _ in range(3):
        clean(log, clock)
        clock.advance(10 * RETENTION_MS)
    headers = headers_by_offset(log)
    # The producer's last batch is kept empty (its sequence continues after a restart), so
    # replay would open the transaction: the marker must stay with it.
    assert headers[last].records_count == 0 and headers[last].is_transactional
    assert marker in headers and not headers[marker].attributes & DELETE_HORIZON_MASK
    assert_stable(log)


def test_aborted_transaction_loses_its_data_first_and_its_marker_after_the_horizon(
    open_log, clock
) -> None:
    log = open_log(COMPACT)
    p = TxnProducer(1)
    aborted_at = p.append(log, [(b"a", b"aborted")])
    abort = p.end(log, committed=False)
    p.append(log, [(b"b", b"committed")])
    commit = p.end(log, committed=True)
    log.roll()
    view = committed_view(log)
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in txn_entries(log)] == [
        (1, aborted_at, abort)
    ]
    entries = txn_entries(log)

    first = clean(log, clock)
    assert first.stats.aborted_batches_removed == 1
    assert first.stats.marker_horizons_set == 1
    headers = headers_by_offset(log)
    assert aborted_at not in headers
    assert headers[abort].attributes & DELETE_HORIZON_MASK
    assert txn_entries(log) == entries
    assert committed_view(log) == view

    clock.advance(RETENTION_MS)
    second = clean(log, clock)
    assert second.stats.markers_removed == 1
    headers = headers_by_offset(log)
    assert abort not in headers and commit in headers
    # The index entry goes with its marker: a consumer handed it would otherwise skip the
    # producer's later committed batch, never meeting an ABORT marker to stop at.
    assert txn_entries(log) == []
    assert committed_view(log) == view
    assert_stable(log)


def test_marker_stays_while_a_batch_of_its_transaction_is_in_an_earlier_group(
    tmp_path, clock
) -> None:
    path = str(tmp_path / "t-0")
    log = Log(path, COMPACT, topic="t", partition=0, clock_ms=clock)
    try:
        p = TxnProducer(1)
        data = p.append(log, [(b"a", b"txn")])
        append_keyed(log, [(b"filler1", FILLER)])
        log.roll()
        # Without the snapshot taken at the roll (which holds the transaction open, and would
        # keep the marker by itself), only the batch in the earlier group keeps it.
        for name in snapshots(path):
            os.unlink(os.path.join(path, name))
        marker = p.end(log, committed=True)
        p.append(log, [(b"b", b"next")])
        p.end(log, committed=True)
        append_keyed(log, [(b"filler2", FILLER)])
        log.roll()
        segments = len(log.segments())
        for _ in range(3):
            assert clean(log, clock).stats.marker_horizons_set == 0
            clock.advance(10 * RETENTION_MS)
        assert len(log.segments()) == segments  # the two segments were cleaned apart
        assert {data, marker} <= set(headers_by_offset(log))

        append_keyed(log, [(b"a", b"plain")])
        log.roll()
        latest = latest_values(read_committed(log))
        for name in snapshots(path):
            os.unlink(os.path.join(path, name))
        assert clean(log, clock).stats.marker_horizons_set == 1
        clock.advance(RETENTION_MS)
        assert clean(log, clock).stats.markers_removed == 1
        headers = headers_by_offset(log)
        assert data not in headers and marker not in headers
        assert_stable(log)
        assert latest_values(read_committed(log)) == latest
        expected = committed_view(log)
        hw = log.high_watermark
        log.flush()
        reopened = Log(path, COMPACT, topic="t", partition=0, clock_ms=clock, high_watermark=hw)
        try:
            assert_stable(reopened)
            assert committed_view(reopened) == expected
        finally:
            reopened.close()
    finally:
        log.close()


def test_marker_of_a_transaction_open_in_a_producer_snapshot_is_kept(tmp_path, clock) -> None:
    path = str(tmp_path / "t-0")
    log = Log(path, COMPACT, topic="t", partition=0, clock_ms=clock)
    p = TxnProducer(1)
    data = p.append(log, [(b"a", b"txn")])
    log.roll()  # the snapshot at this roll holds p's transaction open
    inside = log.log_end_offset
    assert snapshots(path) == [f"{inside:020d}.snapshot"]
    append_keyed(log, [(b"a", b"plain")])
    marker = p.end(log, committed=True)
    p.append(log, [(b"b", b"next")])
    p.end(log, committed=True)
    log.roll()
    for _ in range(3):
        assert clean(log, clock).stats.marker_horizons_set == 0
        clock.advance(10 * RETENTION_MS)
    headers = headers_by_offset(log)
    assert data not in headers and marker in headers
    view = committed_view(log)
    hw = log.high_watermark
    log.close()

    # A restart that finds only that snapshot (the later ones torn by a crash) replays from
    # it: the marker it meets closes the transaction.
    for name in snapshots(path):
        if name != f"{inside:020d}.snapshot":
            os.unlink(os.path.join(path, name))
    log = Log(path, COMPACT, topic="t", partition=0, clock_ms=clock, high_watermark=hw)
    try:
        assert_stable(log)
        assert committed_view(log) == view
        # Once that snapshot is gone the marker is free to go after its horizon.
        os.unlink(os.path.join(path, f"{inside:020d}.snapshot"))
        assert clean(log, clock).stats.marker_horizons_set == 1
        clock.advance(RETENTION_MS)
        assert clean(log, clock).stats.markers_removed == 1
        assert marker not in headers_by_offset(log)
        assert committed_view(log) == view
        assert_stable(log)
    finally:
        log.close()


@pytest.mark.parametrize("reopen", ["clean_shutdown", "replay_from_files", "older_snapshot"])
def test_log_reopened_after_marker_removal_has_no_open_transaction(tmp_path, reopen) -> None:
    clock = ManualClock()
    path = str(tmp_path / "t-0")
    log = Log(path, COMPACT, topic="t", partition=0, clock_ms=clock)
    p, q = TxnProducer(1), TxnProducer(2)
    q.append(log, [(b"c", b"q1")])
    q_marker = q.end(log, committed=True)
    log.roll()
    before_p = log.log_end_offset  # a snapshot in which p is unknown
    p.append(log, [(b"a", b"aborted")])
    p_abort = p.end(log, committed=False)
    q.append(log, [(b"c", b"q2")])  # supersedes q's first transaction
    q.end(log, committed=True)
    p.append(log, [(b"b", b"p2")])
    p.end(log, committed=True)
    log.roll()
    latest = latest_values(read_committed(log))
    first = clean(log, clock)
    assert first.stats.marker_horizons_set == 2
    clock.advance(RETENTION_MS)
    second = clean(log, clock)
    assert second.stats.markers_removed == 2
    headers = headers_by_offset(log)
    assert q_marker not in headers and p_abort not in headers
    assert latest_values(read_committed(log)) == latest
    assert_stable(log)
    view = committed_view(log)
    entries = txn_entries(log)
    assert entries == []
    hw = log.high_watermark
    log.close()

    if reopen == "replay_from_files":
        # A crash that lost every derived file: producer state and the aborted transaction
        # index are rebuilt by replaying the log from its start.
        for name in os.listdir(path):
            if name.endswith((".snapshot", ".txnindex")):
                os.unlink(os.path.join(path, name))
    elif reopen == "older_snapshot":
        for name in snapshots(path):
            if name != f"{before_p:020d}.snapshot":
                os.unlink(os.path.join(path, name))
        assert snapshots(path) == [f"{before_p:020d}.snapshot"]
    reopened = Log(
        path,
        COMPACT,
        topic="t",
        partition=0,
        clock_ms=clock,
        high_watermark=hw,
        clean_shutdown=reopen == "clean_shutdown",
    )
    try:
        assert_stable(reopened)
        assert committed_view(reopened) == view
        assert txn_entries(reopened) == entries
    finally:
        reopened.close()


def test_aborted_data_whose_marker_is_in_the_active_segment_supersedes_nothing(
    open_log, clock
) -> None:
    log = open_log(COMPACT)
    append_keyed(log, [(b"a", b"committed")])
    p = TxnProducer(1)
    p.append(log, [(b"a", b"aborted")])
    log.roll()
    p.end(log, committed=False)  # in the active segment: the transaction is decided
    assert log.last_stable_offset == log.high_watermark
    latest = latest_values(read_committed(log))
    assert latest == {b"a": b"committed"}
    clean(log, clock)
    assert latest_values(read_committed(log)) == latest
