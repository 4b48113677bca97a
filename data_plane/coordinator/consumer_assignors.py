"""Server-side partition assignors of the KIP-848 "consumer" group protocol: ``uniform`` and
``range``, which the group coordinator runs to compute a group's target assignment.

Input: the members (id, static instance id, rack, subscribed topic ids, current target
assignment) and the topics known to the metadata image (id -> name, partition count). Output:
member id -> topic id -> partitions.

Guarantees of both assignors:

- Every member appears in the result, possibly with an empty dict; a topic appears in a
  member's dict only when the member gets at least one of its partitions.
- A subscribed topic id missing from ``topics`` (deleted, or not created yet) is ignored, as is
  a topic with no partitions. Every partition of every other subscribed topic is assigned to
  exactly one member, and that member subscribes to the topic; nothing else is assigned.
- Determinism: the result depends only on the input values. Members are ordered by member id,
  topics by (name, topic id), partitions by number; neither the order of ``members`` nor the
  iteration order of any input dict or set changes the result. No randomness.
- Member ids must be unique (ValueError otherwise). ``instance_id`` and ``rack_id`` are not used:
  the topics carry no partition racks to match, and a static member that rejoins keeps its
  target assignment through the coordinator, not through the assignor.

``uniform`` (Kafka's UniformAssignor, the default): balanced and sticky. A member's *valid*
current partitions are those of its ``current`` whose topic it still subscribes to and that
still exist; a partition validly claimed by several members counts for the first of them by
member id.

- Identical subscriptions (every member subscribes to the same existing topics): with P
  partitions and M members, every member gets floor(P/M) or ceil(P/M) partitions in total.
  Each member keeps its valid current partitions up to its quota; the ceil quotas go to the
  members that hold the most, so only the excess above a quota moves. Orphan, new and excess
  partitions fill the members below their quota. Hence removing a member from a balanced
  assignment moves only that member's partitions, and adding one moves at most ceil(P/(M+1))
  partitions, all of them to the new member.
- Different subscriptions (no exactly balanced assignment may exist, and finding the most
  balanced one is a flow problem): members keep their valid current partitions; every other
  partition goes to the subscriber of its topic with the fewest partitions, the topics with
  fewest subscribers first; then, while some member A owns a partition of a topic T and
  another subscriber B of T has at least two partitions fewer than A in total, one of A's
  partitions of T moves to B (those A received in this round go before those it kept). The
  result is *locally balanced*: for every topic T and every member A owning a partition of T,
  every subscriber of T has at least load(A) - 1 partitions, so no single move makes the
  assignment more even. With identical subscriptions this is the floor/ceil balance above.
- In both cases a ``current`` that is complete, valid, duplicate-free and locally balanced
  (for example, uniform's previous result for the same subscriptions) is returned unchanged.

``range`` (Kafka's server-side RangeAssignor): per topic, the subscribers sorted by member id
and partitions 0..n-1 in order; each subscriber gets n // c consecutive partitions (c
subscribers) and the first n % c get one more. It is deterministic, not sticky: ``current``
is ignored (Kafka 3.7's range keeps current owners when the counts allow; this one does not).

Cost: uniform is O(P log M + sum of subscribers per topic) per balancing pass, range O(P + M
log M); 1,000 members x 10,000 partitions take tens of milliseconds.

Pure functions, thread-safe: the assignors keep no state and never mutate their inputs.
"""

from __future__ import annotations

import heapq
import itertools
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

UNIFORM = "uniform"
RANGE = "range"
# Kafka's group.consumer.assignors default, in order; the first is the group's default assignor.
DEFAULT_ASSIGNORS: tuple[str, ...] = (UNIFORM, RANGE)

# Marks a partition nobody owns (yet) in the per-topic owner arrays.
_UNOWNED = -1
# A partition may move only from a member with at least this many more partitions than the
# recipient: a move between loads differing by one only swaps which of the two is ahead.
_MIN_LOAD_GAP_TO_MOVE = 2


@dataclass(frozen=True, slots=True)
class AssignorMember:
    """One member as the assignor sees it."""

    member_id: str
    instance_id: str | None  # static membership id, or None
    rack_id: str | None
    subscribed_topic_ids: frozenset[uuid.UUID]
    current: dict[uuid.UUID, frozenset[int]]  # the member's current target assignment


@dataclass(frozen=True, slots=True)
class AssignorTopic:
    """One topic of the metadata image."""

    topic_id: uuid.UUID
    name: str
    partitions: int


# member id -> topic id -> partitions
Assignment = dict[str, dict[uuid.UUID, frozenset[int]]]


class ServerAssignor(Protocol):
    name: str

    def assign(
        self, members: Sequence[AssignorMember], topics: Mapping[uuid.UUID, AssignorTopic]
    ) -> Assignment:
        """member id -> topic id -> partitions; every member present (see the module doc)."""
        ...


