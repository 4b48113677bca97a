"""GroupMetadataManager and its per-kind parts (ClassicGroupManager, ConsumerGroupManager)
driven alone over a shard context (no GroupCoordinator, no offsets manager): joins, syncs,
timers, unloading, deletion, and groups rebuilt from loaded records."""

from __future__ import annotations

import uuid

from common.error_codes import ErrorCode
from data_plane.coordinator.classic_group_records import classic_group_record
from data_plane.coordinator.consumer_assignors import AssignorTopic
from data_plane.coordinator.group import GroupState
from data_plane.coordinator.group_metadata_manager import GroupMetadataManager, GroupRecordsLoad
from data_plane.coordinator.group_metadata_records import (
    GroupKey,
    decode_group_value,
    group_metadata_key,
)
from data_plane.coordinator.messages import (
    ConsumerHeartbeatRequest,
    CoordinatorOutputs,
    JoinGroupRequest,
    JoinGroupResult,
    SyncGroupRequest,
    SyncGroupResult,
)
from data_plane.coordinator.record_writes import Records
from data_plane.coordinator.skipped_records import SkippedRecords
from tests.unit.coordinator.harness import RANGE
from tests.unit.coordinator.parts import Parts

SESSION_MS = 10_000


def join(p: Parts, groups: GroupMetadataManager, member_id: str = "", group: str = "g") -> int:
    token = p.token()
    req = JoinGroupRequest(group, member_id, None, SESSION_MS, 5_000, "consumer", RANGE, "c")
    p.absorb(groups.classic.join_group(token, req))
    return token


def tick(p: Parts, groups: GroupMetadataManager) -> None:
    out = CoordinatorOutputs()
    groups.check_timeouts(p.clock(), out)
    p.absorb(out)


def stable_member(p: Parts, groups: GroupMetadataManager) -> tuple[str, int]:
    """One member joined and synced; (its id, the generation)."""
    token = join(p, groups)
    tick(p, groups)  # the initial rebalance delay (0 ms) passes
    joined = p.results[token]
    assert isinstance(joined, JoinGroupResult) and joined.error_code == ErrorCode.NO_ERROR
    mid, generation = joined.member_id, joined.generation_id
    sync = p.token()
    req = SyncGroupRequest("g", generation, mid, None, ((mid, b"assignment"),))
    p.absorb(groups.classic.sync_group(sync, req))
    assert sync not in p.results  # answered once the assignment is written
    p.complete_writes()
    assert p.results[sync] == SyncGroupResult(
        ErrorCode.NO_ERROR, b"assignment", "consumer", "range"
    )
    return mid, generation


def test_a_classic_member_joins_and_syncs_through_the_manager() -> None:
    p = Parts()
    groups = GroupMetadataManager(p.ctx)
    mid, generation = stable_member(p, groups)
    group = groups.group("g")
    assert group is not None and group.is_(GroupState.STABLE) and generation == 1
    assert groups.classic.heartbeat("g", generation, mid) == ErrorCode.NO_ERROR
    description = groups.describe_group("g")
    assert description.state == "Stable" and description.members[0].assignment == b"assignment"
    assert groups.list_groups() == (ErrorCode.NO_ERROR, [("g", "consumer", "Stable", "classic")])


def test_a_silent_member_expires_on_the_timer() -> None:
    p = Parts()
    groups = GroupMetadataManager(p.ctx)
    stable_member(p, groups)
    p.clock.now_ms += SESSION_MS - 1
    tick(p, groups)
    group = groups.group("g")
    assert group is not None and group.members
    p.clock.now_ms += 1
    tick(p, groups)
    assert group is not None and group.is_(GroupState.EMPTY) and not group.members
    (write,) = p.complete_writes()  # the empty generation
    assert decode_group_value(write.records[0][1] or b"").members == ()


def test_a_group_of_a_partition_not_owned_is_refused() -> None:
    p = Parts()
    p.ctx.ownership.set_num_partitions(2)  # half the groups now live in partition 1
    groups = GroupMetadataManager(p.ctx)
    gid = next(g for g in (f"g{i}" for i in range(100)) if p.ctx.ownership.partition_of(g) == 1)
    token = join(p, groups, group=gid)
    assert p.results[token].error_code == ErrorCode.NOT_COORDINATOR
    assert groups.group(gid) is None


