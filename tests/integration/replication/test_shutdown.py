"""Stopping a replicated cluster: every broker exits on SIGTERM within the grace period.

Regression: a replica fetcher cancelled at shutdown could swallow its cancellation (asyncio's
wait_for on Python 3.11 returns the inner result when both finish at once) and keep retrying,
so the broker hung after its controlled shutdown and had to be SIGKILLed.
"""

from __future__ import annotations

import pytest

from tests.integration.replication.conftest import ClusterFactory
from tests.integration.replication.helpers import create_topic, produce_raw

pytestmark = pytest.mark.integration

STOP_GRACE_S = 10.0


def test_replicated_cluster_stops_without_sigkill(make_cluster: ClusterFactory) -> None:
    cluster = make_cluster()
    leaders = [create_topic(cluster, name) for name in ("s0", "s1", "s2")]
    answer = produce_raw(cluster, leaders[0], "s0", [b"v%d" % i for i in range(10)], acks=-1)
    assert answer["error_code"] == 0
    killed = cluster.down(grace_s=STOP_GRACE_S)
    assert killed == [], f"brokers that ignored SIGTERM for {STOP_GRACE_S} s: {killed}"
    for node_id in cluster.node_ids:
        assert not cluster.is_running(node_id)
