"""OffsetMetadataManager driven alone over a shard context (no GroupCoordinator, no group
membership manager): commits, transactional commits held until the marker, fetch, delete,
retention, and the offsets rebuilt from loaded records."""

from __future__ import annotations

from common.error_codes import ErrorCode
from data_plane.coordinator.group import GroupMetadata, GroupState, MemberMetadata
from data_plane.coordinator.group_metadata_records import (
    OffsetAndMetadata,
    OffsetKey,
    decode_key,
    offset_commit_key,
    offset_commit_value,
)
from data_plane.coordinator.messages import (
    OffsetCommitRequest,
    OffsetCommitResult,
    OffsetDeleteResult,
    TxnOffsetCommitRequest,
)
from data_plane.coordinator.offset_metadata_manager import OffsetMetadataManager, OffsetRecordsLoad
from data_plane.coordinator.record_writes import Records
from data_plane.coordinator.skipped_records import SkippedRecords
from tests.unit.coordinator.parts import Parts

TP = ("t", 0)


def commit(
    p: Parts,
    offsets: OffsetMetadataManager,
    offset: int,
    *,
    group: str = "g",
    generation: int = -1,
    member_id: str = "",
) -> int:
    token = p.token()
    req = OffsetCommitRequest(group, generation, member_id, None, ((TP, offset, -1, None),))
    p.absorb(offsets.commit_offsets(token, req))
    return token


def committed(offsets: OffsetMetadataManager, group: str = "g") -> int | None:
    value = offsets.fetch_offsets(group, [TP]).offsets[TP]
    return value.offset if value is not None else None


def stable_classic_group(p: Parts, member_id: str = "m1") -> GroupMetadata:
    """A Stable classic group of one member at generation 1, built without a group manager."""
    now = p.clock()
    group = p.ctx.groups.create("g", 0, now)
    group.add(MemberMetadata(member_id, None, "c", "h", 5000, 10_000, "consumer", [], now))
    group.generation_id = 1
    group.transition_to(GroupState.PREPARING_REBALANCE, now)
    group.transition_to(GroupState.COMPLETING_REBALANCE, now)
    group.transition_to(GroupState.STABLE, now)
    return group


def test_a_simple_commit_creates_the_group_and_counts_once_written() -> None:
    p = Parts()
    offsets = OffsetMetadataManager(p.ctx)
    token = commit(p, offsets, 5)
    group = p.ctx.groups.get("g")
    assert group is not None and group.is_(GroupState.EMPTY)
    assert token not in p.results and committed(offsets) is None  # not yet replicated
    (write,) = p.complete_writes()
    key = decode_key(write.records[0][0])
    assert isinstance(key, OffsetKey) and (key.group, key.topic, key.partition) == ("g", "t", 0)
    assert p.results[token] == OffsetCommitResult({TP: ErrorCode.NO_ERROR})
    assert committed(offsets) == 5


def test_a_member_commit_to_an_unknown_group_is_refused_without_creating_it() -> None:
    p = Parts()
    offsets = OffsetMetadataManager(p.ctx)
    token = commit(p, offsets, 5, generation=1, member_id="m1")
    assert p.results[token].errors == {TP: ErrorCode.ILLEGAL_GENERATION}
    assert p.ctx.groups.get("g") is None and not p.writes


def test_a_member_commit_is_checked_against_the_generation_and_renews_the_session() -> None:
    p = Parts()
    offsets = OffsetMetadataManager(p.ctx)
    group = stable_classic_group(p)
    stale = commit(p, offsets, 5, generation=2, member_id="m1")
    assert p.results[stale].errors == {TP: ErrorCode.ILLEGAL_GENERATION}
    p.clock.now_ms += 1_000
    ok = commit(p, offsets, 6, generation=1, member_id="m1")
    p.complete_writes()
    assert p.results[ok].errors == {TP: ErrorCode.NO_ERROR}
    assert group.members["m1"].last_heartbeat_ms == p.clock()
    assert p.ctx.groups.next_deadline_ms() == p.clock() + 10_000  # the renewed session
    simple = commit(p, offsets, 7)  # a group with members takes no simple commits
    assert p.results[simple].errors == {TP: ErrorCode.ILLEGAL_GENERATION}


