from __future__ import annotations

import pytest

from common.topic_partition import TopicPartition
from kraftlog_client.errors import IllegalStateError
from kraftlog_client.subscription import SubscriptionState

A0 = TopicPartition("a", 0)
A1 = TopicPartition("a", 1)


def test_assign_then_positions_from_the_reset_strategy() -> None:
    s = SubscriptionState("earliest")
    s.assign([A0, ("a", 1)])
    assert set(s.assignment) == {A0, A1} and s.fetchable() == []
    s.initialize_missing_positions()
    assert set(s.partitions_needing_reset()) == {A0, A1}
    s.seek(A0, 10)
    assert s.fetchable() == [A0] and s.state(A0).position == 10


def test_subscription_assignment_keeps_positions_of_kept_partitions() -> None:
    s = SubscriptionState("latest")
    s.subscribe(["a"])
    assert s.assign_from_subscription([A0, TopicPartition("b", 0)])
    s.seek(A0, 5)
    assert s.assign_from_subscription([A0, A1])
    assert s.state(A0).position == 5 and s.state(A1).position is None
    assert not s.assign_from_subscription([A1, A0])


def test_mixing_assign_and_subscribe_is_refused() -> None:
    s = SubscriptionState("latest")
    s.assign([A0])
    with pytest.raises(IllegalStateError):
        s.subscribe(["a"])
    s.unsubscribe()
    s.subscribe(["a"])
    with pytest.raises(IllegalStateError):
        s.assign([A0])


def test_unassigned_partitions_and_negative_seeks_are_refused() -> None:
    s = SubscriptionState("latest")
    with pytest.raises(IllegalStateError):
        s.seek(A0, 1)
    s.assign([A0])
    with pytest.raises(ValueError):
        s.seek(A0, -1)


def test_paused_partitions_are_not_fetchable() -> None:
    s = SubscriptionState("latest")
    s.assign([A0])
    s.seek(A0, 0)
    s.pause([A0])
    assert s.fetchable() == []
    s.resume([A0])
    assert s.fetchable() == [A0]
