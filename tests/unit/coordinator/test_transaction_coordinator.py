"""The transaction coordinator state machine, driven by hand: writes and markers complete
when the test says so, the clock moves when the test says so."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from common.error_codes import ErrorCode
from data_plane.coordinator.transaction_coordinator import (
    MAX_PARK_MS,
    InitProducerIdResult,
    MarkerRequest,
    TransactionCoordinator,
    TransactionCoordinatorConfig,
    TxnCoordinatorOutputs,
)
from data_plane.coordinator.transaction_log_records import (
    TransactionLogValue,
    decode_transaction_log_key,
    decode_transaction_log_value,
    transaction_log_key,
    transaction_log_value,
)
from data_plane.coordinator.transaction_state import (
    IllegalTransitionError,
    TransactionMetadata,
    TransactionState,
)

NOW = 1_700_000_000_000
TID = "txn-app"
PARTITIONS = 4


class Harness:
    """A coordinator leading every ``__transaction_state`` partition at epoch 3, with the
    log and the markers it asked for kept in view."""

    def __init__(self, **config: Any) -> None:
        self.now = NOW
        self.coordinator = TransactionCoordinator(
            TransactionCoordinatorConfig(**config),
            num_partitions=PARTITIONS,
            clock_ms=lambda: self.now,
        )
        self.responses: dict[Any, Any] = {}
        self.pending_writes: list[Any] = []
        self.log: list[tuple[int, bytes, bytes | None]] = []  # replicated records
        self.markers: list[MarkerRequest] = []
        self._waiters = itertools.count(1)
        self.pids = itertools.count(1000)
        for p in range(PARTITIONS):
            self.coordinator.begin_loading(p, 3)
            self.coordinator.complete_loading(p)

    def take(self, out: TxnCoordinatorOutputs) -> None:
        self.responses.update(out.responses)
        self.pending_writes.extend(out.writes)
        self.markers.extend(out.markers)

    def flush_writes(self, error: int = 0) -> None:
        """Complete every pending write (and those they start), in order."""
        for _ in range(100):
            if not self.pending_writes:
                return
            w = self.pending_writes.pop(0)
            if error == 0:
                self.log.extend((w.partition, k, v) for k, v in w.records)
            self.take(self.coordinator.complete_write(w.write_id, error))

    def flush_markers(self) -> list[MarkerRequest]:
        done = self.markers
        self.markers = []
        for m in done:
            self.take(
                self.coordinator.complete_markers(
                    m.transactional_id, m.producer_id, m.producer_epoch, m.coordinator_epoch
                )
            )
        self.flush_writes()
        return done

    def call(self, fn, *args, flush: bool = True) -> Any:
        waiter = next(self._waiters)
        self.take(fn(waiter, *args))
        if flush:
            self.flush_writes()
        return self.responses.get(waiter)

    def init(self, tid: str = TID, timeout_ms: int = 60_000, *, flush: bool = True) -> Any:
        c = self.coordinator
        pid = next(self.pids) if c.needs_producer_id(tid) else None
        return self.call(c.init_producer_id, tid, timeout_ms, pid, flush=flush)

    def add(self, r: InitProducerIdResult, *parts: tuple[str, int], tid: str = TID) -> Any:
        return self.call(
            self.coordinator.add_partitions, tid, r.producer_id, r.producer_epoch, list(parts)
        )

    def end(self, r: InitProducerIdResult, committed: bool, tid: str = TID) -> Any:
        return self.call(self.coordinator.end_txn, tid, r.producer_id, r.producer_epoch, committed)

    def state(self, tid: str = TID) -> TransactionState:
        md = self.coordinator.transaction(tid)
        assert md is not None
        return md.state


@pytest.fixture
def h() -> Harness:
    return Harness()


def test_init_gives_a_new_id_then_bumps_the_epoch(h) -> None:
    first = h.init()
    assert first.error_code == 0 and first.producer_epoch == 0
    second = h.init()
    assert (second.producer_id, second.producer_epoch) == (first.producer_id, 1)
    assert h.state() is TransactionState.EMPTY
    # Every step was written to the transaction's partition, in Kafka's format.
    p = h.coordinator.partition_for(TID)
    assert {part for part, _k, _v in h.log} == {p}
    last = decode_transaction_log_value(h.log[-1][2])
    assert (last.producer_epoch, last.state) == (1, TransactionState.EMPTY)


def test_commit_flow_writes_prepare_markers_and_complete(h) -> None:
    r = h.init()
    assert h.add(r, ("orders", 0), ("orders", 1)) == 0
    assert h.state() is TransactionState.ONGOING
    assert h.add(r, ("orders", 1)) == 0  # nothing new: answered at once
    assert h.end(r, True) == 0
    assert h.state() is TransactionState.PREPARE_COMMIT
    (marker,) = h.markers
    assert marker.committed and marker.coordinator_epoch == 3
    assert marker.partitions == (("orders", 0), ("orders", 1))
    # A retry while markers are in flight, then once complete.
    assert h.end(r, True) == ErrorCode.CONCURRENT_TRANSACTIONS
    h.flush_markers()
    assert h.state() is TransactionState.COMPLETE_COMMIT
    assert h.end(r, True) == 0
    assert h.end(r, False) == ErrorCode.INVALID_TXN_STATE
    # The next transaction starts from CompleteCommit.
    assert h.add(r, ("orders", 3)) == 0
    assert h.coordinator.transaction(TID).partitions == {("orders", 3)}


def test_end_without_a_transaction_is_invalid(h) -> None:
    r = h.init()
    assert h.end(r, True) == ErrorCode.INVALID_TXN_STATE


def test_fencing_by_epoch_and_by_producer_id(h) -> None:
    old = h.init()
    assert h.add(old, ("t", 0)) == 0
    new = h.init()
    # The ongoing transaction is aborted first: the new producer retries.
    assert new.error_code == ErrorCode.CONCURRENT_TRANSACTIONS
    assert h.state() is TransactionState.PREPARE_ABORT
    assert h.end(old, True) == ErrorCode.PRODUCER_FENCED
    assert h.add(old, ("t", 1)) == ErrorCode.PRODUCER_FENCED
    (marker,) = h.flush_markers()
    assert not marker.committed and marker.producer_epoch == old.producer_epoch + 1
    new = h.init()
    assert new.error_code == 0 and new.producer_epoch == old.producer_epoch + 2
    wrong_pid = InitProducerIdResult(0, new.producer_id + 1, new.producer_epoch)
    assert h.add(wrong_pid, ("t", 0)) == ErrorCode.INVALID_PRODUCER_ID_MAPPING


def test_timeout_aborts_and_fences(h) -> None:
    r = h.init(timeout_ms=5_000)
    assert h.add(r, ("t", 0)) == 0
    h.now += 4_000
    h.take(h.coordinator.tick())
    assert h.state() is TransactionState.ONGOING
    h.now += 20_000
    h.take(h.coordinator.tick())
    h.flush_writes()
    assert h.state() is TransactionState.PREPARE_ABORT
    assert h.end(r, True) == ErrorCode.PRODUCER_FENCED
    h.flush_markers()
    assert h.state() is TransactionState.COMPLETE_ABORT


def test_invalid_timeout_and_empty_id(h) -> None:
    assert h.init(timeout_ms=0).error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert h.init(timeout_ms=900_001).error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert h.init(tid="").error_code == ErrorCode.INVALID_REQUEST


def test_failed_write_leaves_the_state_and_maps_the_error(h) -> None:
    r = h.init()
    waiter = "w"
    h.take(h.coordinator.add_partitions(waiter, TID, r.producer_id, r.producer_epoch, [("t", 0)]))
    h.flush_writes(error=ErrorCode.NOT_ENOUGH_REPLICAS)
    assert h.responses[waiter] == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert h.state() is TransactionState.EMPTY
    assert h.add(r, ("t", 0)) == 0  # the retry succeeds


def test_concurrent_request_while_a_write_is_pending(h) -> None:
    r = h.init()
    h.call(
        h.coordinator.add_partitions, TID, r.producer_id, r.producer_epoch, [("t", 0)], flush=False
    )
    assert h.add(r, ("t", 1)) == ErrorCode.CONCURRENT_TRANSACTIONS


def test_not_coordinator_and_loading(h) -> None:
    p = h.coordinator.partition_for(TID)
    h.take(h.coordinator.unload(p))
    assert h.init().error_code == ErrorCode.NOT_COORDINATOR
    h.take(h.coordinator.begin_loading(p, 4))
    assert h.init().error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


def test_leadership_lost_while_writing_answers_not_coordinator(h) -> None:
    r = h.init()
    h.add(r, ("t", 0))
    h.take(h.coordinator.end_txn("w", TID, r.producer_id, r.producer_epoch, True))
    assert "w" not in h.responses  # waiting for its write
    h.take(h.coordinator.unload(h.coordinator.partition_for(TID)))
    assert h.responses["w"] == ErrorCode.NOT_COORDINATOR
    h.flush_writes()
    assert h.markers == []


@pytest.mark.parametrize("committed", [True, False])
def test_new_coordinator_completes_prepared_transactions(h, committed) -> None:
    r = h.init()
    h.add(r, ("t", 0), ("u", 2))
    h.end(r, committed)
    h.markers.clear()  # the old coordinator died before writing its markers
    p = h.coordinator.partition_for(TID)
    successor = Harness()
    successor.coordinator.begin_loading(p, 4)
    for part, key, value in h.log:
        if part == p:
            successor.coordinator.load_record(p, key, value)
    assert successor.init().error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    successor.take(successor.coordinator.complete_loading(p))
    (marker,) = successor.markers
    assert marker.committed == committed and marker.coordinator_epoch == 4
    assert marker.partitions == (("t", 0), ("u", 2))
    successor.flush_markers()
    assert successor.state() is (
        TransactionState.COMPLETE_COMMIT if committed else TransactionState.COMPLETE_ABORT
    )
    again = successor.init()
    assert (again.producer_id, again.producer_epoch) == (r.producer_id, r.producer_epoch + 1)


def test_idle_transactional_ids_expire_with_a_tombstone() -> None:
    h = Harness(transactional_id_expiration_ms=60_000, remove_expired_interval_ms=1_000)
    r = h.init(timeout_ms=900_000)
    h.add(r, ("t", 0))
    h.now += 120_000
    h.take(h.coordinator.tick())
    h.flush_writes()
    assert h.state() is TransactionState.ONGOING  # an open transaction never expires
    h.end(r, True)
    h.flush_markers()
    h.now += 120_000
    h.take(h.coordinator.tick())
    h.flush_writes()
    assert h.coordinator.transaction(TID) is None
    assert h.log[-1][2] is None


def test_epoch_exhaustion_rotates_the_producer_id(h) -> None:
    r = h.init()
    md = h.coordinator.transaction(TID)
    md.producer_epoch = 32_766
    nxt = h.init()
    assert nxt.error_code == 0
    assert nxt.producer_id != r.producer_id and nxt.producer_epoch == 0


def test_records_round_trip_and_illegal_transitions() -> None:
    value = TransactionLogValue(
        producer_id=7,
        producer_epoch=2,
        transaction_timeout_ms=60_000,
        state=TransactionState.ONGOING,
        partitions=(("a", 0), ("a", 3), ("b", 1)),
        last_update_timestamp_ms=NOW,
        start_timestamp_ms=NOW - 5,
    )
    assert decode_transaction_log_value(transaction_log_value(value)) == value
    assert decode_transaction_log_key(transaction_log_key("x")) == "x"
    md = TransactionMetadata("x", 7, 0, 1000, TransactionState.EMPTY)
    with pytest.raises(IllegalTransitionError):
        md.prepare_transition(TransactionState.PREPARE_COMMIT, NOW)


def test_next_transaction_waits_for_the_previous_ones_markers() -> None:
    h = Harness()
    r = h.init()
    h.add(r, ("t", 0))
    h.end(r, True)
    # The producer's next transaction starts while the markers are still being written: the
    # request is parked, not bounced with CONCURRENT_TRANSACTIONS.
    h.take(h.coordinator.add_partitions("next", TID, r.producer_id, r.producer_epoch, [("t", 1)]))
    assert "next" not in h.responses
    h.flush_markers()
    assert h.responses["next"] == 0
    assert h.state() is TransactionState.ONGOING
    assert h.coordinator.transaction(TID).partitions == {("t", 1)}
    # A parked request whose markers never complete is answered at its deadline.
    h.end(r, False)
    h.take(h.coordinator.add_partitions("late", TID, r.producer_id, r.producer_epoch, [("t", 2)]))
    h.now += MAX_PARK_MS + 1
    h.take(h.coordinator.tick())
    assert h.responses["late"] == ErrorCode.CONCURRENT_TRANSACTIONS


def test_describe_and_list_transactions(h) -> None:
    c = h.coordinator
    assert c.describe("nobody") == (ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, None)
    a = h.init("a")
    b = h.init("b")
    h.add(a, ("t", 0), ("t", 1), ("u", 0), tid="a")
    h.add(b, ("t", 2), tid="b")
    h.end(b, True, tid="b")
    h.flush_markers()
    error, md = c.describe("a")
    assert error == ErrorCode.NO_ERROR and md is not None
    assert (md.state, md.partitions) == (TransactionState.ONGOING, {("t", 0), ("t", 1), ("u", 0)})
    assert md.txn_start_timestamp_ms == NOW

    def listed(**kw: Any) -> tuple[int, list[str], list[str]]:
        args = {"states": set(), "pids": set(), "duration": -1, "match": lambda _t: True, **kw}
        code, unknown, found = c.list_transactions(
            args["states"], args["pids"], args["duration"], args["match"]
        )
        return code, unknown, sorted(m.transactional_id for m in found)

    assert listed() == (0, [], ["a", "b"])
    assert listed(states={"Ongoing", "Napping"}) == (0, ["Napping"], ["a"])
    assert listed(pids={b.producer_id}) == (0, [], ["b"])
    assert listed(match=lambda t: t == "b") == (0, [], ["b"])
    h.now += 5_000
    assert listed(states={"Ongoing"}, duration=4_999) == (0, [], ["a"])
    assert listed(states={"Ongoing"}, duration=5_000) == (0, [], [])
    # A loading partition makes any listing partial: COORDINATOR_LOAD_IN_PROGRESS.
    h.take(c.begin_loading(c.partition_for("a"), 4))
    assert listed()[0] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert c.describe("a") == (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, None)
    h.take(c.unload(c.partition_for("a")))
    assert c.describe("a") == (ErrorCode.NOT_COORDINATOR, None)


def test_verify_partitions_confirms_only_partitions_of_the_ongoing_transaction(h) -> None:
    c = h.coordinator
    r = h.init()
    pid, epoch = r.producer_id, r.producer_epoch
    assert c.verify_partitions(TID, pid, epoch, [("t", 0)]) == {
        ("t", 0): ErrorCode.INVALID_TXN_STATE  # Empty: no transaction yet
    }
    h.add(r, ("t", 0))
    assert c.verify_partitions(TID, pid, epoch, [("t", 0), ("t", 1)]) == {
        ("t", 0): ErrorCode.NO_ERROR,
        ("t", 1): ErrorCode.INVALID_TXN_STATE,
    }
    assert c.verify_partitions(TID, pid, epoch + 1, [("t", 0)]) == {
        ("t", 0): ErrorCode.PRODUCER_FENCED
    }
    assert c.verify_partitions(TID, pid + 1, epoch, [("t", 0)]) == {
        ("t", 0): ErrorCode.INVALID_PRODUCER_ID_MAPPING
    }
    # Deciding (PrepareCommit written, markers pending): retry later.
    h.end(r, True)
    assert c.verify_partitions(TID, pid, epoch, [("t", 0)]) == {
        ("t", 0): ErrorCode.CONCURRENT_TRANSACTIONS
    }
    h.flush_markers()
    assert c.verify_partitions(TID, pid, epoch, [("t", 0)]) == {
        ("t", 0): ErrorCode.INVALID_TXN_STATE  # CompleteCommit: the transaction ended
    }
    assert c.verify_partitions("nobody", 1, 0, [("t", 0)]) == {
        ("t", 0): ErrorCode.INVALID_PRODUCER_ID_MAPPING
    }


def test_a_producer_bumps_its_own_epoch_and_a_zombie_is_fenced(h) -> None:
    """InitProducerId v3+ (KIP-360): naming the current id and epoch bumps it; a retry of that
    bump gets the same answer; a zombie naming an older epoch, or any epoch after another
    instance re-initialised, is fenced."""
    c = h.coordinator

    def bump(pid: int, epoch: int) -> InitProducerIdResult:
        return h.call(c.init_producer_id, TID, 60_000, None, pid, epoch)

    first = h.init()
    r = bump(first.producer_id, first.producer_epoch)
    assert (r.error_code, r.producer_id, r.producer_epoch) == (0, first.producer_id, 1)
    again = bump(first.producer_id, first.producer_epoch)  # the bump's retry
    assert (again.error_code, again.producer_epoch) == (0, 1)
    h.add(r, ("t", 0))
    h.end(r, False)
    h.flush_markers()
    assert bump(first.producer_id, 1).producer_epoch == 2  # after an aborted transaction
    assert bump(first.producer_id, 0).error_code == ErrorCode.PRODUCER_FENCED  # a zombie
    assert bump(first.producer_id + 7, 2).error_code == ErrorCode.PRODUCER_FENCED
    fresh = h.init()  # another instance, without naming an epoch: fences the others
    assert fresh.producer_epoch == 3
    assert bump(first.producer_id, 2).error_code == ErrorCode.PRODUCER_FENCED
