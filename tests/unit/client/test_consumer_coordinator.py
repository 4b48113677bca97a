"""The sans-IO consumer coordinator driven by scripted broker answers and a fake clock."""

from __future__ import annotations

import dataclasses

import pytest

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.messages.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from common.protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from common.protocol.messages.join_group import JoinGroupResponse, JoinGroupResponseMember
from common.protocol.messages.leave_group import LeaveGroupRequest
from common.protocol.messages.sync_group import SyncGroupResponse
from common.topic_partition import TopicPartition
from kraftlog_client.assignors import RangeAssignor, RoundRobinAssignor
from kraftlog_client.consumer_coordinator import (
    AssignmentNeeded,
    ConsumerCoordinator,
    CoordinatorStateError,
    GroupFatalError,
    GroupSettings,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    Send,
)
from kraftlog_client.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

COORDINATOR = 7
TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


def settings(**kw) -> GroupSettings:
    base = dict(
        group_id="g",
        session_timeout_ms=10_000,
        heartbeat_interval_ms=3_000,
        max_poll_interval_ms=60_000,
        retry_backoff_ms=100,
        assignors=(RangeAssignor(), RoundRobinAssignor()),
    )
    base.update(kw)
    return GroupSettings(**base)


def sends(outputs, api_key: ApiKey | None = None) -> list[Send]:
    return [o for o in outputs if isinstance(o, Send) and (api_key is None or o.api_key == api_key)]


def only_send(outputs, api_key: ApiKey) -> Send:
    found = sends(outputs, api_key)
    assert len(found) == 1, outputs
    return found[0]


def events(outputs, kind) -> list:
    return [o for o in outputs if isinstance(o, kind)]


def find_coordinator(c: ConsumerCoordinator, now: float) -> list:
    req = only_send(c.poll(now), ApiKey.FIND_COORDINATOR)
    assert req.target is None and req.body == FindCoordinatorRequest(key="g", key_type=0)
    return c.on_response(
        req.request_id, req.api_key, FindCoordinatorResponse(node_id=COORDINATOR), now
    )


def join_response(member: str, leader: str, generation: int = 1, members=None) -> JoinGroupResponse:
    return JoinGroupResponse(
        error_code=0,
        generation_id=generation,
        protocol_name="range",
        leader=leader,
        member_id=member,
        members=members or [],
    )


def stable_follower(now: float = 0.0, **kw) -> ConsumerCoordinator:
    """A member that joined generation 1 as a follower and owns t-0 and t-1."""
    c = ConsumerCoordinator(settings(**kw), now)
    c.subscribe(["t"])
    find_coordinator(c, now)
    join = only_send(c.poll(now), ApiKey.JOIN_GROUP)
    sync = only_send(
        c.on_response(join.request_id, join.api_key, join_response("m1", "m0"), now),
        ApiKey.SYNC_GROUP,
    )
    assert sync.body.assignments == []
    out = c.on_response(
        sync.request_id,
        sync.api_key,
        SyncGroupResponse(error_code=0, assignment=encode_assignment(Assignment((TP0, TP1)))),
        now,
    )
    assert events(out, PartitionsAssigned) == [PartitionsAssigned(frozenset({TP0, TP1}), 1)]
    assert c.is_stable
    return c


