"""Subscribed topics from ConsumerProtocolSubscription bytes (as Kafka clients send them)."""

from __future__ import annotations

import struct

import pytest

from data_plane.coordinator.consumer_protocol import subscribed_topics
from tests.unit.coordinator.harness import subscription


def test_topics_of_every_version() -> None:
    assert subscribed_topics(subscription(["a", "b"])) == {"a", "b"}
    # v3: owned partitions, generation id and rack follow; the topic list is unchanged.
    v3_tail = struct.pack(">i", 0) + struct.pack(">i", 5) + struct.pack(">h", -1)
    assert subscribed_topics(subscription(["orders"], 3, v3_tail)) == {"orders"}
    assert subscribed_topics(subscription([])) == set()


@pytest.mark.parametrize(
    "raw",
    [b"", b"\x00\x00", struct.pack(">hi", 0, 2) + b"\x00\x05ab", struct.pack(">hi", 0, -3)],
)
def test_undecodable_subscriptions(raw: bytes) -> None:
    assert subscribed_topics(raw) is None
