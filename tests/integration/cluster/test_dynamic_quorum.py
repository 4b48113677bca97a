"""Replacing a dead controller's host with the command line, on a real 3-controller, 3-broker
cluster, while topics are being created: ``kraftlog cluster add-controller`` starts a new
controller that observes, ``kraftlog quorum status`` lists it with its lag,
``kraftlog quorum add-controller --config`` makes it a voter and ``kraftlog quorum
remove-controller --id`` takes the dead one out. Every topic whose creation was acknowledged
is in the metadata afterwards, and the new quorum survives the loss of its leader."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from common.error_codes import ErrorCode
from deploy.admin import fetch_image
from deploy.cluster_layout import ClusterLayout
from deploy.local_cluster import LocalCluster, wait_until
from metadata.client import ControllerError
from metadata.messages import NewTopic
from tests.integration.clusters import kraftlog

pytestmark = pytest.mark.integration

WAIT_S = 60.0
MAX_TOPICS = 2000
CREATOR_MAX_S = 300.0


def quorum(cluster: LocalCluster) -> dict[str, Any]:
    out = kraftlog("quorum", "status", "--dir", str(cluster.directory), "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout)["quorum"]


class TopicCreator:
    """Creates topics one after another until stopped; remembers the acknowledged ones and
    the creations that failed (each creation is retried by the client for 30 s)."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.created: list[str] = []
        self.failed: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        deadline = time.monotonic() + CREATOR_MAX_S
        with self.cluster.client(30.0) as client:
            for n in range(MAX_TOPICS):
                if self.stop.is_set() or time.monotonic() > deadline:
                    return
                name = f"replace-{n:04d}"
                try:
                    (result,) = client.create_topics([NewTopic(name, 1, 1)])
                except ControllerError as e:
                    self.failed.append(f"{name}: {e}")
                    continue
                # TOPIC_ALREADY_EXISTS: the client retried a creation whose first attempt
                # committed on a controller that was killed before it answered.
                if result.error_code in (0, ErrorCode.TOPIC_ALREADY_EXISTS):
                    self.created.append(name)
                else:
                    self.failed.append(f"{name}: {result.error_code} {result.error_message}")
                time.sleep(0.05)


def test_a_dead_controller_is_replaced_with_the_cli_while_topics_are_created(
    cluster: LocalCluster,
) -> None:
    directory = str(cluster.directory)
    creator = TopicCreator(cluster)
    creator.thread.start()
    try:
        wait_until(lambda: len(creator.created) >= 5, WAIT_S, "first topics")
        active = cluster.active_controller_id()
        dead = next(i for i in cluster.controller_ids if i != active)
        cluster.kill(dead)

        added = kraftlog("cluster", "add-controller", "--dir", directory)
        cluster.layout = ClusterLayout.load(cluster.directory)  # so teardown kills it too
        assert added.returncode == 0, added.stdout + added.stderr
        new_id = max(cluster.controller_ids)
        assert f"Controller {new_id} started" in added.stdout
        wait_until(
            lambda: any(
                o["node_id"] == new_id and o["lag_records"] is not None
                for o in quorum(cluster)["observers"]
            ),
            WAIT_S,
            "the new controller listed as an observer",
        )
        text = kraftlog("quorum", "status", "--dir", directory)
        assert "Observer" in text.stdout and str(new_id) in text.stdout, text.stdout

        config = str(cluster.config_path(new_id))
        joined = kraftlog("quorum", "add-controller", "--config", config, "--dir", directory)
        assert joined.returncode == 0, joined.stdout + joined.stderr
        assert f"added controller {new_id}" in joined.stdout
        again = kraftlog("quorum", "add-controller", "--config", config, "--dir", directory)
        assert again.returncode == 1 and "DUPLICATE_VOTER" in again.stderr, again.stderr

        removed = kraftlog(
            "quorum", "remove-controller", "--controller-id", str(dead), "--dir", directory
        )
        assert removed.returncode == 0, removed.stdout + removed.stderr
        expected = {*cluster.controller_ids} - {dead}
        wait_until(
            lambda: {v["node_id"] for v in quorum(cluster)["voters"]} == expected,
            WAIT_S,
            "the voters after the replacement",
        )
        gone = kraftlog("quorum", "remove-controller", "--id", str(dead), "--dir", directory)
        assert gone.returncode == 1 and "VOTER_NOT_FOUND" in gone.stderr, gone.stderr

        # Two of the three voters are a majority of the new quorum: losing its leader costs
        # one election, not the cluster.
        count = len(creator.created)
        cluster.kill(cluster.active_controller_id())
        wait_until(lambda: len(creator.created) >= count + 5, WAIT_S, "topics after failover")
    finally:
        creator.stop.set()
        creator.thread.join(CREATOR_MAX_S)
    assert creator.failed == [], creator.failed[:5]
    with cluster.client(30.0) as client:
        image = fetch_image(client, 30.0)
    missing = [t for t in creator.created if image.topic(t) is None]
    assert missing == [], missing[:5]
