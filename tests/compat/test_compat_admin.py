"""Admin operations from kafka-python and confluent-kafka against a real kraftlog cluster:
create and delete topics (forwarded by the broker to the active controller), grow partitions,
describe topic configs, and the errors clients expect for bad requests."""

from __future__ import annotations

import time

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:importlib.resources._legacy"),
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]

TIMEOUT_S = 30.0


def _metadata_topics_kafka_python(bootstrap: str) -> dict[str, int]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        return {t: len(consumer.partitions_for_topic(t) or ()) for t in consumer.topics()}
    finally:
        consumer.close()


def test_kafka_python_admin_create_describe_grow_delete(bootstrap: str) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewPartitions
    from kafka.admin import NewTopic as KNewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    try:
        admin.create_topics(
            [KNewTopic("kp-admin", 2, 1, topic_configs={"retention.ms": "3600000"})]
        )
        assert _metadata_topics_kafka_python(bootstrap).get("kp-admin") == 2
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([KNewTopic("kp-admin", 2, 1)])
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-admin")])
        assert described["topic"]["kp-admin"]["retention.ms"]["value"] == "3600000"
        admin.create_partitions({"kp-admin": NewPartitions(4)})
        assert _metadata_topics_kafka_python(bootstrap).get("kp-admin") == 4
        admin.delete_topics(["kp-admin"])
        assert "kp-admin" not in _metadata_topics_kafka_python(bootstrap)
    finally:
        admin.close()


def test_confluent_admin_create_describe_grow_delete(bootstrap: str) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [
            NewTopic(
                "ck-admin",
                num_partitions=3,
                replication_factor=1,
                config={"retention.ms": "7200000"},
            )
        ],
        operation_timeout=TIMEOUT_S,
    )
    futures["ck-admin"].result(TIMEOUT_S)
    md = admin.list_topics(timeout=TIMEOUT_S)
    assert len(md.topics["ck-admin"].partitions) == 3
    dup = admin.create_topics([NewTopic("ck-admin", 3, 1)])["ck-admin"]
    with pytest.raises(KafkaException) as exc:
        dup.result(TIMEOUT_S)
    assert exc.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    (cfg_future,) = admin.describe_configs([ConfigResource("topic", "ck-admin")]).values()
    entries = cfg_future.result(TIMEOUT_S)
    assert entries["retention.ms"].value == "7200000"
    admin.create_partitions([NewPartitions("ck-admin", 5)])["ck-admin"].result(TIMEOUT_S)
    assert len(admin.list_topics(timeout=TIMEOUT_S).topics["ck-admin"].partitions) == 5
    admin.delete_topics(["ck-admin"], operation_timeout=TIMEOUT_S)["ck-admin"].result(TIMEOUT_S)
    deadline = time.monotonic() + TIMEOUT_S
    while "ck-admin" in admin.list_topics(timeout=TIMEOUT_S).topics:
        assert time.monotonic() < deadline, "deleted topic still listed"
        time.sleep(0.1)
    bad = admin.create_topics([NewTopic("bad/name", 1, 1)])["bad/name"]
    with pytest.raises(KafkaException) as exc:
        bad.result(TIMEOUT_S)
    assert exc.value.args[0].code() == KafkaError.TOPIC_EXCEPTION
