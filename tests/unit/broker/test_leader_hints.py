"""Leader hints (KIP-951): Produce v10+ and Fetch v16+ answers to a broker that does not lead
the partition name its current leader, and where that leader listens."""

from __future__ import annotations

import uuid

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.topic_partition import TopicPartition
from data_plane.broker.leader_hints import add_leader_hints
from metadata.image import (
    BrokerRegistration,
    Listener,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)
from tests.unit.broker.harness import BrokerHarness
from tests.unit.broker.test_server_wire import batch, fetch_body, produce_body
from tests.unit.broker.wire import WireClient


def test_produce_and_fetch_to_a_follower_name_the_leader(
    broker: BrokerHarness, client: WireClient
) -> None:
    broker.set_topics({"t": 2}, leader=2)  # broker 2 leads; it is not registered here
    for version in (9, 10, 11):
        answer = client.call(ApiKey.PRODUCE, version, produce_body("t", 0, batch(1)))
        (part,) = answer["responses"][0]["partition_responses"]
        assert part["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
        hint = part.get("current_leader")
        assert hint == (None if version < 10 else {"leader_id": 2, "leader_epoch": 1})
        assert answer.get("node_endpoints", []) == []  # no endpoint known for broker 2
    for version in (15, 16):
        body = fetch_body([("t", 0, 0)])
        tid = broker.apis.replica_manager.image.topic("t").topic_id.bytes
        body["topics"][0]["topic_id"] = tid
        (p,) = client.call(ApiKey.FETCH, version, body)["responses"][0]["partitions"]
        assert p["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
        expected = {"leader_id": 2, "leader_epoch": 1} if version >= 16 else None
        assert p.get("current_leader") == expected


def test_hints_name_the_leaders_endpoints_on_the_clients_listener() -> None:
    def broker(broker_id: int, fenced: bool = False) -> BrokerRegistration:
        listeners = (
            Listener("PLAINTEXT", f"h{broker_id}", 9000 + broker_id),
            Listener("SSL", f"h{broker_id}", 9100 + broker_id),
        )
        return BrokerRegistration(broker_id, "inc", 1, listeners, "r1", fenced, False)

    parts = {
        0: PartitionRegistration((2, 3), (2, 3), 2, 4, 4),
        1: PartitionRegistration((3, 2), (3, 2), 3, 7, 7),
        2: PartitionRegistration((2,), (2,), -1, 8, 8),
    }
    topic = TopicImage("t", uuid.uuid4(), parts)
    image = MetadataImage(
        brokers={2: broker(2), 3: broker(3, fenced=True)},
        topics_by_name={"t": topic},
        topics_by_id={topic.topic_id: topic},
    )
    entries = [
        (TopicPartition("t", 0), {"error_code": ErrorCode.NOT_LEADER_OR_FOLLOWER}),
        (TopicPartition("t", 1), {"error_code": ErrorCode.FENCED_LEADER_EPOCH}),
        (TopicPartition("t", 2), {"error_code": ErrorCode.NOT_LEADER_OR_FOLLOWER}),
        (TopicPartition("t", 0), {"error_code": ErrorCode.NO_ERROR}),
    ]
    body: dict = {}
    add_leader_hints(image, "SSL", body, entries)
    assert entries[0][1]["current_leader"] == {"leader_id": 2, "leader_epoch": 4}
    assert entries[1][1]["current_leader"] == {"leader_id": 3, "leader_epoch": 7}
    assert "current_leader" not in entries[2][1]  # no leader at all
    assert "current_leader" not in entries[3][1]
    # A fenced leader's endpoint is not offered.
    assert body["node_endpoints"] == [{"node_id": 2, "host": "h2", "port": 9102, "rack": "r1"}]
