"""Helpers for replication integration tests: cluster state through the Kafka protocol, the
bytes each replica holds on disk, and a consumer read of a whole partition."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common.protocol.api_keys import ApiKey
from common.protocol.messages.list_offsets import (
    ListOffsetsRequest,
    ListOffsetsRequestPartition,
    ListOffsetsRequestTopic,
)
from data_plane.storage import Record, build_batch, validate_stored_payload
from deploy.admin import fetch_image
from deploy.local_cluster import LocalCluster
from kraftlog_client import Consumer, TopicPartition
from metadata.messages import NewTopic
from tests.integration.clusters import FAST_OVERRIDES as CLUSTER_FAST_OVERRIDES
from tests.unit.broker.wire import WireClient

DEADLINE_S = 60.0

FAST_OVERRIDES = {
    **CLUSTER_FAST_OVERRIDES,
    "replica.lag.time.max.ms": "2000",
    "replica.fetch.backoff.ms": "200",
}


def wait_for(cond: Callable[[], Any], what: str, timeout_s: float = DEADLINE_S) -> Any:
    """Poll ``cond`` until it returns something truthy (returned), or fail after the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            got = cond()
        except (OSError, KeyError, IndexError):
            got = None
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.1)


def port_of(cluster: LocalCluster, broker_id: int) -> int:
    port = cluster.node(broker_id).broker_port
    if port is None:
        raise AssertionError(f"node {broker_id} has no broker port")
    return port


def partition_md(cluster: LocalCluster, broker_id: int, topic: str) -> dict[str, Any] | None:
    """Partition 0 of ``topic`` as ``broker_id``'s Metadata answer shows it (None if unknown)."""
    client = WireClient(port_of(cluster, broker_id), cluster.host_of(broker_id))
    try:
        md = client.call(ApiKey.METADATA, 8, {"topics": [{"name": topic}]})
    finally:
        client.close()
    parts = md["topics"][0]["partitions"]
    if not parts or parts[0]["error_code"] != 0:
        return None
    return parts[0]


def leader_of(cluster: LocalCluster, topic: str, exclude: tuple[int, ...] = ()) -> dict[str, Any]:
    """Wait until a running broker reports a leader for partition 0 not in ``exclude``."""

    def probe() -> dict[str, Any] | None:
        for b in cluster.broker_ids:
            if b in exclude or not cluster.is_running(b) or cluster.is_paused(b):
                continue
            p = partition_md(cluster, b, topic)
            if p is not None and p["leader_id"] >= 0 and p["leader_id"] not in exclude:
                return p
        return None

    return wait_for(probe, f"a leader of {topic}-0 outside {list(exclude)}")


def wait_isr(
    cluster: LocalCluster, topic: str, want: set[int], timeout_s: float = DEADLINE_S
) -> None:
    def probe() -> bool:
        for b in cluster.broker_ids:
            if cluster.is_running(b) and not cluster.is_paused(b):
                p = partition_md(cluster, b, topic)
                if p is not None and set(p["isr_nodes"]) == want:
                    return True
        return False

    wait_for(probe, f"ISR of {topic}-0 == {sorted(want)}", timeout_s)


def list_latest(cluster: LocalCluster, broker_id: int, topic: str) -> int:
    """ListOffsets latest (the high watermark) from ``broker_id``; raises on an error code."""
    client = WireClient(port_of(cluster, broker_id), cluster.host_of(broker_id))
    try:
        partition = ListOffsetsRequestPartition(partition_index=0, timestamp=-1)
        body = ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,
            topics=[ListOffsetsRequestTopic(name=topic, partitions=[partition])],
        )
        p = client.call(ApiKey.LIST_OFFSETS, 5, body).topics[0].partitions[0]
    finally:
        client.close()
    if p.error_code != 0:
        raise OSError(f"ListOffsets error {p.error_code}")
    offset: int = p.offset
    return offset


def replica_bytes(cluster: LocalCluster, broker_id: int, topic: str) -> bytes:
    """The concatenated segment files of ``topic``-0 on ``broker_id`` (base-offset order), cut
    after the last whole batch (a follower may be mid-append)."""
    part_dir = Path(cluster.node(broker_id).data_dir) / f"{topic}-0"
    return _whole(b"".join(p.read_bytes() for p in sorted(part_dir.glob("*.log"))))


def _whole(data: bytes) -> bytes:
    pos = 0
    while pos + 12 <= len(data):
        length = int.from_bytes(data[pos + 8 : pos + 12], "big", signed=True)
        if length <= 0 or pos + 12 + length > len(data):
            break
        pos += 12 + length
    return data[:pos]


