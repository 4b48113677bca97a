"""The Kafka protocol server inside real broker processes."""

from __future__ import annotations

import re
import socket
import struct
import time
import urllib.request
from collections.abc import Callable

import pytest

from common.error_codes import ErrorCode
from common.protocol.api_keys import ApiKey
from common.protocol.messages.api_versions import ApiVersionsRequest
from common.protocol.messages.list_offsets import (
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
)
from data_plane.storage import Record, build_batch
from deploy.local_cluster import LocalCluster
from metadata.messages import NewTopic
from tests.integration.clusters import ClusterFactory
from tests.unit.broker.wire import WireClient

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:importlib.resources._legacy"),
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]

DEADLINE_S = 30.0


def wait_for(cond: Callable[[], bool], what: str, timeout_s: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def port_of(cluster: LocalCluster, broker_id: int) -> int:
    port = cluster.node(broker_id).broker_port
    assert port is not None
    return port


def produce(client: WireClient, topic: str, n: int, acks: int = 1, timeout_ms: int = 5000) -> dict:
    records = build_batch([Record(b"k", b"v%d" % i, 1000 + i) for i in range(n)])
    body = {
        "transactional_id": None,
        "acks": acks,
        "timeout_ms": timeout_ms,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
    }
    return client.call(ApiKey.PRODUCE, 7, body)["responses"][0]["partition_responses"][0]


def latest(client: WireClient, topic: str) -> int:
    partition = ListOffsetsRequestPartition(partition_index=0, timestamp=-1)
    body = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=0,
        topics=[ListOffsetsRequestTopic(name=topic, partitions=[partition])],
    )
    offset: int = client.call(ApiKey.LIST_OFFSETS, 5, body).topics[0].partitions[0].offset
    return offset


def partition_md(client: WireClient, topic: str) -> tuple[dict, dict]:
    """The Metadata answer and the topic's partition 0 ({} while the broker does not know it)."""
    md = client.call(ApiKey.METADATA, 8, {"topics": [{"name": topic}]})
    parts = md["topics"][0]["partitions"]
    return md, parts[0] if parts else {}


