"""Partition reassignment in the controller: start, completion through AlterPartition, leader
moves, epochs, cancel, refusals, listing, records old and new, snapshots."""

from __future__ import annotations

import uuid

import msgpack
import pytest

from common.error_codes import ErrorCode
from common.topic_partition import TopicPartition
from metadata.controller_config import ControllerConfig
from metadata.delta import MetadataDelta, apply_records
from metadata.election import InvariantViolation, check_partition
from metadata.image import MetadataImage, PartitionRegistration
from metadata.messages import (
    AlterPartitionItem,
    AlterPartitionReassignmentsRequest,
    AlterPartitionRequest,
    AlterPartitionResponse,
    AlterPartitionTopic,
    CreateTopicsRequest,
    ElectLeadersRequest,
    ListPartitionReassignmentsRequest,
    NewTopic,
    ReassignablePartition,
    ReassignablePartitionResult,
    ReassignableTopic,
)
from metadata.records import (
    PartitionChangeRecord,
    PartitionRecord,
    TopicRecord,
    decode_record,
    encode_record,
)
from metadata.result import ControllerResult
from tests.unit.metadata.harness import Harness

T = "moving"


def setup(brokers: list[int], assignment: list[int], **config: object) -> Harness:
    h = Harness(ControllerConfig(**config)) if config else Harness()
    h.add_brokers(brokers)
    res = h.create(T, -1, -1, replica_assignment={0: assignment})
    assert res.error_code == 0
    return h


def reassign(h: Harness, target: list[int] | None, pid: int = 0) -> ReassignablePartitionResult:
    req = AlterPartitionReassignmentsRequest(
        [ReassignableTopic(T, [ReassignablePartition(pid, target)])]
    )
    (result,) = h.commit(h.c.alter_partition_reassignments(req)).results
    return result


def reg(h: Harness, pid: int = 0) -> PartitionRegistration:
    p = h.image.partition(T, pid)
    assert p is not None
    return p


def expand_isr(h: Harness, new_isr: list[int], pid: int = 0) -> AlterPartitionResponse:
    p = reg(h, pid)
    leader = h.image.brokers[p.leader]
    req = AlterPartitionRequest(
        p.leader,
        leader.epoch,
        [
            AlterPartitionTopic(
                T, [AlterPartitionItem(pid, p.leader_epoch, new_isr, p.partition_epoch)]
            )
        ],
    )
    return h.commit(h.c.alter_partition(req))


def test_move_onto_a_new_broker_adds_then_completes_when_it_joins_the_isr() -> None:
    h = setup([1, 2, 3, 4], [1, 2, 3])
    before = reg(h)
    assert reassign(h, [1, 2, 4]).error_code == 0
    moving = reg(h)
    # Step 1: union of old and new, target order first; leader, ISR, leader epoch unchanged.
    assert moving.replicas == (1, 2, 4, 3)
    assert moving.adding_replicas == (4,) and moving.removing_replicas == (3,)
    assert moving.isr == before.isr and moving.leader == 1
    assert moving.leader_epoch == before.leader_epoch
    assert moving.partition_epoch == before.partition_epoch + 1
    # The new broker sees itself as a follower, broker 3 still hosts its replica.
    listed = h.c.list_partition_reassignments(ListPartitionReassignmentsRequest())
    assert [
        (r.name, r.replicas, r.adding_replicas, r.removing_replicas) for r in listed.reassignments
    ] == [(T, [1, 2, 4, 3], [4], [3])]
    assert (h.image.topic(T).topic_id, 0) in h.c.reassigning  # type: ignore[union-attr]
    # Step 2: the leader's ISR expansion that brings in broker 4 completes it in one record.
    resp = expand_isr(h, [1, 2, 3, 4])
    done = reg(h)
    assert done.replicas == (1, 2, 4)
    assert done.isr == (1, 2, 4)
    assert done.leader == 1
    assert not done.is_reassigning
    # A replica was removed: the leader epoch is bumped (fences broker 3's fetches).
    assert done.leader_epoch == before.leader_epoch + 1
    assert done.partition_epoch == moving.partition_epoch + 1
    item = resp.partitions[0]
    assert (item.error_code, item.isr, item.leader_epoch) == (0, [1, 2, 4], done.leader_epoch)
    assert h.c.reassigning == set()
    assert h.c.list_partition_reassignments(ListPartitionReassignmentsRequest()).reassignments == []