@dataclass(slots=True)
class _Problem:
    """The input normalised into index space: members 0..M-1 in member-id order, topics
    0..T-1 (only subscribed, existing, non-empty ones) in (name, id) order."""

    members: list[AssignorMember]
    topic_ids: list[uuid.UUID]
    counts: list[int]  # partitions per topic
    subscribers: list[list[int]]  # per topic: subscribing members, ascending
    member_topics: list[tuple[int, ...]]  # per member: subscribed topics, ascending
    topic_index: dict[uuid.UUID, int]


def _normalise(
    members: Sequence[AssignorMember], topics: Mapping[uuid.UUID, AssignorTopic]
) -> _Problem:
    ordered = sorted(members, key=lambda m: m.member_id)
    for a, b in itertools.pairwise(ordered):
        if a.member_id == b.member_id:
            raise ValueError(f"duplicate member id {a.member_id!r}")
    subscribed: set[uuid.UUID] = set()
    for m in ordered:
        subscribed.update(m.subscribed_topic_ids)
    # The mapping key is authoritative for the id; a topic without partitions has nothing to give.
    live = [tid for tid in subscribed if tid in topics and topics[tid].partitions > 0]
    live.sort(key=lambda tid: (topics[tid].name, tid))
    topic_index = {tid: i for i, tid in enumerate(live)}
    member_topics = [
        tuple(sorted(topic_index[t] for t in m.subscribed_topic_ids if t in topic_index))
        for m in ordered
    ]
    subscribers: list[list[int]] = [[] for _ in live]
    for mi, ts in enumerate(member_topics):  # ascending mi, so each list comes out sorted
        for t in ts:
            subscribers[t].append(mi)
    return _Problem(
        members=ordered,
        topic_ids=live,
        counts=[topics[tid].partitions for tid in live],
        subscribers=subscribers,
        member_topics=member_topics,
        topic_index=topic_index,
    )


def _claim_current(problem: _Problem) -> tuple[list[list[int]], list[list[tuple[int, int]]]]:
    """Owner arrays (per topic, per partition: member index or _UNOWNED) holding every valid
    current partition, and per member the (topic, partition) pairs it got, in topic then
    partition order. The first member by id wins a partition claimed twice."""
    owner = [[_UNOWNED] * n for n in problem.counts]
    retained: list[list[tuple[int, int]]] = []
    for mi, member in enumerate(problem.members):
        mine = set(problem.member_topics[mi])
        valid = [
            problem.topic_index[tid]
            for tid in member.current
            if tid in problem.topic_index and problem.topic_index[tid] in mine
        ]
        kept: list[tuple[int, int]] = []
        for t in sorted(valid):
            row, n = owner[t], problem.counts[t]
            for p in sorted(member.current[problem.topic_ids[t]]):
                if 0 <= p < n and row[p] == _UNOWNED:
                    row[p] = mi
                    kept.append((t, p))
        retained.append(kept)
    return owner, retained


def _result_from_owners(problem: _Problem, owner: list[list[int]]) -> Assignment:
    grouped: list[dict[uuid.UUID, list[int]]] = [{} for _ in problem.members]
    for t, row in enumerate(owner):  # topic order, then partition order: deterministic output
        tid = problem.topic_ids[t]
        for p, mi in enumerate(row):
            grouped[mi].setdefault(tid, []).append(p)
    return {
        m.member_id: {tid: frozenset(ps) for tid, ps in grouped[mi].items()}
        for mi, m in enumerate(problem.members)
    }


def _uniform_identical(problem: _Problem) -> Assignment:
    """Every member subscribes to the same topics: exact floor/ceil quotas."""
    owner, retained = _claim_current(problem)
    total = sum(problem.counts)
    base, extra = divmod(total, len(problem.members))
    # The `extra` ceil quotas go to the members holding the most, so the fewest partitions move.
    by_held = sorted(range(len(problem.members)), key=lambda mi: (-len(retained[mi]), mi))
    quota = [base] * len(problem.members)
    for mi in by_held[:extra]:
        quota[mi] = base + 1
    for mi, kept in enumerate(retained):
        for t, p in kept[quota[mi] :]:  # the excess goes back to the pool
            owner[t][p] = _UNOWNED
        del kept[quota[mi] :]
    pool = [(t, p) for t, row in enumerate(owner) for p, mi in enumerate(row) if mi == _UNOWNED]
    # Consecutive pool slices keep a member's new partitions together, topic by topic.
    next_free = 0
    for mi, kept in enumerate(retained):
        deficit = quota[mi] - len(kept)
        for t, p in pool[next_free : next_free + deficit]:
            owner[t][p] = mi
        next_free += deficit
    return _result_from_owners(problem, owner)