def test_member_id_required_then_leader_assigns() -> None:
    c = ConsumerCoordinator(settings(), 0)
    find_coordinator(c, 0)  # assign() users need the coordinator for commits, but never join
    assert sends(c.poll(0)) == []
    c.subscribe(["t", "u"])
    join = only_send(c.poll(0), ApiKey.JOIN_GROUP)
    assert join.target == COORDINATOR
    assert join.body.member_id == "" and join.body.protocol_type == "consumer"
    assert [p.name for p in join.body.protocols] == ["range", "roundrobin"]
    assert decode_subscription(join.body.protocols[0].metadata).topics == ("t", "u")
    assert join.body.rebalance_timeout_ms == 60_000
    # KIP-394: the broker names the member and asks it to join again at once.
    out = c.on_response(
        join.request_id,
        join.api_key,
        JoinGroupResponse(
            error_code=ErrorCode.MEMBER_ID_REQUIRED,
            member_id="m0",
            generation_id=-1,
            protocol_name="",
            leader="",
            members=[],
        ),
        0,
    )
    join2 = only_send(out, ApiKey.JOIN_GROUP)
    assert join2.body.member_id == "m0"
    members = [
        JoinGroupResponseMember(
            member_id="m0",
            group_instance_id=None,
            metadata=encode_subscription(Subscription(("t", "u"))),
        ),
        JoinGroupResponseMember(
            member_id="m1",
            group_instance_id=None,
            metadata=encode_subscription(Subscription(("t",))),
        ),
    ]
    out = c.on_response(join2.request_id, join2.api_key, join_response("m0", "m0", 1, members), 0)
    assert events(out, AssignmentNeeded) == [AssignmentNeeded(frozenset({"t", "u"}))]
    sync = only_send(c.perform_assignment({"t": 2, "u": 1}), ApiKey.SYNC_GROUP)
    shares = {
        a.member_id: decode_assignment(a.assignment).partitions for a in sync.body.assignments
    }
    assert shares == {"m0": (TP0, TopicPartition("u", 0)), "m1": (TP1,)}
    mine = encode_assignment(Assignment(shares["m0"]))
    out = c.on_response(
        sync.request_id, sync.api_key, SyncGroupResponse(error_code=0, assignment=mine), 5
    )
    assert events(out, PartitionsAssigned)[0].partitions == {TP0, TopicPartition("u", 0)}
    assert (c.generation_id, c.member_id, c.state) == (1, "m0", "STABLE")


def test_heartbeats_every_interval_one_at_a_time() -> None:
    c = stable_follower(0)
    assert sends(c.poll(2_999)) == []
    hb = only_send(c.poll(3_000), ApiKey.HEARTBEAT)
    assert hb.body == HeartbeatRequest(
        group_id="g", generation_id=1, member_id="m1", group_instance_id=None
    )
    assert sends(c.poll(7_000)) == []  # the first is still unanswered
    c.on_response(hb.request_id, hb.api_key, HeartbeatResponse(error_code=0), 7_100)
    assert only_send(c.poll(7_100), ApiKey.HEARTBEAT)  # 3 s after the last send passed
    # In flight: nothing is due before the session bound (10 s after the last answer).
    assert c.time_to_next_poll_ms(7_100) == pytest.approx(10_000)


def test_time_to_next_poll_does_not_spin_while_waiting_for_answers() -> None:
    c = ConsumerCoordinator(settings(), 0)
    c.subscribe(["t"])
    assert c.time_to_next_poll_ms(0) == 0  # FindCoordinator is due
    req = only_send(c.poll(0), ApiKey.FIND_COORDINATOR)
    assert c.time_to_next_poll_ms(0) > 0  # in flight: the socket wakes the caller
    c.on_response(req.request_id, req.api_key, FindCoordinatorResponse(node_id=COORDINATOR), 1)
    assert c.time_to_next_poll_ms(1) == 0  # JoinGroup is due
    only_send(c.poll(1), ApiKey.JOIN_GROUP)
    assert c.time_to_next_poll_ms(2) > 1_000  # a JoinGroup may take a whole rebalance
    d = stable_follower(0)
    assert d.time_to_next_poll_ms(1_000) == pytest.approx(2_000)  # next heartbeat


def test_rebalance_in_progress_revokes_before_joining() -> None:
    c = stable_follower(0)
    hb = only_send(c.poll(3_000), ApiKey.HEARTBEAT)
    rebalancing = HeartbeatResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS)
    c.on_response(hb.request_id, hb.api_key, rebalancing, 3_001)
    # The heartbeat thread does not rejoin: revocation must run on the application thread.
    assert sends(c.poll(3_002, may_rejoin=False), ApiKey.JOIN_GROUP) == []
    out = c.poll(3_003)
    assert events(out, PartitionsRevoked) == [PartitionsRevoked(frozenset({TP0, TP1}))]
    assert sends(out, ApiKey.JOIN_GROUP) == []
    # While revoking, the generation is still valid for the final commit.
    body = c.commit_body({TP0: 5})
    assert (body.generation_id_or_member_epoch, body.member_id) == (1, "m1")
    join = only_send(c.revocation_done(3_004), ApiKey.JOIN_GROUP)
    assert join.body.member_id == "m1"
    assert c.assignment == frozenset()
    with pytest.raises(CoordinatorStateError):
        c.revocation_done(3_005)


