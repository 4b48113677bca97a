"""KIP-848 consumer groups in the group coordinator (sans-IO, fake clock): joins, epochs,
revocation before reassignment, timeouts, static members, classic/consumer coexistence,
offsets with member epochs, and a hypothesis run checking that no partition is ever owned by
two members while the group converges."""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from common.error_codes import ErrorCode
from data_plane.coordinator.consumer_assignors import AssignorTopic
from data_plane.coordinator.consumer_group import INVALID_REGULAR_EXPRESSION
from data_plane.coordinator.coordinator import GroupCoordinator
from data_plane.coordinator.messages import (
    ConsumerHeartbeatRequest,
    ConsumerHeartbeatResult,
    OffsetCommitRequest,
)
from tests.unit.coordinator.harness import Harness

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)
REBALANCE_TIMEOUT_MS = 60_000
SESSION_MS = 45_000


def topics(**counts: int) -> dict[str, AssignorTopic]:
    ids = {"t1": T1, "t2": T2}
    return {
        n: AssignorTopic(ids.get(n, uuid.uuid5(uuid.NAMESPACE_DNS, n)), n, c)
        for n, c in counts.items()
    }


class Group:
    """Members heartbeating a coordinator like KIP-848 clients: each owns what it was last
    told, and reports it."""

    def __init__(self, h: Harness, group_id: str = "g", **topic_counts: int) -> None:
        self.h = h
        self.group_id = group_id
        self.topics = topics(**(topic_counts or {"t1": 6}))
        self.epochs: dict[str, int] = {}
        self.owned: dict[str, dict[uuid.UUID, frozenset[int]]] = {}

    def hb(
        self,
        member_id: str = "",
        epoch: int | None = None,
        *,
        owned: Any = "mine",
        **fields: Any,
    ) -> ConsumerHeartbeatResult:
        if epoch is None:
            epoch = self.epochs.get(member_id, 0)
        if owned == "mine":
            owned = self.owned.get(member_id) if member_id in self.owned else None
        req = ConsumerHeartbeatRequest(
            self.group_id, member_id, epoch, owned=owned, client_id="c", **fields
        )
        r = self.send(req)
        if r.error_code == ErrorCode.NO_ERROR and r.member_id is not None:
            if r.member_epoch < 0:
                self.epochs.pop(r.member_id, None)
                self.owned.pop(r.member_id, None)
            else:
                self.epochs[r.member_id] = r.member_epoch
                if r.assignment is not None:
                    self.owned[r.member_id] = dict(r.assignment)
        return r

    def send(self, req: ConsumerHeartbeatRequest) -> ConsumerHeartbeatResult:
        """One heartbeat, answered once its records are written (the harness writes at once)."""
        token = self.h.token()
        self.h.absorb(self.h.c.consumer_group_heartbeat(token, req, self.topics))
        result: ConsumerHeartbeatResult = self.h.results[token]
        return result

    def join(self, subscribed: tuple[str, ...] = ("t1",), **fields: Any) -> str:
        fields.setdefault("rebalance_timeout_ms", REBALANCE_TIMEOUT_MS)
        r = self.hb("", 0, owned=None, subscribed_topic_names=subscribed, **fields)
        assert r.error_code == ErrorCode.NO_ERROR, r
        assert r.member_id
        return r.member_id

    def settle(self, rounds: int = 6) -> None:
        for _ in range(rounds):
            for mid in list(self.epochs):
                r = self.hb(mid)
                if r.error_code == ErrorCode.FENCED_MEMBER_EPOCH:
                    # Answers lost twice in a row leave the member two epochs behind, which
                    # the coordinator fences (only the previous epoch is forgiven, as in
                    # Kafka); a KIP-848 client then gives up what it owns and rejoins under
                    # the same member id at epoch 0.
                    self.epochs.pop(mid)
                    self.owned.pop(mid, None)
                    r = self.hb(
                        mid,
                        0,
                        owned=None,
                        subscribed_topic_names=("t1",),
                        rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
                    )
                assert r.error_code == ErrorCode.NO_ERROR, r

    def count(self, member_id: str) -> int:
        return sum(len(ps) for ps in self.owned.get(member_id, {}).values())

    def disjoint(self) -> bool:
        seen: set[tuple[uuid.UUID, int]] = set()
        for parts in self.owned.values():
            for tid, ps in parts.items():
                for p in ps:
                    if (tid, p) in seen:
                        return False
                    seen.add((tid, p))
        return True