def bytes_up_to(cluster: LocalCluster, broker_id: int, topic: str, offset: int) -> bytes:
    """The replica's segment bytes holding offsets below ``offset`` (a batch boundary)."""
    data = replica_bytes(cluster, broker_id, topic)
    for h in validate_stored_payload(data):
        if h.base_offset >= offset:
            return data[: h.position]
    return data


def read_partition(bootstrap: list[str], topic: str, end_offset: int) -> list[tuple[int, bytes]]:
    """(offset, value) of every record of ``topic``-0 below ``end_offset``, via a consumer."""
    consumer = Consumer({"bootstrap.servers": ",".join(bootstrap)})
    out: list[tuple[int, bytes]] = []
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        deadline = time.monotonic() + DEADLINE_S
        while (not out or out[-1][0] < end_offset - 1) and time.monotonic() < deadline:
            for r in consumer.poll(1000):
                if r.offset < end_offset:
                    out.append((r.offset, r.value))
    finally:
        consumer.close()
    return out


def create_topic(
    cluster: LocalCluster,
    topic: str,
    min_isr: int = 2,
    replication_factor: int = 3,
    extra: dict[str, str] | None = None,
) -> int:
    """A topic with one partition; returns its leader once every replica is in the ISR and
    the leader's replica manager serves it (another broker may apply the new metadata first,
    and the leader publishes an image to its Metadata answers before its partitions take it:
    a produce sent in between gets UNKNOWN_TOPIC_OR_PARTITION)."""
    configs = {"min.insync.replicas": str(min_isr), **(extra or {})}
    with cluster.client(10.0) as admin:
        (res,) = admin.create_topics([NewTopic(topic, 1, replication_factor, configs=configs)])
        if res.error_code != 0:
            raise AssertionError(f"create {topic}: {res}")
    md = leader_of(cluster, topic)
    wait_isr(cluster, topic, set(md["replica_nodes"]))
    leader = md["leader_id"]

    # list_latest raises OSError until the leader serves the partition; wait_for retries it.
    wait_for(
        lambda: list_latest(cluster, leader, topic) >= 0,
        f"broker {leader} to serve {topic}-0 as its leader",
    )
    return leader


def produce_raw(
    cluster: LocalCluster,
    broker: int,
    topic: str,
    values: list[bytes],
    acks: int,
    timeout_ms: int = 20_000,
) -> dict[str, Any]:
    """One Produce v7 of ``values`` as one batch to ``broker``; the partition response."""
    client = WireClient(port_of(cluster, broker), cluster.host_of(broker))
    try:
        body = {
            "transactional_id": None,
            "acks": acks,
            "timeout_ms": timeout_ms,
            "topic_data": [
                {
                    "name": topic,
                    "partition_data": [
                        {
                            "index": 0,
                            "records": build_batch(
                                [Record(None, v, 1000 + i) for i, v in enumerate(values)]
                            ),
                        }
                    ],
                }
            ],
        }
        return client.call(ApiKey.PRODUCE, 7, body)["responses"][0]["partition_responses"][0]
    finally:
        client.close()


def wait_leader_seen(
    cluster: LocalCluster, topic: str, observers: list[int], exclude: list[int]
) -> int:
    """Wait until every broker in ``observers`` reports the same leader, not in ``exclude``."""

    def probe() -> int | None:
        seen = set()
        for b in observers:
            p = partition_md(cluster, b, topic)
            if p is None or p["leader_id"] < 0 or p["leader_id"] in exclude:
                return None
            seen.add(p["leader_id"])
        return seen.pop() if len(seen) == 1 else None

    return wait_for(probe, f"{observers} to follow a leader outside {exclude}")


def watch_session(
    cluster: LocalCluster, topic: str, broker_id: int, seconds: float
) -> dict[str, Any]:
    """Watch the controller's view for ``seconds``: whether ``broker_id`` was ever fenced,
    and the leaders ``topic``-0 had meanwhile."""
    fenced = False
    leaders: set[int] = set()
    deadline = time.monotonic() + seconds
    with cluster.client(10.0) as admin:
        while time.monotonic() < deadline:
            image = fetch_image(admin)
            fenced = fenced or image.brokers[broker_id].fenced
            p = image.partition(topic, 0)
            if p is not None:
                leaders.add(p.leader)
            time.sleep(0.2)
    return {"fenced": fenced, "leaders": sorted(leaders)}


def checkpoint_text(cluster: LocalCluster, broker_id: int) -> str:
    """The broker's replication-offset-checkpoint (high watermarks) as text."""
    path = Path(cluster.node(broker_id).data_dir) / "replication-offset-checkpoint"
    return path.read_text(encoding="utf-8") if path.exists() else ""
