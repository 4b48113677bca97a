"""The group state machine driven with scripted requests and a fake clock."""

from __future__ import annotations

import pytest

from common.error_codes import ErrorCode
from data_plane.coordinator.group import GroupMetadata, GroupState, IllegalGroupTransitionError
from data_plane.coordinator.group_metadata_records import (
    GroupKey,
    OffsetKey,
    decode_group_value,
    decode_key,
    decode_offset_value,
)
from data_plane.coordinator.messages import (
    DeleteGroupsResult,
    OffsetCommitResult,
    OffsetDeleteResult,
)
from tests.unit.coordinator.harness import Harness, subscription


def state(h: Harness, group: str = "g") -> GroupState:
    g = h.c.group(group)
    return g.state if g is not None else GroupState.DEAD


# --- joining ------------------------------------------------------------------------------------


def test_v4_join_without_member_id_gets_member_id_required() -> None:
    h = Harness()
    t = h.join(require_known_member_id=True)
    r = h.join_result(t)
    assert r.error_code == ErrorCode.MEMBER_ID_REQUIRED
    assert r.member_id
    assert state(h) is GroupState.EMPTY
    t2 = h.join(r.member_id, require_known_member_id=True)
    assert t2 not in h.results  # parked until the (0 ms) initial delay passes
    assert state(h) is GroupState.PREPARING_REBALANCE
    h.advance(0)
    r2 = h.join_result(t2)
    assert (r2.error_code, r2.member_id, r2.leader_id) == (ErrorCode.NO_ERROR,) + (r.member_id,) * 2
    assert r2.generation_id == 1
    assert [m.member_id for m in r2.members] == [r.member_id]
    assert r2.members[0].metadata == b"sub-range"


def test_pending_member_id_expires_after_session_timeout() -> None:
    h = Harness()
    r = h.join_result(h.join(require_known_member_id=True, session_timeout_ms=2000))
    h.advance(2000)
    t = h.join(r.member_id)
    assert h.join_result(t).error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_single_member_cycle_stores_assignment_before_answering_sync() -> None:
    h = Harness()
    h.auto_complete_writes = False
    t = h.join()
    h.advance(0)
    r = h.join_result(t)
    assert state(h) is GroupState.COMPLETING_REBALANCE
    s = h.sync(r.member_id, r.generation_id, {r.member_id: b"A"})
    assert s not in h.results  # the assignment is not committed yet
    assert len(h.pending_writes) == 1
    (key, value) = h.pending_writes[0].records[0]
    assert decode_key(key) == GroupKey("g")
    stored = decode_group_value(value or b"")
    assert stored.generation == 1 and stored.protocol == "range" and stored.leader == r.member_id
    assert stored.members[0].assignment == b"A"
    assert stored.members[0].subscription == b"sub-range"
    h.complete_writes()
    assert h.sync_result(s).assignment == b"A"
    assert state(h) is GroupState.STABLE


