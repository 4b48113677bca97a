"""TransactionStateManager driven alone (no TransactionCoordinator): loading a partition,
lookups, a transition written and installed (or aborted), writes failed by unloading, the
expiry of idle transactional ids, and listing."""

from __future__ import annotations

from common.error_codes import ErrorCode
from data_plane.coordinator.transaction_log_records import (
    TransactionLogValue,
    decode_transaction_log_key,
    transaction_log_key,
    transaction_log_value,
)
from data_plane.coordinator.transaction_outputs import TxnCoordinatorOutputs
from data_plane.coordinator.transaction_state import TransactionState
from data_plane.coordinator.transaction_state_manager import TransactionStateManager

NOW = 1_700_000_000_000
TID = "txn-app"


def value(state: TransactionState, partitions: tuple[tuple[str, int], ...] = ()) -> bytes:
    return transaction_log_value(TransactionLogValue(7, 2, 60_000, state, partitions, NOW, NOW))


def loaded(*records: tuple[str, bytes | None]) -> TransactionStateManager:
    """A manager of one partition at coordinator epoch 3, loaded from ``records``."""
    manager = TransactionStateManager(num_partitions=1)
    manager.begin_loading(0, 3)
    assert manager.lookup(TID)[0] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    for tid, v in records:
        manager.load_record(0, transaction_log_key(tid), v)
    return manager


def test_loading_keeps_the_last_record_and_reports_prepared_transactions() -> None:
    manager = loaded(
        (TID, value(TransactionState.ONGOING, (("t", 0),))),
        (TID, value(TransactionState.PREPARE_COMMIT, (("t", 0),))),
        ("gone", value(TransactionState.EMPTY)),
        ("gone", None),
        ("dead", value(TransactionState.DEAD)),
    )
    manager.load_record(0, b"\xff", b"")  # undecodable: skipped
    prepared = manager.complete_loading(0)
    assert prepared is not None and [md.transactional_id for md in prepared] == [TID]
    assert manager.complete_loading(0) is None  # not loading any more
    error, partition, md = manager.lookup(TID)
    assert error == ErrorCode.NO_ERROR and partition is not None
    assert md is not None and md.state is TransactionState.PREPARE_COMMIT
    assert md.partitions == {("t", 0)}
    assert manager.lookup("gone")[2] is None and manager.lookup("dead")[2] is None
    assert manager.open_transactions() == 1


def test_a_written_transition_is_installed_and_a_failed_one_aborted() -> None:
    manager = loaded((TID, value(TransactionState.EMPTY)))
    manager.complete_loading(0)
    _error, p, md = manager.lookup(TID)
    assert p is not None and md is not None
    heard: list[int] = []
    out = TxnCoordinatorOutputs()
    transit = md.prepare_transition(TransactionState.ONGOING, NOW, partitions=frozenset({("t", 1)}))
    manager.write(out, p, md, transit, lambda _o, code: heard.append(code))
    (write,) = out.writes
    assert decode_transaction_log_key(write.records[0][0]) == TID
    _out, installed = manager.complete_write(write.write_id, ErrorCode.NOT_ENOUGH_REPLICAS)
    assert installed is None and md.state is TransactionState.EMPTY and md.pending_state is None
    assert heard == [ErrorCode.COORDINATOR_NOT_AVAILABLE]
    transit = md.prepare_transition(TransactionState.ONGOING, NOW, partitions=frozenset({("t", 1)}))
    manager.write(out, p, md, transit, lambda _o, code: heard.append(code))
    _out, installed = manager.complete_write(out.writes[-1].write_id, ErrorCode.NO_ERROR)
    assert installed is md and md.state is TransactionState.ONGOING
    assert heard[-1] == ErrorCode.NO_ERROR


def test_unloading_fails_the_writes_in_flight() -> None:
    manager = loaded((TID, value(TransactionState.EMPTY)))
    manager.complete_loading(0)
    _error, p, md = manager.lookup(TID)
    assert p is not None and md is not None
    heard: list[int] = []
    out = TxnCoordinatorOutputs()
    transit = md.prepare_transition(TransactionState.ONGOING, NOW, partitions=frozenset({("t", 1)}))
    manager.write(out, p, md, transit, lambda _o, code: heard.append(code))
    manager.unload(0)
    assert heard == [ErrorCode.NOT_COORDINATOR]
    assert manager.lookup(TID)[0] == ErrorCode.NOT_COORDINATOR
    assert manager.complete_write(out.writes[0].write_id, ErrorCode.NO_ERROR)[1] is None


def test_idle_transactional_ids_expire_as_tombstones_and_are_not_listed() -> None:
    manager = loaded((TID, value(TransactionState.COMPLETE_COMMIT)))
    manager.complete_loading(0)
    error, unknown, found = manager.list_transactions({"Bogus"}, set(), -1, lambda _t: True, NOW)
    assert (error, unknown, found) == (ErrorCode.NO_ERROR, ["Bogus"], [])
    listed = manager.list_transactions(set(), set(), -1, lambda _t: True, NOW)[2]
    assert [md.transactional_id for md in listed] == [TID]
    out = TxnCoordinatorOutputs()
    manager.expire_transactional_ids(out, NOW + 1_000, 1_000)
    assert not out.writes  # idle for exactly the expiration: kept
    manager.expire_transactional_ids(out, NOW + 1_001, 1_000)
    (write,) = out.writes
    assert write.records[0][1] is None  # a tombstone
    manager.complete_write(write.write_id, ErrorCode.NO_ERROR)
    assert manager.lookup(TID)[2] is None
    assert manager.list_transactions(set(), set(), -1, lambda _t: True, NOW)[2] == []