def test_transactional_offsets_wait_for_the_marker() -> None:
    p = Parts()
    offsets = OffsetMetadataManager(p.ctx)
    token = p.token()
    req = TxnOffsetCommitRequest("tx", "g", 7, 0, ((TP, 9, -1, None),))
    p.absorb(offsets.txn_commit_offsets(token, req))
    assert offsets.fetch_offsets("g", [TP], require_stable=True).unstable == {TP}
    (write,) = p.complete_writes()
    assert (write.producer_id, write.producer_epoch) == (7, 0)
    assert p.results[token].errors == {TP: ErrorCode.NO_ERROR}
    assert committed(offsets) is None  # pending until the marker
    assert offsets.fetch_offsets("g", [TP], require_stable=True).unstable == {TP}
    offsets.complete_transaction(0, 7, committed=True)
    assert committed(offsets) == 9
    assert offsets.fetch_offsets("g", [TP], require_stable=True).unstable == frozenset()


def test_an_aborted_transaction_drops_its_offsets() -> None:
    p = Parts()
    offsets = OffsetMetadataManager(p.ctx)
    p.absorb(
        offsets.txn_commit_offsets(
            p.token(), TxnOffsetCommitRequest("tx", "g", 7, 0, ((TP, 9, -1, None),))
        )
    )
    p.complete_writes()
    offsets.complete_transaction(0, 7, committed=False)
    assert committed(offsets) is None
    group = p.ctx.groups.get("g")
    assert group is not None and not group.pending_txn_offsets


def test_expired_offsets_get_tombstones_and_the_group_may_then_go() -> None:
    p = Parts(offsets_retention_ms=60_000)
    offsets = OffsetMetadataManager(p.ctx)
    commit(p, offsets, 5)
    p.complete_writes()
    group = p.ctx.groups.get("g")
    assert group is not None
    records: Records = []
    assert not offsets.cleanup_expired_offsets(group, p.clock() + 59_999, records)
    assert records == []
    assert offsets.cleanup_expired_offsets(group, p.clock() + 60_000, records)
    assert records == [(offset_commit_key("g", "t", 0), None)] and not group.offsets


def test_a_commit_in_flight_holds_back_retention_and_deletion() -> None:
    p = Parts(offsets_retention_ms=0)
    offsets = OffsetMetadataManager(p.ctx)
    commit(p, offsets, 5)  # not completed
    group = p.ctx.groups.get("g")
    assert group is not None and offsets.has_commits_in_flight(group)
    records: Records = []
    assert not offsets.cleanup_expired_offsets(group, p.clock() + 1, records) and not records
    p.complete_writes()
    assert not offsets.has_commits_in_flight(group)
    offsets.delete_all_offsets(group, records)
    assert records == [(offset_commit_key("g", "t", 0), None)]


def test_offset_delete_of_an_empty_group_writes_tombstones() -> None:
    p = Parts()
    offsets = OffsetMetadataManager(p.ctx)
    commit(p, offsets, 5)
    p.complete_writes()
    token = p.token()
    p.absorb(offsets.delete_offsets(token, "g", [TP, ("t", 1)]))
    (write,) = p.complete_writes()
    assert write.records == ((offset_commit_key("g", "t", 0), None),)
    assert p.results[token] == OffsetDeleteResult(
        ErrorCode.NO_ERROR, {TP: ErrorCode.NO_ERROR, ("t", 1): ErrorCode.NO_ERROR}
    )
    assert committed(offsets) is None


def test_loaded_offsets_count_committed_transactions_only() -> None:
    value = offset_commit_value(OffsetAndMetadata(3, -1, "", 1_000))
    later = offset_commit_value(OffsetAndMetadata(4, -1, "", 1_000))
    load = OffsetRecordsLoad()
    load.replay_offset(OffsetKey("g", "t", 0), value)
    load.replay_offset(OffsetKey("g", "t", 1), value)
    load.replay_offset(OffsetKey("g", "t", 1), None)  # tombstoned
    load.replay_txn_offset(7, OffsetKey("g", "t", 2), value)
    load.replay_marker(7, committed=True)
    load.replay_txn_offset(8, OffsetKey("g", "t", 3), value)
    load.replay_marker(8, committed=False)
    load.replay_txn_offset(9, OffsetKey("h", "t", 0), later)  # still open
    assert load.group_ids() == {"g", "h"}
    skipped = SkippedRecords(0)
    g = GroupMetadata("g", 0)
    assert OffsetMetadataManager.load_offsets(load, g, skipped)
    assert {tp: o.offset for tp, o in g.offsets.items()} == {("t", 0): 3, ("t", 2): 3}
    h = GroupMetadata("h", 0)
    assert OffsetMetadataManager.load_offsets(load, h, skipped)
    assert not h.offsets and h.pending_txn_offsets[9][("t", 0)].offset == 4
    load.replay_offset(OffsetKey("bad", "t", 0), b"\xff")
    bad = GroupMetadata("bad", 0)
    assert not OffsetMetadataManager.load_offsets(load, bad, skipped) and skipped.count == 1
