"""The KIP-848 server assignors (uniform, range): exactly-once coverage by subscribers only,
determinism, balance, stickiness, range's exact layout, and a 1,000 x 10,000 scale case."""

from __future__ import annotations

import dataclasses
import math
import random
import uuid
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from data_plane.coordinator.consumer_assignors import (
    DEFAULT_ASSIGNORS,
    Assignment,
    AssignorMember,
    AssignorTopic,
    RangeServerAssignor,
    ServerAssignor,
    UniformAssignor,
    assignor_for,
)

MAX_EXAMPLES = 100
MAX_MEMBERS = 12
MAX_TOPICS = 5
MAX_PARTITIONS = 20
# Current assignments may name partitions past the end of a topic (it shrank, or is bogus).
MAX_CURRENT_PARTITION = MAX_PARTITIONS + 3
# Member ids are drawn from this alphabet; NEW_MEMBER uses a character outside it.
MEMBER_ID_ALPHABET = "abcxyz"
NEW_MEMBER = "new-member"

UNIFORM = UniformAssignor()
RANGE = RangeServerAssignor()
ASSIGNORS = [pytest.param(UNIFORM, id="uniform"), pytest.param(RANGE, id="range")]

Topics = dict[uuid.UUID, AssignorTopic]
Problem = tuple[list[AssignorMember], Topics]


def _member(
    member_id: str,
    topics: frozenset[uuid.UUID] | set[uuid.UUID],
    current: dict[uuid.UUID, frozenset[int]] | None = None,
) -> AssignorMember:
    return AssignorMember(member_id, None, None, frozenset(topics), current or {})


@st.composite
def problems(draw: st.DrawFn, identical: bool = False) -> Problem:
    """Random topics (one more id than topics: subscribed to but missing from the metadata),
    members with random subscriptions and random, possibly invalid or overlapping, currents."""
    n_topics = draw(st.integers(1, MAX_TOPICS))
    ids = draw(st.lists(st.uuids(), min_size=n_topics + 1, max_size=n_topics + 1, unique=True))
    names = draw(st.lists(st.sampled_from("pqr"), min_size=n_topics, max_size=n_topics))
    counts = draw(st.lists(st.integers(1, MAX_PARTITIONS), min_size=n_topics, max_size=n_topics))
    topics = {
        tid: AssignorTopic(tid, name, n) for tid, name, n in zip(ids, names, counts, strict=False)
    }
    member_ids = draw(
        st.lists(
            st.text(MEMBER_ID_ALPHABET, min_size=1, max_size=4),
            min_size=1,
            max_size=MAX_MEMBERS,
            unique=True,
        )
    )
    subscription = st.frozensets(st.sampled_from(ids))
    shared = draw(subscription)
    current = st.dictionaries(
        st.sampled_from(ids),
        st.frozensets(st.integers(0, MAX_CURRENT_PARTITION), min_size=1, max_size=8),
        max_size=3,
    )
    members = [
        AssignorMember(
            member_id=mid,
            instance_id=None,
            rack_id=None,
            subscribed_topic_ids=shared if identical else draw(subscription),
            current=draw(current),
        )
        for mid in member_ids
    ]
    return members, topics


def _check_valid(
    members: Sequence[AssignorMember], topics: Mapping[uuid.UUID, AssignorTopic], result: Assignment
) -> None:
    """Every member present; every partition of every subscribed, existing topic assigned to
    exactly one of its subscribers; nothing else assigned; no empty topic entries."""
    assert set(result) == {m.member_id for m in members}
    subscribers = {
        tid: {m.member_id for m in members if tid in m.subscribed_topic_ids} for tid in topics
    }
    owners: dict[tuple[uuid.UUID, int], str] = {}
    for mid, per_topic in result.items():
        for tid, parts in per_topic.items():
            assert isinstance(parts, frozenset)
            assert parts, f"{mid} has an empty entry for {tid}"
            assert tid in topics
            assert mid in subscribers[tid], f"{mid} got {tid} without subscribing"
            for p in parts:
                assert 0 <= p < topics[tid].partitions
                assert (tid, p) not in owners, f"{tid}:{p} assigned twice"
                owners[(tid, p)] = mid
    expected = {
        (tid, p) for tid, t in topics.items() if subscribers[tid] for p in range(t.partitions)
    }
    assert set(owners) == expected


