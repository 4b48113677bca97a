"""Replica fetchers over TLS: two brokers whose ``inter.broker.listener.name`` is an SSL
listener that requires client certificates. An RF 2 topic with min.insync.replicas 2 takes
acks=all writes (so the follower is in the ISR, fetching through the SSL listener with the
broker's own certificate), the leader's metrics count connections on that listener, and a
SASL inter-broker listener is refused at start with a message naming the key."""

from __future__ import annotations

import re
import time
import urllib.request
from pathlib import Path

import pytest

from data_plane.security import certs
from deploy.local_cluster import LocalCluster
from deploy.ports import free_ports
from kraftlog_client import Admin, Consumer, NewTopic, Producer, TopicPartition
from tests.integration.clusters import FAST_OVERRIDES, configured_ports

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::DeprecationWarning:importlib.resources._legacy"),
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]

DEADLINE_S = 60.0


def _ssl_listener_cluster(path: Path, pki: Path, inter_broker: str) -> LocalCluster:
    overrides = {
        **FAST_OVERRIDES,
        "listener.security.protocol.map": (
            "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL"
        ),
        "ssl.keystore.location": str(pki / "node.pem"),
        "ssl.key.location": str(pki / "node-key.pem"),
        "ssl.truststore.location": str(pki / "ca.pem"),
        "ssl.client.auth": "required",
        # The dev certificates name 127.0.0.1 and localhost; check them as clients would.
        "ssl.endpoint.identification.algorithm": "https",
        "inter.broker.listener.name": inter_broker,
        "min.insync.replicas": "2",
    }
    cluster = LocalCluster.create(path, controllers=1, brokers=2, overrides=overrides)
    for broker_id in cluster.broker_ids:
        port = cluster.node(broker_id).broker_port
        ssl_port, sasl_port, metrics_port = free_ports(3, exclude=configured_ports(cluster))
        listeners = (
            f"PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:{ssl_port},"
            f"SASL_SSL://127.0.0.1:{sasl_port}"
        )
        cluster.update_config(
            broker_id,
            {
                "listeners": listeners,
                "advertised.listeners": listeners,
                "metrics.port": str(metrics_port),
            },
        )
    return cluster


def _metric(port: int, name: str, labels: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    match = re.search(rf"^{name}\{{{labels}\}} (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def test_replica_fetchers_use_the_ssl_inter_broker_listener(tmp_path: Path) -> None:
    pki = tmp_path / "pki"
    certs.create_dev_pki(pki, ["node"])
    cluster = _ssl_listener_cluster(tmp_path / "c", pki, "SSL")
    try:
        cluster.start()
        cluster.wait_ready(DEADLINE_S)
        bootstrap = ",".join(cluster.bootstrap_servers())
        admin = Admin({"bootstrap.servers": bootstrap})
        try:
            admin.create_topics([NewTopic("replicated", 1, 2)])
            admin.wait_for_leaders(["replicated"], timeout_ms=30_000)
        finally:
            admin.close()
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        try:
            deadline = time.monotonic() + DEADLINE_S
            while True:  # NOT_ENOUGH_REPLICAS until the follower has joined the ISR
                future = producer.send("replicated", value=b"over-tls", partition=0)
                try:
                    offset = future.get(timeout=30).offset
                    break
                except Exception:
                    assert time.monotonic() < deadline, "acks=all never succeeded"
                    time.sleep(0.5)
        finally:
            producer.close()
        consumer = Consumer({"bootstrap.servers": bootstrap})
        try:
            tp = TopicPartition("replicated", 0)
            consumer.assign([tp])
            consumer.seek(tp, offset)
            got: list[bytes] = []
            deadline = time.monotonic() + DEADLINE_S
            while not got and time.monotonic() < deadline:
                got = [r.value for r in consumer.poll(200)]
            assert got[:1] == [b"over-tls"]
        finally:
            consumer.close()
        ssl_connections = sum(
            _metric(int(cluster_metrics_port), "kraftlog_connections", 'listener="SSL"')
            for cluster_metrics_port in (
                _props(cluster, b)["metrics.port"] for b in cluster.broker_ids
            )
        )
        assert ssl_connections >= 1  # the follower's fetcher, with its certificate
    finally:
        cluster.close()


def test_a_sasl_inter_broker_listener_is_refused_at_start(tmp_path: Path) -> None:
    pki = tmp_path / "pki"
    certs.create_dev_pki(pki, ["node"])
    cluster = _ssl_listener_cluster(tmp_path / "c", pki, "SASL_SSL")
    try:
        with pytest.raises(Exception):  # noqa: B017 - which wrapper does not matter
            cluster.start()
            cluster.wait_ready(20.0)
        logs = "".join(cluster.log_tail(b, 200) for b in cluster.broker_ids)
        assert "inter.broker.listener.name" in logs
    finally:
        cluster.close()


def _props(cluster: LocalCluster, node_id: int) -> dict[str, str]:
    props: dict[str, str] = {}
    for line in cluster.config_path(node_id).read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and not key.startswith("#"):
            props[key.strip()] = value.strip()
    return props
