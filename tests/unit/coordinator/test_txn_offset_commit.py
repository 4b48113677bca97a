"""TxnOffsetCommit in the group coordinator: offsets written in a producer's transaction are
invisible to OffsetFetch until the transaction's COMMIT marker, dropped on ABORT, rebuilt the
same way when the partition is loaded again, and fenced by member and generation when given."""

from __future__ import annotations

from common.error_codes import ErrorCode
from data_plane.coordinator.messages import TxnOffsetCommitRequest
from tests.unit.coordinator.harness import Harness

TP = ("t", 0)


def txn_commit(h: Harness, offset: int, *, pid: int = 7, member_id: str = "", gen: int = -1):
    token = h.token()
    req = TxnOffsetCommitRequest(
        "tx", "g", pid, 0, ((TP, offset, -1, None),), generation_id=gen, member_id=member_id
    )
    h.absorb(h.c.txn_commit_offsets(token, req))
    return h.results[token]


def committed(h: Harness) -> int | None:
    value = h.c.fetch_offsets("g", [TP]).offsets[TP]
    return None if value is None else value.offset


def test_offsets_count_only_after_the_commit_marker() -> None:
    h = Harness()
    assert txn_commit(h, 5).errors == {TP: ErrorCode.NO_ERROR}
    (write,) = h.written
    assert (write.producer_id, write.producer_epoch) == (7, 0)  # a transactional batch
    assert committed(h) is None
    h.c.complete_transaction(0, 7, committed=False)
    assert committed(h) is None
    txn_commit(h, 9)
    h.c.complete_transaction(0, 7, committed=True)
    assert committed(h) == 9


def test_loading_applies_markers_in_log_order() -> None:
    h = Harness()
    txn_commit(h, 5)
    txn_commit(h, 6, pid=8)
    key, value = h.written[0].records[0]
    key8, value8 = h.written[1].records[0]
    h.c.begin_loading(0)
    h.c.load_txn_record(0, 7, key, value)
    h.c.load_txn_record(0, 8, key8, value8)
    h.c.load_txn_marker(0, 7, committed=True)
    h.c.complete_loading(0)
    assert committed(h) == 5
    # Producer 8's transaction is still open: its offset is pending, then committed.
    h.c.complete_transaction(0, 8, committed=True)
    assert committed(h) == 6


def test_member_and_generation_are_checked_when_given() -> None:
    h = Harness()
    assert txn_commit(h, 5, member_id="nobody", gen=1).errors == {TP: ErrorCode.UNKNOWN_MEMBER_ID}
    assert h.written == []


def test_require_stable_names_partitions_with_a_pending_transactional_commit() -> None:
    h = Harness()
    txn_commit(h, 5)
    other = ("t", 1)
    stable = h.c.fetch_offsets("g", [TP, other], require_stable=True)
    assert stable.unstable == {TP}
    assert h.c.fetch_offsets("g", None, require_stable=True).unstable == {TP}
    assert h.c.fetch_offsets("g", [TP]).unstable == frozenset()  # not asked for
    h.c.complete_transaction(0, 7, committed=True)
    after = h.c.fetch_offsets("g", [TP], require_stable=True)
    assert after.unstable == frozenset() and after.offsets[TP].offset == 5


def test_a_marker_before_the_offsets_write_completes_leaves_nothing_pending() -> None:
    """The transaction ends (the coordinator aborted it: the producer timed out or was
    fenced) while its TxnOffsetCommit write is still being replicated: the write completing
    afterwards must not leave offsets pending with no marker to come, or every
    require_stable OffsetFetch of the partition would answer UNSTABLE_OFFSET_COMMIT for
    ever. While the write is in flight the partition is already unstable."""
    h = Harness()
    h.auto_complete_writes = False
    token = h.token()
    req = TxnOffsetCommitRequest("tx", "g", 7, 0, ((TP, 5, -1, None),))
    h.absorb(h.c.txn_commit_offsets(token, req))
    assert h.pending_writes and token not in h.results
    assert h.c.fetch_offsets("g", [TP], require_stable=True).unstable == {TP}
    h.absorb(h.c.complete_transaction(0, 7, committed=False))
    h.complete_writes()
    assert h.results[token].errors == {TP: ErrorCode.NO_ERROR}
    after = h.c.fetch_offsets("g", [TP], require_stable=True)
    assert after.unstable == frozenset() and after.offsets[TP] is None
    # The producer's next transaction is tracked afresh.
    h.auto_complete_writes = True
    txn_commit(h, 9)
    assert h.c.fetch_offsets("g", [TP], require_stable=True).unstable == {TP}
    h.c.complete_transaction(0, 7, committed=True)
    assert committed(h) == 9


def test_a_failed_offsets_write_leaves_the_partition_stable() -> None:
    h = Harness()
    h.auto_complete_writes = False
    token = h.token()
    req = TxnOffsetCommitRequest("tx", "g", 7, 0, ((TP, 5, -1, None),))
    h.absorb(h.c.txn_commit_offsets(token, req))
    h.complete_writes(ErrorCode.NOT_ENOUGH_REPLICAS)
    assert h.results[token].errors[TP] != ErrorCode.NO_ERROR
    assert h.c.fetch_offsets("g", [TP], require_stable=True).unstable == frozenset()
    assert h.c._groups["g"].txn_offsets_in_flight == {}  # nothing left behind