def test_two_brokers_routing_acks_all_and_isr_shrink(make_cluster: ClusterFactory) -> None:
    cluster = make_cluster(controllers=1, brokers=2)
    b1, b2 = cluster.broker_ids
    with cluster.client(10.0) as admin:
        (res,) = admin.create_topics([NewTopic("rf2", 1, 2)])
        assert res.error_code == 0, res
    clients = {b: WireClient(port_of(cluster, b)) for b in (b1, b2)}
    try:
        wait_for(lambda: all(partition_md(c, "rf2")[1] for c in clients.values()), "the topic")
        md, p = partition_md(clients[b1], "rf2")
        assert sorted(b["node_id"] for b in md["brokers"]) == [b1, b2]
        assert sorted(p["replica_nodes"]) == [b1, b2] and sorted(p["isr_nodes"]) == [b1, b2]
        assert p["offline_replicas"] == []
        leader = p["leader_id"]
        follower = b2 if leader == b1 else b1
        wait_for(lambda: produce(clients[leader], "rf2", 1)["error_code"] == 0, "leader ready")
        assert (
            produce(clients[follower], "rf2", 2)["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
        )
        # Two replicas in the ISR: acks=all completes once the follower has fetched the
        # records (the high watermark passed them), and consumers then see them.
        replicated = produce(clients[leader], "rf2", 2, acks=-1, timeout_ms=10_000)
        assert replicated["error_code"] == ErrorCode.NO_ERROR, replicated
        assert latest(clients[leader], "rf2") == 3
        # The follower dies: once fenced it leaves the broker list and (controller) the ISR;
        # acks=1 appends go on and, the leader alone in the ISR, the HW reaches the log end.
        clients[follower].close()
        cluster.kill(follower)
        assert produce(clients[leader], "rf2", 2)["error_code"] == ErrorCode.NO_ERROR

        def shrunk() -> bool:
            md, p = partition_md(clients[leader], "rf2")
            return p["isr_nodes"] == [leader] and [b["node_id"] for b in md["brokers"]] == [leader]

        wait_for(shrunk, "the fenced follower to leave the ISR")
        _, p = partition_md(clients[leader], "rf2")
        assert p["offline_replicas"] == [follower]
        wait_for(lambda: latest(clients[leader], "rf2") == 5, "the HW to reach the log end")
    finally:
        for c in clients.values():
            c.close()


def test_auto_create_topics(make_cluster: ClusterFactory) -> None:
    from kafka import KafkaProducer

    cluster = make_cluster(**{"auto.create.topics.enable": "true", "num.partitions": "2"})
    client = WireClient(port_of(cluster, cluster.broker_ids[0]))
    try:
        md = client.call(ApiKey.METADATA, 8, {"topics": [{"name": "auto-1"}]})
        assert md["topics"][0]["error_code"] in (ErrorCode.LEADER_NOT_AVAILABLE, 0)

        def partitions() -> int:
            md = client.call(ApiKey.METADATA, 8, {"topics": [{"name": "auto-1"}]})
            return len(md["topics"][0]["partitions"])

        wait_for(lambda: partitions() == 2, "auto-created topic")
        no_create = client.call(
            ApiKey.METADATA, 8, {"topics": [{"name": "auto-2"}], "allow_auto_topic_creation": False}
        )
        assert no_create["topics"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    finally:
        client.close()
    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap_servers(), enable_idempotence=False, acks=1
    )
    try:
        meta = producer.send("auto-3", b"hello").get(timeout=DEADLINE_S)
        assert meta.offset == 0
        # Its ApiVersions v4 named the client software; the broker counts the connection.
        url = cluster.metrics_url(cluster.broker_ids[0])
        assert url is not None
        with urllib.request.urlopen(url, timeout=10) as scrape:
            text = scrape.read().decode()
        assert re.search(
            r'kraftlog_connections_by_client_software\{[^}]*client_software_name="kafka-python"'
            r"[^}]*\} [1-9]",
            text,
        ), text[:2000]
    finally:
        producer.close(timeout=10)
    # A software name outside Kafka's pattern is refused with INVALID_REQUEST.
    client = WireClient(port_of(cluster, cluster.broker_ids[0]))
    try:
        bad = client.call(
            ApiKey.API_VERSIONS,
            3,
            ApiVersionsRequest(client_software_name="bad name!", client_software_version="1"),
        )
        assert bad.error_code == ErrorCode.INVALID_REQUEST and bad.api_keys == []
        good = client.call(
            ApiKey.API_VERSIONS,
            4,
            ApiVersionsRequest(client_software_name="kraftlog-test", client_software_version="1.0"),
        )
        assert good.error_code == 0
        assert (18, 0, 4) in {(k.api_key, k.min_version, k.max_version) for k in good.api_keys}
    finally:
        client.close()


def test_restart_keeps_data_and_limits_apply(make_cluster: ClusterFactory) -> None:
    cluster = make_cluster(**{"socket.request.max.bytes": "65536"})
    broker = cluster.broker_ids[0]
    with cluster.client(10.0) as admin:
        (res,) = admin.create_topics([NewTopic("keep", 1, 1)])
        assert res.error_code == 0, res
    client = WireClient(port_of(cluster, broker))
    try:
        wait_for(lambda: produce(client, "keep", 5)["error_code"] == 0, "leader ready")
        assert produce(client, "keep", 5)["base_offset"] == 5
        # An oversized frame closes that connection only.
        bad = socket.create_connection(("127.0.0.1", port_of(cluster, broker)), timeout=10)
        bad.sendall(struct.pack(">i", 65537) + b"\x00" * 64)
        assert bad.recv(1) == b""
        bad.close()
        assert latest(client, "keep") == 10
    finally:
        client.close()
    assert cluster.stop_node(broker)
    cluster.start_node(broker)
    client = WireClient(port_of(cluster, broker)) if _wait_port(cluster, broker) else None
    assert client is not None
    try:
        wait_for(lambda: _latest_or_none(client, "keep") == 10, "the log back after restart")
    finally:
        client.close()


def _wait_port(cluster: LocalCluster, broker: int) -> bool:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port_of(cluster, broker)), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def _latest_or_none(client: WireClient, topic: str) -> int | None:
    try:
        return latest(client, topic)
    except (ConnectionError, OSError):
        return None
