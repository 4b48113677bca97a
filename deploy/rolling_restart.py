"""Rolling restart of a local cluster (``kraftlog cluster restart --rolling``): one node at a
time, never two down, each only once the cluster is healthy again.

Healthy means: every node runs (a restarted one has reported itself running from its new
process and, a broker, registered anew and been unfenced); the quorum has an active
controller and every voter is connected and caught up (at most
:data:`MAX_VOTER_LAG_RECORDS` behind); every broker is registered and unfenced; and no
partition is under-replicated (every replica in its ISR), read from the committed metadata
image. The cluster must be healthy before the first restart.

Order: the controllers first, the active one last (one election instead of several), then
the brokers. A broker is stopped with SIGTERM, which makes it do a controlled shutdown (its
leaderships move before it exits; docs/operations.md), and SIGKILL only after the grace.

The same procedure for nodes on several hosts is in docs/operations.md ("Rolling restarts").
Blocking; not thread-safe.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from deploy.admin import fetch_image
from deploy.local_cluster import ClusterError, LocalCluster
from metadata.client import ControllerClient

# A voter this close to the leader counts as caught up (the metadata log keeps growing with
# heartbeats-driven records while we look).
MAX_VOTER_LAG_RECORDS = 10
# Between health probes.
POLL_INTERVAL_S = 0.25
# One probe's RPCs.
PROBE_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True)
class RestartStep:
    node_id: int
    stop_seconds: float  # SIGTERM to gone
    healthy_seconds: float  # started to the cluster healthy again
    killed: bool  # SIGKILLed after the grace


def health_problem(cluster: LocalCluster, client: ControllerClient) -> str | None:
    """Why the cluster is not healthy (see the module docstring), None if it is."""
    for node_id in cluster.node_ids:
        if not cluster.is_running(node_id):
            return f"node {node_id} is not running"
    try:
        description = client.describe_cluster()
        quorum = client.quorum_status()
    except Exception as e:  # any transport or routing error means "not yet"
        return f"no controller answers ({type(e).__name__}: {e})"
    if description.controller_id is None:
        return "the quorum has no active controller"
    for voter in quorum.get("voters", []):
        lag = voter.get("lag_records")
        if not voter.get("connected") or lag is None or lag > MAX_VOTER_LAG_RECORDS:
            return f"controller {voter['node_id']} is not caught up (lag {lag})"
    brokers = {b.broker_id: b for b in description.brokers}
    for broker_id in cluster.broker_ids:
        b = brokers.get(broker_id)
        if b is None or b.fenced:
            return f"broker {broker_id} is not registered and unfenced"
    try:
        image = fetch_image(client, PROBE_TIMEOUT_S)
    except Exception as e:
        return f"metadata unreadable ({type(e).__name__}: {e})"
    for topic, partition, reg in image.iter_partitions():
        missing = set(reg.replicas) - set(reg.isr)
        if missing:
            return (
                f"{topic.name}-{partition} is under-replicated "
                f"(replicas {sorted(missing)} not in the ISR)"
            )
    return None


def rejoin_problem(cluster: LocalCluster, node_id: int, old_broker_epoch: int | None) -> str | None:
    """Why the restarted node has not rejoined yet, None once it has: its new process reports
    itself running and, for a broker, registered anew (a broker epoch above the one before
    the restart: until then the controller may still show the old registration as live) and
    unfenced; for a controller, following a leader."""
    pid = cluster.pid(node_id)
    status = cluster.node_status(node_id) or {}
    if pid is None or status.get("pid") != pid or status.get("state") != "running":
        return f"node {node_id} has not reported itself running yet"
    components = status.get("components") or {}
    broker = components.get("broker")
    if broker is not None:
        epoch = broker.get("broker_epoch", -1)
        if broker.get("fenced", True) or (
            old_broker_epoch is not None and epoch <= old_broker_epoch
        ):
            return f"broker {node_id} has not registered anew and been unfenced"
    controller = components.get("controller")
    if controller is not None and controller.get("leader_id") is None:
        return f"controller {node_id} follows no leader yet"
    return None


def wait_healthy(
    cluster: LocalCluster,
    timeout_s: float,
    also: Callable[[], str | None] = lambda: None,
) -> None:
    """Until the cluster is healthy and ``also()`` finds no problem; ClusterError with the
    last reason after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    problem: str | None = "not probed yet"
    with cluster.client(PROBE_TIMEOUT_S) as client:
        while time.monotonic() < deadline:
            problem = also() or health_problem(cluster, client)
            if problem is None:
                return
            time.sleep(POLL_INTERVAL_S)
    raise ClusterError(f"the cluster is not healthy after {timeout_s:.0f} s: {problem}")


def broker_epoch(cluster: LocalCluster, node_id: int) -> int | None:
    """The broker epoch node ``node_id`` reports (None for a controller)."""
    broker = ((cluster.node_status(node_id) or {}).get("components") or {}).get("broker")
    return None if broker is None else int(broker.get("broker_epoch", -1))


def restart_order(cluster: LocalCluster) -> list[int]:
    """Controllers (the active one last), then brokers."""
    with cluster.client(PROBE_TIMEOUT_S) as client:
        active = client.describe_cluster().controller_id
    controllers = sorted(cluster.controller_ids, key=lambda i: (i == active, i))
    return [*controllers, *sorted(cluster.broker_ids)]


def rolling_restart(
    cluster: LocalCluster,
    *,
    grace_s: float,
    timeout_s: float,
    progress: Callable[[str], None] = lambda _line: None,
) -> list[RestartStep]:
    """Restart every node of ``cluster`` one at a time (module docstring); ``timeout_s``
    bounds each wait for health. Raises ClusterError if the cluster is not healthy before,
    or does not become healthy again after a node's restart (the remaining nodes are then
    left alone)."""
    wait_healthy(cluster, timeout_s)
    steps = []
    for node_id in restart_order(cluster):
        progress(f"restarting node {node_id}")
        old_epoch = broker_epoch(cluster, node_id)
        started = time.monotonic()
        clean = cluster.stop_node(node_id, grace_s=grace_s)
        stopped = time.monotonic()
        cluster.start_node(node_id)
        wait_healthy(
            cluster,
            timeout_s,
            lambda node_id=node_id, old_epoch=old_epoch: rejoin_problem(
                cluster, node_id, old_epoch
            ),
        )
        step = RestartStep(node_id, stopped - started, time.monotonic() - stopped, not clean)
        progress(
            f"node {node_id}: stopped in {step.stop_seconds:.1f} s"
            f"{' (killed after the grace)' if step.killed else ''}, cluster healthy "
            f"{step.healthy_seconds:.1f} s after its start"
        )
        steps.append(step)
    return steps