@pytest.mark.parametrize("code", [ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION])
def test_fenced_member_loses_partitions_and_rejoins(code: ErrorCode) -> None:
    c = stable_follower(0)
    hb = only_send(c.poll(3_000), ApiKey.HEARTBEAT)
    out = c.on_response(hb.request_id, hb.api_key, HeartbeatResponse(error_code=code), 3_001)
    assert events(out, PartitionsLost) == [PartitionsLost(frozenset({TP0, TP1}))]
    join = only_send(c.poll(3_002), ApiKey.JOIN_GROUP)
    expected = "" if code == ErrorCode.UNKNOWN_MEMBER_ID else "m1"
    assert join.body.member_id == expected
    assert c.generation_id == -1
    assert c.commit_body({TP0: 1}).generation_id_or_member_epoch == -1


def test_session_timeout_without_answers_finds_the_coordinator_again() -> None:
    c = stable_follower(0)
    only_send(c.poll(3_000), ApiKey.HEARTBEAT)  # never answered
    assert sends(c.poll(10_000)) == []
    out = c.poll(10_001)
    assert only_send(out, ApiKey.FIND_COORDINATOR)
    assert c.coordinator_id is None


def test_connection_failure_and_not_coordinator() -> None:
    c = ConsumerCoordinator(settings(), 0)
    c.subscribe(["t"])
    find_coordinator(c, 0)
    join = only_send(c.poll(0), ApiKey.JOIN_GROUP)
    c.on_response(join.request_id, join.api_key, None, 1)  # connection lost
    assert c.coordinator_id is None and c.state == "UNJOINED"
    find_coordinator(c, 2)
    join = only_send(c.poll(2), ApiKey.JOIN_GROUP)
    c.on_response(
        join.request_id,
        join.api_key,
        dataclasses.replace(join_response("", ""), error_code=ErrorCode.NOT_COORDINATOR),
        3,
    )
    assert only_send(c.poll(3), ApiKey.FIND_COORDINATOR)


def test_find_coordinator_error_backs_off() -> None:
    c = ConsumerCoordinator(settings(), 0)
    c.subscribe(["t"])
    req = only_send(c.poll(0), ApiKey.FIND_COORDINATOR)
    c.on_response(
        req.request_id,
        req.api_key,
        FindCoordinatorResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, node_id=-1),
        10,
    )
    assert sends(c.poll(50)) == []
    assert only_send(c.poll(110), ApiKey.FIND_COORDINATOR)


def test_max_poll_interval_leaves_until_the_next_poll() -> None:
    c = stable_follower(0)
    c.user_polled(1_000)
    for t in range(3_000, 61_000, 3_000):  # heartbeats keep the session alive
        hb = sends(c.poll(t, may_rejoin=False), ApiKey.HEARTBEAT)
        for h in hb:
            c.on_response(h.request_id, h.api_key, HeartbeatResponse(error_code=0), t)
    out = c.poll(61_001, may_rejoin=False)
    leave = only_send(out, ApiKey.LEAVE_GROUP)
    assert leave.body == LeaveGroupRequest(group_id="g", member_id="m1")
    assert events(out, PartitionsLost) == [PartitionsLost(frozenset({TP0, TP1}))]
    assert sends(c.poll(65_000)) == []  # no rejoin while the application is stuck
    c.user_polled(70_000)
    join = only_send(c.poll(70_000), ApiKey.JOIN_GROUP)
    assert join.body.member_id == ""


def test_stale_answers_are_ignored() -> None:
    c = ConsumerCoordinator(settings(), 0)
    c.subscribe(["t"])
    find_coordinator(c, 0)
    join = only_send(c.poll(0), ApiKey.JOIN_GROUP)
    c.on_response(join.request_id, join.api_key, None, 1)  # gave up on it
    find_coordinator(c, 2)
    only_send(c.poll(2), ApiKey.JOIN_GROUP)
    out = c.on_response(join.request_id, join.api_key, join_response("m9", "m9"), 3)
    assert out == [] and c.member_id == "" and c.state == "JOINING"