def test_failed_assignment_write_fails_syncs_and_rebalances() -> None:
    h = Harness()
    h.auto_complete_writes = False
    t = h.join()
    h.advance(0)
    r = h.join_result(t)
    s = h.sync(r.member_id, r.generation_id, {r.member_id: b"A"})
    h.complete_writes(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert h.sync_result(s).error_code == ErrorCode.NOT_COORDINATOR
    assert state(h) is GroupState.PREPARING_REBALANCE


def test_initial_rebalance_delay_waits_for_more_members() -> None:
    h = Harness(group_initial_rebalance_delay_ms=100)
    t1 = h.join(rebalance_timeout_ms=1000)
    h.advance(50)
    t2 = h.join(rebalance_timeout_ms=1000)
    h.advance(50)  # first delay over, but a member arrived during it: wait another delay
    assert t1 not in h.results and t2 not in h.results
    h.advance(100)
    r1, r2 = h.join_result(t1), h.join_result(t2)
    assert r1.generation_id == r2.generation_id == 1
    assert len(r1.members) == 2 and r2.members == ()  # only the leader gets the members


def test_new_member_triggers_rebalance_and_all_rejoin() -> None:
    h = Harness()
    (m1,), gen = h.stable_group(1)
    t3 = h.join(client_id="new")
    assert state(h) is GroupState.PREPARING_REBALANCE
    assert h.c.heartbeat("g", gen, m1) == ErrorCode.REBALANCE_IN_PROGRESS
    t1 = h.join(m1)
    r1, r3 = h.join_result(t1), h.join_result(t3)
    assert r1.generation_id == r3.generation_id == gen + 1
    assert r1.leader_id == m1 and {m.member_id for m in r1.members} == {m1, r3.member_id}
    assert state(h) is GroupState.COMPLETING_REBALANCE


def test_members_that_do_not_rejoin_are_removed_at_the_rebalance_timeout() -> None:
    h = Harness()
    (m1, m2), _gen = h.stable_group(2)
    t3 = h.join(rebalance_timeout_ms=5000)
    t1 = h.join(m1, rebalance_timeout_ms=5000)
    h.advance(4999)
    assert t1 not in h.results
    h.advance(1)
    r1 = h.join_result(t1)
    assert {m.member_id for m in r1.members} == {m1, h.join_result(t3).member_id}
    assert h.c.heartbeat("g", r1.generation_id, m2) == ErrorCode.UNKNOWN_MEMBER_ID


def test_session_expiry_removes_member_and_rebalances() -> None:
    h = Harness()
    (m1, m2), gen = h.stable_group(2)
    for _ in range(3):
        h.advance(3000)
        assert h.c.heartbeat("g", gen, m1) == ErrorCode.NO_ERROR
    assert state(h) is GroupState.STABLE
    h.advance(1000)  # m2 never heartbeat: its 10 s session is over.
    assert state(h) is GroupState.PREPARING_REBALANCE
    assert h.c.heartbeat("g", gen, m2) == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.c.heartbeat("g", gen, m1) == ErrorCode.REBALANCE_IN_PROGRESS
    t1 = h.join(m1)
    r1 = h.join_result(t1)
    assert r1.generation_id == gen + 1 and [m.member_id for m in r1.members] == [m1]


def test_leave_group_triggers_rebalance() -> None:
    h = Harness()
    (m1, m2), gen = h.stable_group(2)
    error, out = h.c.leave_group("g", m2)
    h.absorb(out)
    assert error == ErrorCode.NO_ERROR
    assert state(h) is GroupState.PREPARING_REBALANCE
    assert h.c.leave_group("g", "nobody")[0] == ErrorCode.UNKNOWN_MEMBER_ID
    t1 = h.join(m1)
    assert h.join_result(t1).generation_id == gen + 1


def test_last_member_leaving_makes_the_group_empty() -> None:
    h = Harness()
    (m1,), gen = h.stable_group(1)
    _error, out = h.c.leave_group("g", m1)
    h.absorb(out)
    # At once, as Kafka's join purgatory completes a join nobody is left to wait for.
    assert state(h) is GroupState.EMPTY
    g = h.c.group("g")
    assert g is not None and g.generation_id == gen + 1
    empty = decode_group_value(h.written[-1].records[0][1] or b"")
    assert empty.members == () and empty.protocol is None


def test_subscription_change_triggers_rebalance_same_subscription_does_not() -> None:
    h = Harness()
    (_m1, m2), gen = h.stable_group(2)
    t = h.join(m2)  # unchanged follower: answered at once, no rebalance
    r = h.join_result(t)
    assert (r.error_code, r.generation_id, r.members) == (ErrorCode.NO_ERROR, gen, ())
    assert state(h) is GroupState.STABLE
    h.join(m2, protocols=(("range", b"another-topic"),))
    assert state(h) is GroupState.PREPARING_REBALANCE


def test_leader_rejoin_triggers_rebalance() -> None:
    h = Harness()
    (m1, _m2), _ = h.stable_group(2)
    h.join(m1)
    assert state(h) is GroupState.PREPARING_REBALANCE


def test_illegal_generation_and_unknown_member() -> None:
    h = Harness()
    (m1,), gen = h.stable_group(1)
    assert h.c.heartbeat("g", gen + 1, m1) == ErrorCode.ILLEGAL_GENERATION
    assert h.c.heartbeat("g", gen, "ghost") == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.c.heartbeat("other", 1, m1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.sync_result(h.sync(m1, gen - 1)).error_code == ErrorCode.ILLEGAL_GENERATION
    assert h.sync_result(h.sync("ghost", gen)).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.join_result(h.join("ghost")).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.join_result(h.join("x", group="fresh")).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.c.group("fresh") is None


def test_sync_during_preparing_rebalance() -> None:
    h = Harness()
    (_m1, m2), gen = h.stable_group(2)
    h.join(client_id="third")
    assert h.sync_result(h.sync(m2, gen)).error_code == ErrorCode.REBALANCE_IN_PROGRESS


def test_members_that_do_not_sync_are_removed_after_the_rebalance_timeout() -> None:
    h = Harness()
    t1, t2 = h.join(rebalance_timeout_ms=3000), h.join(rebalance_timeout_ms=3000)
    for _ in range(3):
        h.advance(0)
    r1, r2 = h.join_result(t1), h.join_result(t2)
    s2 = h.sync(r2.member_id, r2.generation_id)  # the follower syncs, the leader never does
    h.advance(3000)
    assert h.sync_result(s2).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    g = h.c.group("g")
    assert g is not None and list(g.members) == [r2.member_id]
    assert r1.member_id not in g.members


def test_invalid_session_timeout_and_group_id() -> None:
    h = Harness(group_min_session_timeout_ms=6000, group_max_session_timeout_ms=30_000)
    assert (
        h.join_result(h.join(session_timeout_ms=5999)).error_code
        == ErrorCode.INVALID_SESSION_TIMEOUT
    )
    assert (
        h.join_result(h.join(session_timeout_ms=30_001)).error_code
        == ErrorCode.INVALID_SESSION_TIMEOUT
    )
    assert h.join_result(h.join(group="")).error_code == ErrorCode.INVALID_GROUP_ID
    assert h.c.group("g") is None


def test_group_max_size() -> None:
    h = Harness(group_max_size=2)
    h.stable_group(2)
    assert h.join_result(h.join()).error_code == ErrorCode.GROUP_MAX_SIZE_REACHED


# --- protocols ------------------------------------------------------------------------------------


def test_protocol_selected_by_votes_among_common_protocols() -> None:
    h = Harness()
    a = (("range", b"r"), ("roundrobin", b"rr"))
    b = (("roundrobin", b"rr"), ("range", b"r"))
    tokens = [h.join(protocols=a), h.join(protocols=b), h.join(protocols=b)]
    for _ in range(4):
        h.advance(0)
    results = [h.join_result(t) for t in tokens]
    assert {r.protocol_name for r in results} == {"roundrobin"}
    leader = results[0]
    assert {m.metadata for m in leader.members} == {b"rr"}


def test_only_protocol_common_to_all_members_is_chosen() -> None:
    h = Harness()
    t1 = h.join(protocols=(("range", b"r"), ("sticky", b"s")))
    t2 = h.join(protocols=(("sticky", b"s"),))
    for _ in range(3):
        h.advance(0)
    assert h.join_result(t1).protocol_name == "sticky"
    assert h.join_result(t2).protocol_name == "sticky"


def test_inconsistent_protocols_are_refused() -> None:
    h = Harness()
    h.stable_group(1)
    r = h.join_result(h.join(protocols=(("sticky", b"s"),)))
    assert r.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    r = h.join_result(h.join(protocol_type="connect"))
    assert r.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    r = h.join_result(h.join(group="other", protocols=()))
    assert r.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_tie_goes_to_the_first_members_preference() -> None:
    g = GroupMetadata("g", 0)
    h = Harness()
    t1 = h.join(protocols=(("a", b""), ("b", b"")))
    t2 = h.join(protocols=(("b", b""), ("a", b"")))
    for _ in range(3):
        h.advance(0)
    assert h.join_result(t1).protocol_name == h.join_result(t2).protocol_name == "a"
    with pytest.raises(ValueError):
        g.select_protocol()


# --- static membership ----------------------------------------------------------------------------


def _static_stable(h: Harness) -> tuple[str, int]:
    t = h.join(instance_id="inst-1")
    h.advance(0)
    r = h.join_result(t)
    h.sync(r.member_id, r.generation_id, {r.member_id: b"A"}, instance_id="inst-1")
    assert state(h) is GroupState.STABLE
    return r.member_id, r.generation_id


def test_static_member_rejoin_keeps_generation_and_fences_old_id() -> None:
    h = Harness()
    old_id, gen = _static_stable(h)
    writes = len(h.written)
    r = h.join_result(h.join(instance_id="inst-1"))
    assert r.error_code == ErrorCode.NO_ERROR
    assert r.member_id != old_id and r.generation_id == gen
    assert state(h) is GroupState.STABLE  # no rebalance
    assert len(h.written) == writes + 1  # the new member id was persisted first
    stored = decode_group_value(h.written[-1].records[0][1] or b"")
    assert [m.member_id for m in stored.members] == [r.member_id]
    assert h.c.heartbeat("g", gen, old_id, "inst-1") == ErrorCode.FENCED_INSTANCE_ID
    assert h.c.heartbeat("g", gen, r.member_id, "inst-1") == ErrorCode.NO_ERROR
    assert h.sync_result(h.sync(r.member_id, gen, instance_id="inst-1")).assignment == b"A"
    fenced = h.join_result(h.join(old_id, instance_id="inst-1"))
    assert fenced.error_code == ErrorCode.FENCED_INSTANCE_ID


def test_static_member_rejoin_with_new_metadata_same_protocol_does_not_rebalance() -> None:
    h = Harness()
    _, gen = _static_stable(h)
    r = h.join_result(h.join(instance_id="inst-1", protocols=(("range", b"no-owned-parts"),)))
    assert (r.error_code, r.generation_id) == (ErrorCode.NO_ERROR, gen)
    assert state(h) is GroupState.STABLE
    g = h.c.group("g")
    assert g is not None and g.members[r.member_id].protocols == [("range", b"no-owned-parts")]


def test_static_member_rejoin_that_changes_the_selected_protocol_rebalances() -> None:
    h = Harness()
    both = (("range", b"r"), ("roundrobin", b"rr"))
    t1 = h.join(instance_id="s1", protocols=both)
    t2 = h.join(protocols=(("roundrobin", b"rr"), ("range", b"r")))
    for _ in range(3):
        h.advance(0)
    r1, r2 = h.join_result(t1), h.join_result(t2)
    assert r1.protocol_name == "range"  # a 1-1 tie goes to the first member's preference
    h.sync(r1.member_id, r1.generation_id, {}, instance_id="s1")
    h.sync(r2.member_id, r2.generation_id)
    h.join(instance_id="s1", protocols=(("roundrobin", b"rr"), ("range", b"r")))
    assert state(h) is GroupState.PREPARING_REBALANCE  # roundrobin would now win 2-0
    t = h.join(r2.member_id, protocols=(("roundrobin", b"rr"), ("range", b"r")))
    assert h.join_result(t).protocol_name == "roundrobin"


def test_static_member_not_rejoined_is_kept_through_the_rebalance() -> None:
    h = Harness()
    tokens = [h.join(instance_id="s1"), h.join(client_id="dyn")]
    for _ in range(3):
        h.advance(0)
    s1, dyn = (h.join_result(t).member_id for t in tokens)
    gen = h.join_result(tokens[0]).generation_id
    h.sync(s1, gen, {s1: b"1", dyn: b"2"}, instance_id="s1")
    h.sync(dyn, gen)
    h.join(client_id="third", rebalance_timeout_ms=5000)
    t_dyn = h.join(dyn, rebalance_timeout_ms=5000)
    h.advance(5000)
    r = h.join_result(t_dyn)
    g = h.c.group("g")
    assert g is not None and s1 in g.members  # Kafka keeps static members until they expire
    assert r.generation_id == gen + 1


# --- offsets --------------------------------------------------------------------------------------


def test_simple_commit_visible_only_once_written() -> None:
    h = Harness()
    h.auto_complete_writes = False
    t = h.commit({("t", 0): 42, ("t", 1): 7}, metadata="m")
    assert t not in h.results
    assert h.c.fetch_offsets("g", [("t", 0)]).offsets == {("t", 0): None}
    (write,) = h.pending_writes
    keys = [decode_key(k) for k, _ in write.records]
    assert keys == [OffsetKey("g", "t", 0), OffsetKey("g", "t", 1)]
    assert decode_offset_value(write.records[0][1] or b"").offset == 42
    h.complete_writes()
    result = h.results[t]
    assert isinstance(result, OffsetCommitResult)
    assert result.errors == {("t", 0): ErrorCode.NO_ERROR, ("t", 1): ErrorCode.NO_ERROR}
    fetched = h.c.fetch_offsets("g", [("t", 0), ("t", 9)])
    got = fetched.offsets[("t", 0)]
    assert got is not None and (got.offset, got.metadata) == (42, "m")
    assert fetched.offsets[("t", 9)] is None
    assert set(h.c.fetch_offsets("g", None).offsets) == {("t", 0), ("t", 1)}


def test_member_commits_are_validated() -> None:
    h = Harness()
    (m1,), gen = h.stable_group(1)

    def commit_error(**kw: object) -> int:
        r = h.results[h.commit({("t", 0): 1}, **kw)]  # type: ignore[arg-type]
        return r.errors[("t", 0)]

    assert commit_error(generation=gen, member_id=m1) == ErrorCode.NO_ERROR
    assert commit_error(generation=gen + 1, member_id=m1) == ErrorCode.ILLEGAL_GENERATION
    assert commit_error(generation=gen, member_id="ghost") == ErrorCode.UNKNOWN_MEMBER_ID
    assert commit_error() == ErrorCode.ILLEGAL_GENERATION  # simple commit, group has members
    assert commit_error(group="nogroup", generation=3, member_id="x") == (
        ErrorCode.ILLEGAL_GENERATION
    )
    h.join(client_id="another")  # PreparingRebalance: current generation may still commit
    assert commit_error(generation=gen, member_id=m1) == ErrorCode.NO_ERROR
    h.join(m1)
    assert state(h) is GroupState.COMPLETING_REBALANCE
    assert commit_error(generation=gen + 1, member_id=m1) == ErrorCode.REBALANCE_IN_PROGRESS


def test_commit_write_errors_map_as_kafka() -> None:
    h = Harness()
    h.auto_complete_writes = False
    cases = [
        (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR),
        (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE),
        (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.REQUEST_TIMED_OUT),
        (ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_COMMIT_OFFSET_SIZE),
    ]
    for write_error, expected in cases:
        t = h.commit({("t", 0): 5})
        h.complete_writes(write_error)
        assert h.results[t].errors[("t", 0)] == expected
    assert h.c.fetch_offsets("g", [("t", 0)]).offsets[("t", 0)] is None


def test_metadata_too_large() -> None:
    h = Harness(offset_metadata_max_bytes=4)
    r = h.results[h.commit({("t", 0): 1}, metadata="12345")]
    assert r.errors == {("t", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE}
    assert h.written == []


def test_offsets_of_an_empty_group_expire_after_retention() -> None:
    h = Harness(offsets_retention_ms=60_000, offsets_retention_check_interval_ms=1000)
    h.commit({("t", 0): 1})
    h.advance(30_000)
    h.commit({("t", 1): 2})
    h.advance(31_000)  # ("t", 0) is 61 s old, ("t", 1) 31 s
    assert set(h.c.fetch_offsets("g", None).offsets) == {("t", 1)}
    tomb = h.written[-1].records
    assert tomb == ((h.written[0].records[0][0], None),)
    h.advance(30_000)
    assert h.c.fetch_offsets("g", None).offsets == {}
    assert h.c.group("g") is None


def test_offsets_of_a_group_with_members_do_not_expire() -> None:
    h = Harness(offsets_retention_ms=1000, offsets_retention_check_interval_ms=100)
    (m1,), gen = h.stable_group(1)
    h.commit({("t", 0): 1}, generation=gen, member_id=m1)
    for _ in range(5):
        h.advance(900)
        assert h.c.heartbeat("g", gen, m1) == ErrorCode.NO_ERROR
    assert ("t", 0) in h.c.fetch_offsets("g", None).offsets


# --- ownership, loading, unloading --------------------------------------------------------------


def test_not_coordinator_and_load_in_progress() -> None:
    h = Harness()
    h.c.set_num_partitions(2)
    group_on_p1 = next(g for g in (f"g{i}" for i in range(100)) if h.c.partition_of(g) == 1)
    assert h.join_result(h.join(group=group_on_p1)).error_code == ErrorCode.NOT_COORDINATOR
    assert h.c.fetch_offsets(group_on_p1, None).error_code == ErrorCode.NOT_COORDINATOR
    h.absorb(h.c.begin_loading(1))
    assert (
        h.join_result(h.join(group=group_on_p1)).error_code
        == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    )
    assert h.c.heartbeat(group_on_p1, 1, "m") == ErrorCode.NO_ERROR  # Kafka: NONE while loading
    assert h.c.list_groups()[0] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    h.absorb(h.c.complete_loading(1))
    assert h.c.list_groups()[0] == ErrorCode.NO_ERROR


def test_reload_from_written_records_restores_groups_and_offsets() -> None:
    h = Harness()
    (m1, m2), gen = h.stable_group(2)
    h.commit({("t", 0): 10, ("t", 1): 20}, generation=gen, member_id=m1)
    h.commit({("t", 0): 11}, generation=gen, member_id=m2)
    h.commit({("x", 0): 5}, group="simple")
    records = [rec for w in h.written for rec in w.records]

    fresh = Harness()
    fresh.absorb(fresh.c.begin_loading(0))
    for key, value in records:
        fresh.c.load_record(0, key, value)
    fresh.c.load_record(0, b"\x00\x09junk", b"")  # unknown key versions are skipped
    fresh.absorb(fresh.c.complete_loading(0))
    g = fresh.c.group("g")
    assert g is not None and g.state is GroupState.STABLE and g.generation_id == gen
    assert list(g.members) == [m1, m2] and g.leader_id == m1
    assert g.members[m2].assignment == f"assign-{m2}".encode()
    offsets = fresh.c.fetch_offsets("g", None).offsets
    assert {tp: o.offset for tp, o in offsets.items() if o} == {("t", 0): 11, ("t", 1): 20}
    assert fresh.c.fetch_offsets("simple", [("x", 0)]).offsets[("x", 0)] is not None
    # Loaded members keep their session and generation.
    assert fresh.c.heartbeat("g", gen, m2) == ErrorCode.NO_ERROR
    assert fresh.sync_result(fresh.sync(m1, gen)).assignment == f"assign-{m1}".encode()


def test_tombstones_remove_offsets_and_groups_on_load() -> None:
    h = Harness()
    h.commit({("t", 0): 1}, group="a")
    h.commit({("t", 0): 2}, group="b")
    offset_key_a = h.written[0].records[0][0]
    h.c.begin_loading(0)
    for w in h.written:
        for key, value in w.records:
            h.c.load_record(0, key, value)
    h.c.load_record(0, offset_key_a, None)
    h.absorb(h.c.complete_loading(0))
    assert h.c.group("a") is None
    assert h.c.fetch_offsets("b", [("t", 0)]).offsets[("t", 0)] is not None


def test_unload_answers_parked_requests_not_coordinator() -> None:
    h = Harness(group_initial_rebalance_delay_ms=1000)
    t = h.join()
    h.auto_complete_writes = False
    c = h.commit({("t", 0): 1}, group="simple")
    h.absorb(h.c.unload(0))
    assert h.join_result(t).error_code == ErrorCode.NOT_COORDINATOR
    # The in-flight commit's write completes after the unload: never reported as success.
    h.complete_writes()
    assert h.results[c].errors[("t", 0)] == ErrorCode.NOT_COORDINATOR
    assert h.c.group("g") is None
    assert h.join_result(h.join()).error_code == ErrorCode.NOT_COORDINATOR


# --- describe, list, delete -----------------------------------------------------------------------


def test_describe_and_list_groups() -> None:
    h = Harness()
    (m1, m2), _ = h.stable_group(2)
    d = h.c.describe_group("g")
    assert (d.state, d.protocol_type, d.protocol_data) == ("Stable", "consumer", "range")
    assert [(m.member_id, m.metadata, m.assignment) for m in d.members] == [
        (m1, b"sub-range", f"assign-{m1}".encode()),
        (m2, b"sub-range", f"assign-{m2}".encode()),
    ]
    h.join(client_id="x")
    d = h.c.describe_group("g")
    assert d.state == "PreparingRebalance" and d.protocol_data == ""
    assert all(m.assignment == b"" for m in d.members)
    assert h.c.describe_group("unknown").state == "Dead"
    assert h.c.list_groups() == (
        ErrorCode.NO_ERROR,
        [("g", "consumer", "PreparingRebalance", "classic")],
    )


def test_delete_groups() -> None:
    h = Harness()
    h.stable_group(1)
    h.commit({("t", 0): 1}, group="empty")
    t = h.token()
    h.absorb(h.c.delete_groups(t, ["g", "empty", "missing"]))
    r = h.results[t]
    assert isinstance(r, DeleteGroupsResult)
    assert r.errors == {
        "g": ErrorCode.NON_EMPTY_GROUP,
        "empty": ErrorCode.NO_ERROR,
        "missing": ErrorCode.GROUP_ID_NOT_FOUND,
    }
    assert [v for _, v in h.written[-1].records] == [None, None]
    assert h.c.group("empty") is None


def test_illegal_transition_raises_and_keeps_state() -> None:
    g = GroupMetadata("g", 0)
    with pytest.raises(IllegalGroupTransitionError):
        g.transition_to(GroupState.STABLE, 1)
    assert g.state is GroupState.EMPTY
    g.transition_to(GroupState.PREPARING_REBALANCE, 2)
    with pytest.raises(IllegalGroupTransitionError):
        g.transition_to(GroupState.STABLE, 3)
    assert g.state is GroupState.PREPARING_REBALANCE


def test_offsets_of_unsubscribed_topics_expire_in_a_stable_consumer_group() -> None:
    h = Harness(offsets_retention_ms=1000, offsets_retention_check_interval_ms=100)
    t = h.join(protocols=(("range", subscription(["kept"])),))
    h.advance(0)
    r = h.join_result(t)
    h.sync(r.member_id, r.generation_id, {r.member_id: b"A"})
    h.commit({("kept", 0): 1, ("dropped", 0): 2}, generation=r.generation_id, member_id=r.member_id)
    for _ in range(3):
        h.advance(500)
        assert h.c.heartbeat("g", r.generation_id, r.member_id) == ErrorCode.NO_ERROR
    assert set(h.c.fetch_offsets("g", None).offsets) == {("kept", 0)}
    assert decode_key(h.written[-1].records[0][0]) == OffsetKey("g", "dropped", 0)
    assert h.written[-1].records[0][1] is None


def test_offset_delete_refuses_subscribed_topics_of_a_live_group() -> None:
    h = Harness()
    t = h.join(protocols=(("range", subscription(["kept"])),))
    h.advance(0)
    r = h.join_result(t)
    h.sync(r.member_id, r.generation_id, {r.member_id: b"A"})
    h.commit({("kept", 0): 1, ("old", 0): 2}, generation=r.generation_id, member_id=r.member_id)
    token = h.token()
    h.absorb(h.c.delete_offsets(token, "g", [("kept", 0), ("old", 0), ("never", 3)]))
    result = h.results[token]
    assert isinstance(result, OffsetDeleteResult)
    assert result.error_code == ErrorCode.NO_ERROR
    assert result.partition_errors == {
        ("kept", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
        ("old", 0): ErrorCode.NO_ERROR,
        ("never", 3): ErrorCode.NO_ERROR,
    }
    assert decode_key(h.written[-1].records[0][0]) == OffsetKey("g", "old", 0)
    assert h.written[-1].records[0][1] is None
    assert set(h.c.fetch_offsets("g", None).offsets) == {("kept", 0)}


def test_offset_delete_group_level_errors_and_an_empty_group() -> None:
    h = Harness()
    h.commit({("t", 0): 1, ("t", 1): 2}, group="empty")
    for group, want in (
        ("missing", ErrorCode.GROUP_ID_NOT_FOUND),
        ("", ErrorCode.INVALID_GROUP_ID),
    ):
        token = h.token()
        h.absorb(h.c.delete_offsets(token, group, [("t", 0)]))
        assert h.results[token] == OffsetDeleteResult(want, {})
    token = h.token()
    h.absorb(h.c.delete_offsets(token, "empty", [("t", 0)]))
    assert h.results[token] == OffsetDeleteResult(ErrorCode.NO_ERROR, {("t", 0): 0})
    assert set(h.c.fetch_offsets("empty", None).offsets) == {("t", 1)}


def test_leave_group_v3_removes_several_members_static_ones_by_instance_id() -> None:
    h = Harness()
    static = h.join(instance_id="worker-1", client_id="s")
    dynamic = h.join(client_id="d")
    for _ in range(3):
        h.advance(0)
    s_id = h.join_result(static).member_id
    d_id = h.join_result(dynamic).member_id
    error, errors, out = h.c.leave_group_members(
        "g",
        [
            ("", "worker-1"),  # the static member, by instance id alone
            ("not-the-holder", "worker-2"),  # no member holds worker-2
            (d_id, None),
            ("ghost", None),
        ],
    )
    h.absorb(out)
    assert error == ErrorCode.NO_ERROR
    assert errors == [
        ErrorCode.NO_ERROR,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.NO_ERROR,
        ErrorCode.UNKNOWN_MEMBER_ID,
    ]
    group = h.c.group("g")
    assert group is not None and not group.members and not group.static_members
    assert s_id != d_id


def test_leave_group_v3_fences_a_stale_member_id_of_a_static_member() -> None:
    h = Harness()
    t = h.join(instance_id="worker-1")
    h.advance(0)
    holder = h.join_result(t).member_id
    error, errors, _out = h.c.leave_group_members("g", [("old-incarnation", "worker-1")])
    assert (error, errors) == (ErrorCode.NO_ERROR, [ErrorCode.FENCED_INSTANCE_ID])
    assert h.c.group("g").members.keys() == {holder}
    error, _errors, _out = h.c.leave_group_members("", [("x", None)])
    assert error == ErrorCode.INVALID_GROUP_ID