def _loads(result: Assignment) -> dict[str, int]:
    return {mid: sum(len(ps) for ps in per.values()) for mid, per in result.items()}


def _owners(result: Assignment) -> dict[tuple[uuid.UUID, int], str]:
    return {(tid, p): mid for mid, per in result.items() for tid, ps in per.items() for p in ps}


def _with_current(members: Sequence[AssignorMember], result: Assignment) -> list[AssignorMember]:
    return [dataclasses.replace(m, current=result[m.member_id]) for m in members]


# --- registry -----------------------------------------------------------------------------


def test_registry() -> None:
    assert DEFAULT_ASSIGNORS == ("uniform", "range")
    for name in DEFAULT_ASSIGNORS:
        assignor = assignor_for(name)
        assert assignor is not None
        assert assignor.name == name
    assert isinstance(assignor_for("uniform"), UniformAssignor)
    assert isinstance(assignor_for("range"), RangeServerAssignor)
    assert assignor_for("cooperative-sticky") is None
    assert assignor_for("") is None


# --- properties of both assignors ---------------------------------------------------------


@pytest.mark.parametrize("assignor", ASSIGNORS)
@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(problem=problems())
def test_exactly_once_by_subscribers(assignor: ServerAssignor, problem: Problem) -> None:
    members, topics = problem
    _check_valid(members, topics, assignor.assign(members, topics))


@pytest.mark.parametrize("assignor", ASSIGNORS)
@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(problem=problems(), data=st.data())
def test_deterministic_whatever_the_input_order(
    assignor: ServerAssignor, problem: Problem, data: st.DataObject
) -> None:
    members, topics = problem
    shuffled = [
        dataclasses.replace(m, current=dict(reversed(list(m.current.items()))))
        for m in data.draw(st.permutations(members))
    ]
    reordered_topics = dict(reversed(list(topics.items())))
    assert assignor.assign(shuffled, reordered_topics) == assignor.assign(members, topics)


@pytest.mark.parametrize("assignor", ASSIGNORS)
def test_edge_cases(assignor: ServerAssignor) -> None:
    present, empty, missing = uuid.UUID(int=1), uuid.UUID(int=2), uuid.UUID(int=3)
    topics = {
        present: AssignorTopic(present, "present", 2),
        empty: AssignorTopic(empty, "empty", 0),
    }
    assert assignor.assign([], topics) == {}
    members = [
        _member("a", {present, empty, missing}, {missing: frozenset({0}), empty: frozenset({0})}),
        _member("b", set()),
    ]
    assert assignor.assign(members, topics) == {"a": {present: frozenset({0, 1})}, "b": {}}
    with pytest.raises(ValueError, match="duplicate member id"):
        assignor.assign([_member("a", {present}), _member("a", set())], topics)


# --- uniform ------------------------------------------------------------------------------


@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(problem=problems(identical=True))
def test_uniform_identical_subscriptions_balance_within_one(problem: Problem) -> None:
    members, topics = problem
    result = UNIFORM.assign(members, topics)
    _check_valid(members, topics, result)
    total = sum(_loads(result).values())
    low, high = total // len(members), -(-total // len(members))
    assert all(low <= n <= high for n in _loads(result).values())


@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(problem=problems())
def test_uniform_locally_balanced(problem: Problem) -> None:
    """No owner of a topic has two or more partitions more than a fellow subscriber of it."""
    members, topics = problem
    result = UNIFORM.assign(members, topics)
    loads = _loads(result)
    for tid in topics:
        subscriber_loads = [loads[m.member_id] for m in members if tid in m.subscribed_topic_ids]
        owner_loads = [loads[mid] for mid, per in result.items() if tid in per]
        if owner_loads:
            assert max(owner_loads) - min(subscriber_loads) <= 1


