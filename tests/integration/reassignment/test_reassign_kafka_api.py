"""AlterPartitionReassignments and ListPartitionReassignments through the brokers' Kafka
protocol on a real cluster (1 controller + 3 brokers): kraftlog's Admin, kafka-python's admin
client and ``kraftlog topics reassign --bootstrap-server`` move, list and cancel, and get
Kafka's per-partition refusals. confluent-kafka's AdminClient has no reassignment calls.

A move stays in progress deterministically while the broker being added is paused (SIGSTOP: it
cannot fetch, so it never joins the ISR); the session timeout is long enough that the controller
does not fence it meanwhile (nothing but the timeout fences a paused process). Only kraftlog's
Admin runs then: it sends to the brokers it is connected to, while kafka-python may pick the
paused broker for a request and wait out its timeout.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from common.error_codes import ErrorCode
from deploy.local_cluster import LocalCluster
from kraftlog_client import Admin, PartitionReassignment, TopicPartition
from metadata.messages import NewTopic
from tests.integration.clusters import FAST_OVERRIDES, kraftlog, running_cluster
from tests.integration.replication.helpers import wait_for

pytestmark = [pytest.mark.integration]

# A paused broker stays unfenced this long: the test's move onto it is accepted and then stays
# in progress.
SESSION_TIMEOUT_MS = "30000"
TOPIC = "api-moves"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    overrides = {**FAST_OVERRIDES, "broker.session.timeout.ms": SESSION_TIMEOUT_MS}
    path: Path = tmp_path_factory.mktemp("reassign-api") / "c"
    with running_cluster(path, brokers=3, overrides=overrides) as c:
        yield c


def _kafka_python_admin(bootstrap: str) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.admin import KafkaAdminClient
    return KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)


def _replicas(admin: Admin, topic: str) -> tuple[int, ...]:
    return tuple(admin.describe_topics([topic])[topic].partitions[0].replicas)


def _address(cluster: LocalCluster, broker_id: int) -> str:
    return f"{cluster.host_of(broker_id)}:{cluster.node(broker_id).broker_port}"


def _unfenced(cluster: LocalCluster, broker_id: int) -> bool:
    with cluster.client(5.0) as client:
        desc = client.describe_cluster()
    return any(b.broker_id == broker_id and not b.fenced for b in desc.brokers)


def test_admin_and_kafka_python_move_list_and_cancel(cluster: LocalCluster) -> None:
    b1, b2, b3 = cluster.broker_ids
    with cluster.client(10.0) as client:
        (created,) = client.create_topics(
            [NewTopic(TOPIC, -1, -1, replica_assignment={0: [b1, b2]})]
        )
        assert created.error_code == 0
    # Clients bootstrap from the brokers that keep answering.
    bootstrap = f"{_address(cluster, b1)},{_address(cluster, b2)}"
    tp = TopicPartition(TOPIC, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka import TopicPartition as KafkaTopicPartition
        from kafka.errors import NoReassignmentInProgressError, UnknownTopicOrPartitionError
    ktp = KafkaTopicPartition(TOPIC, 0)
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.wait_for_leaders([TOPIC])
        cluster.pause(b3)
        try:
            assert admin.alter_partition_reassignments({tp: [b1, b3]}) == {tp: None}
            moving = PartitionReassignment((b1, b3, b2), (b3,), (b2,))
            assert admin.list_partition_reassignments() == {tp: moving}
            assert admin.list_partition_reassignments([tp, TopicPartition("nothing", 0)]) == {
                tp: moving
            }

            # Kafka's refusals, per partition; the move in progress is untouched.
            refused = admin.alter_partition_reassignments(
                {
                    TopicPartition("no-such-topic", 0): [b1],
                    TopicPartition(TOPIC, 9): [b1],
                }
            )
            assert {k: e and e.code for k, e in refused.items()} == {
                TopicPartition("no-such-topic", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                TopicPartition(TOPIC, 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            }
            for bad in ([b1, 999], [b1, b1], []):
                (error,) = admin.alter_partition_reassignments({tp: bad}).values()
                assert error is not None and error.code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
            (error,) = admin.alter_partition_reassignments(
                {tp: [b1, b2, b3]}, allow_replication_factor_change=False
            ).values()
            assert error is not None and error.code == ErrorCode.INVALID_REPLICATION_FACTOR
            assert admin.list_partition_reassignments() == {tp: moving}

            # A null target cancels it.
            assert admin.alter_partition_reassignments({tp: None}) == {tp: None}
            assert admin.list_partition_reassignments() == {}
            (error,) = admin.alter_partition_reassignments({tp: None}).values()
            assert error is not None and error.code == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
        finally:
            cluster.resume(b3)
        # Replicas back to the original brokers.
        wait_for(lambda: _replicas(admin, TOPIC) == (b1, b2), f"{TOPIC}-0 back on {b1},{b2}")

        # kafka-python (after the pause: it may pick any broker for its requests) lists,
        # refuses, moves; the move completes once the new replica has caught up.
        wait_for(lambda: _unfenced(cluster, b3), f"broker {b3} unfenced")
        kp = _kafka_python_admin(",".join(cluster.bootstrap_servers()))
        try:
            assert kp.list_partition_reassignments() == {}
            assert kp.alter_partition_reassignments({ktp: None}) == {
                ktp: NoReassignmentInProgressError
            }
            unknown = KafkaTopicPartition("no-such-topic", 0)
            assert kp.alter_partition_reassignments({unknown: [b1]}) == {
                unknown: UnknownTopicOrPartitionError
            }
            assert kp.alter_partition_reassignments({ktp: [b2, b3]}) == {ktp: None}
            # In progress or already complete, depending on how fast broker 3 catches up.
            for listed, state in kp.list_partition_reassignments({TOPIC: [0]}).items():
                assert listed == ktp and state["replicas"][:2] == [b2, b3]
            wait_for(lambda: kp.list_partition_reassignments() == {}, "the move to complete")
        finally:
            kp.close()
        wait_for(lambda: _replicas(admin, TOPIC) == (b2, b3), f"{TOPIC}-0 on {b2},{b3}")


def test_the_command_through_the_brokers(cluster: LocalCluster) -> None:
    b1, b2, b3 = cluster.broker_ids
    topic = "cli-moves"
    with cluster.client(10.0) as client:
        (created,) = client.create_topics(
            [NewTopic(topic, -1, -1, replica_assignment={0: [b1, b2]})]
        )
        assert created.error_code == 0
    b = ("--bootstrap-server", ",".join(cluster.bootstrap_servers()))
    with Admin({"bootstrap.servers": b[1]}) as admin:
        admin.wait_for_leaders([topic])

    out = kraftlog(
        "topics", "reassign", topic, "--partition", "0", "--replicas", f"{b3},{b1}",
        "--wait", "--wait-timeout", "60", "--json", *b,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {
        "name": topic,
        "partition": 0,
        "target_replicas": [b3, b1],
        "completed": True,
    }
    out = kraftlog("topics", "reassign", "--list", topic, "--json", *b)
    assert out.returncode == 0 and json.loads(out.stdout) == [], out.stderr
    out = kraftlog("topics", "reassign", "--list", *b)
    assert out.returncode == 0 and out.stdout.strip() == "No reassignment in progress."

    # Refusals name Kafka's error and exit 1.
    out = kraftlog("topics", "reassign", topic, "--partition", "0", "--cancel", *b)
    assert out.returncode == 1 and "NO_REASSIGNMENT_IN_PROGRESS" in out.stderr, out
    out = kraftlog(
        "topics", "reassign", topic, "--partition", "0", "--replicas", f"{b1},{b2},{b3}",
        "--disallow-replication-factor-change", *b,
    )  # fmt: skip
    assert out.returncode == 1 and "INVALID_REPLICATION_FACTOR" in out.stderr, out
    out = kraftlog("topics", "reassign", topic, "--partition", "0", "--replicas", f"{b1},999", *b)
    assert out.returncode == 1 and "INVALID_REPLICA_ASSIGNMENT" in out.stderr, out
    out = kraftlog("topics", "reassign", "--list", "no-such-topic", *b)
    assert out.returncode == 1 and "does not exist" in out.stderr, out
    # Both targets named at once is a usage error.
    controllers = ("--bootstrap-controller", cluster.bootstrap_controllers()[0])
    out = kraftlog("topics", "reassign", "--list", *b, *controllers)
    assert out.returncode != 0 and "--bootstrap-server" in out.stderr

    # The controller path sees the same cluster.
    out = kraftlog("topics", "describe", topic, "--json", "--dir", str(cluster.directory))
    assert out.returncode == 0, out.stderr
    (described,) = json.loads(out.stdout)
    assert described["partitions"][0]["replicas"] == [b3, b1]
