"""Partition assignors run by the group leader: Kafka's ``range`` and ``roundrobin``.

Both give exactly the assignment Kafka's RangeAssignor and RoundRobinAssignor give for the same
input, so a group may mix kraftlog, Java, librdkafka and kafka-python members whichever of them
is elected leader. Members are ordered as Kafka's ``MemberInfo``: static members (with a
``group.instance.id``) first, by instance id, then dynamic members by member id; keeping
static members in front makes their share stable across restarts.

- range: per topic, partitions 0..n-1 in order and the members subscribed to the topic in
  order; each gets n // c consecutive partitions and the first n % c get one extra.
- roundrobin: every partition of every subscribed topic, sorted by topic then partition, dealt
  to the members in order round robin, skipping members not subscribed to the partition's topic.

Assignors are pure functions of (partition counts per topic, members); they are thread-safe.
A topic the leader has no metadata for is left out (as Kafka does); a member the assignment
does not mention gets an empty assignment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from common.topic_partition import TopicPartition
from kraftlog_client.consumer_protocol import Assignment, Subscription


@dataclass(frozen=True)
class GroupMember:
    """One member of the JoinGroup response the leader receives."""

    member_id: str
    group_instance_id: str | None
    subscription: Subscription


class PartitionAssignor(Protocol):
    name: str

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember]
    ) -> dict[str, Assignment]:
        """member id -> its assignment (every member present, possibly empty)."""
        ...


def member_order(member: GroupMember) -> tuple[int, str]:
    """Kafka's MemberInfo order: static members by instance id, then dynamic by member id."""
    if member.group_instance_id is not None:
        return (0, member.group_instance_id)
    return (1, member.member_id)


def _result(
    members: Sequence[GroupMember], owned: Mapping[str, list[TopicPartition]]
) -> dict[str, Assignment]:
    return {m.member_id: Assignment(tuple(owned.get(m.member_id, ()))) for m in members}


class RangeAssignor:
    name = "range"

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember]
    ) -> dict[str, Assignment]:
        by_topic: dict[str, list[GroupMember]] = {}
        for m in members:
            for topic in set(m.subscription.topics):
                by_topic.setdefault(topic, []).append(m)
        owned: dict[str, list[TopicPartition]] = {}
        for topic in sorted(by_topic):
            count = partitions_per_topic.get(topic)
            if not count:
                continue
            consumers = sorted(by_topic[topic], key=member_order)
            per_consumer, with_extra = divmod(count, len(consumers))
            for i, m in enumerate(consumers):
                start = per_consumer * i + min(i, with_extra)
                length = per_consumer + (1 if i < with_extra else 0)
                owned.setdefault(m.member_id, []).extend(
                    TopicPartition(topic, p) for p in range(start, start + length)
                )
        return _result(members, owned)


class RoundRobinAssignor:
    name = "roundrobin"

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember]
    ) -> dict[str, Assignment]:
        ordered = sorted(members, key=member_order)
        owned: dict[str, list[TopicPartition]] = {}
        if not ordered:
            return {}
        subscribed = {m.member_id: set(m.subscription.topics) for m in ordered}
        topics = sorted(t for t in set().union(*subscribed.values()) if partitions_per_topic.get(t))
        index = 0
        for topic in topics:
            for partition in range(partitions_per_topic[topic]):
                # Some member is subscribed to `topic` (it came from a subscription), so this
                # loop ends within one lap.
                while topic not in subscribed[ordered[index].member_id]:
                    index = (index + 1) % len(ordered)
                owned.setdefault(ordered[index].member_id, []).append(
                    TopicPartition(topic, partition)
                )
                index = (index + 1) % len(ordered)
        return _result(members, owned)


ASSIGNORS: dict[str, PartitionAssignor] = {
    RangeAssignor.name: RangeAssignor(),
    RoundRobinAssignor.name: RoundRobinAssignor(),
}


def assignor_for(name: str) -> PartitionAssignor:
    try:
        return ASSIGNORS[name]
    except KeyError:
        raise ValueError(
            f"unknown partition assignor {name!r}; known: {', '.join(sorted(ASSIGNORS))}"
        ) from None
