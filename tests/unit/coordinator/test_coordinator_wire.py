"""The group APIs on the wire against one in-process broker (BrokerHarness): every version the
broker advertises encodes and decodes, commits land in the __consumer_offsets log, and a
partition that moves away and back is unloaded (NOT_COORDINATOR) and reloaded from its log."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.messages.delete_groups import DeleteGroupsRequest, DeleteGroupsResponseResult
from common.protocol.messages.describe_groups import DescribeGroupsRequest
from common.protocol.messages.find_coordinator import FindCoordinatorRequest
from common.protocol.messages.heartbeat import HeartbeatRequest
from common.protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from common.protocol.messages.leave_group import LeaveGroupRequest
from common.protocol.messages.list_groups import ListGroupsRequest, ListGroupsResponseGroup
from common.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from common.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestGroupTopic,
    OffsetFetchRequestTopic,
)
from common.protocol.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from common.topic_partition import TopicPartition
from data_plane.broker.config import BrokerConfig
from data_plane.coordinator import OFFSETS_TOPIC
from data_plane.coordinator.group_metadata_records import OffsetKey, decode_key, decode_offset_value
from data_plane.storage import FetchIsolation, Record, build_batch, decode_records
from tests.unit.broker.harness import BrokerHarness
from tests.unit.broker.wire import WireClient

DEADLINE_S = 30.0


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerHarness]:
    config = BrokerConfig(
        group_initial_rebalance_delay_ms=0,
        group_min_session_timeout_ms=1000,
        offsets_topic_replication_factor=1,
    )
    h = BrokerHarness(tmp_path, config)
    yield h
    h.close()


@pytest.fixture
def client(broker: BrokerHarness) -> Iterator[WireClient]:
    c = WireClient(broker.port)
    yield c
    c.close()


def _until(fn: Any, what: str) -> Any:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        got = fn()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def _commit_body(
    group: str, offset: int, generation: int = -1, member: str = ""
) -> OffsetCommitRequest:
    partition = OffsetCommitRequestPartition(
        partition_index=0,
        committed_offset=offset,
        committed_leader_epoch=-1,
        commit_timestamp=-1,
        committed_metadata=f"m{offset}",
    )
    return OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member,
        group_instance_id=None,
        retention_time_ms=-1,
        topics=[OffsetCommitRequestTopic(name="t", partitions=[partition])],
    )


def _fetch_offset(client: WireClient, version: int, group: str) -> tuple[int, int]:
    body = client.call(
        ApiKey.OFFSET_FETCH,
        version,
        OffsetFetchRequest(
            group_id=group, topics=[OffsetFetchRequestTopic(name="t", partition_indexes=[0])]
        ),
    )
    if body.error_code:
        return body.error_code, -1
    p = body.topics[0].partitions[0]
    return p.error_code, p.committed_offset


def _join_body() -> JoinGroupRequest:
    """A JoinGroup request of a new member of group g (consumer protocol, range)."""
    return JoinGroupRequest(
        group_id="g",
        session_timeout_ms=6000,
        rebalance_timeout_ms=6000,
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name="range", metadata=b"meta")],
    )


def _coordinator_ready(client: WireClient, group: str) -> bool:
    body = client.call(ApiKey.FIND_COORDINATOR, 2, FindCoordinatorRequest(key=group, key_type=0))
    if body.error_code != ErrorCode.NO_ERROR:
        return False
    return _fetch_offset(client, 5, group)[0] == ErrorCode.NO_ERROR


def test_find_coordinator_without_offsets_topic(client: WireClient) -> None:
    body = client.call(ApiKey.FIND_COORDINATOR, 1, FindCoordinatorRequest(key="g", key_type=0))
    assert body.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert client.call(ApiKey.FIND_COORDINATOR, 0, FindCoordinatorRequest(key="g")).node_id == -1
    body = client.call(ApiKey.FIND_COORDINATOR, 2, FindCoordinatorRequest(key="txn", key_type=1))
    assert body.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE  # no __transaction_state
    body = client.call(ApiKey.FIND_COORDINATOR, 2, FindCoordinatorRequest(key="txn", key_type=2))
    assert body.error_code == ErrorCode.INVALID_REQUEST


def test_group_lifecycle_over_the_wire(broker: BrokerHarness, client: WireClient) -> None:
    broker.set_topics({OFFSETS_TOPIC: 2, "t": 1})
    _until(lambda: _coordinator_ready(client, "g"), "the coordinator")
    fc = client.call(ApiKey.FIND_COORDINATOR, 0, FindCoordinatorRequest(key="g"))
    assert (fc.node_id, fc.port) == (1, broker.port)

    # JoinGroup v5 without member id: MEMBER_ID_REQUIRED, then the real join.
    join = _join_body()
    first = client.call(ApiKey.JOIN_GROUP, 5, join)
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
    member = first.member_id
    joined = client.call(ApiKey.JOIN_GROUP, 5, dataclasses.replace(join, member_id=member))
    assert joined.error_code == ErrorCode.NO_ERROR
    assert (joined.leader, joined.protocol_name) == (member, "range")
    assert [(m.member_id, m.metadata) for m in joined.members] == [(member, b"meta")]
    gen = joined.generation_id
    sync = client.call(
        ApiKey.SYNC_GROUP,
        3,
        SyncGroupRequest(
            group_id="g",
            generation_id=gen,
            member_id=member,
            group_instance_id=None,
            assignments=[SyncGroupRequestAssignment(member_id=member, assignment=b"parts")],
        ),
    )
    assert (sync.error_code, sync.assignment) == (ErrorCode.NO_ERROR, b"parts")
    hb = HeartbeatRequest(group_id="g", generation_id=gen, member_id=member, group_instance_id=None)
    for version in range(4):
        assert client.call(ApiKey.HEARTBEAT, version, hb).error_code == ErrorCode.NO_ERROR
    bad = client.call(ApiKey.HEARTBEAT, 3, dataclasses.replace(hb, generation_id=gen + 5))
    assert bad.error_code == ErrorCode.ILLEGAL_GENERATION

    # OffsetCommit in every version (v0 is a simple commit: refused while the group has members).
    for version in range(8):
        body = client.call(
            ApiKey.OFFSET_COMMIT, version, _commit_body("g", 10 + version, gen, member)
        )
        code = body.topics[0].partitions[0].error_code
        assert code == (ErrorCode.ILLEGAL_GENERATION if version == 0 else ErrorCode.NO_ERROR)
    for version in range(8):
        assert _fetch_offset(client, version, "g") == (ErrorCode.NO_ERROR, 17)
    # v8: several groups at once, each with its own error code.
    batched = client.call(
        ApiKey.OFFSET_FETCH,
        8,
        OffsetFetchRequest(
            groups=[
                OffsetFetchRequestGroup(
                    group_id="g",
                    topics=[OffsetFetchRequestGroupTopic(name="t", partition_indexes=[0])],
                ),
                OffsetFetchRequestGroup(group_id="g", topics=None),
                OffsetFetchRequestGroup(group_id="", topics=None),
            ],
            require_stable=True,
        ),
    )
    listed, everything, empty = batched.groups
    assert listed.topics[0].partitions[0].committed_offset == 17
    assert [t.name for t in everything.topics] == ["t"]
    assert (listed.error_code, empty.group_id) == (0, "")
    nope = OffsetCommitRequestPartition(
        partition_index=0, committed_offset=1, committed_metadata=""
    )
    unknown = client.call(
        ApiKey.OFFSET_COMMIT,
        7,
        dataclasses.replace(
            _commit_body("g", 1, gen, member),
            topics=[OffsetCommitRequestTopic(name="nope", partitions=[nope])],
        ),
    )
    assert unknown.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    described = client.call(
        ApiKey.DESCRIBE_GROUPS, 4, DescribeGroupsRequest(groups=["g", "missing"])
    ).groups
    assert (described[0].group_state, described[0].protocol_data) == ("Stable", "range")
    assert described[0].members[0].member_assignment == b"parts"
    assert described[1].group_state == "Dead"
    listed = client.call(ApiKey.LIST_GROUPS, 2, ListGroupsRequest())
    assert listed.groups == [ListGroupsResponseGroup(group_id="g", protocol_type="consumer")]
    # v4 filters by state, v5 by type (case-insensitive).
    stable = client.call(ApiKey.LIST_GROUPS, 4, ListGroupsRequest(states_filter=["STABLE"])).groups
    assert stable == [ListGroupsResponseGroup("g", "consumer", group_state="Stable")]
    assert (
        client.call(ApiKey.LIST_GROUPS, 4, ListGroupsRequest(states_filter=["Empty"])).groups == []
    )
    typed = client.call(
        ApiKey.LIST_GROUPS, 5, ListGroupsRequest(states_filter=[], types_filter=["Classic"])
    ).groups
    assert [(g.group_id, g.group_type) for g in typed] == [("g", "classic")]
    by_type = ListGroupsRequest(types_filter=["consumer"])
    assert client.call(ApiKey.LIST_GROUPS, 5, by_type).groups == []

    left = client.call(ApiKey.LEAVE_GROUP, 2, LeaveGroupRequest(group_id="g", member_id=member))
    assert left.error_code == ErrorCode.NO_ERROR
    _until(
        lambda: (
            client.call(ApiKey.DESCRIBE_GROUPS, 0, DescribeGroupsRequest(groups=["g"]))
            .groups[0]
            .group_state
            == "Empty"
        ),
        "the group to become empty",
    )
    # Now a simple commit (v0: no generation, no member) is accepted.
    v0 = client.call(ApiKey.OFFSET_COMMIT, 0, _commit_body("g", 99))
    assert v0.topics[0].partitions[0].error_code == ErrorCode.NO_ERROR

    # The commits are records in the group's __consumer_offsets partition, Kafka's format.
    assert broker.apis is not None
    coordinator = broker.apis.group_coordinator.coordinator
    part = broker.apis.replica_manager.get_partition(
        TopicPartition(OFFSETS_TOPIC, coordinator.partition_of("g"))
    )
    assert part is not None
    data = part.log.read(0, 1 << 20, isolation=FetchIsolation.HIGH_WATERMARK).read_bytes()
    offsets, pos = [], 0
    while pos < len(data):
        header, records = decode_records(data, pos)
        pos += header.size_in_bytes
        for r in records:
            if r.key is not None and decode_key(r.key) == OffsetKey("g", "t", 0):
                offsets.append(decode_offset_value(r.value or b"").offset)
    assert offsets == [11, 12, 13, 14, 15, 16, 17, 99]


def test_partition_moving_away_and_back_unloads_and_reloads(
    broker: BrokerHarness, client: WireClient
) -> None:
    broker.set_topics({OFFSETS_TOPIC: 1, "t": 1})
    _until(lambda: _coordinator_ready(client, "g"), "the coordinator")
    body = client.call(ApiKey.OFFSET_COMMIT, 2, _commit_body("g", 42))
    assert body.topics[0].partitions[0].error_code == ErrorCode.NO_ERROR
    broker.set_topics({OFFSETS_TOPIC: 1, "t": 1}, leader=2)  # another broker leads it now
    assert _fetch_offset(client, 5, "g") == (ErrorCode.NOT_COORDINATOR, -1)
    broker.set_topics({OFFSETS_TOPIC: 1, "t": 1}, leader=1)  # back, in a newer epoch
    _until(lambda: _coordinator_ready(client, "g"), "the partition to load")
    assert _fetch_offset(client, 5, "g") == (ErrorCode.NO_ERROR, 42)


def test_reload_reads_the_log_in_small_steps(tmp_path: Path) -> None:
    """offsets.load.buffer.size smaller than the log: the load reads on from batch boundaries
    (a read may end inside a batch) and still sees every record, latest value winning."""
    config = BrokerConfig(offsets_topic_replication_factor=1, offsets_load_buffer_size=1024)
    broker = BrokerHarness(tmp_path, config)
    client = WireClient(broker.port)
    try:
        broker.set_topics({OFFSETS_TOPIC: 1, "t": 1})
        _until(lambda: _coordinator_ready(client, "g0"), "the coordinator")
        for round_ in range(3):
            for g in range(20):
                body = client.call(ApiKey.OFFSET_COMMIT, 2, _commit_body(f"g{g}", round_ * 100 + g))
                assert body.topics[0].partitions[0].error_code == ErrorCode.NO_ERROR
        broker.set_topics({OFFSETS_TOPIC: 1, "t": 1}, leader=2)
        broker.set_topics({OFFSETS_TOPIC: 1, "t": 1}, leader=1)
        _until(lambda: _coordinator_ready(client, "g0"), "the partition to load")
        for g in range(20):
            assert _fetch_offset(client, 5, f"g{g}") == (ErrorCode.NO_ERROR, 200 + g)
    finally:
        client.close()
        broker.close()


def test_offsets_topic_is_internal_and_closed_to_client_produce(
    broker: BrokerHarness, client: WireClient
) -> None:
    broker.set_topics({OFFSETS_TOPIC: 1, "t": 1})
    _until(lambda: _coordinator_ready(client, "g"), "the coordinator")
    topics = client.call(ApiKey.METADATA, 8, {"topics": None})["topics"]
    internal = {t["name"]: t["is_internal"] for t in topics}
    assert internal == {OFFSETS_TOPIC: True, "t": False}
    batch = build_batch([Record(key=b"k", value=b"v", timestamp=int(time.time() * 1000))])
    produce = {
        "transactional_id": None,
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [
            {"name": name, "partition_data": [{"index": 0, "records": batch}]}
            for name in (OFFSETS_TOPIC, "t")
        ],
    }
    codes = {
        r["name"]: r["partition_responses"][0]["error_code"]
        for r in client.call(ApiKey.PRODUCE, 7, produce)["responses"]
    }
    assert codes == {OFFSETS_TOPIC: ErrorCode.INVALID_TOPIC_EXCEPTION, "t": ErrorCode.NO_ERROR}


def test_delete_groups_tombstones_an_empty_group(broker: BrokerHarness, client: WireClient) -> None:
    broker.set_topics({OFFSETS_TOPIC: 1, "t": 1})
    _until(lambda: _coordinator_ready(client, "dg"), "the coordinator")
    body = client.call(ApiKey.OFFSET_COMMIT, 7, _commit_body("dg", 42))
    assert body.topics[0].partitions[0].error_code == ErrorCode.NO_ERROR
    assert _fetch_offset(client, 5, "dg") == (ErrorCode.NO_ERROR, 42)
    for version in (0, 1):
        gone = "dg" if version == 0 else "never-seen"
        deleted = client.call(
            ApiKey.DELETE_GROUPS, version, DeleteGroupsRequest(groups_names=[gone, gone])
        )
        want = ErrorCode.NO_ERROR if version == 0 else ErrorCode.GROUP_ID_NOT_FOUND
        assert deleted.results == [DeleteGroupsResponseResult(group_id=gone, error_code=want)]
    assert _fetch_offset(client, 5, "dg") == (ErrorCode.NO_ERROR, -1)


def test_recent_group_api_versions(broker: BrokerHarness, client: WireClient) -> None:
    """FindCoordinator v4+ answers per key; JoinGroup v7+ names the protocol type and v9 never
    asks to skip the assignment; SyncGroup v5 answers the group's protocol and refuses one
    that is not the group's."""
    broker.set_topics({OFFSETS_TOPIC: 2, "t": 1})
    _until(lambda: _coordinator_ready(client, "g"), "the coordinator")
    found = client.call(
        ApiKey.FIND_COORDINATOR,
        4,
        FindCoordinatorRequest(key_type=0, coordinator_keys=["g", "", "h"]),
    )
    by_key = {c.key: c for c in found.coordinators}
    assert (by_key["g"].error_code, by_key["g"].node_id) == (0, 1)
    assert by_key[""].error_code == ErrorCode.INVALID_GROUP_ID
    assert by_key["h"].port == broker.port
    share = client.call(
        ApiKey.FIND_COORDINATOR, 6, FindCoordinatorRequest(key_type=2, coordinator_keys=["g"])
    )
    assert share.coordinators[0].error_code == ErrorCode.INVALID_REQUEST

    join = dataclasses.replace(_join_body(), reason="test")
    member = client.call(ApiKey.JOIN_GROUP, 9, join).member_id
    joined = client.call(ApiKey.JOIN_GROUP, 9, dataclasses.replace(join, member_id=member))
    assert joined.error_code == 0
    assert (joined.protocol_type, joined.protocol_name) == ("consumer", "range")
    assert joined.skip_assignment is False
    sync = SyncGroupRequest(
        group_id="g",
        generation_id=joined.generation_id,
        member_id=member,
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name="roundrobin",
        assignments=[SyncGroupRequestAssignment(member_id=member, assignment=b"parts")],
    )
    wrong = client.call(ApiKey.SYNC_GROUP, 5, sync)
    assert wrong.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    synced = client.call(ApiKey.SYNC_GROUP, 5, dataclasses.replace(sync, protocol_name="range"))
    assert synced.error_code == 0 and synced.assignment == b"parts"
    assert (synced.protocol_type, synced.protocol_name) == ("consumer", "range")
