"""Native consumer groups against a real broker: balanced assignment, rebalance when a member
leaves, at-least-once delivery across a rebalance with auto commit, and groups that mix the
native consumer with kafka-python and with librdkafka (confluent-kafka)."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable

import confluent_kafka
import pytest

from kraftlog_client import Consumer, ConsumerRebalanceListener, TopicPartition
from tests.integration.client_groups.conftest import MEMBER

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import kafka

pytestmark = pytest.mark.integration

DEADLINE_S = 60.0


def member(bootstrap: str, group: str, name: str, **extra: str) -> Consumer:
    return Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "client.id": name, **MEMBER, **extra}
    )


def poll_until(
    consumers: Iterable[Consumer], done: Callable[[], bool], sink: list | None = None
) -> None:
    consumers = list(consumers)
    deadline = time.monotonic() + DEADLINE_S
    while not done():
        assert time.monotonic() < deadline, "condition not reached in time"
        for c in consumers:
            records = c.poll(50)
            if sink is not None:
                sink.extend(records)


def shares(consumers: Iterable[Consumer]) -> list[set[TopicPartition]]:
    return [c.assignment() for c in consumers]


def balanced(consumers: list[Consumer], partitions: int, each: int) -> Callable[[], bool]:
    def check() -> bool:
        owned = shares(consumers)
        union = set().union(*owned)
        return (
            all(len(s) == each for s in owned)
            and len(union) == partitions
            and len({c.group_generation()[0] for c in consumers}) == 1
        )

    return check


class Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.calls: list[tuple[str, set[TopicPartition]]] = []

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.calls.append(("revoked", revoked))

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.calls.append(("assigned", assigned))


def test_three_members_share_six_partitions_and_rebalance_when_one_leaves(
    bootstrap: str, new_topic: Callable[..., str], group_id: str
) -> None:
    topic = new_topic(6)
    listener = Recorder()
    consumers = [member(bootstrap, group_id, f"m{i}") for i in range(3)]
    try:
        consumers[0].subscribe([topic], listener=listener)
        for c in consumers[1:]:
            c.subscribe([topic])
        poll_until(consumers, balanced(consumers, 6, 2))
        # range: each member holds two consecutive partitions
        assert sorted(sorted(tp.partition for tp in s) for s in shares(consumers)) == [
            [0, 1],
            [2, 3],
            [4, 5],
        ]
        assert listener.calls[-1][0] == "assigned"
        consumers[2].close()
        rest = consumers[:2]
        poll_until(rest, balanced(rest, 6, 3))
        kinds = [k for k, _ in listener.calls]
        assert "revoked" in kinds and kinds[-1] == "assigned"
        assert listener.calls[-1][1] == consumers[0].assignment()
    finally:
        for c in consumers:
            c.close()


def test_at_least_once_across_a_rebalance_with_auto_commit(
    bootstrap: str,
    new_topic: Callable[..., str],
    group_id: str,
    produce: Callable[..., list[bytes]],
) -> None:
    topic = new_topic(4)
    sent = produce(topic, 400, 4)
    seen: list = []
    a = member(
        bootstrap, group_id, "a", **{"auto.commit.interval.ms": "100", "max.poll.records": "20"}
    )
    b = member(
        bootstrap, group_id, "b", **{"auto.commit.interval.ms": "100", "max.poll.records": "20"}
    )
    try:
        a.subscribe([topic])
        poll_until([a], lambda: len(seen) >= 100, seen)
        b.subscribe([topic])  # rebalance in the middle of the backlog
        sent += produce(topic, 400, 4, start=400)
        poll_until([a, b], balanced([a, b], 4, 2), seen)
        poll_until([a, b], lambda: len({r.value for r in seen}) >= 500, seen)
        a.close()  # commits, revokes and leaves: b takes everything over from the commits
        poll_until([b], lambda: {r.value for r in seen} >= set(sent), seen)
        assert b.assignment() == {TopicPartition(topic, p) for p in range(4)}
        b.commit()
        committed = b.committed([TopicPartition(topic, p) for p in range(4)])
        assert committed == {TopicPartition(topic, p): 200 for p in range(4)}
        # Re-deliveries only come from uncommitted tails, never a restart from zero.
        assert len(seen) < 2 * len(sent)
    finally:
        a.close()
        b.close()


def test_a_group_mixing_the_native_consumer_and_kafka_python(
    bootstrap: str,
    new_topic: Callable[..., str],
    group_id: str,
) -> None:
    topic = new_topic(6)
    native = member(bootstrap, group_id, "native")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = kafka.KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group_id,
            client_id="kafka-python",
            auto_offset_reset="earliest",
            session_timeout_ms=6000,
            heartbeat_interval_ms=300,
        )
    try:
        # kafka-python joins first and leads: the native member decodes its assignment
        # (the librdkafka test below has the native member lead).
        deadline = time.monotonic() + DEADLINE_S
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # Its metadata must know the topic before it leads: a leader whose metadata
            # response comes in just after the JoinGroup assigns nothing ("No partition
            # metadata for topic") and, its metadata snapshot then unchanged, never rejoins.
            assert theirs.partitions_for_topic(topic) == set(range(6))
            theirs.subscribe([topic])
            while len(theirs.assignment()) != 6:
                assert time.monotonic() < deadline
                theirs.poll(timeout_ms=50)
        native.subscribe([topic])
        while True:
            native.poll(50)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                theirs.poll(timeout_ms=50)
                their_share = {TopicPartition(tp.topic, tp.partition) for tp in theirs.assignment()}
            mine = native.assignment()
            if len(mine) == 3 and len(their_share) == 3 and not mine & their_share:
                break
            assert time.monotonic() < deadline, (mine, their_share)
        assert mine | their_share == {TopicPartition(topic, p) for p in range(6)}
    finally:
        native.close()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs.close()


def test_a_group_mixing_the_native_consumer_and_librdkafka(
    bootstrap: str,
    new_topic: Callable[..., str],
    group_id: str,
) -> None:
    topic = new_topic(6)
    native = member(bootstrap, group_id, "native")
    theirs = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group_id,
            "client.id": "librdkafka",
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 300,
            "partition.assignment.strategy": "range",
        }
    )
    try:
        native.subscribe([topic])
        native.poll(200)  # joins first: the native member leads and reads librdkafka's metadata
        theirs.subscribe([topic])
        deadline = time.monotonic() + DEADLINE_S
        while True:
            native.poll(50)
            theirs.poll(0.05)
            their_share = {TopicPartition(tp.topic, tp.partition) for tp in theirs.assignment()}
            mine = native.assignment()
            if len(mine) == 3 and len(their_share) == 3 and not mine & their_share:
                break
            assert time.monotonic() < deadline, (mine, their_share)
        assert mine | their_share == {TopicPartition(topic, p) for p in range(6)}
    finally:
        native.close()
        theirs.close()
