"""Controller and broker failures on a real 3 + 3 cluster: failover, fencing, durability."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

import pytest

from common.error_codes import ErrorCode
from deploy.admin import fetch_image
from deploy.local_cluster import LocalCluster, wait_until
from metadata.client import ControllerError
from metadata.messages import NewTopic

pytestmark = pytest.mark.integration

# The bound: after kill -9 of the active controller a topic creation succeeds within it.
FAILOVER_BOUND_S = 3.0


def create_topic(cluster: LocalCluster, name: str, partitions: int = 1, rf: int = 3) -> None:
    with cluster.client(15) as client:
        (result,) = client.create_topics([NewTopic(name, partitions, rf)])
    assert result.error_code == 0, result


def test_kill9_of_the_active_controller_fails_over_within_3s(cluster: LocalCluster) -> None:
    create_topic(cluster, "before")
    old = cluster.active_controller_id()
    with cluster.client(FAILOVER_BOUND_S) as client:
        client.describe_cluster()  # connect to every voter's channel path first
        killed_at = time.monotonic()
        cluster.kill(old, signal.SIGKILL)
        remaining = FAILOVER_BOUND_S - (time.monotonic() - killed_at)
        (result,) = client.create_topics([NewTopic("after", 1, 3)], timeout_s=remaining)
        assert result.error_code == 0, result
        assert time.monotonic() - killed_at <= FAILOVER_BOUND_S + 0.5  # the call's own slack
    new = cluster.active_controller_id()
    assert new != old

    # The killed voter comes back as a follower and catches up.
    cluster.start_node(old)

    def caught_up() -> bool:
        with cluster.client(5) as client:
            client.describe_cluster()
            status = client.quorum_status()
        voter = next(v for v in status["voters"] if v["node_id"] == old)
        return voter["connected"] and voter["lag_records"] == 0

    wait_until(caught_up, 30, f"voter {old} to rejoin and catch up")
    with cluster.client(10) as client:
        image = fetch_image(client)
    assert {"before", "after"} <= set(image.topics_by_name)


def test_killed_broker_is_fenced_loses_leadership_and_rejoins_with_a_new_epoch(
    cluster: LocalCluster,
) -> None:
    victim = 101
    with cluster.client(15) as client:
        (result,) = client.create_topics([NewTopic("spread", 6, 3)])
        assert result.error_code == 0, result
        brokers = {b.broker_id: b for b in client.describe_cluster().brokers}
        old_epoch = brokers[victim].epoch
        before = fetch_image(client).topic("spread")
    assert before is not None
    led_by_victim = [p for p, reg in before.partitions.items() if reg.leader == victim]
    assert led_by_victim, "placement gave broker 101 no leadership"

    cluster.kill(victim, signal.SIGKILL)

    def fenced() -> bool:
        with cluster.client(5) as client:
            b = {b.broker_id: b for b in client.describe_cluster().brokers}
        return b[victim].fenced

    # broker.session.timeout.ms is 2.5 s in these tests.
    wait_until(fenced, 20, f"broker {victim} to be fenced")

    def moved() -> Any:
        with cluster.client(5) as client:
            t = fetch_image(client).topic("spread")
        if t is None or any(reg.leader in (victim, -1) for reg in t.partitions.values()):
            return None
        return t

    after = wait_until(moved, 20, "leadership to leave the dead broker")
    for p in led_by_victim:
        old_reg, new_reg = before.partitions[p], after.partitions[p]
        assert new_reg.leader in old_reg.isr and new_reg.leader != victim
        assert victim not in new_reg.isr
        assert new_reg.leader_epoch > old_reg.leader_epoch

    cluster.start_node(victim)

    def re_registered() -> Any:
        with cluster.client(5) as client:
            b = {b.broker_id: b for b in client.describe_cluster().brokers}[victim]
        return b if not b.fenced and b.epoch != old_epoch else None

    back = wait_until(re_registered, 30, f"broker {victim} to register again, unfenced")
    assert back.epoch > old_epoch
    status = wait_until(lambda: cluster.broker_status(victim), 10, "the broker's status")
    wait_until(
        lambda: (cluster.broker_status(victim) or {}).get("broker_epoch") == back.epoch,
        10,
        "the broker to report its new epoch",
    )
    assert status["fenced"] in (True, False)


def test_kill9_of_all_voters_mid_stream_loses_no_acknowledged_write(
    cluster: LocalCluster,
) -> None:
    acked: list[str] = []
    failed: list[str] = []
    stop = threading.Event()

    def writer() -> None:
        with cluster.client(2) as client:
            for i in range(100_000):
                if stop.is_set():
                    return
                name = f"w-{i}"
                try:
                    (result,) = client.create_topics([NewTopic(name, 1, 1)], timeout_s=2)
                except ControllerError:
                    failed.append(name)  # outcome unknown: may or may not exist
                    continue
                if result.error_code == 0:
                    acked.append(name)
                elif result.error_code != ErrorCode.TOPIC_ALREADY_EXISTS:
                    failed.append(name)

    thread = threading.Thread(target=writer, name="metadata-writer")
    thread.start()
    try:
        wait_until(lambda: len(acked) >= 20, 60, "20 acknowledged topic creations")
        for node_id in cluster.controller_ids:  # as close to at once as signals get
            cluster.kill(node_id, signal.SIGKILL)
        acked_at_kill = list(acked)
        time.sleep(0.5)
        cluster.start(cluster.controller_ids)
        wait_until(lambda: len(acked) > len(acked_at_kill) + 5, 60, "writes after the restart")
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive()
    with cluster.client(10) as client:
        image = fetch_image(client, 30)
    missing = [name for name in acked if image.topic(name) is None]
    assert not missing, f"acknowledged but lost: {missing}"
    # The brokers converge on the same topics.
    wait_until(
        lambda: all(
            (cluster.broker_status(b) or {}).get("metadata_offset", -1) >= image.offset
            for b in cluster.broker_ids
        ),
        30,
        "brokers to catch up after the quorum restart",
    )