def test_first_member_gets_everything_and_a_heartbeat_interval() -> None:
    g = Group(Harness())
    a = g.join()
    assert g.owned[a] == {T1: frozenset(range(6))} and g.epochs[a] >= 1
    r = g.hb(a)
    assert r.heartbeat_interval_ms == 5_000 and r.assignment is None  # nothing changed
    d = g.h.c.consumer_group_describe("g")
    assert d.state == "Stable" and d.assignor_name == "uniform" and len(d.members) == 1
    assert g.h.c.list_groups()[1] == [("g", "consumer", "Stable", "consumer")]


def test_partitions_move_only_after_their_owner_revoked_them() -> None:
    g = Group(Harness())
    a = g.join()
    a_epoch = g.epochs[a]
    b = g.join()
    assert g.count(b) == 0  # a still owns everything
    r = g.hb(a)  # a learns what to give back, at its old epoch
    assert r.member_epoch == a_epoch and g.count(a) == 3
    assert g.h.c.consumer_group_describe("g").state == "Reconciling"
    g.owned[a] = dict(r.assignment or {})
    assert g.hb(b).assignment in (None, {})  # not released yet: a has not confirmed
    g.hb(a)  # a reports the smaller set: revoked; it moves to the new epoch
    assert g.epochs[a] > a_epoch
    g.hb(b)
    assert g.count(a) == 3 and g.count(b) == 3 and g.disjoint()
    g.settle()
    assert g.h.c.consumer_group_describe("g").state == "Stable"


def test_epoch_checks() -> None:
    g = Group(Harness())
    a = g.join()
    epoch = g.epochs[a]
    assert g.hb(a, epoch + 1).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    g.join()
    g.hb(a)
    g.hb(a)  # revoked, now at a newer epoch
    assert g.epochs[a] > epoch
    # The previous epoch is accepted while what it owns is within its assignment (a lost
    # answer); older epochs, or owning more, are fenced.
    assert g.hb(a, epoch, owned=g.owned[a]).error_code == ErrorCode.NO_ERROR
    assert g.hb(a, epoch, owned={T1: frozenset(range(6))}).error_code == (
        ErrorCode.FENCED_MEMBER_EPOCH
    )
    assert g.hb("nobody", 3).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert g.hb("", 3).error_code == ErrorCode.INVALID_REQUEST


def test_bad_joins_are_refused() -> None:
    g = Group(Harness())
    assert g.hb("", 0, owned=None, rebalance_timeout_ms=1000).error_code == (
        ErrorCode.INVALID_REQUEST
    )  # no subscription
    no_timeout = g.hb("", 0, owned=None, subscribed_topic_names=("t1",))
    assert no_timeout.error_code == ErrorCode.INVALID_REQUEST
    r = g.hb(
        "", 0, owned=None, subscribed_topic_names=("t1",), rebalance_timeout_ms=1000,
        server_assignor="sticky",
    )  # fmt: skip
    assert r.error_code == ErrorCode.UNSUPPORTED_ASSIGNOR
    r = g.hb("", 0, owned=None, subscribed_topic_regex="(", rebalance_timeout_ms=1000)
    assert r.error_code == INVALID_REGULAR_EXPRESSION
    assert g.h.c.group("g") is None  # refused joins leave no group behind
    classic_only = Group(Harness(rebalance_protocols=("classic",)))
    assert classic_only.send(ConsumerHeartbeatRequest("g", "", 0)).error_code == (
        ErrorCode.UNSUPPORTED_VERSION
    )


def test_session_expiry_and_leave_reassign() -> None:
    h = Harness()
    g = Group(h)
    a, b, c = g.join(), g.join(), g.join()
    g.settle()
    assert sorted(g.count(m) for m in (a, b, c)) == [2, 2, 2] and g.disjoint()
    # b leaves; c stops heartbeating and expires.
    assert g.hb(b, -1).member_epoch == -1
    h.advance(SESSION_MS - 1)
    g.hb(a)
    h.advance(2)
    h.absorb(h.c.tick())
    g.owned.pop(c)
    g.epochs.pop(c)
    g.settle()
    assert g.count(a) == 6 and h.c.consumer_group_describe("g").state == "Stable"


