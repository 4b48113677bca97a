"""Membership details against a real broker: the heartbeat thread keeps a busy member in the
group and takes a stuck one out after max.poll.interval.ms, static members come back to their
partitions without a rebalance, pattern subscriptions follow new topics, and commit_async
reports through its callback."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from kraftlog_client import (
    Admin,
    Consumer,
    ConsumerRebalanceListener,
    NewTopic,
    TopicPartition,
)
from tests.integration.client_groups.conftest import MEMBER

pytestmark = pytest.mark.integration

DEADLINE_S = 60.0


def member(bootstrap: str, group: str, **extra: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, **MEMBER, **extra})


def poll_until(consumers: list[Consumer], done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not done():
        assert time.monotonic() < deadline, "condition not reached in time"
        for c in consumers:
            c.poll(50)


def test_heartbeat_thread_keeps_a_busy_member(
    bootstrap: str, new_topic: Callable[..., str], group_id: str
) -> None:
    topic = new_topic(2)
    a = member(bootstrap, group_id, **{"session.timeout.ms": "2000"})
    b = member(bootstrap, group_id, **{"session.timeout.ms": "2000"})
    try:
        a.subscribe([topic])
        b.subscribe([topic])
        poll_until([a, b], lambda: len(a.assignment()) == 1 and len(b.assignment()) == 1)
        generation = a.group_generation()[0]
        # a "processes" for twice its session timeout without calling poll(); b keeps polling.
        busy_until = time.monotonic() + 4.0
        while time.monotonic() < busy_until:
            b.poll(100)
        a.poll(0)
        assert a.group_generation()[0] == generation == b.group_generation()[0]
        assert len(a.assignment()) == 1
    finally:
        a.close()
        b.close()


def test_a_member_stuck_past_max_poll_interval_leaves_and_rejoins_on_poll(
    bootstrap: str, new_topic: Callable[..., str], group_id: str
) -> None:
    topic = new_topic(2)
    lost: list[set[TopicPartition]] = []

    class Listener(ConsumerRebalanceListener):
        def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
            lost.append(partitions)

    a = member(bootstrap, group_id, **{"max.poll.interval.ms": "1500"})
    b = member(bootstrap, group_id)
    try:
        a.subscribe([topic], listener=Listener())
        b.subscribe([topic])
        poll_until([a, b], lambda: len(a.assignment()) == 1 and len(b.assignment()) == 1)
        # a stops calling poll(): its heartbeat thread leaves the group for it, b takes all.
        poll_until([b], lambda: len(b.assignment()) == 2)
        a.poll(0)  # the loss is reported inside poll(), then a joins again
        assert len(lost) == 1 and len(lost[0]) == 1
        poll_until([a, b], lambda: len(a.assignment()) == 1 and len(b.assignment()) == 1)
    finally:
        a.close()
        b.close()


def test_static_member_returns_to_its_partitions_without_rebalance(
    bootstrap: str, new_topic: Callable[..., str], group_id: str
) -> None:
    topic = new_topic(4)
    a = member(bootstrap, group_id, **{"group.instance.id": "host-a"})
    b = member(bootstrap, group_id, **{"group.instance.id": "host-b"})
    a2 = None
    try:
        a.subscribe([topic])
        b.subscribe([topic])
        poll_until([a, b], lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2)
        owned, generation = a.assignment(), b.group_generation()[0]
        a.close()  # a static member does not send LeaveGroup
        a2 = member(bootstrap, group_id, **{"group.instance.id": "host-a"})
        a2.subscribe([topic])
        poll_until([a2, b], lambda: len(a2.assignment()) == 2)
        assert a2.assignment() == owned
        assert b.group_generation()[0] == generation  # b never rebalanced
        assert len(b.assignment()) == 2
    finally:
        a.close()
        b.close()
        if a2 is not None:
            a2.close()


def test_pattern_subscription_follows_new_topics(
    bootstrap: str, admin: Admin, group_id: str
) -> None:
    prefix = f"pattern-{group_id}"
    admin.create_topics([NewTopic(f"{prefix}-a", 1, 1)])
    admin.wait_for_leaders([f"{prefix}-a"])
    c = member(bootstrap, group_id, **{"metadata.max.age.ms": "500"})
    try:
        c.subscribe(pattern=rf"{prefix}-.*")
        poll_until([c], lambda: c.assignment() == {TopicPartition(f"{prefix}-a", 0)})
        admin.create_topics([NewTopic(f"{prefix}-b", 2, 1)])
        admin.wait_for_leaders([f"{prefix}-b"])
        poll_until([c], lambda: len(c.assignment()) == 3)
        assert c.subscription() == {f"{prefix}-a", f"{prefix}-b"}
    finally:
        c.close()


def test_commit_async_reports_through_its_callback(
    bootstrap: str,
    new_topic: Callable[..., str],
    group_id: str,
    produce: Callable[..., list[bytes]],
) -> None:
    topic = new_topic(1)
    produce(topic, 10, 1)
    c = member(bootstrap, group_id, **{"enable.auto.commit": "false"})
    results: list = []
    try:
        c.subscribe([topic])
        got: list = []
        deadline = time.monotonic() + DEADLINE_S
        while len(got) < 10:
            assert time.monotonic() < deadline
            got += c.poll(100)
        c.commit_async(callback=lambda offsets, error: results.append((offsets, error)))
        poll_until([c], lambda: bool(results))
        assert results == [({TopicPartition(topic, 0): 10}, None)]
        assert c.committed([TopicPartition(topic, 0)]) == {TopicPartition(topic, 0): 10}
    finally:
        c.close()
