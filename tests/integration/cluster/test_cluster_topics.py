"""A created topic reaches every broker identically; the CLI shows the same cluster."""

from __future__ import annotations

import json
import socket
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from deploy import processes
from deploy.local_cluster import ClusterError, LocalCluster, wait_until
from metadata.messages import NewTopic
from tests.integration.clusters import kraftlog

pytestmark = pytest.mark.integration


def broker_views(cluster: LocalCluster) -> dict[int, dict[str, Any]]:
    return {b: cluster.broker_status(b) or {} for b in cluster.broker_ids}


def test_created_topic_appears_identically_in_every_broker_image(cluster: LocalCluster) -> None:
    with cluster.client(15) as client:
        (result,) = client.create_topics(
            [NewTopic("orders", 6, 3, configs={"retention.ms": "3600000"})]
        )
        assert result.error_code == 0, result
        committed = client.quorum_status()["committed_offset"]

    def converged() -> dict[int, dict[str, Any]] | None:
        views = broker_views(cluster)
        offsets = {v.get("metadata_offset", -1) for v in views.values()}
        digests = {v.get("image_sha256") for v in views.values()}
        if min(offsets) < committed or len(offsets) != 1 or len(digests) != 1:
            return None
        return views

    views = wait_until(converged, 30, "every broker to apply the topic at one offset")
    topics = [v["topics"]["orders"] for v in views.values()]
    assert all(t == topics[0] for t in topics)
    partitions = topics[0]["partitions"]
    assert sorted(partitions) == [str(p) for p in range(6)]
    for p in partitions.values():
        assert sorted(p["replicas"]) == [101, 102, 103]
        assert p["isr"] == p["replicas"] and p["leader"] == p["replicas"][0]
    # Leadership is spread over the brokers.
    assert {p["leader"] for p in partitions.values()} == {101, 102, 103}

    # Every broker created the partition logs it hosts (all six here: RF 3 on 3 brokers).
    def logs_created() -> bool:
        return all(
            (cluster.node(b).data_dir / f"orders-{p}").is_dir()
            for b in cluster.broker_ids
            for p in range(6)
        )

    wait_until(logs_created, 30, "partition directories on every broker")

    # `topics describe --json` (read from the metadata log) agrees with the brokers.
    out = kraftlog("topics", "describe", "orders", "--dir", str(cluster.directory), "--json")
    assert out.returncode == 0, out.stderr
    (described,) = json.loads(out.stdout)
    assert described["topic_id"] == topics[0]["topic_id"]
    assert described["configs"] == {"retention.ms": "3600000"}
    for p in described["partitions"]:
        mine = partitions[str(p["partition"])]
        assert (p["leader"], p["replicas"], p["isr"]) == (
            mine["leader"],
            mine["replicas"],
            mine["isr"],
        )

    # Deleting the topic removes it, and its logs, everywhere.
    out = kraftlog("topics", "delete", "orders", "--dir", str(cluster.directory))
    assert out.returncode == 0, out.stderr
    wait_until(
        lambda: all(
            "orders" not in v.get("topics", {"orders": 1}) and v.get("local_logs") == 0
            for v in broker_views(cluster).values()
        ),
        30,
        "the deletion to reach every broker",
    )
    assert not any(
        (cluster.node(b).data_dir / f"orders-{p}").exists()
        for b in cluster.broker_ids
        for p in range(6)
    )


