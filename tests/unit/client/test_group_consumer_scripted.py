"""The group consumer against a scripted broker (real sockets and codec): it joins, leads,
assigns, starts partitions at the committed offset (retrying OffsetFetch while the
coordinator loads, never falling back to auto.offset.reset on an error), heartbeats, and on
close commits, revokes and leaves."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.codec import RequestHeader, encode_response, unsupported_version_response
from common.protocol.messages.find_coordinator import FindCoordinatorResponse
from common.protocol.messages.heartbeat import HeartbeatResponse
from common.protocol.messages.join_group import (
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
)
from common.protocol.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse
from common.protocol.messages.list_offsets import (
    ListOffsetsResponse,
    ListOffsetsResponsePartition,
    ListOffsetsResponseTopic,
)
from common.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from common.protocol.messages.offset_fetch import (
    OffsetFetchResponse,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
)
from common.protocol.messages.sync_group import SyncGroupResponse
from kraftlog_client import Consumer, ConsumerRebalanceListener, TopicPartition
from kraftlog_client.consumer_protocol import decode_assignment, decode_subscription
from tests.unit.client.scripted_broker import ScriptedBroker, metadata_response

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
DEADLINE_S = 20.0


class Coordinator:
    """Broker 7: the group's coordinator with one member, which it makes the leader."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.port = 0
        self.offset_fetches = 0
        self.heartbeats = 0
        self.commits: list[OffsetCommitRequest] = []
        self.leaves: list[LeaveGroupRequest] = []
        self.joins: list[JoinGroupRequest] = []
        self.assignment = b""

    def __call__(self, header: RequestHeader, body: dict[str, Any]) -> bytes | None:
        key = header.api_key
        if key == ApiKey.API_VERSIONS:
            return unsupported_version_response(header).to_bytes()
        if key == ApiKey.METADATA:
            return metadata_response(header, port=self.port, partitions=2)
        with self.lock:
            answer = self._answer(key, body)
        if key == ApiKey.FETCH:
            time.sleep(0.05)  # a long poll with nothing new
        return None if answer is None else encode_response(header, answer).to_bytes()

    def _answer(self, key: int, body: Any) -> Any:
        if key == ApiKey.FIND_COORDINATOR:
            return FindCoordinatorResponse(
                throttle_time_ms=0, error_code=0, node_id=7, host="127.0.0.1", port=self.port
            )
        if key == ApiKey.JOIN_GROUP:
            self.joins.append(body)
            if not body.member_id:
                return JoinGroupResponse(
                    throttle_time_ms=0,
                    error_code=ErrorCode.MEMBER_ID_REQUIRED,
                    generation_id=-1,
                    protocol_name="",
                    leader="",
                    member_id="m-1",
                    members=[],
                )
            return JoinGroupResponse(
                throttle_time_ms=0,
                error_code=0,
                generation_id=1,
                protocol_name="range",
                leader="m-1",
                member_id="m-1",
                members=[
                    JoinGroupResponseMember(
                        member_id="m-1",
                        group_instance_id=None,
                        metadata=body.protocols[0].metadata,
                    )
                ],
            )
        if key == ApiKey.SYNC_GROUP:
            self.assignment = body.assignments[0].assignment
            return SyncGroupResponse(throttle_time_ms=0, error_code=0, assignment=self.assignment)
        if key == ApiKey.HEARTBEAT:
            self.heartbeats += 1
            return HeartbeatResponse(throttle_time_ms=0, error_code=0)
        if key == ApiKey.OFFSET_FETCH:
            self.offset_fetches += 1
            if self.offset_fetches <= 2:
                return OffsetFetchResponse(
                    throttle_time_ms=0, topics=[], error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
                )
            parts = [
                OffsetFetchResponsePartition(
                    partition_index=p,
                    committed_offset=5 if p == 0 else -1,
                    committed_leader_epoch=-1,
                    metadata="",
                    error_code=0,
                )
                for t in body.topics
                for p in t.partition_indexes
            ]
            return OffsetFetchResponse(
                throttle_time_ms=0,
                error_code=0,
                topics=[OffsetFetchResponseTopic(name="t", partitions=parts)],
            )
        if key == ApiKey.LIST_OFFSETS:
            partitions = [
                ListOffsetsResponsePartition(
                    partition_index=p.partition_index,
                    error_code=0,
                    timestamp=-1,
                    offset=0,
                    leader_epoch=3,
                )
                for p in body.topics[0].partitions
            ]
            return ListOffsetsResponse(
                throttle_time_ms=0,
                topics=[ListOffsetsResponseTopic(name="t", partitions=partitions)],
            )
        if key == ApiKey.FETCH:
            return {
                "throttle_time_ms": 0,
                "error_code": 0,
                "session_id": 0,
                "responses": [
                    {
                        "topic": t["topic"],
                        "partitions": [
                            {
                                "partition_index": p["partition"],
                                "error_code": 0,
                                "high_watermark": 5,
                                "last_stable_offset": 5,
                                "log_start_offset": 0,
                                "aborted_transactions": None,
                                "preferred_read_replica": -1,
                                "records": None,
                            }
                            for p in t["partitions"]
                        ],
                    }
                    for t in body["topics"]
                ],
            }
        if key == ApiKey.OFFSET_COMMIT:
            self.commits.append(body)
            return OffsetCommitResponse(
                throttle_time_ms=0,
                topics=[
                    OffsetCommitResponseTopic(
                        name=t.name,
                        partitions=[
                            OffsetCommitResponsePartition(
                                partition_index=p.partition_index, error_code=0
                            )
                            for p in t.partitions
                        ],
                    )
                    for t in body.topics
                ],
            )
        if key == ApiKey.LEAVE_GROUP:
            self.leaves.append(body)
            return LeaveGroupResponse(throttle_time_ms=0, error_code=0)
        return None


class Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.calls: list[tuple[str, set[TopicPartition]]] = []

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.calls.append(("revoked", revoked))

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.calls.append(("assigned", assigned))


def test_join_lead_committed_positions_heartbeat_and_leave(
    broker_factory: Callable[..., ScriptedBroker],
) -> None:
    script = Coordinator()
    broker = broker_factory(script)
    script.port = broker.port
    listener = Recorder()
    consumer = Consumer(
        {
            "bootstrap.servers": f"127.0.0.1:{broker.port}",
            "group.id": "g",
            "auto.offset.reset": "earliest",
            "retry.backoff.ms": "20",
            "session.timeout.ms": "6000",
            "heartbeat.interval.ms": "100",
        }
    )
    try:
        consumer.subscribe(["t"], listener=listener)
        deadline = time.monotonic() + DEADLINE_S
        while consumer.assignment() != {T0, T1}:
            assert time.monotonic() < deadline
            consumer.poll(50)
        assert listener.calls == [("assigned", {T0, T1})]
        # KIP-394: the second JoinGroup carries the member id the broker gave.
        assert [j.member_id for j in script.joins] == ["", "m-1"]
        assert decode_subscription(script.joins[1].protocols[0].metadata).topics == ("t",)
        assert decode_assignment(script.assignment).partitions == (T0, T1)
        # Committed offset for t-0; nothing committed for t-1 -> auto.offset.reset (earliest).
        assert consumer.position(T0) == 5
        assert consumer.position(T1) == 0
        assert script.offset_fetches == 3  # two COORDINATOR_LOAD_IN_PROGRESS answers retried
        while script.heartbeats < 3:
            assert time.monotonic() < deadline
            consumer.poll(50)
    finally:
        consumer.close()
    # close(): the final auto commit under generation 1, the revocation, then LeaveGroup.
    final = script.commits[-1]
    assert (final.generation_id_or_member_epoch, final.member_id) == (1, "m-1")
    assert {p.partition_index: p.committed_offset for p in final.topics[0].partitions} == {
        0: 5,
        1: 0,
    }
    assert listener.calls[-1] == ("revoked", {T0, T1})
    assert script.leaves == [LeaveGroupRequest(group_id="g", member_id="m-1")]