def test_a_member_that_never_revokes_is_fenced_after_its_rebalance_timeout() -> None:
    h = Harness(consumer_session_timeout_ms=10 * REBALANCE_TIMEOUT_MS)  # sessions stay alive
    g = Group(h)
    a = g.join()
    b = g.join()
    everything = {T1: frozenset(range(6))}
    for _ in range(3):
        # Told to revoke, a keeps reporting everything it had.
        g.hb(a, owned=everything)
        g.hb(b)
        h.advance(REBALANCE_TIMEOUT_MS // 4)
    assert g.count(b) == 0  # nothing released while a holds on
    h.advance(REBALANCE_TIMEOUT_MS)
    h.absorb(h.c.tick())
    assert g.hb(a).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    g.owned.pop(a)
    g.epochs.pop(a)
    g.settle()
    assert g.count(b) == 6


def test_static_member_restarts_into_its_partitions() -> None:
    g = Group(Harness())
    a = g.join(instance_id="i-a")
    b = g.join(instance_id="i-b")
    g.settle()
    owned_a, epoch = dict(g.owned[a]), g.epochs[a]
    dup = g.hb("", 0, owned=None, instance_id="i-a", subscribed_topic_names=("t1",),
               rebalance_timeout_ms=REBALANCE_TIMEOUT_MS)  # fmt: skip
    assert dup.error_code == ErrorCode.UNRELEASED_INSTANCE_ID
    assert g.hb(a, -2).member_epoch == -2
    a2 = g.join(instance_id="i-a")
    assert a2 != a and g.owned[a2] == owned_a and g.epochs[a2] == epoch
    g.settle()
    assert g.count(b) == 3 and g.owned[a2] == owned_a


def test_regex_subscription_picks_up_a_later_topic() -> None:
    g = Group(Harness(), t1=2)
    a = g.join(subscribed=(), subscribed_topic_regex="t.*")
    assert g.count(a) == 2
    g.topics = topics(t1=2, t2=3)
    g.settle()
    assert g.owned[a] == {T1: frozenset({0, 1}), T2: frozenset({0, 1, 2})}


def test_classic_and_consumer_groups_side_by_side() -> None:
    h = Harness()
    h.join(group="classic")
    h.advance(1)
    h.absorb(h.c.tick())
    assert h.c.group("classic").members  # a classic group in use
    g = Group(h, "classic")
    r = g.hb("", 0, owned=None, subscribed_topic_names=("t1",), rebalance_timeout_ms=1000)
    assert r.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    # An empty classic group with offsets becomes a consumer group; its offsets stay.
    t = h.token()
    h.absorb(
        h.c.commit_offsets(t, OffsetCommitRequest("old", -1, "", None, ((("t1", 0), 42, -1, ""),)))
    )
    old = Group(h, "old")
    a = old.join()
    assert h.c.fetch_offsets("old", [("t1", 0)]).offsets[("t1", 0)].offset == 42
    # Classic members cannot join it while it has members; once empty it turns classic.
    token = h.join(group="old")
    assert h.join_result(token).error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    old.hb(a, -1)
    h.join(group="old")
    assert h.c.group("old").consumer is None and h.c.group("old").members
    assert h.c.fetch_offsets("old", [("t1", 0)]).offsets[("t1", 0)].offset == 42


def test_offsets_are_checked_against_member_epochs() -> None:
    h = Harness()
    g = Group(h)
    a = g.join()
    epoch = g.epochs[a]

    def commit(member: str, gen: int) -> int:
        t = h.token()
        h.absorb(
            h.c.commit_offsets(
                t, OffsetCommitRequest("g", gen, member, None, ((("t1", 0), 7, -1, ""),))
            )
        )
        return h.results[t].errors[("t1", 0)]

    assert commit(a, epoch) == ErrorCode.NO_ERROR
    assert commit(a, epoch - 1) == ErrorCode.STALE_MEMBER_EPOCH
    assert commit("ghost", epoch) == ErrorCode.UNKNOWN_MEMBER_ID
    assert commit("", -1) == ErrorCode.ILLEGAL_GENERATION  # simple commit, group in use
    fetched = h.c.fetch_offsets("g", [("t1", 0)], member_id=a, member_epoch=epoch)
    assert fetched.error_code == ErrorCode.NO_ERROR and fetched.offsets[("t1", 0)].offset == 7
    stale = h.c.fetch_offsets("g", [("t1", 0)], member_id=a, member_epoch=epoch + 5)
    assert stale.error_code == ErrorCode.STALE_MEMBER_EPOCH
    assert h.c.fetch_offsets("g", None).error_code == ErrorCode.NO_ERROR  # an admin's fetch


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["join", "leave", "beat", "beat", "beat", "lose"]), st.integers(0, 7)
        ),
        min_size=1,
        max_size=40,
    ),
    partitions=st.integers(1, 12),
)
def test_no_partition_is_ever_owned_twice_and_the_group_converges(
    steps: list[tuple[str, int]], partitions: int
) -> None:
    g = Group(Harness(), t1=partitions)
    for action, pick in steps:
        members = sorted(g.epochs)
        if action == "join" and len(members) < 6:
            g.join()
        elif action == "leave" and members:
            g.hb(members[pick % len(members)], -1)
        elif action == "beat" and members:
            g.hb(members[pick % len(members)])
        elif action == "lose" and members:
            # A heartbeat whose answer is lost: the coordinator moved, the client did not.
            mid = members[pick % len(members)]
            req = ConsumerHeartbeatRequest(
                "g", mid, g.epochs[mid], owned=g.owned.get(mid), client_id="c"
            )
            g.send(req)
        assert g.disjoint()
    g.settle(rounds=8)
    assert g.disjoint()
    if g.epochs:
        assert sum(g.count(m) for m in g.epochs) == partitions
        assert g.h.c.consumer_group_describe("g").state == "Stable"
        counts = [g.count(m) for m in g.epochs]
        assert max(counts) - min(counts) <= 1


