from __future__ import annotations

import pytest
from harness import Harness

from common.config_resources import OP_APPEND, OP_DELETE, OP_SET
from common.error_codes import ErrorCode
from metadata.controller_config import ControllerConfig
from metadata.messages import (
    AlterableConfig,
    AlterConfigsRequest,
    AlterConfigsResource,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
    DescribeConfigsResource,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResource,
    NewPartitions,
    NewTopic,
)


@pytest.fixture
def h() -> Harness:
    harness = Harness()
    harness.add_brokers([1, 2, 3])
    return harness


def test_create_topic(h: Harness) -> None:
    r = h.create("orders", 6, 3, configs={"retention.ms": "1000"})
    assert r.error_code == 0 and r.topic_id is not None
    t = h.image.topic("orders")
    assert t is not None and t.topic_id == r.topic_id and len(t.partitions) == 6
    for p in t.partitions.values():
        assert len(p.replicas) == 3 and p.isr == p.replicas and p.leader == p.replicas[0]
        assert (p.leader_epoch, p.partition_epoch) == (0, 0)
    assert h.image.topic_config("orders") == {"retention.ms": "1000"}
    leaders = sorted(p.leader for p in t.partitions.values())
    assert leaders == [1, 1, 2, 2, 3, 3]


def test_defaults_from_config() -> None:
    h = Harness(ControllerConfig(num_partitions=4, default_replication_factor=2))
    h.add_brokers([1, 2])
    r = h.create("t", -1, -1)
    assert (r.num_partitions, r.replication_factor) == (4, 2)


