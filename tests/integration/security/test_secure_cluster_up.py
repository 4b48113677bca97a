"""``kraftlog cluster up --security`` makes a secure cluster in one command: confluent-kafka and
kafka-python produce and consume with the client settings it writes, a wrong password and a
client without a certificate are refused, and the admin commands work with the written
``admin.properties`` (real processes: 1 controller, 1 broker)."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
import warnings
from pathlib import Path

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from deploy.local_cluster import LocalCluster
from tests.integration.clusters import kraftlog

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

DEADLINE_S = 60.0


def up(directory: Path, mode: str) -> subprocess.CompletedProcess[str]:
    return kraftlog(
        "cluster", "up", "--dir", str(directory), "--controllers", "1", "--brokers", "1",
        "--security", mode, "--detach", "--timeout", "90",
    )  # fmt: skip


def librdkafka_settings(directory: Path) -> dict[str, str]:
    out = {}
    for line in (directory / "client-librdkafka.properties").read_text().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out[key] = value
    return out


def round_trip(settings: dict[str, str], topic: str) -> bytes | None:
    """Create ``topic``, produce one record and read it back with confluent-kafka."""
    conf = {**settings, "log_level": 0}
    admin = AdminClient(conf)  # kept alive until its futures complete
    futures = admin.create_topics([NewTopic(topic, 1, 1)])
    for f in futures.values():
        f.result(DEADLINE_S)
    p = confluent_kafka.Producer(conf)
    p.produce(topic, b"secret-hello")
    assert p.flush(DEADLINE_S) == 0
    c = confluent_kafka.Consumer(
        {**conf, "group.id": f"g-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest"}
    )
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is not None and m.error() is None:
                return m.value()
        return None
    finally:
        c.close()


def refused(conf: dict[str, str]) -> bool:
    """Whether a client with ``conf`` is refused (it never gets the cluster's metadata)."""
    admin = AdminClient({**conf, "log_level": 0})
    try:
        admin.list_topics(timeout=5)
    except confluent_kafka.KafkaException:
        return True
    return False


def test_sasl_ssl_cluster_in_one_command(tmp_path: Path) -> None:
    d = tmp_path / "secure"
    started = up(d, "sasl_ssl")
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        assert "sasl.password=" in started.stdout and "KafkaProducer(**" in started.stdout
        settings = librdkafka_settings(d)
        assert settings["security.protocol"] == "SASL_SSL"
        assert (d / "client.properties").stat().st_mode & 0o077 == 0
        assert round_trip(settings, "orders") == b"secret-hello"

        warnings.simplefilter("ignore")
        from kafka import KafkaConsumer, KafkaProducer

        kwargs = json.loads((d / "client-kafka-python.json").read_text())
        producer = KafkaProducer(**kwargs)
        producer.send("orders", b"from-kafka-python").get(DEADLINE_S)
        producer.close()
        consumer = KafkaConsumer("orders", group_id="kp", auto_offset_reset="earliest", **kwargs)
        values: list[bytes] = []
        deadline = time.monotonic() + DEADLINE_S
        while len(values) < 2 and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=1000).values():
                values += [r.value for r in records]
        consumer.close()
        assert values == [b"secret-hello", b"from-kafka-python"]

        assert refused({**settings, "sasl.password": "wrong"})
        plain = {"bootstrap.servers": settings["bootstrap.servers"]}
        assert refused(plain)
        # The control plane needs the admin certificate: admin commands take admin.properties.
        cluster = LocalCluster.open(d)
        listed = kraftlog(
            "topics", "list", "--bootstrap-controller", ",".join(cluster.bootstrap_controllers()),
            "--command-config", str(d / "admin.properties"),
        )  # fmt: skip
        assert listed.returncode == 0 and "orders" in listed.stdout, listed.stderr
        # Up again: the cluster keeps its mode and its admin password.
        again = kraftlog("cluster", "up", "--dir", str(d), "--detach")
        assert again.returncode == 0, again.stderr[-3000:]
        assert librdkafka_settings(d) == settings
    finally:
        if (d / "cluster.json").exists():
            LocalCluster.open(d).close()


def test_ssl_cluster_needs_a_client_certificate(tmp_path: Path) -> None:
    d = tmp_path / "tls"
    started = up(d, "ssl")
    try:
        assert started.returncode == 0, started.stderr[-3000:]
        settings = librdkafka_settings(d)
        assert settings["security.protocol"] == "SSL"
        assert round_trip(settings, "payments") == b"secret-hello"
        without_cert = {
            k: v
            for k, v in settings.items()
            if k not in ("ssl.certificate.location", "ssl.key.location")
        }
        assert refused(without_cert)
    finally:
        if (d / "cluster.json").exists():
            LocalCluster.open(d).close()
