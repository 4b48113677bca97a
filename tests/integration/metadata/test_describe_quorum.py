"""DescribeQuorum through a broker (kafka-python's ``describe_metadata_quorum``, what
kafka-metadata-quorum shows) on 3 controllers and 2 brokers: the leader and its epoch, every
voter with the log end it acknowledged and a recent fetch time, the brokers as observers with
their metadata offsets, and every voter's controller endpoint."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy.local_cluster import LocalCluster, wait_until
from tests.integration.clusters import running_cluster
from tests.integration.kafka_python_admin import kafka_python_admin

pytestmark = pytest.mark.integration

DEADLINE_S = 60.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    path: Path = tmp_path_factory.mktemp("describe-quorum") / "cluster"
    with running_cluster(path, controllers=3, brokers=2) as started:
        yield started


def describe(cluster: LocalCluster) -> dict:
    with kafka_python_admin(cluster.bootstrap_servers()) as admin:
        return admin.describe_metadata_quorum()


def test_describe_quorum_shows_voters_observers_and_endpoints(cluster: LocalCluster) -> None:
    def complete() -> dict | None:
        doc = describe(cluster)
        part = doc["topics"][0]["partitions"][0]
        voters = part["current_voters"]
        if len(doc.get("nodes") or []) < 3 or any(v["log_end_offset"] < 0 for v in voters):
            return None
        return doc

    doc = wait_until(complete, DEADLINE_S, "every voter known to the leader")
    (topic,) = doc["topics"]
    assert topic["topic_name"] == "__cluster_metadata"
    (part,) = topic["partitions"]
    assert part["error"] is None  # kafka-python turns error codes into exceptions (or None)
    assert part["leader_id"] in cluster.controller_ids and part["leader_epoch"] > 0
    assert part["high_watermark"] > 0
    voters = {v["replica_id"]: v for v in part["current_voters"]}
    assert sorted(voters) == sorted(cluster.controller_ids)
    now_ms = time.time() * 1000
    for v in voters.values():
        assert 0 <= v["log_end_offset"] <= part["high_watermark"]
        assert now_ms - 60_000 < v["last_fetch_timestamp"] <= now_ms + 1000
    observers = {o["replica_id"]: o for o in part["observers"]}
    assert sorted(observers) == sorted(cluster.broker_ids)
    assert all(o["log_end_offset"] > 0 for o in observers.values())
    nodes = {n["node_id"]: n["listeners"][0] for n in doc["nodes"]}
    assert sorted(nodes) == sorted(cluster.controller_ids)
    expected = {c: cluster.node(c).controller_port for c in cluster.controller_ids}
    assert {c: lis["port"] for c, lis in nodes.items()} == expected