def test_isr_expansion_that_leaves_an_adding_replica_out_does_not_complete() -> None:
    h = setup([1, 2, 3, 4, 5], [1, 2, 3])
    assert reassign(h, [4, 5, 1]).error_code == 0
    assert reg(h).adding_replicas == (4, 5)
    h.commit(h.c.alter_partition_reassignments(AlterPartitionReassignmentsRequest([])))
    expand_isr(h, [1, 2, 3, 4])
    assert reg(h).is_reassigning and reg(h).isr == (1, 2, 3, 4)
    expand_isr(h, [1, 2, 3, 4, 5])
    done = reg(h)
    assert (done.replicas, done.isr, done.leader) == ((4, 5, 1), (1, 4, 5), 1)


def test_leader_being_removed_hands_over_to_the_first_target_isr_member() -> None:
    h = setup([1, 2, 3, 4], [1, 2, 3])
    before = reg(h)
    assert reassign(h, [4, 2, 3]).error_code == 0
    assert reg(h).leader == 1
    expand_isr(h, [1, 2, 3, 4])
    done = reg(h)
    assert (done.replicas, done.isr, done.leader) == ((4, 2, 3), (2, 3, 4), 4)
    assert done.leader_epoch == before.leader_epoch + 1


def test_pure_shrink_and_reorder_complete_at_once() -> None:
    h = setup([1, 2, 3], [1, 2, 3])
    e0 = reg(h).leader_epoch
    assert reassign(h, [3, 1]).error_code == 0
    p = reg(h)
    assert (p.replicas, p.isr, p.leader, p.is_reassigning) == ((3, 1), (1, 3), 1, False)
    assert p.leader_epoch == e0 + 1  # broker 2 removed
    assert reassign(h, [1, 3]).error_code == 0  # a reorder: no epoch bump, new preferred leader
    p = reg(h)
    assert (p.replicas, p.leader_epoch) == ((1, 3), e0 + 1)
    partition_epoch = p.partition_epoch
    assert reassign(h, [1, 3]).error_code == 0  # the same again: nothing to write
    assert reg(h).partition_epoch == partition_epoch


def test_preferred_election_after_a_move_gives_leadership_to_the_new_first_replica() -> None:
    h = setup([1, 2, 3, 4], [1, 2, 3])
    assert reassign(h, [4, 1, 2]).error_code == 0
    expand_isr(h, [1, 2, 3, 4])
    assert reg(h).leader == 1  # the leader was kept: it is still a replica
    (res,) = h.commit(h.c.elect_leaders(ElectLeadersRequest(0, {T: [0]}))).results
    assert res.error_code == 0
    assert reg(h).leader == 4


