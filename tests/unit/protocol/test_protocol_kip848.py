"""ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848) against bytes written out by hand
from Kafka's message definitions (flexible from v0: compact strings and arrays, uvarint
lengths + 1, tagged-field counts; a nullable struct is int8 -1 or 1 before its fields).
kafka-python has no schema for them, so there is no oracle to compare with."""

from __future__ import annotations

import dataclasses
import struct

import pytest

from common.protocol import codec
from common.protocol.api_keys import ApiKey
from common.protocol.codec import RequestHeader
from common.protocol.messages.consumer_group_describe import (
    ConsumerGroupDescribeResponse,
    ConsumerGroupDescribeResponseAssignment,
    ConsumerGroupDescribeResponseGroup,
    ConsumerGroupDescribeResponseMember,
    ConsumerGroupDescribeResponseTargetAssignment,
    ConsumerGroupDescribeResponseTopicPartition,
)
from common.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatRequestTopicPartition,
)

TOPIC_ID = bytes([1]) * 16
# Request header v2 with client id "c": api key, version, correlation id, client id, tags.
HEADER_BYTES = 2 + 2 + 4 + 2 + 1 + 1


def _i32(v: int) -> bytes:
    return struct.pack(">i", v)


@pytest.mark.parametrize("version", [0, 1])
def test_heartbeat_request_bytes(version: int) -> None:
    body = ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id="m",
        member_epoch=3,
        instance_id=None,
        rack_id=None,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=["t"],
        subscribed_topic_regex=None,
        server_assignor="uniform",
        topic_partitions=[
            ConsumerGroupHeartbeatRequestTopicPartition(topic_id=TOPIC_ID, partitions=[0, 2])
        ],
    )
    expected = (
        b"\x02g" + b"\x02m" + _i32(3) + b"\x00" + b"\x00" + _i32(30_000)
        + b"\x02" + b"\x02t"
        + (b"\x00" if version >= 1 else b"")  # the regex, null (v1+)
        + b"\x08uniform"
        + b"\x02" + TOPIC_ID + b"\x03" + _i32(0) + _i32(2) + b"\x00"
        + b"\x00"
    )  # fmt: skip
    frame = codec.encode_request(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, 9, "c", body)
    assert bytes(frame[4 + HEADER_BYTES :]) == expected
    header, decoded = codec.decode_request(bytes(frame[4:]))
    assert header.api_key == ApiKey.CONSUMER_GROUP_HEARTBEAT and decoded.member_epoch == 3
    assert decoded.topic_partitions[0].partitions == [0, 2]


def test_heartbeat_response_bytes_decode() -> None:
    raw = (
        _i32(77) + b"\x00"  # response header v1: correlation id, tags
        + _i32(0) + struct.pack(">h", 0) + b"\x00" + b"\x02m" + _i32(5) + _i32(5_000)
        + b"\x01" + b"\x02" + TOPIC_ID + b"\x02" + _i32(1) + b"\x00" + b"\x00"
        + b"\x00"
    )  # fmt: skip
    correlation_id, body = codec.decode_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, raw)
    assert correlation_id == 77
    assert body.member_id == "m" and body.member_epoch == 5
    assert body.heartbeat_interval_ms == 5_000 and body.error_message is None
    (tp,) = body.assignment.topic_partitions
    assert bytes(tp.topic_id) == TOPIC_ID and tp.partitions == [1]
    header = RequestHeader(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 77, None)
    frame = codec.encode_response(header, body)
    assert frame.to_bytes()[4:] == raw
    # No assignment: the nullable struct is a single -1.
    frame = codec.encode_response(header, dataclasses.replace(body, assignment=None))
    assert frame.to_bytes()[-2:] == b"\xff\x00"


def test_describe_response_nested_assignments_round_trip() -> None:
    """Two assignment structs inside each member of an array: the decoder keeps them apart."""
    tp = ConsumerGroupDescribeResponseAssignment(
        topic_partitions=[
            ConsumerGroupDescribeResponseTopicPartition(
                topic_id=TOPIC_ID, topic_name="t", partitions=[1, 4]
            )
        ]
    )
    member = ConsumerGroupDescribeResponseMember(
        member_id="m",
        instance_id=None,
        rack_id="r",
        member_epoch=2,
        client_id="c",
        client_host="/127.0.0.1",
        subscribed_topic_names=["t"],
        subscribed_topic_regex=None,
        assignment=tp,
        target_assignment=ConsumerGroupDescribeResponseTargetAssignment(topic_partitions=[]),
    )
    body = ConsumerGroupDescribeResponse(
        throttle_time_ms=0,
        groups=[
            ConsumerGroupDescribeResponseGroup(
                error_code=0,
                error_message=None,
                group_id="g",
                group_state="Stable",
                group_epoch=3,
                assignment_epoch=3,
                assignor_name="uniform",
                members=[member, dataclasses.replace(member, member_id="n", assignment=tp)],
                authorized_operations=-2147483648,
            )
        ],
    )
    frame = codec.encode_response(RequestHeader(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1, None), body)
    _, decoded = codec.decode_response(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, frame.to_bytes()[4:])
    got = decoded.groups[0].members
    assert got[0].assignment.topic_partitions[0].partitions == [1, 4]
    assert got[0].target_assignment == ConsumerGroupDescribeResponseTargetAssignment()
    assert got[1].member_id == "n" and got[1].assignment.topic_partitions[0].topic_name == "t"
