"""OffsetForLeaderEpoch over a real socket against an in-process broker: Kafka's answers for
current, older, unknown and future epochs, and leader-epoch fencing."""

from __future__ import annotations

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochRequestPartition,
    OffsetForLeaderEpochRequestTopic,
    OffsetForLeaderEpochResponsePartition,
)
from tests.unit.broker.harness import BrokerHarness
from tests.unit.broker.test_server_wire import batch, presult, produce_body
from tests.unit.broker.wire import WireClient


def ask(
    client: WireClient, epoch: int, current: int = -1, version: int = 3
) -> OffsetForLeaderEpochResponsePartition:
    partition = OffsetForLeaderEpochRequestPartition(
        partition=0, current_leader_epoch=current, leader_epoch=epoch
    )
    body = OffsetForLeaderEpochRequest(
        replica_id=2,
        topics=[OffsetForLeaderEpochRequestTopic(topic="t", partitions=[partition])],
    )
    answer = client.call(ApiKey.OFFSET_FOR_LEADER_EPOCH, version, body)
    found: OffsetForLeaderEpochResponsePartition = answer.topics[0].partitions[0]
    return found


def test_end_offsets_per_epoch_and_fencing(broker: BrokerHarness) -> None:
    broker.set_topics({"t": 1})  # leader in epoch 0
    client = WireClient(broker.port)
    try:
        assert (
            presult(client.call(ApiKey.PRODUCE, 7, produce_body("t", 0, batch(3))))["error_code"]
            == 0
        )
        broker.set_topics({"t": 1}, leader=2)  # epoch 1: another leader
        assert ask(client, 0).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        broker.set_topics({"t": 1})  # epoch 2: leader again, from offset 3
        assert (
            presult(client.call(ApiKey.PRODUCE, 7, produce_body("t", 0, batch(2))))["error_code"]
            == 0
        )
        got = {e: ask(client, e) for e in (0, 1, 2, 7)}
        assert (got[0].leader_epoch, got[0].end_offset) == (0, 3)
        assert (got[1].leader_epoch, got[1].end_offset) == (0, 3)  # floor epoch 0
        assert (got[2].leader_epoch, got[2].end_offset) == (2, 5)  # current: the LEO
        assert (got[7].leader_epoch, got[7].end_offset) == (-1, -1)
        assert ask(client, 2, current=1).error_code == ErrorCode.FENCED_LEADER_EPOCH
        assert ask(client, 2, current=9).error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
        assert ask(client, 2, current=2).error_code == ErrorCode.NO_ERROR
        v0 = ask(client, 0, version=0)
        assert (v0.error_code, v0.end_offset) == (0, 3)
    finally:
        client.close()