@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(problem=problems())
def test_uniform_keeps_a_balanced_assignment(problem: Problem) -> None:
    members, topics = problem
    first = UNIFORM.assign(members, topics)
    assert UNIFORM.assign(_with_current(members, first), topics) == first


@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(problem=problems(identical=True), data=st.data())
def test_uniform_removing_a_member_moves_only_its_partitions(
    problem: Problem, data: st.DataObject
) -> None:
    members, topics = problem
    base = UNIFORM.assign(members, topics)
    gone = data.draw(st.sampled_from(members)).member_id
    remaining = [m for m in _with_current(members, base) if m.member_id != gone]
    result = UNIFORM.assign(remaining, topics)
    _check_valid(remaining, topics, result)
    after = _owners(result)
    for partition, owner in _owners(base).items():
        if owner != gone:
            assert after[partition] == owner


@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(problem=problems(identical=True))
def test_uniform_adding_a_member_moves_little_and_only_to_it(problem: Problem) -> None:
    members, topics = problem
    base = UNIFORM.assign(members, topics)
    subscription = members[0].subscribed_topic_ids
    grown = [*_with_current(members, base), _member(NEW_MEMBER, subscription)]
    result = UNIFORM.assign(grown, topics)
    _check_valid(grown, topics, result)
    before, after = _owners(base), _owners(result)
    moved = [partition for partition, owner in before.items() if after[partition] != owner]
    assert all(after[partition] == NEW_MEMBER for partition in moved)
    assert len(moved) <= math.ceil(len(before) / len(grown))


def test_uniform_from_scratch_layout() -> None:
    t = uuid.UUID(int=7)
    topics = {t: AssignorTopic(t, "t", 7)}
    members = [_member(mid, {t}) for mid in ("c", "a", "b")]
    assert UNIFORM.assign(members, topics) == {
        "a": {t: frozenset({0, 1, 2})},
        "b": {t: frozenset({3, 4})},
        "c": {t: frozenset({5, 6})},
    }


def test_uniform_sheds_only_the_excess() -> None:
    """a holds everything; b and c join: a keeps its first partitions, the rest are shared."""
    t = uuid.UUID(int=7)
    topics = {t: AssignorTopic(t, "t", 6)}
    members = [
        _member("a", {t}, {t: frozenset(range(6))}),
        _member("b", {t}),
        _member("c", {t}),
    ]
    assert UNIFORM.assign(members, topics) == {
        "a": {t: frozenset({0, 1})},
        "b": {t: frozenset({2, 3})},
        "c": {t: frozenset({4, 5})},
    }


def test_uniform_duplicate_claim_goes_to_the_first_member_by_id() -> None:
    t = uuid.UUID(int=7)
    topics = {t: AssignorTopic(t, "t", 2)}
    members = [_member("b", {t}, {t: frozenset({0})}), _member("a", {t}, {t: frozenset({0})})]
    assert UNIFORM.assign(members, topics) == {"a": {t: frozenset({0})}, "b": {t: frozenset({1})}}


def test_uniform_heterogeneous_prefers_the_least_loaded() -> None:
    """The topic with one subscriber is placed first, so b's load steers t1 towards a."""
    t1, t2 = uuid.UUID(int=1), uuid.UUID(int=2)
    topics = {t1: AssignorTopic(t1, "t1", 4), t2: AssignorTopic(t2, "t2", 4)}
    members = [_member("a", {t1}), _member("b", {t1, t2})]
    assert UNIFORM.assign(members, topics) == {
        "a": {t1: frozenset(range(4))},
        "b": {t2: frozenset(range(4))},
    }


