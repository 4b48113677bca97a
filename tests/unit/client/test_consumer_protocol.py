"""ConsumerProtocol Subscription/Assignment bytes: round trips, and the exact bytes of
kafka-python's own classes (the other members of a mixed group)."""

from __future__ import annotations

import struct
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.topic_partition import TopicPartition
from kraftlog_client.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka.protocol.consumer.metadata import (
        ConsumerProtocolAssignment,
        ConsumerProtocolSubscription,
    )

topic_names = st.text(alphabet="abcxyz._-0123", min_size=1, max_size=8)
partition_sets = st.sets(st.tuples(topic_names, st.integers(0, 2**31 - 1)), max_size=8).map(
    lambda s: tuple(sorted(TopicPartition(t, p) for t, p in s))
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(topic_names, max_size=5, unique=True),
    st.one_of(st.none(), st.binary(max_size=20)),
    partition_sets,
    st.integers(-1, 1000),
    st.one_of(st.none(), topic_names),
    st.integers(0, 3),
)
def test_subscription_round_trip(topics, user_data, owned, generation, rack, version) -> None:
    sub = Subscription(
        tuple(topics),
        user_data,
        owned if version >= 1 else (),
        generation if version >= 2 else -1,
        rack if version >= 3 else None,
        version,
    )
    assert decode_subscription(encode_subscription(sub)) == sub


@settings(max_examples=200, deadline=None)
@given(partition_sets, st.one_of(st.none(), st.binary(max_size=20)), st.integers(0, 3))
def test_assignment_round_trip(partitions, user_data, version) -> None:
    a = Assignment(partitions, user_data, version)
    assert decode_assignment(encode_assignment(a)) == a


@pytest.mark.parametrize("version", [0, 1])
def test_subscription_bytes_match_kafka_python(version: int) -> None:
    kw = {"owned_partitions": [("t0", [0, 2]), ("t1", [1])]} if version else {}
    theirs = ConsumerProtocolSubscription(
        version=version, topics=["t0", "t1"], user_data=b"ud", **kw
    ).encode(version=version)
    owned = (TopicPartition("t0", 0), TopicPartition("t0", 2), TopicPartition("t1", 1))
    ours = Subscription(("t0", "t1"), b"ud", owned if version else (), version=version)
    assert encode_subscription(ours) == theirs
    assert decode_subscription(theirs) == ours


@pytest.mark.parametrize("version", [0, 1])
def test_assignment_bytes_match_kafka_python(version: int) -> None:
    theirs = ConsumerProtocolAssignment(
        version=version, assigned_partitions=[("a", [0, 1]), ("b", [3])], user_data=b""
    ).encode(version=version)
    ours = Assignment(
        (TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 3)), b"", version
    )
    assert encode_assignment(ours) == theirs
    assert decode_assignment(theirs) == ours
    parsed = ConsumerProtocolAssignment.decode(encode_assignment(ours), version=version)
    assert parsed.partitions() == [("a", 0), ("a", 1), ("b", 3)]


def test_newer_version_is_read_as_the_highest_known() -> None:
    v3 = encode_subscription(Subscription(("t",), None, (), 7, "rack-1", 3))
    v9 = struct.pack(">h", 9) + v3[2:] + b"future fields"
    sub = decode_subscription(v9)
    assert (sub.topics, sub.generation_id, sub.rack_id, sub.version) == (("t",), 7, "rack-1", 9)


def test_empty_assignment_and_bad_input() -> None:
    assert decode_assignment(b"") == Assignment()
    with pytest.raises(ConsumerProtocolError, match="truncated"):
        decode_subscription(b"\x00\x00\x00\x00\x00\x05")
    with pytest.raises(ConsumerProtocolError, match="negative"):
        decode_assignment(b"\xff\xff")
    with pytest.raises(ConsumerProtocolError, match="out of range"):
        decode_assignment(b"\x00\x00\x7f\xff\xff\xff")
