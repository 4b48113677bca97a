"""Admin APIs of the modern protocol from confluent-kafka and kafka-python against a real
cluster (1 controller, 2 brokers): DescribeCluster (with the authorized operations), a
preferred-leader ElectLeaders that really moves a leader back, and ListGroups with state and
type filters."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import confluent_kafka
import confluent_kafka.admin
import pytest
from confluent_kafka import ConsumerGroupState, ConsumerGroupType, ElectionType

from deploy.local_cluster import LocalCluster, wait_until
from metadata.messages import NewTopic
from tests.integration.clusters import running_cluster
from tests.integration.kafka_python_admin import kafka_python_admin

pytestmark = [pytest.mark.integration]

DEADLINE_S = 60.0
TIMEOUT_S = 30.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    path: Path = tmp_path_factory.mktemp("cluster-admin") / "cluster"
    with running_cluster(path, controllers=1, brokers=2) as started:
        yield started


@pytest.fixture(scope="module")
def admin(cluster: LocalCluster) -> confluent_kafka.admin.AdminClient:
    return confluent_kafka.admin.AdminClient(
        {"bootstrap.servers": ",".join(cluster.bootstrap_servers())}
    )


def test_describe_cluster_from_both_clients(
    cluster: LocalCluster, admin: confluent_kafka.admin.AdminClient
) -> None:
    described = admin.describe_cluster(include_authorized_operations=True).result(TIMEOUT_S)
    assert described.cluster_id == cluster.cluster_id
    assert sorted(n.id for n in described.nodes) == sorted(cluster.broker_ids)
    assert described.controller.id in cluster.broker_ids
    ops = {op.name for op in described.authorized_operations or ()}
    assert {"DESCRIBE", "ALTER", "CLUSTER_ACTION", "IDEMPOTENT_WRITE"} <= ops
    with kafka_python_admin(cluster.bootstrap_servers()) as kp:
        doc = kp.describe_cluster()
    assert doc["cluster_id"] == cluster.cluster_id
    assert sorted(b["broker_id"] for b in doc["brokers"]) == sorted(cluster.broker_ids)


def join(consumer: confluent_kafka.Consumer, topic: str) -> None:
    """Subscribe ``consumer`` to ``topic`` and poll until its group assigned it partitions (or
    DEADLINE_S passed)."""
    consumer.subscribe([topic])
    deadline = time.monotonic() + DEADLINE_S
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.2)


def leader_of(admin: confluent_kafka.admin.AdminClient, topic: str) -> int:
    return admin.list_topics(topic, timeout=10).topics[topic].partitions[0].leader


def test_preferred_leader_election_moves_leadership_back(
    cluster: LocalCluster, admin: confluent_kafka.admin.AdminClient
) -> None:
    first, second = cluster.broker_ids
    topic = f"elect-{uuid.uuid4().hex[:6]}"
    # confluent-kafka refuses a replica assignment in NewTopic ("a default partition count and
    # a replica assignment are mutually exclusive"), so kraftlog's own admin creates it.
    with cluster.client(TIMEOUT_S) as native:
        (created,) = native.create_topics(
            [NewTopic(topic, -1, -1, replica_assignment={0: [first, second]})]
        )
        assert created.error_code == 0, created
    partition = confluent_kafka.TopicPartition(topic, 0)
    wait_until(lambda: leader_of(admin, topic) == first, DEADLINE_S, "the preferred leader")
    answer = admin.elect_leaders(ElectionType.PREFERRED, [partition]).result(TIMEOUT_S)
    assert answer[partition] is not None
    assert answer[partition].name() == "ELECTION_NOT_NEEDED"
    # Restart the preferred leader: leadership moves to the other replica and stays there.
    cluster.restart(first)
    cluster.wait_ready(DEADLINE_S)

    def both_in_sync() -> bool:
        p = admin.list_topics(topic, timeout=10).topics[topic].partitions[0]
        return p.leader == second and sorted(p.isrs) == sorted([first, second])

    wait_until(both_in_sync, DEADLINE_S, "the preferred replica back in the ISR")
    answer = admin.elect_leaders(ElectionType.PREFERRED, [partition]).result(TIMEOUT_S)
    assert answer[partition] is None  # elected
    wait_until(lambda: leader_of(admin, topic) == first, DEADLINE_S, "leadership moved back")


def test_list_groups_filtered_by_state_and_type(
    cluster: LocalCluster, admin: confluent_kafka.admin.AdminClient
) -> None:
    bootstrap = ",".join(cluster.bootstrap_servers())
    topic = f"groups-{uuid.uuid4().hex[:6]}"
    admin.create_topics([confluent_kafka.admin.NewTopic(topic, 1, 1)])[topic].result(TIMEOUT_S)
    group = f"listed-{uuid.uuid4().hex[:6]}"
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest"}
    )
    try:
        join(consumer, topic)
        assert consumer.assignment()

        def listed(**filters: object) -> set[str]:
            result = admin.list_consumer_groups(**filters).result(TIMEOUT_S)
            return {g.group_id for g in result.valid}

        assert group in listed(states={ConsumerGroupState.STABLE})
        assert group not in listed(states={ConsumerGroupState.EMPTY})
        assert group in listed(types={ConsumerGroupType.CLASSIC})
        assert group not in listed(types={ConsumerGroupType.CONSUMER})
    finally:
        consumer.close()


def test_offset_delete_with_kafka_python(
    cluster: LocalCluster, admin: confluent_kafka.admin.AdminClient
) -> None:
    """kafka-consumer-groups --delete-offsets: refused for a topic the live group reads,
    done once the group is empty."""
    bootstrap = ",".join(cluster.bootstrap_servers())
    topic = f"offsets-{uuid.uuid4().hex[:6]}"
    admin.create_topics([confluent_kafka.admin.NewTopic(topic, 2, 1)])[topic].result(TIMEOUT_S)
    group = f"deleting-{uuid.uuid4().hex[:6]}"
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    with kafka_python_admin(cluster.bootstrap_servers()) as kp:
        from kafka import TopicPartition as KTopicPartition
        from kafka.errors import GroupSubscribedToTopicError, NoError

        parts = [KTopicPartition(topic, 0), KTopicPartition(topic, 1)]
        join(consumer, topic)
        consumer.commit(
            offsets=[confluent_kafka.TopicPartition(topic, p, 5) for p in (0, 1)],
            asynchronous=False,
        )
        live = kp.delete_group_offsets(group, parts)
        assert set(live.values()) == {GroupSubscribedToTopicError}
        consumer.close()
        done = kp.delete_group_offsets(group, parts[:1])
        assert done == {parts[0]: NoError}
        left = kp.list_group_offsets(group)[group]  # kafka-python 3: group -> offsets
        assert set(left) == {parts[1]}


def test_describe_topic_partitions_pages_through_a_topic(
    cluster: LocalCluster, admin: confluent_kafka.admin.AdminClient
) -> None:
    """DescribeTopicPartitions (KIP-966) from kafka-python: pages of at most two partitions,
    each continued from the cursor the last one returned, and unknown topics named."""
    topic = f"paged-{uuid.uuid4().hex[:6]}"
    admin.create_topics([confluent_kafka.admin.NewTopic(topic, 5, 2)])[topic].result(TIMEOUT_S)
    with kafka_python_admin(cluster.bootstrap_servers()) as kp:
        seen: list[int] = []
        cursor = None
        for _ in range(5):  # 5 partitions in pages of 2: three pages
            page = kp.describe_topic_partitions([topic], response_partition_limit=2, cursor=cursor)
            (answer,) = page["topics"]
            assert answer["error_code"] == 0 and answer["name"] == topic
            for p in answer["partitions"]:
                assert sorted(p["replica_nodes"]) == sorted(cluster.broker_ids)
                assert p["leader_id"] in cluster.broker_ids
            seen.extend(p["partition_index"] for p in answer["partitions"])
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == [0, 1, 2, 3, 4]
        missing = kp.describe_topic_partitions([f"{topic}-missing"])
        assert missing["topics"][0]["error_code"] == 3  # UNKNOWN_TOPIC_OR_PARTITION


def test_remove_a_static_member_with_kafka_python(
    cluster: LocalCluster, admin: confluent_kafka.admin.AdminClient
) -> None:
    """LeaveGroup v3+ (KIP-345): a static member stays in its group after its consumer closes
    (until its session times out); an admin removes it by its instance id, and an instance id
    no member holds answers UNKNOWN_MEMBER_ID."""
    bootstrap = ",".join(cluster.bootstrap_servers())
    topic = f"static-{uuid.uuid4().hex[:6]}"
    admin.create_topics([confluent_kafka.admin.NewTopic(topic, 1, 1)])[topic].result(TIMEOUT_S)
    group = f"static-{uuid.uuid4().hex[:6]}"
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.instance.id": "worker-1",
            "session.timeout.ms": 60_000,
        }
    )
    join(consumer, topic)
    assert consumer.assignment()
    consumer.close()  # a static member does not leave on close

    def members() -> list:
        described = admin.describe_consumer_groups([group])[group].result(TIMEOUT_S)
        return list(described.members or [])

    assert len(members()) == 1
    with kafka_python_admin(cluster.bootstrap_servers()) as kp:
        from kafka.admin import MemberToRemove
        from kafka.errors import NoError, UnknownMemberIdError

        answer = kp.remove_group_members(
            group,
            [
                MemberToRemove(group_instance_id="worker-1", reason="host retired"),
                MemberToRemove(group_instance_id="worker-9"),
            ],
        )
    # kafka-python 3 keys the answer by instance id (or member id) here.
    assert answer == {"worker-1": NoError, "worker-9": UnknownMemberIdError}
    assert members() == []


def test_create_topics_v7_answers_counts_configs_and_the_topic_id(cluster: LocalCluster) -> None:
    """CreateTopics v5+ (KIP-525) answers a created topic's partitions, replication factor and
    configs with their sources, and v7 its topic id, as Metadata then shows it."""
    from common.protocol.api_keys import ApiKey
    from common.protocol.messages.create_topics import (
        CreateTopicsRequest,
        CreateTopicsRequestConfig,
        CreateTopicsRequestTopic,
    )
    from common.protocol.messages.describe_configs import (
        DescribeConfigsRequest,
        DescribeConfigsRequestResource,
    )
    from common.protocol.messages.describe_topic_partitions import (
        DescribeTopicPartitionsRequest,
        DescribeTopicPartitionsRequestTopic,
    )
    from tests.unit.broker.wire import WireClient

    topic = f"detailed-{uuid.uuid4().hex[:6]}"

    def body(validate_only: bool) -> CreateTopicsRequest:
        return CreateTopicsRequest(
            topics=[
                CreateTopicsRequestTopic(
                    name=topic,
                    num_partitions=3,
                    replication_factor=2,
                    assignments=[],
                    configs=[CreateTopicsRequestConfig(name="retention.ms", value="3600000")],
                )
            ],
            timeout_ms=30_000,
            validate_only=validate_only,
        )

    port = cluster.node(cluster.broker_ids[0]).broker_port
    assert port is not None
    client = WireClient(port)
    try:
        (checked,) = client.call(ApiKey.CREATE_TOPICS, 7, body(True)).topics
        assert checked.error_code == 0 and checked.configs is None
        assert (checked.num_partitions, checked.replication_factor) == (3, 2)
        (made,) = client.call(ApiKey.CREATE_TOPICS, 7, body(False)).topics
        assert made.error_code == 0, made
        assert (made.num_partitions, made.replication_factor) == (3, 2)
        assert made.configs is not None
        configs = {c.name: c for c in made.configs}
        assert configs["retention.ms"].value == "3600000"
        assert configs["retention.ms"].config_source == 1  # a dynamic topic config
        assert configs["cleanup.policy"].config_source == 5  # a default
        described = client.call(
            ApiKey.DESCRIBE_TOPIC_PARTITIONS,
            0,
            DescribeTopicPartitionsRequest(
                topics=[DescribeTopicPartitionsRequestTopic(name=topic)],
                response_partition_limit=10,
                cursor=None,
            ),
        )
        assert described.topics[0].topic_id == made.topic_id != bytes(16)
        (again,) = client.call(ApiKey.CREATE_TOPICS, 7, body(False)).topics
        assert again.error_code == 36  # TOPIC_ALREADY_EXISTS
        # DescribeConfigs v4 (flexible): Kafka's config types, documentation when asked.
        request = DescribeConfigsRequest(
            resources=[
                DescribeConfigsRequestResource(
                    resource_type=2, resource_name=topic, configuration_keys=None
                )
            ],
            include_synonyms=False,
            include_documentation=True,
        )
        (result,) = client.call(ApiKey.DESCRIBE_CONFIGS, 4, request).results
        entries = {c.name: c for c in result.configs}
        assert entries["retention.ms"].config_type == 5  # LONG
        assert entries["segment.bytes"].config_type == 3  # INT
        assert entries["cleanup.policy"].config_type == 7  # LIST
        assert entries["retention.ms"].value == "3600000"
        assert entries["retention.ms"].documentation
        request.include_documentation = False
        (bare,) = client.call(ApiKey.DESCRIBE_CONFIGS, 4, request).results
        assert all(c.documentation is None for c in bare.configs)
    finally:
        client.close()