def test_auto_rebalance_spreads_leaders_over_a_new_broker() -> None:
    h = setup([1, 2, 3, 4], [1, 2, 3], leader_imbalance_check_interval_seconds=1)
    assignment = {p: [1, 2, 3] for p in range(4)}
    h.commit(h.c.create_topics(CreateTopicsRequest([NewTopic("spread", -1, -1, assignment)])))
    targets = {0: [1, 2, 4], 1: [2, 3, 4], 2: [3, 4, 1], 3: [4, 1, 2]}
    req = AlterPartitionReassignmentsRequest(
        [ReassignableTopic("spread", [ReassignablePartition(p, t) for p, t in targets.items()])]
    )
    assert all(r.error_code == 0 for r in h.commit(h.c.alter_partition_reassignments(req)).results)
    for pid in targets:
        p = h.image.partition("spread", pid)
        assert p is not None
        leader = h.image.brokers[p.leader]
        item = AlterPartitionItem(pid, p.leader_epoch, [*p.isr, 4], p.partition_epoch)
        h.commit(
            h.c.alter_partition(
                AlterPartitionRequest(
                    p.leader, leader.epoch, [AlterPartitionTopic("spread", [item])]
                )
            )
        )
    t = h.image.topic("spread")
    assert t is not None
    assert all(not p.is_reassigning for p in t.partitions.values())
    assert sorted(p.leader for p in t.partitions.values()) == [1, 1, 1, 2]
    h.tick(2000)
    t = h.image.topic("spread")
    assert t is not None
    leaders = sorted(p.leader for p in t.partitions.values())
    assert leaders == [1, 2, 3, 4]


def test_refusals() -> None:
    h = setup([1, 2, 3, 4], [1, 2, 3])
    offset = h.image.offset
    assert reassign(h, [1, 2, 9]).error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert reassign(h, [1, 1, 2]).error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert reassign(h, []).error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert reassign(h, None).error_code == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    assert reassign(h, [1, 2, 3], pid=7).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # A fenced target broker is refused.
    h.heartbeat(4, want_fence=True)
    assert h.image.brokers[4].fenced
    res = reassign(h, [1, 2, 4])
    assert res.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert "fenced" in (res.error_message or "")
    assert h.image.offset > offset  # only the fence was written
    assert not reg(h).is_reassigning
    twice = AlterPartitionReassignmentsRequest(
        [ReassignableTopic(T, [ReassignablePartition(0, [1, 2]), ReassignablePartition(0, [1, 3])])]
    )
    codes = [r.error_code for r in h.commit(h.c.alter_partition_reassignments(twice)).results]
    assert codes == [0, ErrorCode.INVALID_REQUEST]


def test_replication_factor_guard() -> None:
    """Without allow_replication_factor_change (KIP-860) a target must have as many brokers as
    the partition's replicas before any move in progress; other partitions are unaffected."""
    h = setup([1, 2, 3, 4, 5], [1, 2, 3])
    h.create("other", -1, -1, replica_assignment={0: [1, 2]})

    def guarded(*items: tuple[str, list[int]]) -> list[ReassignablePartitionResult]:
        req = AlterPartitionReassignmentsRequest(
            [ReassignableTopic(name, [ReassignablePartition(0, t)]) for name, t in items],
            allow_replication_factor_change=False,
        )
        return h.commit(h.c.alter_partition_reassignments(req)).results

    offset = h.image.offset
    grow, shrink = guarded((T, [1, 2, 3, 4]), ("other", [1]))
    assert grow.error_code == shrink.error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert grow.error_message == "the replication factor would change from 3 to 4"
    assert h.image.offset == offset and not reg(h).is_reassigning
    # A move keeping the size goes ahead; while it is in progress the factor is still 3 (the
    # replicas list holds 4 during the move), and a cancel needs no check.
    (moved,) = guarded((T, [1, 2, 4]))
    assert moved.error_code == 0 and len(reg(h).replicas) == 4
    assert guarded((T, [1, 2, 4, 5]))[0].error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert guarded((T, [1, 4, 5]))[0].error_code == 0
    assert reassign(h, None).error_code == 0
    # Allowed (the default, and what v0 clients get): the factor may change.
    assert reassign(h, [1, 2, 3, 4]).error_code == 0


