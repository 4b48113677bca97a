"""The pieces every part of the group coordinator shares: partition ownership, the group
store with its timers, and the pending writes."""

from __future__ import annotations

from common.error_codes import ErrorCode
from data_plane.coordinator.group_store import GroupStore
from data_plane.coordinator.messages import CoordinatorOutputs
from data_plane.coordinator.partition_ownership import PartitionOwnership
from data_plane.coordinator.record_writes import RecordWrites


def test_ownership_answers_by_the_state_of_the_groups_partition() -> None:
    ownership = PartitionOwnership()
    assert ownership.error("g") == ErrorCode.NOT_COORDINATOR  # no partition count yet
    ownership.set_num_partitions(1)
    assert ownership.error("g") == ErrorCode.NOT_COORDINATOR
    ownership.begin(0)
    assert ownership.error("g") == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert ownership.any_loading() and not ownership.is_loaded(0)
    ownership.mark_loaded(0)
    assert ownership.error("g") == ErrorCode.NO_ERROR and ownership.owned() == {0: True}
    assert ownership.drop(0) and not ownership.drop(0)
    assert ownership.error("g") == ErrorCode.NOT_COORDINATOR


def test_the_store_schedules_each_groups_earliest_deadline_once() -> None:
    store = GroupStore()
    group = store.create("g", 0, 1_000)
    group.rebalance_deadline_ms = 5_000
    store.schedule_next(group)
    store.schedule(group, 9_000)  # later than the scheduled one: ignored
    assert store.next_deadline_ms() == 5_000
    assert store.pop_due(4_999) == []
    assert store.pop_due(5_000) == ["g"]
    assert store.pop_due(9_000) == []  # the later entry was never the scheduled one
    store.schedule(group, 6_000)
    store.remove("g")
    assert store.pop_due(6_000) == [] and store.get("g") is None


def test_the_store_drops_a_group_that_holds_nothing() -> None:
    store = GroupStore()
    group = store.create("g", 0)
    group.pending_offset_commits = 1
    assert not store.drop_if_unused(group) and store["g"] is group
    group.pending_offset_commits = 0
    assert store.drop_if_unused(group) and store.get("g") is None


def test_a_write_is_answered_once_and_fails_when_its_partition_is_gone() -> None:
    writes = RecordWrites()
    heard: list[int] = []
    out = CoordinatorOutputs()
    writes.write(out, 0, [(b"k", b"v")], lambda error, _o: heard.append(error))
    writes.write(out, 1, [(b"k", None)], lambda error, _o: heard.append(error))
    first, second = out.writes
    assert first.records == ((b"k", b"v"),) and first.write_id != second.write_id
    writes.complete(first.write_id, ErrorCode.NO_ERROR, lambda p: True)
    writes.complete(first.write_id, ErrorCode.NO_ERROR, lambda p: True)  # already answered
    writes.complete(second.write_id, ErrorCode.NO_ERROR, lambda p: False)  # unloaded meanwhile
    assert heard == [ErrorCode.NO_ERROR, ErrorCode.NOT_LEADER_OR_FOLLOWER]
