"""Whole-cluster crash with a lost log tail (chaos campaign seeds 2 and 5, docs/chaos.md).

Replication factor 3, min.insync.replicas 2. The brokers die one after another, so the
controller shrinks the ISR down to the last one; that last ISR member then loses the unflushed
tail of its log (a power loss) and comes back first. Before eligible leader replicas and
unclean-shutdown recovery (metadata.election) the controller elected it at once, as the sole
ISR member, and the others truncated acknowledged records away when they came back. Now it
waits for the second-to-last member (in the ELR) and elects the longer log.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from chaos.nemesis.disk import active_segment, recovery_point, unflushed_position
from tests.integration.replication.conftest import ClusterFactory
from tests.integration.replication.helpers import (
    create_topic,
    leader_of,
    partition_md,
    produce_raw,
    read_partition,
    wait_for,
    wait_isr,
)

pytestmark = pytest.mark.integration

RECORDS = 100
# The last ISR member keeps only the records below this offset after its "power loss".
KEPT = 40
# How long the restarted, damaged broker must stay without leadership while it is alone.
LEADERLESS_CHECK_S = 3.0


def test_damaged_last_isr_member_does_not_lead_over_the_elr(make_cluster: ClusterFactory) -> None:
    cluster = make_cluster()
    topic = "elr"
    last = create_topic(cluster, topic, min_isr=2)
    first, second = [b for b in cluster.broker_ids if b != last]
    values = [b"v%d" % i for i in range(RECORDS)]
    for i in range(0, RECORDS, 10):
        r = produce_raw(cluster, last, topic, values[i : i + 10], acks=-1)
        assert r["error_code"] == 0, r

    cluster.kill(first)
    wait_isr(cluster, topic, {last, second})
    cluster.kill(second)
    wait_isr(cluster, topic, {last})  # below the minimum: `second` is now in the ELR
    cluster.kill(last)

    part_dir = Path(cluster.node(last).data_dir) / f"{topic}-0"
    segment = active_segment(part_dir)
    assert segment is not None
    point = recovery_point(part_dir.parent, topic, 0)
    assert point <= KEPT, f"records up to {point} were flushed; the test needs them unflushed"
    cut = unflushed_position(segment, KEPT)
    with open(segment, "r+b") as f:
        f.truncate(cut)

    cluster.start_node(last)
    wait_for(
        lambda: (cluster.broker_status(last) or {}).get("fenced") is False,
        f"broker {last} unfenced",
    )
    deadline = time.monotonic() + LEADERLESS_CHECK_S
    while time.monotonic() < deadline:
        p = partition_md(cluster, last, topic)
        assert p is None or p["leader_id"] < 0, f"the damaged replica was elected: {p}"
        time.sleep(0.2)

    cluster.start_node(second)
    assert leader_of(cluster, topic)["leader_id"] == second
    cluster.start_node(first)
    wait_isr(cluster, topic, {first, second, last})
    got = read_partition(cluster.bootstrap_servers(), topic, RECORDS)
    assert [v for _, v in got] == values
    assert [o for o, _ in got] == list(range(RECORDS))