def test_cancel_restores_the_original_replicas() -> None:
    h = setup([1, 2, 3, 4, 5], [1, 2, 3])
    before = reg(h)
    assert reassign(h, [4, 5, 3]).error_code == 0
    expand_isr(h, [1, 2, 3, 4])  # 4 caught up, 5 not yet
    assert reassign(h, None).error_code == 0
    p = reg(h)
    # The original brokers come back; their order is the one they had in the union (target
    # first), as in KRaft: the union does not remember the original order.
    assert (p.replicas, p.isr, p.leader, p.is_reassigning) == ((3, 1, 2), (1, 2, 3), 1, False)
    assert p.leader_epoch == before.leader_epoch + 1  # 4 and 5 were removed


def test_new_target_replaces_a_reassignment_in_progress() -> None:
    h = setup([1, 2, 3, 4, 5], [1, 2, 3])
    assert reassign(h, [1, 2, 4]).error_code == 0
    assert reassign(h, [1, 4, 5]).error_code == 0
    p = reg(h)
    # 4 is still adding (not in the ISR); 2 and 3 are removed; 5 is new.
    assert p.replicas == (1, 4, 5, 2, 3)
    assert set(p.adding_replicas) == {4, 5} and set(p.removing_replicas) == {2, 3}
    expand_isr(h, [1, 2, 3, 5])
    assert reg(h).is_reassigning
    expand_isr(h, [1, 2, 3, 5, 4])
    p = reg(h)
    assert (p.replicas, p.isr, p.is_reassigning) == ((1, 4, 5), (1, 5, 4), False)


def test_completion_waits_while_no_target_replica_is_in_sync() -> None:
    h = setup([1, 2, 3], [1, 2, 3])
    # Broker 3 lags (out of the ISR); shrinking to [3] cannot complete before it is back.
    expand_isr(h, [1, 2])  # the leader shrinks the ISR
    assert reg(h).isr == (1, 2)
    assert reassign(h, [3]).error_code == 0
    p = reg(h)
    assert (p.replicas, p.removing_replicas, p.adding_replicas) == ((3, 1, 2), (1, 2), ())
    h.tick(1)
    assert reg(h).is_reassigning
    expand_isr(h, [1, 2, 3])
    p = reg(h)
    assert (p.replicas, p.isr, p.leader, p.is_reassigning) == ((3,), (3,), 3, False)


def test_tick_completes_a_reassignment_that_is_ready() -> None:
    # A state the request paths never leave behind (they complete at once), but a log written
    # by another controller version might: the tick finishes it.
    h = setup([1, 2, 3], [1, 2])
    t = h.image.topic(T)
    assert t is not None
    ready = PartitionChangeRecord(0, t.topic_id, (1, 3), -2, (2, 3, 1), (1,), (3,))
    h.commit(ControllerResult.of([ready], None))
    assert reg(h).is_reassigning and h.c.reassigning
    h.tick(1)
    p = reg(h)
    assert (p.replicas, p.isr, p.leader, p.is_reassigning) == ((2, 3), (3,), 3, False)
    assert not h.c.reassigning


def test_invariants_of_the_reassignment_sets() -> None:
    ok = PartitionRegistration((1, 2, 3), (1, 2), 1, 0, 0, (3,), (2,))
    check_partition(ok, "p")
    for bad in (
        PartitionRegistration((1, 2, 3), (1, 2), 1, 0, 0, (3,), (3,)),  # overlap
        PartitionRegistration((1, 2, 3), (1, 2), 1, 0, 0, (9,), ()),  # not a replica
        PartitionRegistration((1, 2), (1, 2), 1, 0, 0, (1, 2), ()),  # removing everything
    ):
        with pytest.raises(InvariantViolation):
            check_partition(bad, "p")


