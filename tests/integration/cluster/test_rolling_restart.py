"""A full rolling restart (``kraftlog cluster restart --rolling``) of 3 controllers and 3
brokers under load: an idempotent acks=all producer and a consumer group (confluent-kafka)
run through it with no error surfaced to them, and every acknowledged record is in the log
exactly once and consumed exactly once."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from deploy.local_cluster import LocalCluster
from tests.integration.clusters import ClusterFactory
from tests.integration.load import DEADLINE_S, RATE_PER_S, log_values, start_load

pytestmark = pytest.mark.integration

RESTART_TIMEOUT_S = 600.0


def test_rolling_restart_under_load(cluster_factory: ClusterFactory) -> None:
    cluster: LocalCluster = cluster_factory()
    topic = "rolling"
    bootstrap, load = start_load(cluster, topic)
    try:
        deadline = time.monotonic() + DEADLINE_S
        while len(load.consumed) < RATE_PER_S and time.monotonic() < deadline:
            time.sleep(0.2)
        pids_before = {i: cluster.pid(i) for i in cluster.node_ids}
        restart = subprocess.run(
            [sys.executable, "-m", "deploy.cli", "cluster", "restart", "--rolling",
             "--dir", str(cluster.directory), "--timeout", "120"],
            capture_output=True, text=True, timeout=RESTART_TIMEOUT_S, check=False,
        )  # fmt: skip
        assert restart.returncode == 0, restart.stdout + restart.stderr
        pids_after = {i: cluster.pid(i) for i in cluster.node_ids}
        for node_id in cluster.node_ids:
            assert f"restarting node {node_id}" in restart.stdout
            assert pids_after[node_id] not in (None, pids_before[node_id]), pids_after
        time.sleep(2)  # a little load on the restarted cluster
    finally:
        load.stop()
    assert load.errors == [], load.errors[:10]
    assert len(load.acked) > RATE_PER_S
    in_log = log_values(bootstrap, topic)
    assert len(in_log) == len(set(in_log)), "a record is in the log twice"
    assert load.acked <= set(in_log), "an acknowledged record is missing from the log"
    assert len(load.consumed) == len(set(load.consumed)), "a record was consumed twice"
    assert load.missing() == set(), "an acknowledged record was never consumed"
