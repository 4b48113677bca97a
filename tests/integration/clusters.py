"""Local clusters for integration and compat tests: real node processes on 127.0.0.1 in a
temporary directory, ready before a test uses them and always torn down (also on failure).

FAST_OVERRIDES shorten failure detection so failover tests finish quickly: brokers are fenced
2.5 s after their last heartbeat (heartbeats every 300 ms) and voters elect after 0.5-1 s.
"""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from deploy.local_cluster import LocalCluster
from deploy.ports import free_ports
from metadata.security_client import set_scram_password

FAST_OVERRIDES: Mapping[str, str] = {
    "broker.session.timeout.ms": "2500",
    "broker.heartbeat.interval.ms": "300",
    "controller.quorum.election.timeout.ms": "500",
    "controlled.shutdown.timeout.ms": "5000",
}
READY_TIMEOUT_S = 60.0
# Longest one `kraftlog` command line run by a test may take.
CLI_TIMEOUT_S = 180.0

ClusterFactory = Callable[..., LocalCluster]


def kraftlog(*args: str, timeout_s: float = CLI_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """Run the ``kraftlog`` command line (``python -m deploy.cli``) with ``args``; its exit
    code, stdout and stderr are in the result."""
    return subprocess.run(
        [sys.executable, "-m", "deploy.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


@contextmanager
def running_cluster(
    path: Path,
    *,
    controllers: int = 1,
    brokers: int = 1,
    overrides: Mapping[str, str] = FAST_OVERRIDES,
    before_start: Callable[[LocalCluster], None] | None = None,
) -> Iterator[LocalCluster]:
    """A started, ready cluster in ``path``; every node killed on exit (paused ones resumed
    first, so nothing is left stopped behind). ``before_start`` may change the created
    cluster's node configs before any node starts."""
    cluster = LocalCluster.create(
        path, controllers=controllers, brokers=brokers, overrides=dict(overrides)
    )
    try:
        if before_start is not None:
            before_start(cluster)
        cluster.start()
        cluster.wait_ready(READY_TIMEOUT_S)
        yield cluster
    finally:
        for node_id in cluster.node_ids:
            if cluster.is_paused(node_id):
                cluster.resume(node_id)
        cluster.close()


@contextmanager
def cluster_factory(
    base: Path,
    *,
    controllers: int = 1,
    brokers: int = 1,
    overrides: Mapping[str, str] = FAST_OVERRIDES,
) -> Iterator[ClusterFactory]:
    """``make(controllers=, brokers=, **overrides)`` starts a cluster under ``base``; all of
    them are torn down when the context ends. Override keys are Kafka property names."""
    counter = itertools.count()
    with ExitStack() as stack:

        def make(
            controllers: int = controllers, brokers: int = brokers, **extra: str
        ) -> LocalCluster:
            props = {**overrides, **extra}
            path = base / f"cluster-{next(counter)}"
            return stack.enter_context(
                running_cluster(path, controllers=controllers, brokers=brokers, overrides=props)
            )

        yield make


def configured_ports(cluster: LocalCluster) -> set[int]:
    """Every port a node's server.properties names (listeners, voters, metrics): ports the
    cluster will bind once started, so a test choosing more must not pick them."""
    ports: set[int] = set()
    for node_id in cluster.node_ids:
        text = cluster.config_path(node_id).read_text(encoding="utf-8")
        ports.update(int(p) for p in re.findall(r":(\d{2,5})\b", text))
        ports.update(int(p) for p in re.findall(r"port=(\d{2,5})\b", text))
    return ports


@dataclass
class ScramCluster:
    """A 1-controller, 1-broker cluster with the authorizer on: ``plaintext`` is the broker's
    PLAINTEXT listener (``User:ANONYMOUS``, a super user), ``sasl`` its SASL_PLAINTEXT
    listener (SCRAM-SHA-512) for the users made at start."""

    cluster: LocalCluster
    plaintext: str
    sasl: str
    broker_id: int

    def sasl_config(self, user: str, password: str) -> dict[str, str]:
        """Client properties that log ``user`` in on the SASL listener."""
        return {
            "bootstrap.servers": self.sasl,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": user,
            "sasl.password": password,
        }


@contextmanager
def scram_cluster(
    path: Path, passwords: Mapping[str, str], ready_timeout_s: float = READY_TIMEOUT_S
) -> Iterator[ScramCluster]:
    """A started :class:`ScramCluster` in ``path`` with a SCRAM-SHA-512 user for each of
    ``passwords`` (user -> password); every node killed on exit."""
    overrides = {
        **FAST_OVERRIDES,
        "listener.security.protocol.map": (
            "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT"
        ),
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "kraftlog.authorizer.enabled": "true",
        "super.users": "User:ANONYMOUS",
    }
    cluster = LocalCluster.create(path, controllers=1, brokers=1, overrides=overrides)
    try:
        (broker_id,) = cluster.broker_ids
        port = cluster.node(broker_id).broker_port
        (sasl_port,) = free_ports(1, exclude=configured_ports(cluster))
        listeners = f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}"
        cluster.update_config(
            broker_id, {"listeners": listeners, "advertised.listeners": listeners}
        )
        cluster.start()
        cluster.wait_ready(ready_timeout_s)
        with cluster.client(10.0) as client:
            for user, password in passwords.items():
                results = set_scram_password(client, user, password, iterations=4096)
                if [r.error_code for r in results] != [0]:
                    raise RuntimeError(f"SCRAM user {user}: {results}")
        yield ScramCluster(cluster, f"127.0.0.1:{port}", f"127.0.0.1:{sasl_port}", broker_id)
    finally:
        cluster.close()