def test_records_keep_old_versions_readable() -> None:
    tid = uuid.UUID(int=7, version=4)
    plain = PartitionRecord(0, tid, (1, 2), (1, 2), 1, 0, 0)
    moving = PartitionRecord(0, tid, (1, 2, 3), (1, 2), 1, 0, 0, (1,), (3,))
    # Without reassignment sets, the old version is written: old readers still read it.
    assert msgpack.unpackb(encode_record(plain))[:2] == [3, 0]
    assert msgpack.unpackb(encode_record(moving))[:2] == [3, 1]
    assert decode_record(encode_record(plain)) == plain
    assert decode_record(encode_record(moving)) == moving
    # A v0 record written before reassignment existed decodes with empty sets.
    v0 = msgpack.packb([3, 0, 0, tid.bytes, [1, 2], [1, 2], 1, 0, 0], use_bin_type=True)
    assert decode_record(v0) == plain
    change_v0 = msgpack.packb([5, 0, 0, tid.bytes, [1], -2, None], use_bin_type=True)
    rec = decode_record(change_v0)
    assert isinstance(rec, PartitionChangeRecord)
    assert (rec.removing_replicas, rec.adding_replicas) == (None, None)
    change = PartitionChangeRecord(0, tid, None, -2, (1, 2, 3), (), (3,))
    assert msgpack.unpackb(encode_record(change))[:2] == [5, 1]
    assert decode_record(encode_record(change)) == change
    # Replay: None keeps the sets, () clears them.
    image = apply_records(MetadataImage(), [TopicRecord("t", tid), moving])
    image = apply_records(image, [PartitionChangeRecord(0, tid, (1, 2, 3), -2, None)])
    p = image.partition("t", 0)
    assert p is not None and (p.removing_replicas, p.adding_replicas) == ((1,), (3,))
    image = apply_records(image, [PartitionChangeRecord(0, tid, None, -2, (2, 3), (), ())])
    p = image.partition("t", 0)
    assert p is not None and (p.replicas, p.is_reassigning) == ((2, 3), False)


def test_snapshot_round_trip_and_format_1_still_decodes() -> None:
    h = setup([1, 2, 3, 4], [1, 2, 3])
    assert reassign(h, [1, 2, 4]).error_code == 0
    image = h.image
    again = MetadataImage.decode(image.encode())
    assert again == image
    assert again.encode() == image.encode()
    # A format-1 snapshot (partition entries of 6 items) reads as "no reassignment".
    doc = msgpack.unpackb(image.encode(), raw=False)[:6]
    doc[0] = 1
    for topic in doc[4]:
        topic[2] = [entry[:6] for entry in topic[2]]
    old = MetadataImage.decode(msgpack.packb(doc, use_bin_type=True))
    p = old.partition(T, 0)
    assert p is not None and p.replicas == (1, 2, 4, 3) and not p.is_reassigning
    # A controller that loads a snapshot rebuilds its set of moving partitions.
    h.c.load_image(image)
    assert len(h.c.reassigning) == 1


def test_local_changes_tell_the_new_broker_to_follow_and_the_old_one_to_delete() -> None:
    h = setup([1, 2, 3, 4], [1, 2, 3])
    topic_id = h.image.topic(T).topic_id  # type: ignore[union-attr]
    start = h.c.alter_partition_reassignments(
        AlterPartitionReassignmentsRequest(
            [ReassignableTopic(T, [ReassignablePartition(0, [1, 2, 4])])]
        )
    )
    delta = MetadataDelta(h.image)
    for rec in start.records:
        delta.replay(rec)
    changes = delta.local_changes(4)
    assert list(changes.followers) == [TopicPartition(T, 0)]
    assert delta.local_changes(3).deletes == {}
    h.commit(start)
    p = reg(h)
    leader = h.image.brokers[1]
    item = AlterPartitionItem(0, p.leader_epoch, [1, 2, 3, 4], p.partition_epoch)
    finish = h.c.alter_partition(
        AlterPartitionRequest(1, leader.epoch, [AlterPartitionTopic(T, [item])])
    )
    delta = MetadataDelta(h.image)
    for rec in finish.records:
        delta.replay(rec)
    assert delta.local_changes(3).deletes == {TopicPartition(T, 0): topic_id}
    assert list(delta.local_changes(1).leaders) == [TopicPartition(T, 0)]
