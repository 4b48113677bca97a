"""Finalized feature levels (metadata.features): bootstrap, upgrade rules, registration checks,
the records each level allows, snapshots, node info and the messages of a node that cannot
read what the log holds."""

from __future__ import annotations

import logging
import uuid

import msgpack
import pytest
from harness import Harness

from common.error_codes import ErrorCode
from metadata import features
from metadata.controller import QuorumController
from metadata.controller_config import ControllerConfig
from metadata.delta import apply_records
from metadata.features import METADATA_VERSION, SUPPORTED, SupportedRange
from metadata.image import MetadataImage
from metadata.messages import (
    Endpoint,
    RegisterBrokerRequest,
    ReplicaLogEnd,
    UpdateFeaturesRequest,
)
from metadata.node_info import NodeInfo, decode_node_info, encode_node_info
from metadata.records import (
    FeatureLevelRecord,
    PartitionChangeRecord,
    TopicRecord,
    decode_record,
    encode_record,
)
from metadata.snapshot import decode_entry
from raft.api import LogEntry

SESSION_MS = ControllerConfig().broker_session_timeout_ms
ALL_VOTERS = {1: SUPPORTED}


def at_level(level: int) -> Harness:
    config = ControllerConfig(auto_leader_rebalance_enable=False, bootstrap_metadata_version=level)
    h = Harness(config)
    h.add_brokers([1, 2, 3])
    h.create("t", -1, -1, replica_assignment={0: [1, 2, 3]}, configs={"min.insync.replicas": "2"})
    return h


def fence(h: Harness, bid: int) -> None:
    h.now += SESSION_MS
    for other in (1, 2, 3):
        if other != bid and not h.image.brokers[other].fenced:
            h.heartbeat(other)
    h.tick(h.now + 1)
    assert h.image.brokers[bid].fenced


def upgrade(h: Harness, level: int, controllers: dict | None = None) -> object:
    request = UpdateFeaturesRequest(METADATA_VERSION, level)
    return h.commit(h.c.update_features(request, controllers or ALL_VOTERS))


def test_a_new_cluster_finalizes_the_bootstrap_level_first() -> None:
    assert features.finalized_level(Harness().image) == features.LATEST_LEVEL
    h = Harness(ControllerConfig(bootstrap_metadata_version=1))
    first = decode_record(h.entries[0].record)
    assert first == FeatureLevelRecord(METADATA_VERSION, 1)
    assert h.image.features == {METADATA_VERSION: 1}


def test_a_log_written_before_feature_levels_stays_at_level_1() -> None:
    c = QuorumController(ControllerConfig(), cluster_id="c1")
    c.load_image(apply_records(MetadataImage(), [TopicRecord("old", uuid.uuid4())]))
    c.activate(1, 0)
    assert c.tick(0) is None  # no bootstrap record for a cluster that has history
    assert features.finalized_level(c.image) == features.UNFINALIZED_LEVEL


def test_level_1_keeps_no_eligible_leader_replicas_and_level_2_does() -> None:
    h = at_level(1)
    fence(h, 1)
    fence(h, 2)
    p = h.image.partition("t", 0)
    assert (p.leader, p.isr, p.elr) == (3, (3,), ())
    for record in (decode_record(e.record) for e in h.entries):
        assert features.required_level(record) == 1

    h = at_level(1)
    assert upgrade(h, 2).error_code == 0
    assert features.finalized_level(h.image) == 2
    fence(h, 1)
    fence(h, 2)
    p = h.image.partition("t", 0)
    assert (p.leader, p.isr, p.elr) == (3, (3,), (2,))


def test_upgrade_needs_every_broker_and_voter_to_support_the_level() -> None:
    h = at_level(1)
    h.heartbeat(2, min_metadata_version=1, max_metadata_version=1)
    refused = upgrade(h, 2)
    assert refused.error_code == ErrorCode.FEATURE_UPDATE_FAILED
    assert "broker 2 supports metadata.version 1..1 only" in refused.error_message
    assert refused.finalized_level == 1
    h.heartbeat(2)  # upgraded software reports 1..2
    refused = upgrade(h, 2, {1: SUPPORTED, 2: None, 3: SUPPORTED})
    assert refused.error_code == ErrorCode.FEATURE_UPDATE_FAILED
    assert "controller 2 has not reported" in refused.error_message
    refused = upgrade(h, 2, {1: SUPPORTED, 2: SupportedRange(1, 1), 3: SUPPORTED})
    assert "controller 2 supports metadata.version 1..1 only" in refused.error_message
    # A newly active controller knows no broker's range until it heartbeats.
    h.c.activate(2, h.now)
    refused = upgrade(h, 2)
    assert "broker 1 has not reported" in refused.error_message
    for bid in (1, 2, 3):
        h.heartbeat(bid)
    before = len(h.entries)
    dry = h.commit(
        h.c.update_features(UpdateFeaturesRequest(METADATA_VERSION, 2, True), ALL_VOTERS)
    )
    assert dry.error_code == 0 and len(h.entries) == before
    assert features.finalized_level(h.image) == 1
    assert upgrade(h, 2).error_code == 0
    assert features.finalized_level(h.image) == 2


