"""deploy.cluster_layout, deploy.ports, deploy.listeners, generated local-cluster configs and
monitoring files."""

from __future__ import annotations

import json
import socket
import stat
from pathlib import Path

import pytest

from common.configdef import ConfigError
from deploy.cluster_layout import ClusterLayout, ClusterLayoutError, plan_layout
from deploy.listeners import parse_listener, parse_server_list
from deploy.local_cluster import LocalCluster
from deploy.meta_properties import check_directories
from deploy.monitoring_files import write_monitoring_files
from deploy.node_config import load_node_config
from deploy.ports import PORT_SLICE_ENV, free_ports


def test_free_ports_are_distinct_bindable_and_below_the_ephemeral_range() -> None:
    ports = free_ports(20)
    assert len(set(ports)) == 20
    for port in ports:
        assert port < 32768
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_free_ports_skips_a_port_in_use() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        busy = s.getsockname()[1]
        assert busy not in free_ports(50)


def test_a_port_slice_draws_from_its_own_share_of_the_range(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    slices = []
    for k in range(3):
        monkeypatch.setenv(PORT_SLICE_ENV, f"{k}/3")
        slices.append(set(free_ports(30)))
    monkeypatch.delenv(PORT_SLICE_ENV)
    assert not (slices[0] & slices[1] or slices[0] & slices[2] or slices[1] & slices[2])
    assert max(slices[0]) < min(slices[1]) and max(slices[1]) < min(slices[2])


@pytest.mark.parametrize("spec", ["3/3", "1", "a/2", "1/0", "-1/2"])
def test_a_malformed_port_slice_is_refused(monkeypatch: pytest.MonkeyPatch, spec: str) -> None:
    monkeypatch.setenv(PORT_SLICE_ENV, spec)
    with pytest.raises(ValueError, match=PORT_SLICE_ENV):
        free_ports(1)


def test_plan_layout_ids_and_roles(tmp_path: Path) -> None:
    layout = plan_layout(tmp_path, cluster_id="x", controllers=3, brokers=2)
    assert [n.node_id for n in layout.controllers] == [1, 2, 3]
    assert [n.node_id for n in layout.brokers] == [101, 102]
    ports = [
        p
        for n in layout.nodes
        for p in (n.raft_port, n.controller_port, n.broker_port, n.metrics_port)
        if p
    ]
    # Every node also serves metrics on a port of its own.
    assert len(ports) == len(set(ports)) == 13
    assert layout.voters().count("@127.0.0.1:") == 3
    with pytest.raises(ValueError):
        plan_layout(tmp_path, cluster_id="x", controllers=0, brokers=1)


def test_layout_round_trips_and_rejects_garbage(tmp_path: Path) -> None:
    layout = plan_layout(tmp_path, cluster_id="abc", controllers=1, brokers=1)
    layout.save()
    assert ClusterLayout.load(tmp_path) == layout
    (tmp_path / "cluster.json").write_text("{not json")
    with pytest.raises(ClusterLayoutError, match="unreadable"):
        ClusterLayout.load(tmp_path)
    with pytest.raises(ClusterLayoutError, match="no local cluster"):
        ClusterLayout.load(tmp_path / "elsewhere")


def test_create_writes_valid_private_formatted_node_configs(tmp_path: Path) -> None:
    cluster = LocalCluster.create(
        tmp_path / "c", controllers=3, brokers=2, overrides={"broker.session.timeout.ms": "2500"}
    )
    assert stat.S_IMODE(cluster.layout.secret_path().stat().st_mode) == 0o600
    for node in cluster.layout.nodes:
        assert stat.S_IMODE(node.config_path.stat().st_mode) == 0o600
        s = load_node_config(str(node.config_path))
        assert s.controller.broker_session_timeout_ms == 2500
        assert check_directories(s.storage_dirs(), node_id=node.node_id) == cluster.cluster_id
    assert not cluster.running_ids()
    with pytest.raises(Exception, match="already holds a cluster"):
        LocalCluster.create(tmp_path / "c")


def test_listener_parsing() -> None:
    lis = parse_listener("plaintext://[::1]:9092")
    assert (lis.name, lis.host, lis.port, lis.address) == ("PLAINTEXT", "::1", 9092, "[::1]:9092")
    assert parse_listener("CONTROLLER://:9093").host == ""
    for bad in ("9092", "PLAINTEXT://host", "PLAINTEXT://h:70000", "://h:1"):
        with pytest.raises(ConfigError):
            parse_listener(bad)
    assert parse_server_list(["a:1", "[::1]:2"], key="k") == ("a:1", "[::1]:2")
    with pytest.raises(ConfigError, match="needs a real port"):
        parse_server_list(["a:0"], key="k")


def test_nodes_serve_metrics_and_monitoring_files_name_them(tmp_path: Path) -> None:
    cluster = LocalCluster.create(tmp_path / "c", controllers=1, brokers=2)
    ports = {}
    for node in cluster.layout.nodes:
        assert node.metrics_port is not None
        props = load_node_config(str(node.config_path)).props
        assert props["metrics.port"] == str(node.metrics_port)
        assert cluster.metrics_url(node.node_id) == (
            f"http://127.0.0.1:{node.metrics_port}/metrics"
        )
        ports[node.node_id] = node.metrics_port
    cluster.update_config(102, {"metrics.port": "-1"})
    assert cluster.metrics_url(102) is None
    root = write_monitoring_files(cluster.layout, ports)
    scrape = (root / "prometheus.yml").read_text()
    for node_id, port in ports.items():
        assert f'["127.0.0.1:{port}"]' in scrape
        assert f'node_id: "{node_id}"' in scrape
    provider = (root / "grafana" / "provisioning" / "dashboards" / "kraftlog.yml").read_text()
    dashboards = root / "grafana" / "dashboards"
    assert json.dumps(str(dashboards)) in provider
    assert json.loads((dashboards / "kraftlog.json").read_text())["uid"] == "kraftlog-overview"
    datasource = (root / "grafana" / "provisioning" / "datasources" / "kraftlog.yml").read_text()
    assert "type: prometheus" in datasource


def test_an_added_broker_gets_ports_of_its_own(tmp_path: Path) -> None:
    cluster = LocalCluster.create(tmp_path / "c", controllers=1, brokers=1)
    new_id = cluster.add_broker()
    ports = [
        p
        for n in cluster.layout.nodes
        for p in (n.raft_port, n.controller_port, n.broker_port, n.metrics_port)
        if p
    ]
    assert len(ports) == len(set(ports))
    props = load_node_config(str(cluster.node(new_id).config_path)).props
    assert props["metrics.port"] == str(cluster.node(new_id).metrics_port)
    assert ClusterLayout.load(tmp_path / "c") == cluster.layout