def test_fatal_join_error_is_reported() -> None:
    c = ConsumerCoordinator(settings(), 0)
    c.subscribe(["t"])
    find_coordinator(c, 0)
    join = only_send(c.poll(0), ApiKey.JOIN_GROUP)
    out = c.on_response(
        join.request_id,
        join.api_key,
        dataclasses.replace(
            join_response("", ""), error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        ),
        1,
    )
    [fatal] = events(out, GroupFatalError)
    assert fatal.code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert only_send(c.poll(2), ApiKey.JOIN_GROUP)  # the next poll() tries again


def test_leader_with_unknown_protocol_is_fatal_and_wrong_calls_raise() -> None:
    c = ConsumerCoordinator(settings(), 0)
    with pytest.raises(CoordinatorStateError):
        c.perform_assignment({"t": 1})
    c.subscribe(["t"])
    find_coordinator(c, 0)
    join = only_send(c.poll(0), ApiKey.JOIN_GROUP)
    members = [
        JoinGroupResponseMember(
            member_id="m0",
            group_instance_id=None,
            metadata=encode_subscription(Subscription(("t",))),
        )
    ]
    c.on_response(
        join.request_id,
        join.api_key,
        dataclasses.replace(join_response("m0", "m0", 1, members), protocol_name="sticky"),
        1,
    )
    assert events(c.perform_assignment({"t": 1}), GroupFatalError)


def test_static_member_does_not_send_leave_group() -> None:
    c = stable_follower(0, group_instance_id="host-1")
    out = c.leave()
    assert events(out, PartitionsRevoked) == [PartitionsRevoked(frozenset({TP0, TP1}))]
    assert sends(out) == []
    d = stable_follower(0)
    leave = only_send(d.leave(), ApiKey.LEAVE_GROUP)
    assert leave.body == LeaveGroupRequest(group_id="g", member_id="m1")
    assert d.member_id == "" and not d.subscribed


def test_static_member_join_carries_instance_id() -> None:
    c = ConsumerCoordinator(settings(group_instance_id="host-1"), 0)
    c.subscribe(["t"])
    find_coordinator(c, 0)
    assert only_send(c.poll(0), ApiKey.JOIN_GROUP).body.group_instance_id == "host-1"


def test_partition_count_change_triggers_rejoin() -> None:
    c = stable_follower(0)
    c.set_metadata_snapshot({"t": 2})
    c.metadata_updated({"t": 2, "other": 5})
    assert c.is_stable
    c.metadata_updated({"t": 3})
    out = c.poll(1)
    assert events(out, PartitionsRevoked)


def test_subscription_change_triggers_rejoin_and_sync_errors_reset() -> None:
    c = stable_follower(0)
    c.subscribe(["t", "u"])
    assert events(c.poll(1), PartitionsRevoked)
    join = only_send(c.revocation_done(2), ApiKey.JOIN_GROUP)
    assert decode_subscription(join.body.protocols[0].metadata).topics == ("t", "u")
    sync = only_send(
        c.on_response(join.request_id, join.api_key, join_response("m1", "m0", 2), 3),
        ApiKey.SYNC_GROUP,
    )
    c.on_response(
        sync.request_id,
        sync.api_key,
        SyncGroupResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS, assignment=b""),
        4,
    )
    assert c.state == "UNJOINED"
    assert only_send(c.poll(5), ApiKey.JOIN_GROUP).body.member_id == "m1"


def test_commit_errors_drive_the_membership() -> None:
    c = stable_follower(0)
    c.on_commit_error(ErrorCode.REBALANCE_IN_PROGRESS, 1)
    assert not c.is_stable
    c.on_commit_error(ErrorCode.NOT_COORDINATOR, 2)
    assert c.coordinator_id is None
    c2 = stable_follower(0)
    c2.on_commit_error(ErrorCode.UNKNOWN_MEMBER_ID, 1)
    assert c2.member_id == "" and c2.assignment == frozenset()


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="heartbeat"):
        ConsumerCoordinator(settings(heartbeat_interval_ms=10_000), 0)
    with pytest.raises(ValueError, match="assignor"):
        ConsumerCoordinator(settings(assignors=()), 0)