def _uniform_general(problem: _Problem) -> Assignment:
    """Subscriptions differ: keep, fill the least loaded, then rebalance until locally balanced."""
    owner, retained = _claim_current(problem)
    members = range(len(problem.members))
    load = [len(kept) for kept in retained]
    # held[mi][t]: mi's partitions of t, kept ones first, so popping from the end gives up the
    # partitions received this round before the ones the member already had.
    held: list[dict[int, list[int]]] = [{} for _ in members]
    for mi, kept in enumerate(retained):
        for t, p in kept:
            held[mi].setdefault(t, []).append(p)

    # Fill: the topics with fewest subscribers first, since they have the fewest choices.
    fill_order = sorted(
        range(len(problem.topic_ids)), key=lambda t: (len(problem.subscribers[t]), t)
    )
    for t in fill_order:
        row = owner[t]
        free = [p for p, mi in enumerate(row) if mi == _UNOWNED]
        if not free:
            continue
        heap = [(load[mi], mi) for mi in problem.subscribers[t]]
        heapq.heapify(heap)
        for p in free:
            _, mi = heap[0]
            row[p] = mi
            held[mi].setdefault(t, []).append(p)
            load[mi] += 1
            heapq.heapreplace(heap, (load[mi], mi))

    # Rebalance: each move lowers the sum of squared loads by at least 2, so this terminates;
    # a full pass without a move means the assignment is locally balanced.
    moved = True
    while moved:
        moved = False
        for t in range(len(problem.topic_ids)):
            moved |= _rebalance_topic(t, problem.subscribers[t], owner[t], held, load)
    return _result_from_owners(problem, owner)


def _rebalance_topic(
    t: int,
    subscribers: list[int],
    row: list[int],
    held: list[dict[int, list[int]]],
    load: list[int],
) -> bool:
    """Move partitions of topic t from its most loaded owner to its least loaded subscriber
    while they differ by two or more. Heaps hold (load, member) entries; an entry whose load is
    no longer the member's (or, for owners, a member that no longer owns t) is stale, skipped."""
    lightest = [(load[mi], mi) for mi in subscribers]
    heaviest = [(-load[mi], mi) for mi in subscribers if held[mi].get(t)]
    heapq.heapify(lightest)
    heapq.heapify(heaviest)
    moved = False
    while True:
        while lightest and lightest[0][0] != load[lightest[0][1]]:
            heapq.heappop(lightest)
        while heaviest and (
            -heaviest[0][0] != load[heaviest[0][1]] or not held[heaviest[0][1]].get(t)
        ):
            heapq.heappop(heaviest)
        if not heaviest:
            return moved
        donor, recipient = heaviest[0][1], lightest[0][1]
        if load[donor] - load[recipient] < _MIN_LOAD_GAP_TO_MOVE:
            return moved
        p = held[donor][t].pop()
        held[recipient].setdefault(t, []).append(p)
        row[p] = recipient
        load[donor] -= 1
        load[recipient] += 1
        moved = True
        # New entries for the two changed loads; their old entries are now stale.
        heapq.heappush(lightest, (load[donor], donor))
        heapq.heappush(lightest, (load[recipient], recipient))
        if held[donor][t]:
            heapq.heappush(heaviest, (-load[donor], donor))
        heapq.heappush(heaviest, (-load[recipient], recipient))


def _range(problem: _Problem) -> Assignment:
    owner: list[list[int]] = []
    for n, subs in zip(problem.counts, problem.subscribers, strict=True):
        # Every live topic has a subscriber: _normalise keeps only subscribed topics.
        share, extra = divmod(n, len(subs))
        row: list[int] = []
        for i, mi in enumerate(subs):
            row.extend([mi] * (share + (1 if i < extra else 0)))
        owner.append(row)
    return _result_from_owners(problem, owner)


class UniformAssignor:
    """Kafka's ``uniform`` server assignor: balanced and sticky (see the module doc)."""

    name = UNIFORM

    def assign(
        self, members: Sequence[AssignorMember], topics: Mapping[uuid.UUID, AssignorTopic]
    ) -> Assignment:
        problem = _normalise(members, topics)
        if not problem.members:
            return {}
        first = problem.member_topics[0]
        if all(ts == first for ts in problem.member_topics):
            return _uniform_identical(problem)
        return _uniform_general(problem)


class RangeServerAssignor:
    """Kafka's ``range`` server assignor: consecutive ranges per topic; deterministic."""

    name = RANGE

    def assign(
        self, members: Sequence[AssignorMember], topics: Mapping[uuid.UUID, AssignorTopic]
    ) -> Assignment:
        return _range(_normalise(members, topics))


# The assignors are stateless, so one shared instance of each serves every group.
_ASSIGNORS: dict[str, ServerAssignor] = {
    UNIFORM: UniformAssignor(),
    RANGE: RangeServerAssignor(),
}


def assignor_for(name: str) -> ServerAssignor | None:
    """The server assignor called ``name``, or None when there is none by that name."""
    return _ASSIGNORS.get(name)