def test_status_commands_print_every_node_as_json(cluster: LocalCluster) -> None:
    leader = cluster.active_controller_id()
    for command in (("cluster", "status"), ("quorum", "status")):
        out = kraftlog(*command, "--dir", str(cluster.directory), "--json")
        assert out.returncode == 0, out.stderr
        doc = json.loads(out.stdout)
        assert doc["quorum_leader_id"] == leader
        assert doc["bootstrap_servers"] == cluster.bootstrap_servers()
        nodes = {n["id"]: n for n in doc["nodes"]}
        assert sorted(nodes) == [1, 2, 3, 101, 102, 103]
        for node_id, n in nodes.items():
            assert n["pid"] == cluster.pid(node_id) and n["state"] == "running"
            # Metrics are on by default: every node's endpoint answers a scrape.
            assert n["metrics"] == cluster.metrics_url(node_id)
            with urllib.request.urlopen(n["metrics"], timeout=10) as scrape:
                assert b"kraftlog_" in scrape.read()
            if node_id < 100:
                assert n["roles"] == ["controller"]
                assert n["listeners"] == {"CONTROLLER": cluster.controller_address(node_id)}
            else:
                assert n["roles"] == ["broker"] and n["fenced"] is False
                assert "PLAINTEXT" in n["listeners"]
        voters = {v["node_id"]: v for v in doc["quorum"]["voters"]}
        assert sorted(voters) == [1, 2, 3]
        assert voters[leader]["is_leader"]

    # The same through the controllers alone (no cluster directory): no pids.
    bootstrap = ",".join(cluster.bootstrap_controllers())
    out = kraftlog("cluster", "status", "--bootstrap-controller", bootstrap, "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["quorum_leader_id"] == leader
    assert sorted(n["id"] for n in doc["nodes"]) == [1, 2, 3, 101, 102, 103]
    assert sorted(doc["bootstrap_servers"]) == sorted(cluster.bootstrap_servers())


def test_cluster_up_and_down_commands(tmp_path: Path) -> None:
    d = str(tmp_path / "c")
    up = kraftlog(
        "cluster",
        "up",
        "--dir",
        d,
        "--detach",
        "--controllers",
        "1",
        "--brokers",
        "1",
        "--timeout",
        "60",
        "--monitoring",
    )
    try:
        assert up.returncode == 0, up.stderr
        cluster = LocalCluster.open(d)
        assert cluster.running_ids() == [1, 101]
        assert f"Bootstrap servers:     {cluster.bootstrap_servers()[0]}" in up.stdout
        scrape_config = (Path(d) / "monitoring" / "prometheus.yml").read_text()
        for node_id in (1, 101):
            host_port = cluster.metrics_url(node_id).split("/")[2]  # type: ignore[union-attr]
            assert f'["{host_port}"]' in scrape_config
            assert host_port in up.stdout
        again = kraftlog("cluster", "up", "--dir", d, "--detach")
        assert again.returncode == 0 and "already running" in again.stderr

        # One node at a time, and a node restarted by hand with its own command line.
        stopped = kraftlog("cluster", "stop-node", "101", "--dir", d)
        assert stopped.returncode == 0 and "Node 101" in stopped.stdout, stopped.stderr
        assert node_state(d, 101) == (None, "stopped")
        node = cluster.node(101)
        with open(node.log_path, "ab") as log:
            by_hand = subprocess.Popen(
                processes.node_command(str(node.config_path), str(node.status_path)),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        wait_until(lambda: node_state(d, 101) == (by_hand.pid, "running"), 60, "node 101 up")
        restarted = kraftlog("cluster", "restart-node", "101", "--dir", d)
        assert restarted.returncode == 0, restarted.stderr
        assert by_hand.wait(timeout=60) is not None  # the hand-started process was stopped
        pid, state = node_state(d, 101)
        assert state == "running" and pid not in (None, by_hand.pid)
        assert kraftlog("cluster", "start-node", "7", "--dir", d).returncode == 1
        down = kraftlog("cluster", "down", "--dir", d)
        assert down.returncode == 0, down.stderr
        assert cluster.running_ids() == []
    finally:
        LocalCluster.open(d).close()


def node_state(directory: str, node_id: int) -> tuple[int | None, str]:
    """(pid, state) of a node as `cluster status --json` shows it."""
    out = kraftlog("cluster", "status", "--dir", directory, "--json")
    assert out.returncode == 0, out.stderr
    (node,) = [n for n in json.loads(out.stdout)["nodes"] if n["id"] == node_id]
    return node["pid"], node["state"]


def test_a_node_that_cannot_start_fails_cluster_up_with_its_log(tmp_path: Path) -> None:
    cluster = LocalCluster.create(tmp_path / "busy", controllers=1, brokers=1)
    host, port = cluster.bootstrap_servers()[0].rsplit(":", 1)
    try:
        with socket.socket() as squatter:
            squatter.bind((host, int(port)))
            squatter.listen()
            cluster.start()
            with pytest.raises(ClusterError) as info:
                cluster.wait_ready(60)
        message = str(info.value)
        assert "node 101 exited during startup" in message
        assert "error: node 101 cannot start" in message  # the node's own last words
        assert cluster.is_running(1) and not cluster.is_running(101)
    finally:
        cluster.close()