def test_unloading_answers_parked_joins_and_drops_the_groups() -> None:
    p = Parts(group_initial_rebalance_delay_ms=3_000)
    groups = GroupMetadataManager(p.ctx)
    token = join(p, groups)
    assert token not in p.results  # parked in the initial delay
    group = groups.group("g")
    out = CoordinatorOutputs()
    groups.unload(0, out)
    p.absorb(out)
    assert p.results[token] == JoinGroupResult(ErrorCode.NOT_COORDINATOR)
    assert groups.group("g") is None and group is not None and group.is_(GroupState.DEAD)


def test_deletion_is_validated_and_tombstones_the_group() -> None:
    p = Parts()
    groups = GroupMetadataManager(p.ctx)
    assert groups.validate_delete_group("")[0] == ErrorCode.INVALID_GROUP_ID
    assert groups.validate_delete_group("g")[0] == ErrorCode.GROUP_ID_NOT_FOUND
    mid, _ = stable_member(p, groups)
    assert groups.validate_delete_group("g")[0] == ErrorCode.NON_EMPTY_GROUP
    _error, out = groups.classic.leave_group("g", mid)
    p.absorb(out)
    p.complete_writes()
    error, group = groups.validate_delete_group("g")
    assert error == ErrorCode.NO_ERROR and group is not None
    records: Records = []
    groups.delete_group(group, p.clock(), records)
    assert records == [(group_metadata_key("g"), None)]
    assert groups.group("g") is None and group.is_(GroupState.DEAD)


def test_maybe_delete_group_keeps_a_group_with_members() -> None:
    p = Parts()
    groups = GroupMetadataManager(p.ctx)
    mid, _ = stable_member(p, groups)
    group = groups.group("g")
    assert group is not None
    records: Records = []
    assert not groups.maybe_delete_group(group, p.clock(), records) and not records
    _error, out = groups.classic.leave_group("g", mid)
    p.absorb(out)
    assert groups.maybe_delete_group(group, p.clock(), records)
    assert records == [(group_metadata_key("g"), None)]  # it had generations: tombstoned


def test_a_classic_group_is_rebuilt_from_its_loaded_record() -> None:
    p = Parts()
    source = GroupMetadataManager(p.ctx)
    mid, generation = stable_member(p, source)
    group = source.group("g")
    assert group is not None
    ((key, value),) = classic_group_record(group, {mid: b"assignment"})
    load = GroupRecordsLoad()
    load.replay_group(GroupKey("g"), value)
    load.replay_group(GroupKey("gone"), None)
    assert load.group_ids() == {"g", "gone"}
    fresh = GroupMetadataManager(Parts().ctx)
    skipped = SkippedRecords(0)
    rebuilt = fresh.load_group(0, load, "g", p.clock(), skipped)
    assert rebuilt is not None and rebuilt.is_(GroupState.STABLE)
    assert rebuilt.generation_id == generation and rebuilt.leader_id == mid
    assert rebuilt.members[mid].assignment == b"assignment"
    assert fresh.load_group(0, load, "gone", p.clock(), skipped) is None
    assert skipped.count == 0 and key == group_metadata_key("g")


def test_a_consumer_protocol_member_joins_and_is_fenced_when_silent() -> None:
    p = Parts(consumer_session_timeout_ms=45_000)
    groups = GroupMetadataManager(p.ctx)
    topic = uuid.UUID(int=1)
    topics = {"t": AssignorTopic(topic, "t", 2)}
    token = p.token()
    req = ConsumerHeartbeatRequest(
        "g", "", 0, rebalance_timeout_ms=60_000, subscribed_topic_names=("t",), owned={}
    )
    p.absorb(groups.consumer.consumer_group_heartbeat(token, req, topics))
    assert token not in p.results  # answered once the group's records are written
    p.complete_writes()
    result = p.results[token]
    assert result.error_code == ErrorCode.NO_ERROR
    assert result.assignment == {topic: frozenset({0, 1})}
    description = groups.consumer.consumer_group_describe("g")
    assert result.member_epoch == description.group_epoch
    assert description.members[0].member_id == result.member_id
    p.clock.now_ms += 45_000
    tick(p, groups)
    group = groups.group("g")
    assert group is not None and group.consumer is not None and not group.consumer.members
    assert p.complete_writes()  # the fenced member's records