def test_levels_never_go_down_and_unknown_ones_are_refused() -> None:
    h = at_level(2)
    codes = [
        upgrade(h, 1).error_code,
        upgrade(h, features.LATEST_LEVEL + 1).error_code,
        h.commit(
            h.c.update_features(UpdateFeaturesRequest("no.such.feature", 1), ALL_VOTERS)
        ).error_code,
    ]
    assert codes == [ErrorCode.INVALID_UPDATE_VERSION] * 3
    assert upgrade(h, 2).error_code == 0  # already there: nothing to write
    assert features.finalized_level(h.image) == 2


def test_a_broker_that_cannot_read_the_finalized_level_is_refused() -> None:
    h = at_level(2)
    old = RegisterBrokerRequest(
        4, "old-software", [Endpoint("PLAINTEXT", "127.0.0.1", 9004)], None, "c1"
    )  # sends no range: reads level 1 only
    response = h.commit(h.c.register_broker(old, h.now))
    assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert "finalized metadata.version 2 (1.0-IV1): it supports 1..1" in response.error_message
    assert 4 not in h.image.brokers
    h1 = at_level(1)
    assert h1.commit(h1.c.register_broker(old, h1.now)).error_code == 0


def test_records_a_level_does_not_allow_are_refused() -> None:
    tid = uuid.uuid4()
    with_elr = PartitionChangeRecord(0, tid, (3,), -2, None, elr=(2,))
    without = PartitionChangeRecord(0, tid, (3,), -2, None)
    assert features.check_writable([without, with_elr], 2) is None
    problem = features.check_writable([without, with_elr], 1)
    assert problem is not None and "PartitionChangeRecord v2 needs metadata.version 2" in problem
    assert features.check_writable([FeatureLevelRecord(METADATA_VERSION, 2)], 1) is None


def test_snapshots_keep_the_finalized_levels_and_older_formats_still_read() -> None:
    h = at_level(1)
    image = h.image
    again = MetadataImage.decode(image.encode())
    assert again == image and again.features == {METADATA_VERSION: 1}
    doc = msgpack.unpackb(image.encode(), raw=False)
    assert doc[0] == 4 and doc[7] == [[METADATA_VERSION, 1]]
    older = MetadataImage.decode(msgpack.packb([2, *doc[1:6]], use_bin_type=True))
    assert older.features == {} and features.finalized_level(older) == 1
    with pytest.raises(ValueError):
        MetadataImage.decode(msgpack.packb([4, *doc[1:6]], use_bin_type=True))


def test_node_info_round_trip_and_garbage() -> None:
    info = decode_node_info(encode_node_info("127.0.0.1:9093"))
    assert info == NodeInfo(SUPPORTED, "127.0.0.1:9093")
    backwards = msgpack.packb({METADATA_VERSION: [2, 1]})
    for junk in (b"", b"\xff\x00", msgpack.packb({"x": 1}), backwards, msgpack.packb([1])):
        assert decode_node_info(junk) == NodeInfo(None, None)


def test_a_node_says_why_it_cannot_read_a_record(caplog: pytest.LogCaptureFixture) -> None:
    future = msgpack.packb([PartitionChangeRecord.TYPE_ID, 99, 0], use_bin_type=True)
    with caplog.at_level(logging.ERROR):
        assert decode_entry(LogEntry(7, 1, future)) is None
    assert "offset 7" in caplog.text and "upgrade this node's software" in caplog.text
    caplog.clear()
    beyond = FeatureLevelRecord(METADATA_VERSION, SUPPORTED.max_level + 1)
    assert decode_record(encode_record(beyond)) == beyond
    with caplog.at_level(logging.ERROR):
        image = apply_records(MetadataImage(), {5: beyond})
    assert features.finalized_level(image) == SUPPORTED.max_level + 1
    assert f"supports only {SUPPORTED}" in caplog.text


def test_heartbeats_carry_log_ends_and_ranges_together() -> None:
    h = at_level(1)
    topic_id = h.image.topic("t").topic_id
    response = h.heartbeat(1, replica_log_ends=[ReplicaLogEnd(topic_id, 0, 0, 0)])
    assert response.error_code == 0
    assert h.c.sessions.supported(1) == SUPPORTED