def test_uniform_heterogeneous_moves_from_an_overloaded_owner() -> None:
    """b keeps t1 partitions only as far as balance allows; c (t1 only) takes the excess."""
    t1, t2 = uuid.UUID(int=1), uuid.UUID(int=2)
    topics = {t1: AssignorTopic(t1, "t1", 6), t2: AssignorTopic(t2, "t2", 2)}
    members = [
        _member("b", {t1, t2}, {t1: frozenset(range(6)), t2: frozenset({0, 1})}),
        _member("c", {t1}),
    ]
    result = UNIFORM.assign(members, topics)
    _check_valid(members, topics, result)
    assert _loads(result) == {"b": 4, "c": 4}
    assert result["b"][t2] == frozenset({0, 1})  # only b subscribes to t2: it keeps both


# --- range --------------------------------------------------------------------------------


def test_range_layout() -> None:
    t1, t2 = uuid.UUID(int=1), uuid.UUID(int=2)
    topics = {t1: AssignorTopic(t1, "t1", 5), t2: AssignorTopic(t2, "t2", 3)}
    members = [
        _member("m2", {t1, t2}, {t1: frozenset({0})}),  # current is ignored
        _member("m1", {t1}),
    ]
    assert RANGE.assign(members, topics) == {
        "m1": {t1: frozenset({0, 1, 2})},
        "m2": {t1: frozenset({3, 4}), t2: frozenset({0, 1, 2})},
    }


@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(problem=problems())
def test_range_consecutive_shares_by_member_id(problem: Problem) -> None:
    members, topics = problem
    result = RANGE.assign(members, topics)
    for tid, topic in topics.items():
        subs = sorted(m.member_id for m in members if tid in m.subscribed_topic_ids)
        start = 0
        for i, mid in enumerate(subs):
            size = topic.partitions // len(subs) + (i < topic.partitions % len(subs))
            assert result[mid].get(tid, frozenset()) == frozenset(range(start, start + size))
            start += size


# --- scale --------------------------------------------------------------------------------

SCALE_MEMBERS = 1_000
SCALE_TOPICS = 10
SCALE_PARTITIONS_PER_TOPIC = 1_000
SCALE_SEED = 848


def _scale_topics() -> Topics:
    ids = [uuid.UUID(int=i + 1) for i in range(SCALE_TOPICS)]
    return {
        tid: AssignorTopic(tid, f"topic-{i}", SCALE_PARTITIONS_PER_TOPIC)
        for i, tid in enumerate(ids)
    }


@pytest.mark.parametrize("assignor", ASSIGNORS)
def test_scale_identical_subscriptions(assignor: ServerAssignor) -> None:
    topics = _scale_topics()
    everything = frozenset(topics)
    members = [_member(f"member-{i:04d}", everything) for i in range(SCALE_MEMBERS)]
    result = assignor.assign(members, topics)
    _check_valid(members, topics, result)
    if assignor is UNIFORM:
        total = SCALE_TOPICS * SCALE_PARTITIONS_PER_TOPIC
        assert set(_loads(result).values()) == {total // SCALE_MEMBERS}
        grown = [*_with_current(members, result), _member(NEW_MEMBER, everything)]
        _check_valid(grown, topics, UNIFORM.assign(grown, topics))


def test_scale_uniform_heterogeneous_with_churned_current() -> None:
    rng = random.Random(SCALE_SEED)
    topics = _scale_topics()
    ids = sorted(topics)
    members = [
        _member(f"member-{i:04d}", set(rng.sample(ids, rng.randint(1, SCALE_TOPICS))))
        for i in range(SCALE_MEMBERS)
    ]
    first = UNIFORM.assign(members, topics)
    _check_valid(members, topics, first)
    # A tenth of the members leave and new ones arrive, changing who subscribes to what.
    churned = [m for m in _with_current(members, first) if rng.random() >= 0.1]
    churned += [_member(f"joiner-{i:03d}", set(rng.sample(ids, 2))) for i in range(100)]
    _check_valid(churned, topics, UNIFORM.assign(churned, topics))
