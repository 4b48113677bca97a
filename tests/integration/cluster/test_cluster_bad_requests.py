"""Bad requests get Kafka error codes or clean rejections, and no process crashes."""

from __future__ import annotations

import os
import socket

import grpc
import pytest

from common.error_codes import ErrorCode
from deploy.admin import fetch_image
from deploy.local_cluster import LocalCluster, wait_until
from metadata.messages import AlterPartitionItem, AlterPartitionTopic, NewTopic
from metadata.rpc import decode_envelope, method_path

pytestmark = pytest.mark.integration


def send_garbage(address: str, payloads: list[bytes]) -> None:
    host, port = address.rsplit(":", 1)
    for payload in payloads:
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(payload)
            s.settimeout(2)
            try:
                s.recv(4096)
            except (TimeoutError, ConnectionError):
                pass


def test_bad_requests_are_rejected_with_kafka_error_codes(cluster: LocalCluster) -> None:
    pids = {i: cluster.pid(i) for i in cluster.node_ids}
    with cluster.client(15) as client:
        # Replication factor above the live brokers.
        (r,) = client.create_topics([NewTopic("too-many-replicas", 1, 4)])
        assert r.error_code == ErrorCode.INVALID_REPLICATION_FACTOR, r
        # Invalid topic names.
        for name in ("bad name!", ".", "..", "x" * 250, "a/b"):
            (r,) = client.create_topics([NewTopic(name, 1, 1)])
            assert r.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION, (name, r)
        # Fewer (or as many) partitions.
        (r,) = client.create_topics([NewTopic("grow", 3, 3)])
        assert r.error_code == 0, r
        for count in (2, 3):
            (r,) = client.create_partitions({"grow": count})
            assert r.error_code == ErrorCode.INVALID_PARTITIONS, (count, r)
        # An unknown topic config value.
        (r,) = client.create_topics([NewTopic("bad-config", 1, 1, configs={"retention.ms": "x"})])
        assert r.error_code != 0, r

        # Stale epochs.
        brokers = {b.broker_id: b for b in client.describe_cluster().brokers}
        hb = client.broker_heartbeat(101, brokers[101].epoch - 1, 0)
        assert hb.error_code == ErrorCode.STALE_BROKER_EPOCH, hb
        reg = fetch_image(client).topic("grow").partitions[0]  # type: ignore[union-attr]
        leader, follower = reg.leader, next(b for b in reg.replicas if b != reg.leader)
        item = AlterPartitionItem(0, reg.leader_epoch, list(reg.isr), reg.partition_epoch)
        stale = client.alter_partition(
            leader, brokers[leader].epoch - 1, [AlterPartitionTopic("grow", [item])]
        )
        assert stale.error_code == ErrorCode.STALE_BROKER_EPOCH, stale
        not_leader = client.alter_partition(
            follower, brokers[follower].epoch, [AlterPartitionTopic("grow", [item])]
        )
        assert not_leader.partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        old_version = AlterPartitionItem(0, reg.leader_epoch, [leader], reg.partition_epoch + 7)
        resp = client.alter_partition(
            leader, brokers[leader].epoch, [AlterPartitionTopic("grow", [old_version])]
        )
        assert resp.partitions[0].error_code == ErrorCode.INVALID_UPDATE_VERSION, resp

        # A broker of another cluster.
        other = client.register_broker(
            999, "incarnation", {"PLAINTEXT": ("127.0.0.1", 1)}, cluster_id="x" * 22
        )
        assert other.error_code == ErrorCode.INCONSISTENT_CLUSTER_ID, other

    # Garbage on the gRPC and Raft ports, and undecodable gRPC payloads.
    junk = [b"\x00" * 64, os.urandom(4096), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"]
    for node_id in cluster.controller_ids:
        send_garbage(cluster.controller_address(node_id), junk)
        node = cluster.node(node_id)
        send_garbage(f"{cluster.layout.host}:{node.raft_port}", junk)
    with grpc.insecure_channel(cluster.controller_address(1)) as channel:
        raw = channel.unary_unary(method_path("CreateTopics"))(b"\xc1garbage", timeout=5)
        assert decode_envelope(raw).error_code == ErrorCode.INVALID_REQUEST
        with pytest.raises(grpc.RpcError) as info:
            channel.unary_unary("/kraftlog.controller.v1.Controller/NoSuchMethod")(b"", timeout=5)
        assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED

    # Nothing crashed: the same processes run and the cluster still works.
    assert {i: cluster.pid(i) for i in cluster.node_ids} == pids
    with cluster.client(15) as client:
        (r,) = client.create_topics([NewTopic("still-fine", 1, 3)])
    assert r.error_code == 0, r


def test_a_voter_with_a_wrong_cluster_secret_cannot_join(cluster: LocalCluster) -> None:
    leader = cluster.active_controller_id()
    bad = next(i for i in cluster.controller_ids if i != leader)
    good_secret = cluster.layout.secret_path().read_text().strip()
    cluster.stop_node(bad)
    cluster.update_config(bad, {"controller.quorum.secret": "not-the-cluster-secret"})
    cluster.start_node(bad)

    def bad_voter_disconnected() -> bool:
        with cluster.client(5) as client:
            client.describe_cluster()
            voters = {v["node_id"]: v for v in client.quorum_status()["voters"]}
        return not voters[bad]["connected"]

    wait_until(bad_voter_disconnected, 20, f"voter {bad} to stay outside the quorum")
    # The two good voters still form a majority and commit.
    with cluster.client(15) as client:
        (r,) = client.create_topics([NewTopic("without-the-bad-voter", 1, 3)])
    assert r.error_code == 0, r
    assert cluster.is_running(bad), cluster.log_tail(bad)

    # With the right secret it rejoins and catches up.
    cluster.stop_node(bad)
    cluster.update_config(bad, {"controller.quorum.secret": good_secret})
    cluster.start_node(bad)

    def caught_up() -> bool:
        with cluster.client(5) as client:
            client.describe_cluster()
            voters = {v["node_id"]: v for v in client.quorum_status()["voters"]}
        return voters[bad]["connected"] and voters[bad]["lag_records"] == 0

    wait_until(caught_up, 30, f"voter {bad} to rejoin")