@pytest.mark.parametrize(
    ("name", "parts", "rf", "configs", "code"),
    [
        ("big-rf", 1, 4, {}, ErrorCode.INVALID_REPLICATION_FACTOR),
        ("zero-rf", 1, 0, {}, ErrorCode.INVALID_REPLICATION_FACTOR),
        ("bad/name", 1, 1, {}, ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("..", 1, 1, {}, ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("", 1, 1, {}, ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("x" * 250, 1, 1, {}, ErrorCode.INVALID_TOPIC_EXCEPTION),
        ("zero-parts", 0, 1, {}, ErrorCode.INVALID_PARTITIONS),
        ("bad-config", 1, 1, {"no.such.key": "1"}, ErrorCode.INVALID_CONFIG),
        ("bad-value", 1, 1, {"retention.ms": "soon"}, ErrorCode.INVALID_CONFIG),
        ("bad-isr", 1, 1, {"min.insync.replicas": "0"}, ErrorCode.INVALID_CONFIG),
    ],
)
def test_create_errors(
    h: Harness, name: str, parts: int, rf: int, configs: dict, code: int
) -> None:
    before = len(h.entries)
    r = h.create(name, parts, rf, configs=configs)
    assert r.error_code == code, r.error_message
    assert r.error_message
    assert len(h.entries) == before


def test_name_rules_allow_kafka_characters(h: Harness) -> None:
    assert h.create("a-Z_0.9", 1, 1).error_code == 0
    assert h.create("x" * 249, 1, 1).error_code == 0


def test_exists_and_collides(h: Harness) -> None:
    assert h.create("a.b", 1, 1).error_code == 0
    assert h.create("a.b", 1, 1).error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    assert h.create("a_b", 1, 1).error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_duplicates_in_one_request(h: Harness) -> None:
    req = CreateTopicsRequest([NewTopic("d", 1, 1), NewTopic("d", 1, 1), NewTopic("e", 1, 1)])
    res = h.commit(h.c.create_topics(req)).topics
    assert [r.error_code for r in res] == [ErrorCode.INVALID_REQUEST] * 2 + [0]


def test_rf_counts_only_unfenced_brokers(h: Harness) -> None:
    h.register(4)  # registered, not yet unfenced
    assert h.create("t4", 1, 4).error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    h.heartbeat(4)
    assert h.create("t4", 1, 4).error_code == 0


def test_validate_only_writes_nothing(h: Harness) -> None:
    res = h.c.create_topics(CreateTopicsRequest([NewTopic("v", 3, 3)], validate_only=True))
    assert res.records == [] and res.response.topics[0].error_code == 0


def test_manual_assignment(h: Harness) -> None:
    r = h.create("m", -1, -1, replica_assignment={0: [3, 1], 1: [2, 3]})
    assert r.error_code == 0
    assert h.image.partition("m", 0).replicas == (3, 1)
    assert h.image.partition("m", 0).leader == 3
    bad = [
        ({0: [1, 1]}, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        ({0: [1], 2: [2]}, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        ({0: [1, 2], 1: [3]}, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        ({0: [9]}, ErrorCode.INVALID_REPLICA_ASSIGNMENT),
    ]
    for i, (assignment, code) in enumerate(bad):
        assert h.create(f"m{i}", -1, -1, replica_assignment=assignment).error_code == code
    r = h.create("mx", 2, -1, replica_assignment={0: [1]})
    assert r.error_code == ErrorCode.INVALID_REQUEST


def test_delete_topics(h: Harness) -> None:
    h.create("gone", 2, 2)
    res = h.commit(h.c.delete_topics(DeleteTopicsRequest(["gone", "never"]))).topics
    assert [r.error_code for r in res] == [0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    assert h.image.topic("gone") is None
    assert h.create("gone", 1, 1).error_code == 0


def test_delete_by_topic_id_spares_a_topic_recreated_under_the_name(h: Harness) -> None:
    h.create("t", 1, 1)
    old_id = h.image.topic("t").topic_id
    h.commit(h.c.delete_topics(DeleteTopicsRequest(["t"])))
    h.create("t", 1, 1)
    new_id = h.image.topic("t").topic_id
    stale = h.commit(h.c.delete_topics(DeleteTopicsRequest(["t"], {"t": old_id}))).topics
    assert stale[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
    assert h.image.topic("t").topic_id == new_id
    (done,) = h.commit(h.c.delete_topics(DeleteTopicsRequest(["t"], {"t": new_id}))).topics
    assert (done.error_code, done.topic_id) == (0, new_id)
    assert h.image.topic("t") is None


def test_delete_disabled() -> None:
    h = Harness(ControllerConfig(delete_topic_enable=False))
    h.add_brokers([1])
    h.create("t", 1, 1)
    res = h.commit(h.c.delete_topics(DeleteTopicsRequest(["t"]))).topics
    assert res[0].error_code == ErrorCode.TOPIC_DELETION_DISABLED


def test_create_partitions(h: Harness) -> None:
    h.create("g", 3, 2)
    p0 = h.image.partition("g", 0)
    res = h.commit(h.c.create_partitions(CreatePartitionsRequest([NewPartitions("g", 5)])))
    assert res.topics[0].error_code == 0
    t = h.image.topic("g")
    assert sorted(t.partitions) == [0, 1, 2, 3, 4]
    assert all(len(p.replicas) == 2 for p in t.partitions.values())
    assert h.image.partition("g", 0) is p0
    for count, code in [(5, ErrorCode.INVALID_PARTITIONS), (2, ErrorCode.INVALID_PARTITIONS)]:
        res = h.commit(h.c.create_partitions(CreatePartitionsRequest([NewPartitions("g", count)])))
        assert res.topics[0].error_code == code
    res = h.commit(h.c.create_partitions(CreatePartitionsRequest([NewPartitions("nope", 9)])))
    assert res.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    res = h.commit(
        h.c.create_partitions(CreatePartitionsRequest([NewPartitions("g", 6, [[3, 1]])]))
    )
    assert res.topics[0].error_code == 0 and h.image.partition("g", 5).replicas == (3, 1)
    res = h.commit(h.c.create_partitions(CreatePartitionsRequest([NewPartitions("g", 7, [[3]])])))
    assert res.topics[0].error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT


def test_large_request_split_by_append_budget() -> None:
    h = Harness(max_append_bytes=20_000)
    h.add_brokers([1, 2, 3])
    req = CreateTopicsRequest([NewTopic(f"t{i}", 200, 3) for i in range(4)])
    result = h.c.create_topics(req)
    codes = [r.error_code for r in result.response.topics]
    assert codes[0] == 0 and ErrorCode.THROTTLING_QUOTA_EXCEEDED in codes
    assert sum(len(e) for e in result.encoded) <= 20_000
    huge = h.c.create_topics(CreateTopicsRequest([NewTopic("huge", 5000, 3)]))
    assert huge.response.topics[0].error_code == ErrorCode.POLICY_VIOLATION
    assert huge.records == []


def test_ten_thousand_partitions_fit_one_append() -> None:
    h = Harness()
    h.add_brokers([1, 2, 3])
    result = h.c.create_topics(CreateTopicsRequest([NewTopic("big", 10_000, 3)]))
    assert result.response.topics[0].error_code == 0
    assert len(result.records) == 10_001
    assert sum(len(e) for e in result.encoded) < 1024 * 1024


def test_configs_alter_incremental_describe(h: Harness) -> None:
    h.create("c", 1, 1, configs={"retention.ms": "5"})
    res = h.commit(
        h.c.alter_configs(
            AlterConfigsRequest([AlterConfigsResource(2, "c", {"segment.bytes": "1048576"})])
        )
    )
    assert res.resources[0].error_code == 0
    assert h.image.topic_config("c") == {"segment.bytes": "1048576"}
    ops = [
        AlterableConfig("retention.ms", OP_SET, "9"),
        AlterableConfig("segment.bytes", OP_DELETE),
        AlterableConfig("cleanup.policy", OP_APPEND, "delete"),
    ]
    res = h.commit(
        h.c.incremental_alter_configs(
            IncrementalAlterConfigsRequest([IncrementalAlterConfigsResource(2, "c", ops)])
        )
    )
    assert res.resources[0].error_code == 0
    assert h.image.topic_config("c") == {"retention.ms": "9", "cleanup.policy": "delete"}
    # cleanup.policy is a list: appending compact gives compaction plus retention.
    ops = [AlterableConfig("cleanup.policy", OP_APPEND, "compact")]
    res = h.commit(
        h.c.incremental_alter_configs(
            IncrementalAlterConfigsRequest([IncrementalAlterConfigsResource(2, "c", ops)])
        )
    )
    assert res.resources[0].error_code == 0
    assert h.image.topic_config("c")["cleanup.policy"] == "delete,compact"
    # A value that is not a policy is refused.
    ops = [AlterableConfig("cleanup.policy", OP_APPEND, "shred")]
    res = h.commit(
        h.c.incremental_alter_configs(
            IncrementalAlterConfigsRequest([IncrementalAlterConfigsResource(2, "c", ops)])
        )
    )
    assert res.resources[0].error_code == ErrorCode.INVALID_CONFIG
    bad = [
        AlterConfigsResource(2, "c", {"bogus": "1"}),
        AlterConfigsResource(2, "nope", {}),
        AlterConfigsResource(4, "1", {}),
    ]
    res = h.commit(h.c.alter_configs(AlterConfigsRequest(bad)))
    assert [r.error_code for r in res.resources] == [
        ErrorCode.INVALID_CONFIG,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.INVALID_REQUEST,
    ]
    desc = h.c.describe_configs(
        DescribeConfigsRequest([DescribeConfigsResource(2, "c"), DescribeConfigsResource(2, "x")])
    )
    entries = {e.name: e for e in desc.resources[0].configs}
    assert entries["retention.ms"].value == "9" and not entries["retention.ms"].is_default
    assert entries["segment.bytes"].is_default
    assert entries["min.insync.replicas"].value == "1"
    assert desc.resources[1].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
