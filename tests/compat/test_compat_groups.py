"""Consumer groups with real clients (kafka-python and confluent-kafka/librdkafka): 3 member
processes over 6 partitions against a kraftlog broker.

Each run checks, in order: a balanced assignment (2 partitions each); a member that leaves
(SIGTERM, LeaveGroup) and then one killed with SIGKILL (found by session expiry, 6 s) each
trigger a rebalance that gives their partitions to the others; every record produced is
processed by some member (at-least-once, nothing skipped across the rebalances); after all
members stop, new members resume from the committed offsets (nothing before them is read
again); and the group's committed offsets equal the log end offsets. kcat -G joins a group too.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy.local_cluster import LocalCluster
from tests.integration.clusters import FAST_OVERRIDES, running_cluster
from tests.integration.groups.helpers import GROUP_OVERRIDES, balanced, member_pool, wait_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

PARTITIONS = 6
# Session expiry of a killed member (6 s, the broker minimum) plus a rebalance.
KILL_DETECT_S = 40.0


@pytest.fixture(scope="module")
def group_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    overrides = {**FAST_OVERRIDES, **GROUP_OVERRIDES, "offsets.topic.replication.factor": "1"}
    path = tmp_path_factory.mktemp("groups") / "cluster"
    with running_cluster(path, overrides=overrides) as cluster:
        yield cluster


def _bootstrap(cluster: LocalCluster) -> str:
    return ",".join(cluster.bootstrap_servers())


def _create_topic(bootstrap: str, topic: str) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        admin.close()


def _produce(bootstrap: str, topic: str, values: list[str]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    try:
        for i, v in enumerate(values):
            producer.send(topic, value=v.encode(), partition=i % PARTITIONS)
        producer.flush(30)
    finally:
        producer.close()


def _committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        offsets = admin.list_group_offsets(group).get(group, {})
    finally:
        admin.close()
    return {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == topic}


def _end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in range(PARTITIONS)])
    finally:
        consumer.close()
    return {tp.partition: o for tp, o in ends.items()}


@pytest.mark.parametrize("client", ["kafka-python", "confluent"])
def test_group_of_three_rebalances_and_resumes(
    group_cluster: LocalCluster, tmp_path: Path, client: str
) -> None:
    bootstrap = _bootstrap(group_cluster)
    topic, group = f"groups-{client}", f"group-{client}"
    _create_topic(bootstrap, topic)
    produced = [f"a-{i}" for i in range(300)]
    _produce(bootstrap, topic, produced)

    with member_pool(tmp_path / "members") as start:
        a, b, c = (start(client, bootstrap, topic, group, n) for n in ("a", "b", "c"))
        wait_for(lambda: balanced([a, b, c], PARTITIONS), "a balanced assignment of 3")
        assert sorted(len(m.assignment() or ()) for m in (a, b, c)) == [2, 2, 2]

        def seen() -> set[str]:
            return {v for m in (a, b, c) for _, _, v in m.records()}

        wait_for(lambda: set(produced) <= seen(), "the first records")

        a.stop()  # LeaveGroup: an immediate rebalance
        assert a.proc.returncode == 0
        wait_for(lambda: balanced([b, c], PARTITIONS), "b and c to share all 6 partitions")
        more = [f"b-{i}" for i in range(120)]
        _produce(bootstrap, topic, more)
        produced += more

        b.kill()  # SIGKILL: no LeaveGroup, the coordinator sees its session expire
        wait_for(lambda: c.assignment() == list(range(PARTITIONS)), "c to own all", KILL_DETECT_S)
        more = [f"c-{i}" for i in range(120)]
        _produce(bootstrap, topic, more)
        produced += more
        wait_for(lambda: set(produced) <= seen(), "every record after the rebalances")
        c.stop()

        committed = _committed(bootstrap, group, topic)
        assert committed == _end_offsets(bootstrap, topic)

        # All members restarted: they start at the committed offsets.
        d, e, f = (start(client, bootstrap, topic, group, n) for n in ("d", "e", "f"))
        wait_for(lambda: balanced([d, e, f], PARTITIONS), "a balanced assignment after restart")
        last = [f"d-{i}" for i in range(60)]
        _produce(bootstrap, topic, last)
        produced += last
        wait_for(
            lambda: set(last) <= {v for m in (d, e, f) for _, _, v in m.records()},
            "the records produced after the restart",
        )
        reread = [(p, o) for m in (d, e, f) for p, o, _ in m.records() if o < committed.get(p, 0)]
        assert reread == []
        for m in (d, e, f):
            m.stop()
    everything = {v for m in (a, b, c, d, e, f) for _, _, v in m.records()}
    assert set(produced) <= everything  # at-least-once: nothing skipped


@pytest.mark.parametrize("client", ["kafka-python", "confluent"])
def test_static_member_restart_does_not_rebalance(
    group_cluster: LocalCluster, tmp_path: Path, client: str
) -> None:
    """A static member (group.instance.id) killed and restarted within its session timeout
    takes its old place: same partitions, and the other member sees no rebalance."""
    bootstrap = _bootstrap(group_cluster)
    topic, group = f"static-{client}", f"static-group-{client}"
    _create_topic(bootstrap, topic)
    with member_pool(tmp_path / "members") as start:
        a = start(client, bootstrap, topic, group, "a", instance_id="static-a")
        wait_for(lambda: a.assignment() == list(range(PARTITIONS)), "a to own all")
        b = start(client, bootstrap, topic, group, "b", instance_id="static-b")
        wait_for(lambda: balanced([a, b], PARTITIONS), "a and b balanced")
        a_assignments = sum(1 for e in a.events() if e["e"] == "assigned")
        before = b.assignment()
        assert before
        b.kill()  # no LeaveGroup; back well within the 6 s session timeout
        b2 = start(client, bootstrap, topic, group, "b2", instance_id="static-b")
        wait_for(lambda: b2.assignment() == before, "the restarted member's old partitions")
        values = [f"s-{i}" for i in range(60)]
        _produce(bootstrap, topic, values)
        wait_for(
            lambda: set(values) <= {v for m in (a, b2) for _, _, v in m.records()},
            "records on both members",
        )
        # No rebalance for the other member: no new assignment, and it kept its partitions.
        assert sum(1 for e in a.events() if e["e"] == "assigned") == a_assignments
        assert sorted((a.assignment() or []) + (b2.assignment() or [])) == list(range(PARTITIONS))


def test_kcat_joins_a_group_and_commits(
    group_cluster: LocalCluster, tmp_path: Path, kcat: str
) -> None:
    bootstrap = _bootstrap(group_cluster)
    topic, group = "groups-kcat", "group-kcat"
    _create_topic(bootstrap, topic)
    values = [f"k-{i}" for i in range(60)]
    _produce(bootstrap, topic, values)
    # -G: balanced consumer group; -e exits at the end of every assigned partition and commits.
    done = subprocess.run(
        [kcat, "-b", bootstrap, "-G", group, "-o", "beginning", "-e", "-q", "-f", "%s\\n", topic],
        capture_output=True,
        timeout=90,
        check=True,
    )
    assert set(done.stdout.decode().split()) == set(values)
    committed = wait_for(
        lambda: _committed(bootstrap, group, topic) or None, "kcat's committed offsets"
    )
    assert committed == _end_offsets(bootstrap, topic)


def test_confluent_admin_describes_members(group_cluster: LocalCluster, tmp_path: Path) -> None:
    """librdkafka's DescribeConsumerGroups sees the running member: its client id, its host
    as Kafka reports it ("/" + address) and its assignment."""
    from confluent_kafka.admin import AdminClient

    bootstrap = _bootstrap(group_cluster)
    topic, group = "groups-describe", "group-describe"
    _create_topic(bootstrap, topic)
    with member_pool(tmp_path / "members") as start:
        a = start("confluent", bootstrap, topic, group, "a")
        wait_for(lambda: a.assignment() == list(range(PARTITIONS)), "a to own all")
        admin = AdminClient({"bootstrap.servers": bootstrap})
        (future,) = admin.describe_consumer_groups([group], request_timeout=30).values()
        described = future.result(timeout=30)
        assert described.state.name == "STABLE"
        (member,) = described.members
        assert member.host == "/127.0.0.1"
        assert member.client_id
        assert sorted(tp.partition for tp in member.assignment.topic_partitions) == list(
            range(PARTITIONS)
        )