def reloaded(h: Harness) -> GroupCoordinator:
    """A new coordinator that loads what ``h``'s wrote to its partition, in order."""
    c = GroupCoordinator(h.c.config, h.clock, num_partitions=1)
    c.begin_loading(0)
    for write in h.written:
        for key, value in write.records:
            c.load_record(0, key, value)
    c.complete_loading(0)
    return c


def state_of(c: GroupCoordinator, gid: str = "g") -> Any:
    group = c.group(gid)
    if group is None or group.consumer is None:
        return None
    cg = group.consumer
    return (
        cg.group_epoch,
        cg.assignment_epoch,
        cg.subscription_metadata,
        dict(cg.owners),
        {mid: cg.target.get(mid) for mid in cg.members},
        {
            mid: (m.member_epoch, m.state, m.assigned, m.pending_revocation,
                  m.subscribed_topic_names, m.instance_id, m.rebalance_timeout_ms,
                  m.static_leaving)
            for mid, m in cg.members.items()
        },
    )  # fmt: skip


def test_a_new_coordinator_loads_the_groups_state_from_its_records() -> None:
    h = Harness()
    g = Group(h)
    a, b = g.join(instance_id="i-a"), g.join()
    g.hb(a)  # a is now revoking: the reload must keep that too
    assert state_of(reloaded(h)) == state_of(h.c)
    g.settle()
    c = g.join()
    g.settle()
    g.hb(c, -1)
    g.settle()
    assert state_of(reloaded(h)) == state_of(h.c) is not None
    # A member keeps heartbeating at its epoch against the new coordinator: nothing moves.
    g.h.c = reloaded(h)
    before = dict(g.owned)
    for mid in (a, b):
        r = g.hb(mid)
        assert r.error_code == ErrorCode.NO_ERROR and r.assignment is None
    assert g.owned == before
    # The last members leave and the group (no offsets) is removed, in the log too.
    g.hb(a, -1)
    g.hb(b, -1)
    assert h.c.group("g") is None and reloaded(h).group("g") is None


def test_a_write_error_answers_the_heartbeat_and_the_next_change_rewrites_all() -> None:
    h = Harness()
    g = Group(h)
    a = g.join()
    h.auto_complete_writes = False
    token = h.token()
    join = ConsumerHeartbeatRequest(
        "g", "", 0, subscribed_topic_names=("t1",), rebalance_timeout_ms=1000
    )
    h.absorb(h.c.consumer_group_heartbeat(token, join, g.topics))
    assert token not in h.results  # answered once written
    h.complete_writes(ErrorCode.NOT_ENOUGH_REPLICAS)
    assert h.results[token].error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    h.auto_complete_writes = True
    g.settle()
    assert state_of(reloaded(h)) == state_of(h.c)
    assert a in h.c.group("g").consumer.members


def test_a_static_member_that_left_is_known_as_such_after_a_reload() -> None:
    h = Harness()
    g = Group(h)
    a = g.join(instance_id="i-a")
    g.join()
    g.settle()
    owned_a = dict(g.owned[a])
    g.hb(a, -2)
    h.c = reloaded(h)
    assert state_of(h.c) is not None and h.c.group("g").consumer.members[a].static_leaving
    a2 = g.join(instance_id="i-a")  # the instance comes back to the new coordinator
    assert g.owned[a2] == owned_a
