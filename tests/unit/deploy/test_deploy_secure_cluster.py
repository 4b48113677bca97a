"""deploy.secure_cluster: what each security mode writes into the nodes' configs and the
client settings files (no processes; the real cluster is tests/integration/security/
test_secure_cluster_up.py)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from common.configdef import from_props
from common.security.config import SecurityConfig
from deploy.local_cluster import LocalCluster
from deploy.node_config import load_node_config
from deploy.secure_cluster import SecurityMode, client_settings, write_client_files


@pytest.mark.parametrize("mode", list(SecurityMode))
def test_each_mode_writes_valid_node_configs(tmp_path: Path, mode: SecurityMode) -> None:
    cluster = LocalCluster.create(tmp_path / "c", controllers=1, brokers=2, security=mode)
    assert cluster.layout.security == mode.value
    (broker,) = [n for n in cluster.layout.brokers if n.node_id == 101]
    props = load_node_config(str(broker.config_path)).props
    if mode is SecurityMode.PLAINTEXT:
        assert props["listeners"] == f"PLAINTEXT://127.0.0.1:{broker.broker_port}"
        assert "kraftlog.authorizer.enabled" not in props
        assert not (cluster.directory / "certs").exists()
        return
    assert (cluster.directory / "certs" / "ca.pem").exists()
    listeners = props["listeners"].split(",")
    assert listeners[0] == f"{mode.protocol}://127.0.0.1:{broker.broker_port}"
    if mode.sasl:
        # Replica fetchers do not speak SASL: brokers replicate over their own TLS listener.
        assert listeners[1] == f"INTERNAL://127.0.0.1:{broker.internal_port}"
        assert props["inter.broker.listener.name"] == "INTERNAL"
        assert props["sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    else:
        assert len(listeners) == 1 and broker.internal_port is None
    security = from_props(SecurityConfig, dict(props))
    supers = security.super_user_names()
    assert "User:CN=node-101,O=kraftlog development" in supers
    assert "User:CN=admin,O=kraftlog development" in supers and "User:admin" in supers
    assert security.authorizer_enabled and security.control_plane_ssl_enabled
    controller = load_node_config(str(cluster.layout.controllers[0].config_path)).props
    assert controller["kraftlog.control.plane.ssl.enabled"] == "true"


@pytest.mark.parametrize("mode", [m for m in SecurityMode if m is not SecurityMode.PLAINTEXT])
def test_client_settings_per_client(tmp_path: Path, mode: SecurityMode) -> None:
    cluster = LocalCluster.create(tmp_path / "c", controllers=1, brokers=1, security=mode)
    password = "pw" if mode.sasl else None
    settings = client_settings(cluster.layout, mode, password)
    rdkafka, java, kp = settings["librdkafka"], settings["kraftlog"], settings["kafka-python"]
    assert rdkafka["security.protocol"] == java["security.protocol"] == mode.protocol
    assert kp["security_protocol"] == mode.protocol
    assert ("ssl.ca.location" in rdkafka) == mode.tls_to_clients
    assert ("ssl.certificate.location" in rdkafka) == (mode is SecurityMode.SSL)
    if mode.sasl:
        assert rdkafka["sasl.password"] == java["sasl.password"] == "pw"
        assert kp["sasl_plain_password"] == "pw" and kp["sasl_mechanism"] == "SCRAM-SHA-512"
    paths = write_client_files(cluster.layout, mode, password)
    for path in paths.values():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(paths["kafka-python"].read_text()) == kp
    with pytest.raises(ValueError):
        client_settings(cluster.layout, SecurityMode.SASL_SSL, None)
